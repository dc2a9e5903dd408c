package usage

import (
	"errors"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// Open loads the ledger of stateDir for writing (the caller is the state dir's one
// writer). Units whose file is gone without the ledger having been told (a crash
// before the catalog knew them) are retired; a summary that is not what the units
// add up to (a crash between the two appends of a flush) or a file with a torn
// last batch is rewritten.
//
// It reads only the units' headers (identity, position, parser state, where
// they are filed): their accounts stay on their lines of the units file until
// a unit is needed (resident.go). The totals are read from the summary when the
// units file's stamp vouches for it (stamp.go); otherwise every account is read
// and the totals added up from them, and the summary compared with them.
func Open(stateDir string) (*Ledger, error) {
	return open(stateDir, true)
}

// open is Open; lazy unset reads every account and adds the totals up from them
// whatever the stamp says (the way Open worked before stamps, for tests).
func open(stateDir string, lazy bool) (*Ledger, error) {
	dir := filepath.Join(stateDir, DirName)
	// A writer killed mid-write leaves a temp file; we are the writer now.
	indexer.CleanTemp(dir)
	l := newLedger(dir)
	l.coldOK = lazy
	trusted := false
	if lazy {
		st, err := l.load(true, true)
		if err != nil {
			l.cold.close()
			return nil, err
		}
		if trusted = l.trustSummary(st); trusted {
			l.trusted = true
			l.fileMembers()
		} else {
			l.cold.close()
			l = newLedger(dir) // the accounts are needed: read them all
			l.coldOK = true    // then left in the index the base has (recool)
		}
	}
	var st *stamp
	if !trusted {
		var err error
		if st, err = l.load(true, false); err != nil {
			return nil, err
		}
		l.fileAll()
	}
	l.dirtyRows, l.dirtyDays = map[rowID]bool{}, map[rowID]bool{} // what the files hold; summaryMatches checks the summary
	now := indexer.FormatTime(l.now())
	for _, k := range append(l.goneUnits(), l.goneCold()...) {
		l.warm(k.source, k.unit)
		r := l.units.get(k.source, k.unit)
		if r == nil {
			continue // the index failed to read back (l.err): the Sync below reports it
		}
		l.retireLocked(k, r, now)
	}
	l.loaded = nil
	l.settleGroups(false)
	if !trusted {
		if !l.summaryMatches() {
			l.summaryFile.compact = true
		} else if st != nil && *st == l.summaryStamp() {
			l.stampAt.units, l.stampAt.sum = l.unitsFile.base+l.unitsFile.tail, *st // no need to stamp it again
		}
	}
	if err := l.Sync(nil); err != nil {
		l.cold.close()
		return nil, err
	}
	l.recool(-1, 0) // records read the long way go back to the index
	return l, nil
}

// fileMembers files every record under its session without reading its account
// (after a load whose totals come from the summary).
func (l *Ledger) fileMembers() {
	l.members = newSessionTable()
	l.members.reserve(l.units.len())
	for r := range l.held() {
		l.addMember(r)
	}
}

// held yields every record, live and retired: in the order the load read them
// when it can (the index's records lie in one slab, their names in arenas in
// the same order: walked in that order, not the tables', a record's bytes are
// next to the last one's), else from the tables.
func (l *Ledger) held() iter.Seq[*unitRec] {
	return func(yield func(*unitRec) bool) {
		if l.loaded != nil {
			for _, r := range l.loaded {
				if r.span().n != 0 && !yield(r) { // n 0: replaced by a later line, cleared
					return
				}
			}
			return
		}
		for r := range l.units.all() {
			if !yield(r) {
				return
			}
		}
		for _, rs := range l.retired {
			for _, r := range rs {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// heldLive yields the live records, in the order the load read them when it
// can (held). Only a loaded record tells live from retired by its place (idx -1
// or not); one of the tables' (a first-version ledger's, never written to a
// units file) has no place, so there the live table says.
func (l *Ledger) heldLive() iter.Seq[*unitRec] {
	if l.loaded == nil {
		return l.units.all()
	}
	return func(yield func(*unitRec) bool) {
		for r := range l.held() {
			if r.idx < 0 && !yield(r) {
				return
			}
		}
	}
}

// goneUnits lists the live units whose file is gone. Each directory holding
// units is listed once (a stat of every unit was a fifth of an Open's time); a
// unit whose name is not in its directory's list is then confirmed gone by a
// stat of its own. Units are grouped by their root and the directory part of
// their name, strings they hold, so no path is built but for a unit not listed.
func (l *Ledger) goneUnits() []ukey {
	type dirKey struct{ root, sub string } // the directory is root joined to sub
	type dir struct {
		dirKey
		rs []*unitRec
	}
	var dirs []dir
	at := map[dirKey]int{}
	last := -1
	for r := range l.heldLive() {
		var d dirKey
		if r.pathWhole {
			d.root = filepath.Dir(r.pathDir())
		} else if i := strings.LastIndexByte(r.Unit, '/'); i >= 0 {
			d.root, d.sub = r.filing().root, r.Unit[:i]
		} else {
			d.root = r.filing().root
		}
		// The units of a directory mostly come one after another (in key
		// order): the last directory is tried before the map.
		if last < 0 || dirs[last].dirKey != d {
			i, ok := at[d]
			if !ok {
				i = len(dirs)
				at[d] = i
				dirs = append(dirs, dir{dirKey: d})
			}
			last = i
		}
		dirs[last].rs = append(dirs[last].rs, r)
	}
	var gone []ukey
	names := map[string]bool{}
	for _, d := range dirs {
		rs := d.rs
		clear(names)
		if f, err := os.Open(d.root + filepath.FromSlash(d.sub)); err == nil {
			ns, _ := f.Readdirnames(-1)
			f.Close()
			for _, n := range ns {
				names[n] = true
			}
		}
		for _, r := range rs {
			name := r.Unit[strings.LastIndexByte(r.Unit, '/')+1:]
			if r.pathWhole {
				name = filepath.Base(r.pathDir())
			}
			if names[name] {
				continue
			}
			if _, err := os.Lstat(r.path()); errors.Is(err, fs.ErrNotExist) {
				gone = append(gone, ukey{r.source(), r.Unit})
			}
		}
	}
	return gone
}
