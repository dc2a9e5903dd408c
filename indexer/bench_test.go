package indexer_test

// Benchmarks of the indexer's hot paths, on stores written by the load generator
// (cmd/sessionload/gen). Run them with
//
//	go test -run '^$' -bench . -benchmem ./indexer/
//
// Every benchmark reports bytes/s over the session bytes it handles; the append
// benchmark also reports the session-file bytes read per append.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// stores writes generated stores once per top-level benchmark, for its
// sub-benchmarks to share; they live in the top-level benchmark's temp dir.
type stores struct {
	dir string
	m   map[string]*gen.Store
}

func newStores(b *testing.B) *stores { return &stores{dir: b.TempDir(), m: map[string]*gen.Store{}} }

func (c *stores) get(b *testing.B, sp gen.Spec) *gen.Store {
	b.Helper()
	key := fmt.Sprintf("%+v", sp)
	if st := c.m[key]; st != nil {
		return st
	}
	st, err := gen.Plan(gen.DefaultRoot(sp.Layout, filepath.Join(c.dir, strconv.Itoa(len(c.m)))), sp)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Write(); err != nil {
		b.Fatal(err)
	}
	c.m[key] = st
	return st
}

func lineLayout(b *testing.B, name string) indexer.LineLayout {
	b.Helper()
	l, err := indexer.LookupLayout(name)
	if err != nil {
		b.Skipf("layout not in this build: %v", err)
	}
	ll, ok := l.(indexer.LineLayout)
	if !ok {
		b.Skipf("%s is not a JSONL layout", name)
	}
	return ll
}

func storeBytes(st *gen.Store) int64 {
	var n int64
	for _, s := range st.Sessions {
		if fi, err := os.Stat(st.Path(s)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// BenchmarkReadLines is the tail reader alone: splitting a transcript into lines.
func BenchmarkReadLines(b *testing.B) {
	stores := newStores(b)
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		b.Run("line="+strconv.Itoa(size), func(b *testing.B) {
			st := stores.get(b, gen.Spec{Layout: "wave", Projects: 1, Sessions: 1, Lines: (8 << 20) / size, Spread: -1, LineSize: size, Seed: 1})
			path := st.Path(st.Sessions[0])
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(storeBytes(st))
			b.ResetTimer()
			for b.Loop() {
				var t indexer.Tail
				n := 0
				if _, err := indexer.ReadLines(f, &t, func([]byte) { n++ }); err != nil || n == 0 {
					b.Fatalf("read %d lines: %v", n, err)
				}
			}
		})
	}
}

// BenchmarkSummarize folds every line of a transcript into the layout's accumulator
// and summarizes it: the per-layout parse cost of indexing.
func BenchmarkSummarize(b *testing.B) {
	stores := newStores(b)
	for _, layout := range gen.Layouts() {
		for _, size := range []int{512, 4 << 10} {
			b.Run(fmt.Sprintf("%s/line=%d", layout, size), func(b *testing.B) {
				ll := lineLayout(b, layout)
				st := stores.get(b, gen.Spec{Layout: layout, Projects: 1, Sessions: 1, Lines: (1 << 20) / size, Spread: -1, LineSize: size, Seed: 1})
				s := st.Sessions[0]
				data, err := os.ReadFile(st.Path(s))
				if err != nil {
					b.Fatal(err)
				}
				lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
				facts := indexer.FileFacts{Root: st.Root, Unit: s.Rel, Path: st.Path(s), Size: int64(len(data)), Mtime: time.Now()}
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for b.Loop() {
					acc := ll.NewAccumulator(s.Rel)
					for _, l := range lines {
						if err := acc.Line(l); err != nil {
							b.Fatal(err)
						}
					}
					var out indexer.Session
					out.Tail = &indexer.Tail{}
					acc.Summarize(&out, facts)
					if out.MessageCount != s.Messages {
						b.Fatalf("messageCount %d, want %d", out.MessageCount, s.Messages)
					}
				}
			})
		}
	}
}

// catalogBytes indexes a store of n sessions in one project and returns its catalog.
func catalogBytes(b *testing.B, stores *stores, n int) []byte {
	b.Helper()
	st := stores.get(b, gen.Spec{Layout: "wave", Projects: 1, Sessions: n, Lines: 8, LineSize: 1024, Subagents: 0.1, Seed: 1})
	state := b.TempDir()
	ix, err := indexer.New(indexer.Options{Source: "wave", Layout: "wave", Root: st.Root, StateDir: state})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Reconcile(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(indexer.CatalogDir(state, "wave"), indexer.ProjectKey(st.Sessions[0].Project), indexer.CatalogName))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkCatalogDecode(b *testing.B) {
	stores := newStores(b)
	for _, n := range []int{100, 1000} {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			data := catalogBytes(b, stores, n)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for b.Loop() {
				c, err := indexer.DecodeCatalog(data)
				if err != nil || len(c.Sessions) != n {
					b.Fatalf("decode: %d sessions, %v", len(c.Sessions), err)
				}
			}
		})
	}
}

func BenchmarkCatalogEncode(b *testing.B) {
	stores := newStores(b)
	for _, n := range []int{100, 1000} {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			data := catalogBytes(b, stores, n)
			c, err := indexer.DecodeCatalog(data)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for b.Loop() {
				out, err := c.Encode()
				if err != nil {
					b.Fatal(err)
				}
				if len(out) != len(data) {
					b.Fatalf("encoded %d bytes, decoded %d", len(out), len(data))
				}
			}
		})
	}
}

// BenchmarkReadCatalogs is what `sessionwatch list --all` does before printing.
func BenchmarkReadCatalogs(b *testing.B) {
	st := newStores(b).get(b, gen.Spec{Layout: "wave", Projects: 10, Sessions: 1000, Lines: 8, LineSize: 1024, Subagents: 0.1, Seed: 1})
	state := b.TempDir()
	ix, err := indexer.New(indexer.Options{Source: "wave", Layout: "wave", Root: st.Root, StateDir: state})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Reconcile(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		es, err := indexer.ReadCatalogs(state, nil, nil)
		if err != nil || len(es) != 1000 {
			b.Fatalf("read %d entries: %v", len(es), err)
		}
	}
}

// BenchmarkReconcileCold indexes a whole store into a fresh state dir: what
// `sessionwatch reindex` does, catalogs and native indexes written.
func BenchmarkReconcileCold(b *testing.B) {
	stores := newStores(b)
	for _, layout := range gen.Layouts() {
		b.Run(layout, func(b *testing.B) {
			lineLayout(b, layout)
			st := stores.get(b, gen.Spec{Layout: layout, Projects: 4, Sessions: 200, Lines: 32, LineSize: 1024, Subagents: 0.1, Seed: 1})
			b.SetBytes(storeBytes(st))
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				state := b.TempDir()
				ix, err := indexer.New(indexer.Options{Source: layout, Layout: layout, Root: st.Root, StateDir: state, NativeIndex: true})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := ix.Reconcile(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// indexedWaveStore writes a generated Wave store in a temp HOME and indexes it.
func indexedWaveStore(b *testing.B, sp gen.Spec) (*gen.Store, *indexer.Indexer) {
	b.Helper()
	home := b.TempDir()
	st, err := gen.Plan(gen.DefaultRoot("wave", home), sp)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Write(); err != nil {
		b.Fatal(err)
	}
	ix, err := indexer.New(indexer.Options{Source: "wave", Layout: "wave", Root: st.Root, StateDir: filepath.Join(home, "state"), NativeIndex: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Reconcile(); err != nil {
		b.Fatal(err)
	}
	return st, ix
}

// BenchmarkUpdateAppend appends one line to one session and updates the index:
// the daemon's per-batch work for a single append. It reports the session-file
// bytes read per append beyond the appended line ("overhead-B/op").
func BenchmarkUpdateAppend(b *testing.B) {
	for _, lines := range []int{8, 2048} {
		b.Run(fmt.Sprintf("file=%dlines", lines), func(b *testing.B) {
			st, ix := indexedWaveStore(b, gen.Spec{Layout: "wave", Projects: 1, Sessions: 20, Lines: lines, Spread: -1, LineSize: 1024, Seed: 1})
			read0 := ix.Stats().BytesRead
			clock := gen.UniqueClock()
			var appended int64
			b.ResetTimer()
			i := 0
			for b.Loop() {
				s := st.Sessions[i%len(st.Sessions)]
				i++
				line := st.Next(s, clock())
				f, err := os.OpenFile(st.Path(s), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					b.Fatal(err)
				}
				f.Write(line)
				f.Close()
				appended += int64(len(line))
				if err := ix.Update([]string{st.Path(s)}); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(max(i, 1))
			b.ReportMetric(float64(ix.Stats().BytesRead-read0-appended)/n, "overhead-B/op")
			b.SetBytes(appended / int64(max(i, 1)))
		})
	}
}

// BenchmarkResolve resolves a unique id prefix among 10,000 listed sessions.
func BenchmarkResolve(b *testing.B) {
	entries := make([]indexer.Entry, 10000)
	for i := range entries {
		entries[i] = indexer.Entry{Session: &indexer.Session{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i*7919, i)}}
	}
	ref := entries[7777].ID[:8]
	b.ResetTimer()
	for b.Loop() {
		if _, err := indexer.Resolve(entries, ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateBurst is one daemon batch at 1,000 appends/s: 100 appended lines,
// one to each of 100 sessions spread over 10 project dirs of 100 sessions each, then
// one Update. Every touched project's catalog and native index are re-rendered and
// rewritten, so this measures the flush path.
func BenchmarkUpdateBurst(b *testing.B) {
	st, ix := indexedWaveStore(b, gen.Spec{Layout: "wave", Projects: 10, Sessions: 1000, Lines: 8, Spread: -1, LineSize: 1024, Seed: 1})
	clock := gen.UniqueClock()
	paths := make([]string, 0, 100)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		b.StopTimer() // generating and appending the lines is the writers' work
		paths = paths[:0]
		for range 100 {
			s := st.Sessions[(i*37)%len(st.Sessions)]
			i++
			f, err := os.OpenFile(st.Path(s), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				b.Fatal(err)
			}
			f.Write(st.Next(s, clock()))
			f.Close()
			paths = append(paths, st.Path(s))
		}
		b.StartTimer()
		if err := ix.Update(paths); err != nil {
			b.Fatal(err)
		}
	}
}
