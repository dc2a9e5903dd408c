package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Every session of every catalog is visited once, by workers numbered below
// the number asked for, never two visits at once for one worker; the strings
// are the catalog's.
func TestVisitCatalogsWorkers(t *testing.T) {
	defer func(n int) { catalogsPerWorker = n }(catalogsPerWorker)
	catalogsPerWorker = 2
	state := t.TempDir()
	want := map[string]string{}
	for ci := range 40 {
		c := &Catalog{Version: CatalogVersion, Generator: "sessionwatch", Source: "src", Layout: "wave", Project: fmt.Sprintf("/p/%d", ci)}
		for si := range ci % 7 {
			id := fmt.Sprintf("id-%d-%d", ci, si)
			c.Sessions = append(c.Sessions, &Session{ID: id, Type: "main", File: "/f/" + id, Title: "title of " + id})
			want[id] = c.Project
		}
		data, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(state, "index", c.Source, ProjectKey(c.Project))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, CatalogName), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	busy := map[int]bool{}
	got := map[string]string{}
	err := VisitCatalogs(state, nil, nil, 4, func(worker int, en Entry) {
		mu.Lock()
		if worker < 0 || worker >= 4 || busy[worker] {
			t.Errorf("visit from worker %d (busy %v)", worker, busy[worker])
		}
		busy[worker] = true
		mu.Unlock()
		if en.Title != "title of "+en.ID {
			t.Errorf("%s: title %q", en.ID, en.Title)
		}
		id := strings.Clone(en.ID) // en's strings are the worker's buffer
		mu.Lock()
		if _, dup := got[id]; dup {
			t.Errorf("%s visited twice", id)
		}
		got[id] = en.Project
		busy[worker] = false
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("visited %d sessions, want %d", len(got), len(want))
	}
	for id, p := range want {
		if got[id] != p {
			t.Errorf("%s: project %q, want %q", id, got[id], p)
		}
	}
}
