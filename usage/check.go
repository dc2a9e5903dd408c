package usage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
)

// Compare lists how the ledger on disk in stateDir differs from rebuilt, a
// ledger made by NewRebuild and a fresh index pass over the sources named (units
// of other sources are not compared). A line unit must hold the same usage per
// quarter hour and model, filed under the same session and project; a document
// unit (Mogzi) the same total, since a file keeps only its running total and not
// when it grew. The summary (its base and appended batches) must be what the units add up to. Nothing is written.
//
// A writer (a running daemon) may append or compact while the files are read,
// and the reads then disagree with each other: differences found while the
// files changed under the comparison are checked again (up to three times).
func Compare(stateDir string, rebuilt *Ledger, sources map[string]bool) ([]string, error) {
	dir := filepath.Join(stateDir, DirName)
	for try := 1; ; try++ {
		before := filesStamp(dir)
		diffs, err := compareOnce(dir, rebuilt, sources)
		if err != nil || len(diffs) == 0 || try == 3 || filesStamp(dir) == before {
			return diffs, err
		}
	}
}

// filesStamp tells the ledger's files apart from a later version of them.
func filesStamp(dir string) (st [3]struct{ ino, size, mtime int64 }) {
	for i, name := range []string{UnitsName, UnitsIndexName, SummaryName} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			st[i].size, st[i].mtime = fi.Size(), fi.ModTime().UnixNano()
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
				st[i].ino = int64(sys.Ino)
			}
		}
	}
	return st
}

func compareOnce(dir string, rebuilt *Ledger, sources map[string]bool) ([]string, error) {
	disk := newLedger(dir)
	if _, err := disk.load(true, false); err != nil {
		return nil, err
	}
	disk.fileAll()
	disk.settleGroups(false)
	rebuilt.mu.Lock()
	defer rebuilt.mu.Unlock()
	rebuilt.settlePending()
	var diffs []string
	for want := range rebuilt.units.all() {
		k := ukey{want.source(), want.Unit}
		got := disk.units.get(k.source, k.unit)
		switch {
		case got == nil && restoredPending(disk.retired[k], want):
			// The file came back (restore) while no writer ran: the next writer
			// counts it from the file and drops the retired copy; the total is the same.
		case got == nil && len(want.acc.Buckets) > 0:
			diffs = append(diffs, fmt.Sprintf("usage of %s/%s missing from the ledger", k.source, k.unit))
		case got == nil:
		case !sameUsage(got, want):
			diffs = append(diffs, fmt.Sprintf("usage of %s/%s differs from a rebuild (ledger %+v, rebuild %+v)", k.source, k.unit, got.acc.total(), want.acc.total()))
		}
	}
	for got := range disk.units.all() {
		k := ukey{got.source(), got.Unit}
		if _, err := os.Lstat(got.path()); err != nil && errors.Is(err, fs.ErrNotExist) {
			continue // gone while no writer ran (another command retired it): the next writer retires it
		}
		if sources[k.source] && rebuilt.units.get(k.source, k.unit) == nil && len(got.acc.Buckets) > 0 {
			diffs = append(diffs, fmt.Sprintf("usage of %s/%s is in the ledger but its file is gone and it was not retired", k.source, k.unit))
		}
	}
	if indexDiffers(dir) {
		diffs = append(diffs, fmt.Sprintf("%s differs from the units file it indexes", filepath.Join(dir, UnitsIndexName)))
	}
	path := filepath.Join(disk.dir, SummaryName)
	if data, err := os.ReadFile(path); err == nil {
		s, p, err := parseSummary(data, Want{})
		switch {
		case err != nil:
			diffs = append(diffs, fmt.Sprintf("%s: %v", path, err))
		case !disk.sameAsSummary(s, true):
			diffs = append(diffs, fmt.Sprintf("%s differs from the units it adds up", path))
		case !p.clean:
			diffs = append(diffs, fmt.Sprintf("%s ends in a torn batch", path))
		}
	} else if disk.rows.len() > 0 {
		diffs = append(diffs, fmt.Sprintf("%s differs from the units it adds up (%v)", path, err))
	}
	sort.Strings(diffs)
	return diffs, nil
}

func sameUsage(got, want *unitRec) bool {
	if len(got.acc.Buckets) == 0 && len(want.acc.Buckets) == 0 {
		return true // nothing counted: where it would be filed does not matter
	}
	if got.session() != want.session() || got.project() != want.project() {
		return false
	}
	if isDocument(want.unitBody) || isDocument(got.unitBody) {
		return got.acc.total() == want.acc.total()
	}
	if len(got.acc.Buckets) != len(want.acc.Buckets) {
		return false
	}
	for i := range got.acc.Buckets {
		if got.acc.Buckets[i] != want.acc.Buckets[i] {
			return false
		}
	}
	return true
}

// restoredPending reports whether a unit missing from the ledger is one of its
// retired units come back with the same usage.
func restoredPending(retired []*unitRec, want *unitRec) bool {
	for _, r := range retired {
		if r.acc.total() == want.acc.total() {
			return true
		}
	}
	return false
}

// sameHeaders reports whether a and b hold the same records, header by header
// (position on disk included), live and retired.
// indexDiffers reports whether the index of the units file's base names the
// base but holds other records than the long way reads there (an Open would use
// it). Both are read from one open of the units file, to one size: a writer's
// flush meanwhile (a new base, a batch) cannot make them disagree.
func indexDiffers(dir string) bool {
	fh, err := os.Open(filepath.Join(dir, UnitsName))
	if err != nil {
		return false
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return false
	}
	long, ix := newLedger(dir), newLedger(dir)
	if _, err := long.loadFile(fh, fi.Size(), true, false); err != nil {
		return false
	}
	_, err = ix.loadFile(fh, fi.Size(), true, true)
	return err == nil && ix.fromIndex && !sameHeaders(ix, long)
}

func sameHeaders(a, b *Ledger) bool {
	return slices.Equal(a.headerLines(), b.headerLines())
}

// headerLine is a record's header as one line.
func (r *unitRec) headerLine() string {
	return fmt.Sprintf("%q %q %d %q %v %d %d %d %q %q %q %q %d %d",
		r.source(), r.Unit, r.idx, r.pathDir(), r.pathWhole, r.dev(), r.Ino, r.Off, r.Fp(), r.session(), r.typ(), r.project(), r.span().off, r.span().n)
}

// headerLines is every record's header, one line each, sorted.
func (l *Ledger) headerLines() []string {
	l.warmAll()
	var out []string
	add := func(r *unitRec) { out = append(out, r.headerLine()) }
	for r := range l.units.all() {
		add(r)
	}
	for _, rs := range l.retired {
		for _, r := range rs {
			add(r)
		}
	}
	sort.Strings(out)
	return out
}
