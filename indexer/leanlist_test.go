package indexer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// checkProveVisit holds ProveVisit over ixs (fresh indexers of state's
// sources) to want (ProveLean's answers) and, when it proves them all, its
// visit to VisitCatalogs's: the same sessions, each once.
func checkProveVisit(t *testing.T, name, state string, ixs []*Indexer, want []bool) {
	t.Helper()
	for _, workers := range []int{1, 3} {
		var mu sync.Mutex
		var got []string
		afters, afterAt := 0, -1
		proven, visited, err := ProveVisit(state, nil, ixs, workers, func(w int, en Entry) {
			if w < 0 || w >= workers {
				t.Errorf("%s: visit from worker %d of %d", name, w, workers)
			}
			mu.Lock()
			got = append(got, visitKey(en))
			mu.Unlock()
		}, func() {
			mu.Lock()
			afters++
			afterAt = len(got) // every visit before it
			mu.Unlock()
		})
		if visited && !slices.Contains(proven, false) && (afters != 1 || afterAt != len(got)) {
			t.Errorf("%s (%d workers): the call after the visits made %d times, after %d of %d visits", name, workers, afters, afterAt, len(got))
		}
		if !slices.Equal(proven, want) {
			t.Errorf("%s (%d workers): ProveVisit proven %v, want %v (ProveLean)", name, workers, proven, want)
		}
		if !visited || slices.Contains(proven, false) {
			// The listing is the usual one: what was visited is not used.
			continue
		}
		var ref []string
		refErr := VisitCatalogs(state, nil, nil, 1, func(_ int, en Entry) { ref = append(ref, visitKey(en)) })
		slices.Sort(got)
		slices.Sort(ref)
		if !slices.Equal(got, ref) || fmt.Sprint(err) != fmt.Sprint(refErr) {
			t.Errorf("%s (%d workers): ProveVisit visited %d sessions (err %v), VisitCatalogs %d (err %v)\ngot  %q\nwant %q", name, workers, len(got), err, len(ref), refErr, got, ref)
		}
	}
}

func visitKey(en Entry) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d", en.Source, en.Project, en.ID, en.File, en.LastActiveAt, en.Title, en.MessageCount)
}

// leanStore indexes a copy of testdata/<layout>/basic/store as source
// layout, in state; it returns the root.
func leanStore(t *testing.T, layout, state string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	copyTree(t, filepath.Join("testdata", layout, "basic", "store"), root)
	ix := newLayoutIndexer(t, layout, root, state, false)
	ix.Reconcile()
	return root
}

// ProveVisit answers as ProveLean does, source by source, and visits what
// VisitCatalogs visits, for catalogs as the writer leaves them and for the
// ones it reads another way: a resume file out of step with its catalog (read
// in full, matched by checksum), none at all (not proven), a hand-edited
// catalog, a catalog directory that is a symlink (listed, not proved), and
// a source with catalogs and no indexer (listed only, hand-edited or not).
func TestProveVisitAgreesWithProveLean(t *testing.T) {
	layouts := []string{"wave", "claude", "codex", "gemini", "llxprt"}
	edits := map[string]func(t *testing.T, state, src string){
		"as written": func(*testing.T, string, string) {},
		"resume reversed": func(t *testing.T, state, src string) {
			forEachCatalog(t, state, src, func(cat string) {
				res := filepath.Join(filepath.Dir(cat), ResumeName)
				data, err := os.ReadFile(res)
				if err != nil {
					t.Fatal(err)
				}
				head, rest, _ := bytes.Cut(data, []byte("\n"))
				tails, states, _ := bytes.Cut(rest, []byte("\n"+resumeStatesLine+"\n"))
				lines := bytes.Split(tails, []byte("\n"))
				for i := range lines {
					lines[i] = bytes.TrimSuffix(lines[i], []byte(","))
				}
				slices.Reverse(lines)
				out := append(append(head, '\n'), bytes.Join(lines, []byte(",\n"))...)
				out = append(append(out, "\n"+resumeStatesLine+"\n"...), states...)
				os.WriteFile(res, out, 0o600)
			})
		},
		"resume gone": func(t *testing.T, state, src string) {
			forEachCatalog(t, state, src, func(cat string) {
				os.Remove(filepath.Join(filepath.Dir(cat), ResumeName))
			})
		},
		"catalog edited": func(t *testing.T, state, src string) {
			// A hand-edited catalog: a member the fast decoder does not know
			// in each session line.
			forEachCatalog(t, state, src, func(cat string) {
				data, _ := os.ReadFile(cat)
				os.WriteFile(cat, bytes.ReplaceAll(data, []byte("\n{\"id\":"), []byte("\n{\"note\":1, \"id\":")), 0o600)
			})
		},
		"catalog dir a symlink": func(t *testing.T, state, src string) {
			forEachCatalog(t, state, src, func(cat string) {
				dir := filepath.Dir(cat)
				moved := filepath.Join(t.TempDir(), "moved")
				if err := os.Rename(dir, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, dir); err != nil {
					t.Fatal(err)
				}
			})
		},
		"listed catalogs unreadable": func(t *testing.T, state, src string) {
			// Catalogs that do not decode, of two sources only listed: the
			// errors in VisitCatalogs's order.
			forEachCatalog(t, state, "other", func(cat string) { os.WriteFile(cat, []byte("not a catalog\n"), 0o600) })
			for _, key := range []string{"k2", "k1"} {
				dir := filepath.Join(CatalogDir(state, "aaa"), key)
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, CatalogName), []byte("{\n"), 0o600)
			}
		},
		"resume tail with a leading zero": func(t *testing.T, state, src string) {
			// Not JSON: the full decoder rejects the resume file, so do we.
			forEachCatalog(t, state, src, func(cat string) {
				res := filepath.Join(filepath.Dir(cat), ResumeName)
				data, _ := os.ReadFile(res)
				os.WriteFile(res, bytes.Replace(data, []byte(`,"size":`), []byte(`,"size":0`), 1), 0o600)
			})
		},
		"resume tail hand-edited": func(t *testing.T, state, src string) {
			// A tail with its members in another order: valid, not tailLite's form.
			forEachCatalog(t, state, src, func(cat string) {
				res := filepath.Join(filepath.Dir(cat), ResumeName)
				data, _ := os.ReadFile(res)
				os.WriteFile(res, bytes.Replace(data, []byte(`"tail":{"dev":`), []byte(`"tail":{"longLine":false,"dev":`), 1), 0o600)
			})
		},
	}
	for _, name := range []string{"catalog edited", "catalog dir a symlink"} {
		// The same to the source only listed: proven, and listed as
		// VisitCatalogs lists it.
		edit := edits[name]
		edits["listed "+name] = func(t *testing.T, state, _ string) { edit(t, state, "other") }
	}
	for name, edit := range edits {
		for _, layout := range layouts {
			t.Run(strings.ReplaceAll(name, " ", "_")+"/"+layout, func(t *testing.T) {
				state := t.TempDir()
				root := leanStore(t, layout, state)
				// A second source, only listed: its catalogs, no indexer.
				other := t.TempDir()
				leanStore(t, "wave", other)
				if err := os.Rename(CatalogDir(other, "wave"), CatalogDir(state, "other")); err != nil {
					t.Fatal(err)
				}
				edit(t, state, layout)
				want := newLayoutIndexer(t, layout, root, state, false).ProveLean()
				checkProveVisit(t, name, state, []*Indexer{newLayoutIndexer(t, layout, root, state, false)}, []bool{want})
			})
		}
	}
}

// ProveVisit proves several sources at once, each as ProveLean does: one
// changed source is not proven, the others are.
func TestProveVisitSources(t *testing.T) {
	state := t.TempDir()
	layouts := []string{"wave", "claude", "codex", "gemini", "llxprt"}
	roots := map[string]string{}
	for _, l := range layouts {
		roots[l] = leanStore(t, l, state)
	}
	fresh := func() []*Indexer {
		var ixs []*Indexer
		for _, l := range layouts {
			ixs = append(ixs, newLayoutIndexer(t, l, roots[l], state, false))
		}
		return ixs
	}
	checkProveVisit(t, "unchanged", state, fresh(), []bool{true, true, true, true, true})
	// A new file in claude's store: that source alone is not proven.
	ix := newLayoutIndexer(t, "claude", roots["claude"], state, false)
	ix.Load()
	var urel string
	for u := range ix.units.all() {
		urel = u.rel
		break
	}
	if !addTwin(t, ix, urel) {
		t.Fatalf("no twin for %s", urel)
	}
	checkProveVisit(t, "claude grew", state, fresh(), []bool{true, false, true, true, true})
}

// forEachCatalog calls fn with each catalog file of source src in state.
func forEachCatalog(t *testing.T, state, src string, fn func(cat string)) {
	t.Helper()
	cats, _ := filepath.Glob(filepath.Join(CatalogDir(state, src), "*", CatalogName))
	if len(cats) == 0 {
		t.Fatalf("no catalog of %s", src)
	}
	for _, c := range cats {
		fn(c)
	}
}

// FuzzParseResumeLineLite: what parseResumeLineLite accepts, with a tail
// tailLiteJSON reads, parseResumeLine accepts alike (the lean proof's shortcut
// sees no line the full read would reject).
func FuzzParseResumeLineLite(f *testing.F) {
	f.Add([]byte(`{"line":"0123abcd","id":"a","file":"/r/a.jsonl","tail":{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5}}`))
	f.Add([]byte(`{"line":"0123abcd","id":"a","file":"/r/a.jsonl","tail":{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5,"fp":"00"}}`))
	f.Add([]byte(`{"line":"0123abcd","id":"a\"b","file":"/r/a.jsonl","tail":{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5}, "x":1}`))
	f.Add([]byte(`{"line":"0123abcd","id":"a","file":"/r/a.jsonl","tail":{"dev":1}}}`))
	f.Add([]byte(`{"line":"0123abcd","id":"a","file":"/r/a.jsonl","tail":{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5}`))
	f.Add([]byte(`{"line":"00000000","id":"0\b0","file":"0000000000","tail":{"dev":0,"ino":0,"offset":0,"mtime":0,"size":000}}`))
	f.Add([]byte(`{"line":"00000000","id":"0","file":"0","tail":{"dev":0,"ino":0,"offset":-01,"mtime":0,"size":10,"dep":"a:01"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		lite, ok := parseResumeLineLite(line)
		var tl Tail
		if !ok || !tailLiteJSON(lite.tail, &tl) {
			return
		}
		full, ok := parseResumeLine(line)
		if !ok || full.sum != lite.sum || !bytes.Equal(full.id, lite.id) || !bytes.Equal(full.file, lite.file) || !bytes.Equal(full.tail, lite.tail) {
			t.Errorf("parseResumeLine(%q) = %+v, %v; lite %+v", line, full, ok, lite)
		}
	})
}

// FuzzStatesLineEnd: statesLineEnd finds the states line as a search of the
// whole text does, whatever was read before.
func FuzzStatesLineEnd(f *testing.F) {
	f.Add([]byte("{head\n{a},\n{b}\n],\"states\":[\nnull\n]}"), 5)
	f.Add([]byte("{head\n],\"states\":[\n"), 0)
	f.Add([]byte("{head\n],\"states\":["), 3)
	f.Add([]byte("x],\"states\":[\n\n],\"states\":[\n"), 20)
	f.Fuzz(func(t *testing.T, data []byte, from int) {
		if from < 0 || from > len(data) {
			return
		}
		const marker = "\n" + resumeStatesLine + "\n"
		// The reference: the first marker in data, unless it ends before from.
		want, wantOK := 0, false
		if i := bytes.Index(data, []byte(marker)); i >= 0 && i+len(marker) > from {
			want, wantOK = i+len(marker), true
		}
		if i := bytes.Index(data, []byte(marker)); i >= 0 && i+len(marker) <= from {
			return // found by an earlier read
		}
		got, ok := statesLineEnd(data, from)
		if got != want || ok != wantOK {
			t.Errorf("statesLineEnd(%q, %d) = %d, %v, want %d, %v", data, from, got, ok, want, wantOK)
		}
	})
}

// readResumeTailsInto reads what readResumeTails reads, in any buffer.
func TestReadResumeTailsInto(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat(`{"line":"00000000","id":"x","file":"/f","tail":{"dev":1}},`+"\n", 2000)
	for i, text := range []string{
		"{h\n{a}\n],\"states\":[\nnull\n]}\n",
		"{h\n" + big + "],\"states\":[\n" + strings.Repeat("null,\n", 10) + "]}\n",
		"{h\n{a}\n]}\n", // no states line
		"",
	} {
		path := filepath.Join(dir, fmt.Sprint(i))
		os.WriteFile(path, []byte(text), 0o600)
		want, wantErr := readResumeTails(path, nil)
		for k, buf := range [][]byte{nil, make([]byte, 0, 7), make([]byte, 0, 1<<20)} {
			got, err := readResumeTailsInto(path, buf, []int{0, 5000, 1 << 20}[k])
			if (err == nil) != (wantErr == nil) || wantErr == nil && !bytes.Equal(got, want) {
				t.Errorf("%d: readResumeTailsInto = %d bytes, %v; readResumeTails %d bytes, %v", i, len(got), err, len(want), wantErr)
			}
		}
	}
	if _, err := readResumeTailsInto(filepath.Join(dir, "none"), nil, 0); !os.IsNotExist(err) {
		t.Errorf("missing file: %v, want not exist", err)
	}
}

// FuzzDecodeCatalogHead: decodeCatalogHead gives what json.Unmarshal of the
// head closed by "]}" gives, and fails where it fails.
func FuzzDecodeCatalogHead(f *testing.F) {
	f.Add([]byte(`{"version":1,"generator":"sessionwatch","source":"wave","layout":"wave","project":"/p","updatedAt":"2026-01-01T00:00:00Z","sessions":[`))
	f.Add([]byte(`{"version":1,"generator":"sessionwatch","source":"w\u0061ve","layout":"wave","project":"/p \"q\"","updatedAt":"","sessions":[`))
	f.Add([]byte(`{"version":1,"generator":"sessionwatch","source":"wave","layout":"wave","project":"/p","sessions":[`))
	f.Add([]byte(`{"version":2,"generator":"sessionwatch","source":"wave","layout":"wave","project":"/p","updatedAt":"","sessions":[`))
	f.Add([]byte(`{"version":1,"generator":"sessionwatch","source":"\xff","layout":"wave","project":"/p","updatedAt":"","sessions":[`))
	f.Add([]byte(`{"version":1,"generator":"sessionwatch","source":"a","layout":"b","project":"c","updatedAt":"d","extra":1,"sessions":[`))
	f.Fuzz(func(t *testing.T, head []byte) {
		var got, want Catalog
		ok := decodeCatalogHead(head, &got)
		wantErr := json.Unmarshal(append(append([]byte(nil), head...), "]}"...), &want)
		if ok != (wantErr == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Errorf("decodeCatalogHead(%q) = %+v, %v; json.Unmarshal %+v, %v", head, got, ok, want, wantErr)
		}
	})
}

// A split walk (parts of the root's entries on several workers) sees a
// change under any entry, and a unit no part finds.
func TestProveVisitSplitSeesEachPart(t *testing.T) {
	if !probeRaw {
		t.Skip("no split walk on this platform")
	}
	for _, layout := range []string{"wave", "claude", "gemini"} {
		state := t.TempDir()
		ix, root, units := leanUnits(t, layout, state)
		fresh := func() []*Indexer { return []*Indexer{newLayoutIndexer(t, layout, root, state, false)} }
		checkProveVisit(t, layout+" unchanged", state, fresh(), []bool{true})
		for _, urel := range units {
			path := ix.unitPath(urel)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			appendFile(t, path, "\n")
			checkProveVisit(t, layout+" append "+urel, state, fresh(), []bool{false})
			if err := os.Truncate(path, fi.Size()); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(path, fi.ModTime(), fi.ModTime())
			// Gone: the parts together find one unit fewer.
			os.Rename(path, path+".away")
			checkProveVisit(t, layout+" gone "+urel, state, fresh(), []bool{false})
			os.Rename(path+".away", path)
			checkProveVisit(t, layout+" back "+urel, state, fresh(), []bool{true})
		}
	}
}

// leanUnits makes leanStore's store of layout and returns a loaded indexer of
// it, its root and the units holding sessions that indexer knows, sorted.
func leanUnits(t *testing.T, layout, state string) (ix *Indexer, root string, units []string) {
	t.Helper()
	root = leanStore(t, layout, state)
	ix = newLayoutIndexer(t, layout, root, state, false)
	ix.Load()
	for u := range ix.units.all() {
		if u.hasSessions() {
			units = append(units, u.rel)
		}
	}
	slices.Sort(units)
	return ix, root, units
}
