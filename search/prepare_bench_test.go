package search

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// BenchmarkPrepareLines: a read worker's share of the search index's per-line
// work (extract and tokenize) over a generated store of every line layout.
func BenchmarkPrepareLines(b *testing.B) {
	units := genUnits(b)
	x := &Index{}
	b.SetBytes(lineBytes(units))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, u := range units {
			p := x.Prepare(u.Ref)
			for j, l := range u.Lines {
				p.Line(u.Offs[j], l)
			}
			p.(*preparedLines).release() // as LinesPrepared does
		}
	}
}

// BenchmarkAppendTerms: the read workers' tokenizer over the message texts of a
// generated store of every line layout.
func BenchmarkAppendTerms(b *testing.B) {
	var texts []string
	var n int64
	for _, u := range genUnits(b) {
		for j, l := range u.Lines {
			for _, m := range ExtractLine(nil, u.Ref.Layout, u.Offs[j], l, false) {
				texts = append(texts, m.Text)
				n += int64(len(m.Text))
			}
		}
	}
	b.SetBytes(n)
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		for _, t := range texts {
			dst, _ = appendTerms(dst[:0], t)
		}
	}
}

// BenchmarkTermDict: a read worker's per-unit term dictionary over the terms of a
// generated store of every line layout (as the tokenizer leaves them, with the
// padding preparedLines adds).
func BenchmarkTermDict(b *testing.B) {
	var scratch []byte
	for _, u := range genUnits(b) {
		for j, l := range u.Lines {
			for _, m := range ExtractLine(nil, u.Ref.Layout, u.Offs[j], l, false) {
				scratch, _ = appendTerms(scratch, m.Text)
			}
		}
	}
	end := len(scratch)
	scratch = append(scratch, make([]byte, 8)...)
	b.SetBytes(int64(end))
	var d termDict
	for b.Loop() {
		d.reset()
		for t := scratch[:end]; len(t) > 0; {
			k := int(t[0])
			d.id(t[1 : 1+k : cap(t)])
			t = t[1+k:]
		}
	}
}

// BenchmarkAppendTermsJSON: the read workers' tokenizer over the message texts
// of a generated store of every line layout, JSON-encoded (as in a line).
func BenchmarkAppendTermsJSON(b *testing.B) {
	var raws [][]byte
	var n int64
	for _, u := range genUnits(b) {
		for j, l := range u.Lines {
			for _, m := range ExtractLine(nil, u.Ref.Layout, u.Offs[j], l, false) {
				raw, err := json.Marshal(m.Text)
				if err != nil {
					b.Fatal(err)
				}
				raws = append(raws, raw)
				n += int64(len(raw))
			}
		}
	}
	b.SetBytes(n)
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		for _, raw := range raws {
			dst, _ = appendTermsJSON(dst[:0], raw)
		}
	}
}

// BenchmarkLinesPrepared: the indexer's lock's share of the search index's
// per-line work: prepared units (tokenized beforehand, not timed) counted into
// the buffer's posting lists.
func BenchmarkLinesPrepared(b *testing.B) {
	units := genUnits(b)
	x, err := Open(Options{Dir: filepath.Join(b.TempDir(), DirName), SpillBytes: math.MaxInt})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	preps := make([]indexer.Prepared, len(units))
	for range b.N {
		b.StopTimer()
		for i, u := range units {
			preps[i] = x.Prepare(u.Ref)
			for j, l := range u.Lines {
				preps[i].Line(u.Offs[j], l)
			}
		}
		b.StartTimer()
		for i, u := range units {
			x.LinesPrepared(u.Ref, preps[i])
		}
	}
}

// BenchmarkCountTerms: a read worker's tokenizing and counting of each
// message's terms (the extraction done beforehand, not timed): as the terms are
// cut (fused, what message does) and through a buffer of terms read again
// (scratch, what it did before; now its fallback for a part that does not
// decode). cpu-ns/op is the process's CPU time an op (the figure to compare
// on a busy machine).
func BenchmarkCountTerms(b *testing.B) {
	benchCountTerms(b, genUnits(b))
}

// BenchmarkCountTerms6K: BenchmarkCountTerms on lines as the search bench
// store's (6 KiB of word salad on average, BenchmarkColdLines'), whose strings
// are mostly counted block by block (countBlocks).
func BenchmarkCountTerms6K(b *testing.B) {
	units, err := gen.LineUnits(b.TempDir(), gen.Spec{Projects: 2, Sessions: 6, Lines: 40, LineSize: 6144})
	if err != nil {
		b.Fatal(err)
	}
	benchCountTerms(b, units)
}

func benchCountTerms(b *testing.B, us []unitLines) {
	var units [][]textParts
	var n int64
	for _, u := range us {
		var ms []textParts
		for j, l := range u.Lines {
			for _, m := range ExtractLine(nil, u.Ref.Layout, u.Offs[j], l, false) {
				raw, err := json.Marshal(m.Text)
				if err != nil {
					b.Fatal(err)
				}
				ms = append(ms, textParts{raw: [][]byte{raw}})
				n += int64(len(raw))
			}
		}
		units = append(units, ms)
	}
	for _, fused := range []bool{true, false} {
		name := "scratch"
		if fused {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(n)
			p := new(preparedLines)
			cpu := processCPU()
			for b.Loop() {
				for _, ms := range units {
					for i := range ms {
						doc := uint32(len(p.docs)) + 1
						var k int
						if fused {
							k, _ = p.countTermsJSON(ms[i].raw[0], doc)
						} else {
							k = p.countScratch(doc, &ms[i])
						}
						p.addDoc(0, 0, "user", 0, k)
					}
					p.dict.reset()
					p.docs, p.pairs = p.docs[:0], p.pairs[:0]
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkColdLines: a read worker's per-line work for the search index on a
// cold pass, as the prefetcher does it: each line's members scanned once
// (indexer.Members), then extracted and tokenized from them. The lines are as
// the search bench store's (every layout, 6 KiB of word salad on average).
//
//	GOMAXPROCS=1 go test -run '^$' -bench ColdLines ./search/
func BenchmarkColdLines(b *testing.B) {
	units, err := gen.LineUnits(b.TempDir(), gen.Spec{Projects: 2, Sessions: 6, Lines: 40, LineSize: 6144})
	if err != nil {
		b.Fatal(err)
	}
	x := &Index{}
	b.SetBytes(lineBytes(units))
	b.ReportAllocs()
	var m indexer.Members
	for b.Loop() {
		for _, u := range units {
			p := x.Prepare(u.Ref).(*preparedLines)
			for j, l := range u.Lines {
				m.Scan(l)
				p.LineMembers(u.Offs[j], &m)
			}
			p.release()
		}
	}
}

// lineBytes is how many bytes the lines of units hold.
func lineBytes(units []unitLines) int64 {
	var n int64
	for _, u := range units {
		for _, l := range u.Lines {
			n += int64(len(l))
		}
	}
	return n
}
