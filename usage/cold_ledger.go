package usage

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The ledger's side of the records left in units.idx (cold.go).

// fail records err as the ledger's (Sync reports it; the next Open reads the
// ledger again from its files).
func (l *Ledger) fail(err error) {
	if err != nil && l.err == nil {
		l.err = err
	}
}

// warm makes the records of (src, unit) resident if they are in the index:
// the live one takes unit as its name (the indexer's string).
func (l *Ledger) warm(src, unit string) {
	if l.cold == nil {
		return
	}
	_, at, slot, err := l.cold.find(src, unit)
	l.fail(err)
	if at == 0 {
		return
	}
	slot.off = coldGone
	l.warmAt(at, unit, false)
}

// coldDrop forgets the index's records of (src, unit): a later line of the
// units file replaced them.
func (l *Ledger) coldDrop(src, unit string) {
	if l.cold == nil {
		return
	}
	_, at, slot, err := l.cold.find(src, unit)
	l.fail(err)
	if at != 0 {
		slot.off = coldGone
	}
}

// warmAt reads the records of the key whose first record is at off into the
// ledger's tables (its key has left the index's).
func (l *Ledger) warmAt(off int64, unit string, seq bool) {
	var src string
	var prev int64
	for i := 0; ; i++ {
		c, n, err := l.cold.read(off, seq)
		if err != nil {
			l.fail(err)
			return
		}
		// The key's records follow its first in place order (live -1, then
		// retired 0, 1, …): the live one's retired 0 is the key's, not the
		// next key's first.
		if i > 0 && (c.idx != prev+1 || c.src != src || string(c.unit) != unit) {
			return // the next key's
		}
		src, prev = c.src, c.idx
		// Out of the session table too: the session's S rows find it resident.
		l.cold.sess.each(hashKey("", c.sid()), func(s *coldSlot) bool {
			if int64(s.off) == off {
				s.off = coldGone
				return false
			}
			return true
		})
		name := unit
		if c.idx >= 0 {
			name = strings.Clone(unit) // a retired unit's name is its own
		}
		r := c.rec(name)
		l.canonFiling(r)
		if r.idx < 0 {
			l.units.put(r)
		} else {
			k := ukey{r.source(), r.Unit}
			l.retired[k] = append(l.retired[k], r)
		}
		l.addMember(r)
		if off += int64(n); off >= l.cold.end {
			return
		}
	}
}

// warmAll makes every record resident and lets the index go (for what walks
// every record: a compaction, a summary added up from the units).
func (l *Ledger) warmAll() {
	c := l.cold
	if c == nil {
		return
	}
	for pos := c.start; pos < c.end; {
		r, n, err := c.read(pos, true)
		if err != nil {
			l.fail(err)
			break
		}
		if r.idx <= 0 && c.holdsKeyAt(r.src, r.unit, pos) {
			unit := string(r.unit)
			l.warmAt(pos, unit, true)
		}
		pos += int64(n)
	}
	l.cold = nil
	c.close()
}

// coldResume is Resume of a unit whose record is in the index.
func (l *Ledger) coldResume(u indexer.UnitRef) (int64, string, bool) {
	if l.cold == nil {
		return 0, "", false
	}
	c, at, _, err := l.cold.find(u.Source, u.Unit)
	l.fail(err)
	if at == 0 || c.idx != -1 || c.dev != u.Dev || c.ino != u.Ino {
		return 0, "", false
	}
	return c.off, c.fpString(), true
}

// coldMembers calls fn with each record in the index filed under session g
// (made for the call: the index keeps it).
func (l *Ledger) coldMembers(g groupKey, fn func(r *unitRec)) {
	if l.cold == nil || l.cold.none() {
		return
	}
	var offs []int64
	l.cold.sess.each(hashPair("", g.sid), func(s *coldSlot) bool {
		offs = append(offs, int64(s.off))
		return true
	})
	for _, off := range offs {
		c, _, err := l.cold.read(off, false)
		if err != nil {
			l.fail(err)
			continue
		}
		if c.src != g.src || c.proj != g.proj || c.typ != g.typ || string(c.sid()) != g.sid {
			continue
		}
		r := c.rec(string(c.unit))
		if _, at, _, err := l.cold.find(r.source(), r.Unit); err != nil || at == 0 {
			l.fail(err)
			continue // replaced by a later line of the units file since
		}
		fn(r)
	}
}

// goneCold lists the live units in the index whose file is gone, as goneUnits
// does for the resident ones: the index is read in its order (by source and
// unit), each directory listed once while its units come (the last few
// directories' names are kept: a directory's units and its subdirectories'
// interleave).
func (l *Ledger) goneCold() []ukey {
	c := l.cold
	if c == nil {
		return nil
	}
	type listed struct {
		dir   string
		names map[string]bool
	}
	var (
		dirs [4]listed
		next int
		gone []ukey
		dir  []byte
	)
	namesOf := func(d []byte) map[string]bool {
		for _, x := range dirs {
			if x.names != nil && x.dir == string(d) {
				return x.names
			}
		}
		x := listed{dir: string(d), names: map[string]bool{}}
		if f, err := os.Open(x.dir); err == nil {
			ns, _ := f.Readdirnames(-1)
			f.Close()
			for _, n := range ns {
				x.names[n] = true
			}
		}
		dirs[next], next = x, (next+1)%len(dirs)
		return x.names
	}
	for pos := c.start; pos < c.end; {
		r, n, err := c.read(pos, true)
		if err != nil {
			l.fail(err)
			break
		}
		pos += int64(n)
		if r.idx != -1 {
			continue
		}
		var name []byte
		if r.whole {
			dir = append(dir[:0], filepath.Dir(string(r.path))...)
			name = []byte(filepath.Base(string(r.path)))
		} else {
			i := bytes.LastIndexByte(r.unit, '/')
			dir = append(append(dir[:0], r.root...), filepath.FromSlash(string(r.unit[:max(i, 0)]))...)
			name = r.unit[i+1:]
		}
		if namesOf(dir)[string(name)] {
			continue
		}
		path := string(r.path)
		if !r.whole {
			path = r.root + filepath.FromSlash(string(r.unit))
		}
		// Unless a later line of the units file replaced the record (then
		// goneUnits has it).
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && c.holdsKeyAt(r.src, r.unit, pos-int64(n)) {
			gone = append(gone, ukey{r.src, string(r.unit)})
		}
	}
	c.dropBlocks()
	return gone
}

// recool lets the records go back to the index of the units file's base (of
// size base and CRC crc; base -1: the index the open found naming the base)
// but those it does not hold as they are: a key written after the base, changed
// since, or whose read is in progress. It follows a compaction (every record
// then), and an open that read the records the long way.
func (l *Ledger) recool(base int64, crc uint32) {
	if !l.coldOK || l.resident || l.cold != nil || l.err != nil || (base < 0 && !l.indexed) {
		return
	}
	keepRec := func(r *unitRec) bool {
		s := r.span()
		return r.isReading() || s.n == 0 || s.off+s.n > l.unitsFile.base
	}
	keep := func(k ukey) bool {
		if l.dirtyUnits[k] {
			return true
		}
		r := l.units.get(k.source, k.unit)
		if r == nil && len(l.retired[k]) == 0 {
			// Every record is in memory here (l.cold is nil): a key of the
			// index the ledger does not hold was dropped by a later line of
			// the units file, and must not come back from the index.
			return true
		}
		if r != nil && keepRec(r) {
			return true
		}
		for _, r := range l.retired[k] {
			if keepRec(r) {
				return true
			}
		}
		return false
	}
	c, err := openCold(l.indexPath(), base, crc, l.intern, func(src string, unit []byte) bool {
		return keep(ukey{src, string(unit)})
	})
	if err != nil {
		return // all stay resident
	}
	if c.base != l.unitsFile.base {
		c.close()
		return
	}
	units, retired, members := newUnitTable(), map[ukey][]*unitRec{}, newSessionTable()
	kept := func(k ukey) {
		if r := l.units.get(k.source, k.unit); r != nil {
			units.put(r)
			r.next = members.push(r)
		}
		if rs := l.retired[k]; len(rs) > 0 {
			retired[k] = rs
			for _, x := range rs {
				x.next = members.push(x)
			}
		}
	}
	for r := range l.units.all() {
		if k := (ukey{r.source(), r.Unit}); keep(k) {
			kept(k)
		}
	}
	for k := range l.retired {
		if l.units.get(k.source, k.unit) == nil && keep(k) {
			kept(k)
		}
	}
	l.units, l.retired, l.members, l.cold = units, retired, members, c
}
