package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// writeTestCatalog writes a catalog where ReadCatalogs finds it; pretty: as a
// hand-edited file (indented, which the line decoder refuses).
func writeTestCatalog(t *testing.T, state string, c *indexer.Catalog, pretty bool) {
	t.Helper()
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if pretty {
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "  "); err != nil {
			t.Fatal(err)
		}
		data = b.Bytes()
	}
	dir := filepath.Join(state, "index", c.Source, indexer.ProjectKey(c.Project))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, indexer.CatalogName), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// printCatalogs prints what printEntries prints of selectSessions's entries,
// for every type and width, and leaves to it the rows it cannot order.
func TestPrintCatalogsIsPrintEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	titles := []string{"", "fix the build", "héllo 日本語 ✓", "evil \x1b[31mred\x1b[0m", "bad \xff byte", "\u202eflip", "a very long prompt that goes on and on past sixty characters for sure, and more",
		"tab\tand\nnewline", "  spaced   out  "}
	times := []string{"2026-11-22T08:00:00Z", "2026-11-22T08:00:00.5Z", "2026-11-22T08:00:30.123Z", "2026-11-21T23:59:59.999Z", "2025-01-01T00:00:00Z", "", "garbage", "2026-11-22T08:00"}
	for _, dup := range []bool{false, true} {
		state := t.TempDir()
		for ci := range 12 {
			c := &indexer.Catalog{Version: indexer.CatalogVersion, Generator: "sessionwatch", Source: []string{"wave", "claude", "codex"}[ci%3],
				Layout: "wave", Project: fmt.Sprintf("/home/u/p%d", ci/3)}
			for si := range r.IntN(40) {
				s := &indexer.Session{ID: fmt.Sprintf("%08x-%d-%d", r.Uint32N(1<<12), ci, si), Type: []string{"main", "main", "subagent"}[r.IntN(3)],
					File:  fmt.Sprintf("/store/%d/%d.jsonl", ci, si),
					Title: titles[r.IntN(len(titles))], FirstPrompt: titles[r.IntN(len(titles))],
					CreatedAt: times[r.IntN(len(times))], LastActiveAt: times[r.IntN(len(times))],
					MessageCount: r.IntN(5000), SizeBytes: r.Int64N(1 << 30), Model: []string{"", "gpt-5", "claude-opus-4-7", "x\ty"}[r.IntN(4)],
					Hidden: r.IntN(10) == 0}
				c.Sessions = append(c.Sessions, s)
			}
			if dup && ci == 3 && len(c.Sessions) > 0 {
				// The same id and time twice in one source: only file and project order them.
				c.Sessions[0].Type, c.Sessions[0].Hidden = "main", false
				twin := *c.Sessions[0]
				twin.File += ".twin"
				c.Sessions = append(c.Sessions, &twin)
			}
			if ci >= 6 && ci <= 8 {
				// One id and time in three sources: the source orders them.
				c.Sessions = append(c.Sessions, &indexer.Session{ID: "shared", Type: "main", File: fmt.Sprintf("/store/%d/shared.jsonl", ci),
					LastActiveAt: times[0], Title: c.Source})
			}
			writeTestCatalog(t, state, c, ci == 5)
		}
		cfg := &config.Config{StateDir: state}
		for _, typ := range []string{"main", "subagent", "all"} {
			sc := scope{all: true, typ: typ}
			entries, err := selectSessions(cfg, sc)
			if err != nil {
				t.Fatal(err)
			}
			for _, width := range []int{0, 200, 80, 40} {
				var want, got bytes.Buffer
				printEntries(&want, entries, width)
				// One worker, or several (GOMAXPROCS of them, up to 4).
				procs := runtime.GOMAXPROCS(1 + 3*(width%3))
				n, done, err := printCatalogs(&got, cfg, sc, width)
				runtime.GOMAXPROCS(procs)
				if err != nil {
					t.Fatal(err)
				}
				if dup && typ != "subagent" {
					if done || got.Len() != 0 {
						t.Fatalf("dup %s: printCatalogs printed %d rows of a listing with a tie it cannot break", typ, n)
					}
					continue
				}
				if !done || n != len(entries) {
					t.Fatalf("%s width %d: printCatalogs = %d rows, done %v; want %d rows", typ, width, n, done, len(entries))
				}
				if n > 0 && got.String() != want.String() {
					t.Fatalf("%s width %d: table differs\n got:\n%s\nwant:\n%s", typ, width, got.String(), want.String())
				}
			}
		}
	}
}

// Enough catalogs for several workers (indexer.VisitCatalogs gives one a
// thousand): the joined tables print what one table prints.
func TestPrintCatalogsWorkers(t *testing.T) {
	state := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	for ci := range 3100 {
		c := &indexer.Catalog{Version: indexer.CatalogVersion, Generator: "sessionwatch", Source: []string{"wave", "claude", "codex"}[ci%3],
			Layout: "wave", Project: fmt.Sprintf("/home/u/p%d", ci)}
		for si := range 3 {
			c.Sessions = append(c.Sessions, &indexer.Session{ID: fmt.Sprintf("%d-%d", ci, si), Type: "main", File: fmt.Sprintf("/s/%d/%d", ci, si),
				LastActiveAt: fmt.Sprintf("2026-%02d-%02dT%02d:%02d:00Z", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60)),
				Title:        []string{"plain", "evil \x1b[31m"}[r.IntN(2)], Model: []string{"a", "bb"}[r.IntN(2)]})
		}
		writeTestCatalog(t, state, c, false)
	}
	cfg := &config.Config{StateDir: state}
	sc := scope{all: true, typ: "main"}
	entries, err := selectSessions(cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, width := range []int{0, 60} {
		var want, got bytes.Buffer
		printEntries(&want, entries, width)
		if n, done, err := printCatalogs(&got, cfg, sc, width); err != nil || !done || n != len(entries) {
			t.Fatalf("printCatalogs = %d rows, done %v, %v; want %d rows", n, done, err, len(entries))
		}
		if got.String() != want.String() {
			t.Fatalf("width %d: table differs from printEntries's", width)
		}
	}
}

// A MODEL cell is remembered from the row before, but not by reference: the
// strings printCatalogs is given point into a buffer that the next catalog is
// read over. Here the second catalog puts "abcd" where the first had a model
// that termSafe escapes, at the same offset: the remembered cell must not be
// taken for it.
func TestPrintCatalogsRemembersNoBuffer(t *testing.T) {
	state := t.TempDir()
	for i, model := range []string{"m\u202e", "abcd"} {
		c := &indexer.Catalog{Version: indexer.CatalogVersion, Generator: "sessionwatch", Source: "wave", Layout: "wave",
			Project: fmt.Sprintf("/p%d", i)}
		c.Sessions = []*indexer.Session{{ID: fmt.Sprintf("id-%d", i), Type: "main", File: fmt.Sprintf("/f%d", i),
			LastActiveAt: fmt.Sprintf("2026-11-2%dT08:00:00Z", i), Model: model, Title: "t"}}
		writeTestCatalog(t, state, c, false)
	}
	cfg := &config.Config{StateDir: state}
	sc := scope{all: true, typ: "main"}
	entries, err := selectSessions(cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	printEntries(&want, entries, 0)
	if _, done, err := printCatalogs(&got, cfg, sc, 0); err != nil || !done {
		t.Fatalf("printCatalogs: done %v, %v", done, err)
	}
	if got.String() != want.String() {
		t.Fatalf("table differs\n got:\n%s\nwant:\n%s", got.String(), want.String())
	}
}
