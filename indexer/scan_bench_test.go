package indexer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// Benchmarks of the JSON scanning every reader of a line shares (jsonscan.go),
// on generated transcripts of every layout:
//
//	go test -run '^$' -bench 'Scan|JSONString|Nested' -benchmem ./indexer/

// genLines is the lines of one generated session of the layout.
func genLines(b *testing.B, stores *stores, layout string, size int) ([][]byte, int64) {
	b.Helper()
	st := stores.get(b, gen.Spec{Layout: layout, Projects: 1, Sessions: 1, Lines: (2 << 20) / size, Spread: -1, LineSize: size, Seed: 1})
	data, err := os.ReadFile(st.Path(st.Sessions[0]))
	if err != nil {
		b.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")), int64(len(data))
}

// BenchmarkMembersScan is the one validating scan of each line (Members.Scan).
func BenchmarkMembersScan(b *testing.B) {
	stores := newStores(b)
	for _, layout := range gen.Layouts() {
		b.Run(layout, func(b *testing.B) {
			lines, n := genLines(b, stores, layout, 2048)
			b.SetBytes(n)
			var m indexer.Members
			cpu := processCPU()
			for b.Loop() {
				for _, l := range lines {
					m.Scan(l)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkNestedFields walks every object member of every line's members (and
// theirs) after the line's scan, as the layouts and the ledger do.
func BenchmarkNestedFields(b *testing.B) {
	stores := newStores(b)
	for _, layout := range gen.Layouts() {
		b.Run(layout, func(b *testing.B) {
			lines, n := genLines(b, stores, layout, 2048)
			b.SetBytes(n)
			var m indexer.Members
			var walk func(v []byte, depth int)
			count := 0
			walk = func(v []byte, depth int) {
				if len(v) == 0 || v[0] != '{' || depth > 3 {
					return
				}
				m.ObjectFields(v, func(k, v []byte) { count++; walk(v, depth+1) })
			}
			for b.Loop() {
				for _, l := range lines {
					m.Scan(l)
					m.ObjectFields(l, func(k, v []byte) { walk(v, 1) })
				}
			}
		})
	}
}

// BenchmarkJSONString decodes every string member value of the lines (at any
// depth), with JSONString and DecodeJSONString.
func BenchmarkJSONString(b *testing.B) {
	stores := newStores(b)
	for _, layout := range []string{"claude", "llxprt"} {
		lines, _ := genLines(b, stores, layout, 2048)
		var vals [][]byte
		var n int64
		var walk func(v []byte)
		walk = func(v []byte) {
			switch {
			case len(v) > 0 && v[0] == '"':
				vals = append(vals, v)
				n += int64(len(v))
			case len(v) > 0 && v[0] == '{':
				indexer.ObjectFields(v, func(k, v []byte) { walk(v) })
			case len(v) > 0 && v[0] == '[':
				var elems []json.RawMessage
				json.Unmarshal(v, &elems)
				for _, e := range elems {
					walk(e)
				}
			}
		}
		for _, l := range lines {
			walk(l)
		}
		for _, f := range []struct {
			name string
			fn   func([]byte) (string, bool)
		}{{"JSONString", indexer.JSONString}, {"DecodeJSONString", indexer.DecodeJSONString}} {
			b.Run(fmt.Sprintf("%s/%s", layout, f.name), func(b *testing.B) {
				b.SetBytes(n)
				for b.Loop() {
					for _, v := range vals {
						if _, ok := f.fn(v); !ok {
							b.Fatalf("%s(%q) failed", f.name, v)
						}
					}
				}
			})
		}
	}
}

// BenchmarkFoldLines is the catalog's fold of each line from its scan
// (MembersLiner.LineMembers on the read workers), the scan not counted, on lines
// of the 20k search store's size (6 KiB).
func BenchmarkFoldLines(b *testing.B) {
	stores := newStores(b)
	for _, layout := range gen.Layouts() {
		b.Run(layout, func(b *testing.B) {
			ly := lineLayout(b, layout)
			lines, n := genLines(b, stores, layout, 6144)
			scans := make([]indexer.Members, len(lines))
			for i, l := range lines {
				scans[i].Scan(l)
			}
			b.SetBytes(n)
			cpu := processCPU()
			for b.Loop() {
				acc := ly.NewAccumulator("u").(indexer.MembersLiner)
				for i := range scans {
					acc.LineMembers(&scans[i])
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's CPU time (user and system, every thread: the
// collector's too) in nanoseconds: on a loaded machine a benchmark's ns/op
// counts the time it waited for a core, its cpu-ns/op not.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
