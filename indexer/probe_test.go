package indexer

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Unchanged answers false for every kind of change a refresh would act on, in
// every layout's store.
func TestUnchangedSeesEveryChange(t *testing.T) {
	walks := []struct {
		name          string
		raw, typeless bool
	}{{"portable", false, false}, {"raw", true, false}, {"raw-typeless", true, true}}
	if !probeRaw {
		walks = walks[:1] // no raw walk on this platform
	}
	stores, _ := filepath.Glob("testdata/*/basic/store")
	for _, walk := range walks {
		for _, store := range stores {
			layout := filepath.Base(filepath.Dir(filepath.Dir(store)))
			t.Run(walk.name+"/"+layout, func(t *testing.T) {
				defer func(raw, typeless bool) { probeRaw, probeTypeless = raw, typeless }(probeRaw, probeTypeless)
				probeRaw, probeTypeless = walk.raw, walk.typeless
				for _, change := range []string{"none", "append", "touch", "truncate", "remove", "replace", "new", "newdir", "symlink", "fifo"} {
					checkUnchangedSees(t, layout, store, change)
				}
			})
		}
	}
}

// checkUnchangedSees makes one change to a copy of store, indexed, and holds
// Unchanged's answer to what a refresh does: it rewrites a catalog or resume
// file exactly when something changed.
func checkUnchangedSees(t *testing.T, layout, store, change string) {
	t.Helper()
	root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
	copyTree(t, store, root)
	if layout == "hyperyolo" {
		root = filepath.Join(root, "sessions.json")
	}
	ix := newLayoutIndexer(t, layout, root, state, false)
	ix.Reconcile() // a deliberately corrupt test file may report an error
	var units []string
	for u := range ix.units.all() {
		urel := u.rel
		if u.hasSessions() {
			units = append(units, urel)
		}
	}
	if len(units) == 0 {
		t.Fatal("no unit indexed")
	}
	// The largest file first (a change to an empty one may be none), then by name.
	size := func(urel string) int64 { fi, _ := os.Stat(ix.unitPath(urel)); return fi.Size() }
	slices.SortFunc(units, func(a, b string) int { return cmp.Or(cmp.Compare(size(b), size(a)), strings.Compare(a, b)) })
	path := ix.unitPath(units[0])
	// want: the change must be seen; "" when whether it is a change is the
	// layout's business (the refresh decides).
	want := "changed"
	switch change {
	case "none":
		want = "unchanged"
	case "append":
		appendFile(t, path, "\n")
	case "touch":
		later := fixedMtime.Add(time.Hour)
		os.Chtimes(path, later, later)
	case "truncate":
		// Shorter, its mtime put back: the size alone tells.
		fi, _ := os.Stat(path)
		if err := os.Truncate(path, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, fi.ModTime(), fi.ModTime())
	case "remove":
		os.Remove(path)
	case "replace":
		// A new inode with the same bytes, size and mtime.
		data, _ := os.ReadFile(path)
		tmp := filepath.Join(filepath.Dir(path), TempPrefix+"twin")
		os.WriteFile(tmp, data, 0o600)
		os.Chtimes(tmp, fixedMtime, fixedMtime)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	case "new":
		if layout == "hyperyolo" {
			return // one file: nothing can be added beside it
		}
		if !addTwin(t, ix, units[0]) {
			t.Fatalf("no name for a second session beside %s", units[0])
		}
	case "newdir":
		// A copy of the unit's directory beside it, under a new name: a new
		// project where the layout takes one there.
		if layout == "hyperyolo" || !strings.Contains(units[0], "/") {
			return
		}
		dir := filepath.Dir(path)
		copyTree(t, dir, dir+"-copy")
		want = ""
	case "symlink":
		// A symlink to the unit's file, under a name its layout could take:
		// never followed, by a refresh as by Unchanged, so no change.
		if layout == "hyperyolo" {
			return
		}
		link, ok := twinPath(ix, units[0])
		if !ok {
			t.Fatalf("no name for a second session beside %s", units[0])
		}
		os.MkdirAll(filepath.Dir(link), 0o700)
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		want = "unchanged"
	case "fifo":
		// The unit's file replaced by a fifo: not a regular file.
		if layout == "hyperyolo" {
			return
		}
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skip("no fifo here:", err)
		}
	}
	probe := newLayoutIndexer(t, layout, root, state, false)
	if err := probe.LoadLite(); err != nil {
		t.Fatal(err)
	}
	got := probe.Unchanged()
	// ProveLean (no session kept) answers as LoadLite and Unchanged do.
	if lean := newLayoutIndexer(t, layout, root, state, false).ProveLean(); lean != got {
		t.Errorf("%s: ProveLean() = %v, Unchanged() = %v", change, lean, got)
	}
	// ProveVisit (the proof and the listing from one read) answers as they do.
	checkProveVisit(t, change, state, []*Indexer{newLayoutIndexer(t, layout, root, state, false)}, []bool{got})
	if err := probe.Refresh(); !errors.Is(err, ErrLite) {
		t.Errorf("Refresh after LoadLite = %v, want ErrLite", err)
	}
	if change == "fifo" {
		// A refresh would block opening the fifo: the stat is the answer.
		if got {
			t.Errorf("fifo: Unchanged() = true, want false")
		}
		return
	}
	ref := newLayoutIndexer(t, layout, root, state, false)
	ref.Load()
	ref.Refresh()
	// Unchanged may doubt (a truncated document a refresh reports and leaves
	// alone), but never call a change none.
	writes := ref.Stats().CatalogWrites
	if got && writes > 0 || want == "unchanged" && (!got || writes > 0) || want == "changed" && got {
		t.Errorf("%s: Unchanged() = %v, want %s (the refresh wrote %d files)", change, got, cmp.Or(want, "what the refresh says"), writes)
	}
}

// addTwin copies unit's file to a name its layout takes for another unit of the
// same kind; it reports whether it found one.
func addTwin(t *testing.T, ix *Indexer, urel string) bool {
	t.Helper()
	p, ok := twinPath(ix, urel)
	if !ok {
		return false
	}
	data, err := os.ReadFile(ix.unitPath(urel))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return true
}

// twinPath is the path of a name unit's layout takes for another unit of the same
// kind, where no unit is yet.
func twinPath(ix *Indexer, urel string) (string, bool) {
	_, kind := ix.layout.Classify(urel)
	dir, name := pathDir(urel), pathBase(urel)
	var cands []string
	for _, c := range []string{"b", "c", "d"} {
		stem, ext, _ := strings.Cut(name, ".")
		cands = append(cands, c+name[1:], strings.Replace(name, ".json", "-"+c+".json", 1), stem[:len(stem)-1]+c+"."+ext)
		if dir != "" { // a unit named by its directory (mogzi, collab)
			top, rest, _ := strings.Cut(urel, "/")
			cands = append(cands, c+top[1:]+"/"+rest)
			if pd := pathDir(dir); pd != "" {
				cands = append(cands, pd+"/"+c+pathBase(dir)[1:]+"/"+name)
			}
		}
	}
	for _, c := range cands {
		rel := c
		if dir != "" && !strings.Contains(c, "/") {
			rel = dir + "/" + c
		}
		if u, k := ix.layout.Classify(rel); u == rel && k == kind && ix.units.get(rel) == nil {
			return ix.unitPath(rel), true
		}
	}
	return "", false
}

// A directory whose listing takes several getdents calls (more than rawDir's
// first buffer) and a tree several levels deep: every file is still seen, and
// a change to the last one listed as to the first.
func TestUnchangedLargeDirectory(t *testing.T) {
	for _, walk := range []struct {
		name          string
		raw, typeless bool
	}{{"portable", false, false}, {"raw", true, false}, {"raw-typeless", true, true}} {
		if walk.raw && !probeRaw {
			continue
		}
		t.Run(walk.name, func(t *testing.T) {
			defer func(raw, typeless bool) { probeRaw, probeTypeless = raw, typeless }(probeRaw, probeTypeless)
			probeRaw, probeTypeless = walk.raw, walk.typeless
			root, state := t.TempDir(), t.TempDir()
			dir := filepath.Join(root, "home-u-big")
			os.MkdirAll(dir, 0o700)
			var names []string
			for i := range 600 { // ~45 KiB of 64-byte dirents
				name := fmt.Sprintf("%08x-0000-4000-8000-%012x.jsonl", i, i)
				line := fmt.Sprintf(`{"timestamp":"2026-02-20T08:00:00.000Z","id":"m%d","role":"user","blocks":[{"type":"text","content":"prompt %d"}]}`+"\n", i, i)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(line), 0o600); err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
			}
			// Deeper directories the layout skips, with a file of a session's name.
			deep := filepath.Join(dir, "memory", "a", "b", "c")
			os.MkdirAll(deep, 0o700)
			os.WriteFile(filepath.Join(deep, names[0]), []byte("{}\n"), 0o600)
			ix := newLayoutIndexer(t, "wave", root, state, false)
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			if n := len(ix.Entries()); n != len(names) {
				t.Fatalf("indexed %d sessions, want %d", n, len(names))
			}
			probe := func() bool {
				lite := newLayoutIndexer(t, "wave", root, state, false)
				if err := lite.LoadLite(); err != nil {
					t.Fatal(err)
				}
				return lite.Unchanged()
			}
			if !probe() {
				t.Fatal("Unchanged() over the unchanged store = false, want true")
			}
			for _, name := range []string{names[0], names[len(names)/2], names[len(names)-1]} {
				path := filepath.Join(dir, name)
				fi, _ := os.Stat(path)
				later := fi.ModTime().Add(time.Second)
				os.Chtimes(path, later, later)
				if probe() {
					t.Errorf("%s touched: Unchanged() = true, want false", name)
				}
				os.Chtimes(path, fi.ModTime(), fi.ModTime())
				if !probe() {
					t.Errorf("%s put back: Unchanged() = false, want true", name)
				}
			}
			// A change in the skipped depths is none.
			appendFile(t, filepath.Join(deep, names[0]), "{}\n")
			if !probe() {
				t.Error("a file under memory/ grew: Unchanged() = false, want true")
			}
		})
	}
}
