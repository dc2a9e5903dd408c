package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReadCatalogsPicked: picking sessions by file (a path with spaces, quotes,
// <&> and non-ASCII, as the catalogs write it) gives exactly ReadCatalogs'
// entries of those files, for the first, a middle and the last line of a catalog.
func TestReadCatalogsPicked(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, `home-u-p "quoted" <&> café`)
	os.MkdirAll(dir, 0o700)
	var names []string
	for i := range 4 {
		names = append(names, fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i))
	}
	for i, n := range names {
		data := `{"type":"metadata","workdir":"/home/u/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n" + msg(fmt.Sprintf("2026-01-01T00:00:0%dZ", i+1), "hi "+n)
		os.WriteFile(filepath.Join(dir, n+".jsonl"), []byte(data), 0o600)
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	all, err := ReadCatalogs(state, nil, []string{"/home/u/p"})
	if err != nil || len(all) != len(names) {
		t.Fatalf("ReadCatalogs = %d entries (%v), want %d", len(all), err, len(names))
	}
	files := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.File)
		}
		slices.Sort(out)
		return out
	}
	for _, pick := range [][]int{{0}, {1}, {3}, {1, 2}, {0, 1, 2, 3}, {}} {
		var needles, want []string
		for _, i := range pick {
			needles = append(needles, filepath.Join(dir, names[i]+".jsonl"))
		}
		for _, e := range all {
			if slices.Contains(needles, e.File) {
				want = append(want, e.File)
			}
		}
		slices.Sort(want)
		got, err := ReadCatalogsPicked(state, nil, []string{"/home/u/p"}, needles)
		if err != nil {
			t.Fatal(err)
		}
		if g := files(got); !slices.Equal(g, want) {
			t.Errorf("ReadCatalogsPicked(%v) = %q, want %q", pick, g, want)
		}
		for _, g := range got {
			i := slices.IndexFunc(all, func(e Entry) bool { return e.File == g.File })
			if *g.Session != *all[i].Session {
				t.Errorf("picked %s = %+v, want %+v", g.File, *g.Session, *all[i].Session)
			}
		}
	}
}

// TestReadCatalogsPickedSeveralCatalogs: the sessions picked from one catalog
// stay intact while the next catalogs are read (through the same buffers).
func TestReadCatalogsPickedSeveralCatalogs(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	var projects, needles []string
	for p := range 3 {
		project := fmt.Sprintf("/home/u/p%d", p)
		dir := filepath.Join(root, fmt.Sprintf("home-u-p%d", p))
		os.MkdirAll(dir, 0o700)
		projects = append(projects, project)
		for i := range 3 {
			name := filepath.Join(dir, fmt.Sprintf("00000000-0000-4000-8000-0000000000%d%d.jsonl", p, i))
			data := `{"type":"metadata","workdir":"` + project + `","createdAt":"2026-01-01T00:00:00Z"}` + "\n" + msg(fmt.Sprintf("2026-01-01T00:00:0%dZ", i+1), fmt.Sprintf("prompt %d of %s", i, project))
			os.WriteFile(name, []byte(data), 0o600)
			if i != 1 {
				needles = append(needles, name)
			}
		}
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	all, err := ReadCatalogs(state, nil, projects)
	if err != nil || len(all) != 9 {
		t.Fatalf("ReadCatalogs = %d entries (%v), want 9", len(all), err)
	}
	got, err := ReadCatalogsPicked(state, nil, projects, needles)
	if err != nil || len(got) != len(needles) {
		t.Fatalf("ReadCatalogsPicked = %d entries (%v), want %d", len(got), err, len(needles))
	}
	// One picker, one call per project (as search does).
	var p CatalogPicker
	var each []Entry
	for _, project := range projects {
		es, err := p.Read(state, nil, []string{project}, needles)
		if err != nil {
			t.Fatal(err)
		}
		each = append(each, es...)
	}
	if len(each) != len(needles) {
		t.Fatalf("CatalogPicker.Read per project = %d entries, want %d", len(each), len(needles))
	}
	for _, g := range append(got, each...) {
		i := slices.IndexFunc(all, func(e Entry) bool { return e.File == g.File })
		if i < 0 || !slices.Contains(needles, g.File) || *g.Session != *all[i].Session || g.Project != all[i].Project {
			t.Errorf("picked %s = %+v", g.File, *g.Session)
		}
	}
}
