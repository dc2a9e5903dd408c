package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Idle units keep only their header in memory (identity, position, parser state,
// where they are filed); their account, the buckets and the dedupe window that
// are most of a unit's memory, stays in the units file, on the line their key
// was last written to, and is read back when the unit is needed again (a line
// arrives, the unit is refiled, retired or written). A unit's account is dropped
// from memory at the end of a Sync once it is on disk as it is in memory.

// span is where a key's line lies in the units file.
type span struct{ off, n int64 }

// accOf makes r's account resident, reading it back from the units file if it
// was evicted, and returns it. Every change to an account goes through it.
func (l *Ledger) accOf(r *unitRec) *account {
	if r.evicted {
		a, err := l.readAcc(r)
		if err != nil && l.err == nil {
			// Not counted from here on: Sync reports it, and the next Open reads the
			// ledger again from its files.
			l.err = err
		}
		r.acc, r.evicted = a, false
		l.hot = append(l.hot, r)
	}
	return &r.acc
}

// peekAcc is r's account without making it resident (to write it out again).
func (l *Ledger) peekAcc(r *unitRec) (account, error) {
	if !r.evicted {
		return r.acc, nil
	}
	return l.readAcc(r)
}

// readLine reads the line at s from the units file.
func (l *Ledger) readLine(s span) ([]byte, error) {
	if l.rd == nil {
		f, err := os.Open(l.unitsFile.path)
		if err != nil {
			return nil, fmt.Errorf("read usage ledger: %w", err)
		}
		l.rd = f
	}
	buf := make([]byte, s.n)
	if _, err := l.rd.ReadAt(buf, s.off); err != nil {
		return nil, fmt.Errorf("read usage ledger %s at %d: %w", l.unitsFile.path, s.off, err)
	}
	return buf, nil
}

// readAcc reads r's account back from the line its key was last written to.
func (l *Ledger) readAcc(r *unitRec) (account, error) {
	line, err := l.readLine(r.span)
	if err != nil {
		return account{}, err
	}
	if fk, ok := decodeKeyFast(line, l.intern); ok {
		if fk.k != (ukey{r.Source, r.Unit}) {
			return account{}, fmt.Errorf("usage ledger %s at %d: holds %s, not %s", l.unitsFile.path, r.span.off, fk.k.unit, r.Unit)
		}
		switch {
		case r.idx < 0 && fk.live != nil:
			return fk.live.acc, nil
		case r.idx >= 0 && int(r.idx) < len(fk.retired):
			return fk.retired[r.idx].acc, nil
		}
		return account{}, fmt.Errorf("usage ledger %s at %d: no record %d of %s", l.unitsFile.path, r.span.off, r.idx, r.Unit)
	}
	var w wireKey
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&w); err != nil {
		return account{}, fmt.Errorf("usage ledger %s at %d: %w", l.unitsFile.path, r.span.off, err)
	}
	if w.K != [2]string{r.Source, r.Unit} {
		return account{}, fmt.Errorf("usage ledger %s at %d: holds %s, not %s", l.unitsFile.path, r.span.off, w.K[1], r.Unit)
	}
	var wu *wireUnit
	switch {
	case r.idx < 0 && w.Live != nil:
		wu = w.Live
	case r.idx >= 0 && int(r.idx) < len(w.Retired):
		wu = &w.Retired[r.idx]
	default:
		return account{}, fmt.Errorf("usage ledger %s at %d: no record %d of %s", l.unitsFile.path, r.span.off, r.idx, r.Unit)
	}
	got, err := fromWire(*wu, l.intern)
	if err != nil {
		return account{}, fmt.Errorf("usage ledger %s: unit %s: %w", l.unitsFile.path, r.Unit, err)
	}
	return got.acc, nil
}

// placed is where a record was just written: applied once the write succeeded.
type placed struct {
	r   *unitRec
	s   span
	idx int32
}

func (l *Ledger) applyPlaced(ps []placed) {
	for _, p := range ps {
		p.r.span, p.r.idx = p.s, p.idx
	}
}

// keyRecs lists the records written on k's line, in the line's order (the live
// one first).
func (l *Ledger) keyRecs(k ukey, out []placed, s span) []placed {
	if r := l.units[k]; r != nil {
		out = append(out, placed{r, s, -1})
	}
	for i, r := range l.retired[k] {
		out = append(out, placed{r, s, int32(i)})
	}
	return out
}

// resetReader forgets the units file's read handle (the file was replaced).
func (l *Ledger) resetReader() {
	if l.rd != nil {
		l.rd.Close()
		l.rd = nil
	}
}

// evictLocked drops from memory the accounts that are on disk as they are: of
// records written and not changed since, and not in the middle of a read.
func (l *Ledger) evictLocked() {
	keep := l.hot[:0]
	for _, r := range l.hot {
		if r.evicted || !l.holds(r) {
			continue // dropped records go with the list
		}
		if r.span.n == 0 || r.reading || l.dirtyUnits[ukey{r.Source, r.Unit}] {
			keep = append(keep, r)
			continue
		}
		r.acc, r.evicted = account{}, true
	}
	clear(l.hot[len(keep):])
	l.hot = keep
}

// cleanSpan is the line k was last written to, if it holds k as it is: the key
// has not changed since, and every record of it is on that line, not in memory.
func (l *Ledger) cleanSpan(k ukey) (span, bool) {
	if l.dirtyUnits[k] {
		return span{}, false
	}
	var s span
	n := 0
	same := func(r *unitRec, idx int32) bool {
		if !r.evicted || r.idx != idx || (n > 0 && r.span != s) {
			return false
		}
		s = r.span
		n++
		return true
	}
	if r := l.units[k]; r != nil && !same(r, -1) {
		return span{}, false
	}
	for i, r := range l.retired[k] {
		if !same(r, int32(i)) {
			return span{}, false
		}
	}
	return s, n > 0
}

// holds reports whether r is still one of the ledger's records.
func (l *Ledger) holds(r *unitRec) bool {
	k := ukey{r.Source, r.Unit}
	if l.units[k] == r {
		return true
	}
	for _, x := range l.retired[k] {
		if x == r {
			return true
		}
	}
	return false
}

// shareSession is sid, sharing unit's bytes when unit holds it (a Claude or
// Codex file is named after its session): one string less per unit.
func shareSession(sid, unit string) string {
	if i := strings.Index(unit, sid); sid != "" && i >= 0 {
		return unit[i : i+len(sid)]
	}
	return sid
}
