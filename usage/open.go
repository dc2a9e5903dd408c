package usage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

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
	trusted := false
	if lazy {
		st, err := l.load(true, true)
		if err != nil {
			return nil, err
		}
		if trusted = l.trustSummary(st); trusted {
			l.trusted = true
			l.fileMembers()
		} else {
			l = newLedger(dir) // the accounts are needed: read them all
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
	for _, k := range l.goneUnits() {
		l.retireLocked(k, l.units.get(k.source, k.unit), now)
	}
	l.settleGroups(false)
	if !trusted {
		if !l.summaryMatches() {
			l.summaryFile.compact = true
		} else if st != nil && *st == l.summaryStamp() {
			l.stampAt.units, l.stampAt.sum = l.unitsFile.base+l.unitsFile.tail, *st // no need to stamp it again
		}
	}
	if err := l.Sync(nil); err != nil {
		return nil, err
	}
	return l, nil
}

// fileMembers files every record under its session without reading its account
// (after a load whose totals come from the summary).
func (l *Ledger) fileMembers() {
	l.members = newSessionTable()
	l.members.reserve(l.units.len())
	for r := range l.units.all() {
		l.addMember(r)
	}
	for _, rs := range l.retired {
		for _, r := range rs {
			l.addMember(r)
		}
	}
}

// goneUnits lists the live units whose file is gone. Each directory holding
// units is listed once (a stat of every unit was a fifth of an Open's time); a
// unit whose name is not in its directory's list is then confirmed gone by a
// stat of its own.
func (l *Ledger) goneUnits() []ukey {
	type unit struct {
		k          ukey
		path, name string
	}
	dirs := map[string][]unit{}
	for r := range l.units.all() {
		k := ukey{r.Source, r.Unit}
		p := r.path()
		dir, name := filepath.Split(p)
		dirs[dir] = append(dirs[dir], unit{k, p, name})
	}
	var gone []ukey
	for dir, us := range dirs {
		var names []string
		if f, err := os.Open(dir); err == nil {
			names, _ = f.Readdirnames(-1)
			f.Close()
		}
		sort.Strings(names)
		for _, u := range us {
			if i := sort.SearchStrings(names, u.name); i < len(names) && names[i] == u.name {
				continue
			}
			if _, err := os.Lstat(u.path); errors.Is(err, fs.ErrNotExist) {
				gone = append(gone, u.k)
			}
		}
	}
	return gone
}
