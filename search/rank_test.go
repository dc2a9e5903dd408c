package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var rankVocab = []string{"parser", "config", "fix", "bug", "deploy", "zebra", "test", "flaky", "cache", "lint", "rare", "café"}

// rankCorpus writes sessions of random messages over a small vocabulary (common
// words, repeated words, messages of many lengths, equal and distinct times) in
// several rounds, indexing after each: sessions span segments and interleave
// inside one. Some files are removed (one of them archived), one is rewritten.
func rankCorpus(t *testing.T, seed uint64) *store {
	s := newStore(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	msg := func() string {
		var ws []string
		for range 1 + rng.IntN(30) {
			ws = append(ws, rankVocab[min(rng.IntN(len(rankVocab)), rng.IntN(len(rankVocab)))])
		}
		return strings.Join(ws, " ")
	}
	when := func() string {
		return time.Date(2026, 1, 1+rng.IntN(3), 0, 0, rng.IntN(3), 0, time.UTC).Format(time.RFC3339)
	}
	const n = 40
	paths := make([]string, n)
	archived := map[string]bool{}
	for round := range 4 {
		for i := range n {
			if rng.IntN(3) == 0 && round > 0 {
				continue
			}
			id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
			var b strings.Builder
			if round == 0 {
				b.WriteString(`{"type":"metadata","workdir":"/w/p` + fmt.Sprint(i%3) + `","createdAt":"2026-01-01T00:00:00Z"}` + "\n")
			}
			if i%5 == 0 {
				// Twins: equal scores and times, ordered by path.
				b.WriteString(waveMsg("2026-01-09T00:00:00Z", "user", "parser config twin "+fmt.Sprint(round)))
			}
			for k := range 1 + rng.IntN(4) {
				b.WriteString(waveMsg(when(), []string{"user", "assistant"}[k%2], msg()))
			}
			paths[i] = s.write("wave", "p/"+id+".jsonl", b.String())
		}
		x, _ := s.index(Options{SpillBytes: 2 << 10, KeepRemoved: func(_, path string, _ time.Time) bool { return archived[path] }})
		x.Close()
	}
	archived[paths[3]] = true
	os.Remove(paths[3])
	os.Remove(paths[4])
	os.WriteFile(paths[5], []byte(waveMsg(when(), "user", "parser config rewritten")), 0o600)
	x, _ := s.index(Options{SpillBytes: 2 << 10, KeepRemoved: func(_, path string, _ time.Time) bool { return archived[path] }})
	x.Close()
	return s
}

// TestRankedEqualsScan: for random corpora, the ranking from the session
// summaries (top-k walked from a heap, units read only for the sessions walked)
// returns exactly the hits, scores, order and matches of the exhaustive scan, for
// every limit, with summaries on every term, on none, and on some.
func TestRankedEqualsScan(t *testing.T) {
	defer func(v uint32) { sumMinDF = v }(sumMinDF)
	queries := []string{"parser", "parser config", "config parser fix", "bug -zebra", "parser -rare -café", "zebra lint cache",
		"cafe", "rare", "nothing", "parser -nothing", "fix fix", "parser -\"flaky test\"", "test -fla*", "twin", "twin parser"}
	for _, minDF := range []uint32{1, 6, 1 << 30} {
		for seed := range uint64(3) {
			sumMinDF = minDF
			s := rankCorpus(t, seed)
			r, err := OpenReader(filepath.Join(s.state, DirName))
			if err != nil {
				t.Fatal(err)
			}
			summarized := 0
			for _, sg := range r.segs {
				sg.dictScan("", func(e dictEntry) bool {
					if e.slen > 0 {
						summarized++
					}
					return true
				})
			}
			if minDF == 1<<30 && summarized != 0 || minDF < 1<<30 && summarized == 0 {
				t.Fatalf("minDF %d: %d terms summarized", minDF, summarized)
			}
			if len(r.segs) < 2 {
				t.Fatalf("%d segments; the test needs several", len(r.segs))
			}
			filters := []Filter{{}, {Archived: true}, {Keep: func(u Unit) bool { return !strings.Contains(u.Path, "00000001") }}}
			for _, q := range queries {
				pq, err := ParseQuery(q)
				if err != nil {
					t.Fatal(err)
				}
				for fi, f := range filters {
					all, err := r.searchScan(pq, f, 0)
					if err != nil {
						t.Fatal(err)
					}
					if q == "parser config" && fi == 0 && len(all) < 20 {
						t.Fatalf("%q: %d hits; the test would prove little", q, len(all))
					}
					for _, limit := range []int{0, 1, 3, 10} {
						want, err := r.searchScan(pq, f, limit)
						if err != nil {
							t.Fatal(err)
						}
						got, err := r.Search(pq, f, limit)
						if err != nil {
							t.Fatal(err)
						}
						if !reflect.DeepEqual(got, want) {
							t.Errorf("minDF %d seed %d: Search(%q, filter %d, %d) =\n%s\nwant (scan)\n%s", minDF, seed, q, fi, limit, dumpHits(got), dumpHits(want))
						}
						if limit > 0 && !reflect.DeepEqual(got, all[:min(limit, len(all))]) {
							t.Errorf("minDF %d seed %d: Search(%q, filter %d, %d) is not the first %d of the full ranking", minDF, seed, q, fi, limit, limit)
						}
					}
				}
			}
			r.Close()
		}
	}
}

func dumpHits(hs []Hit) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "  %s %v score %.17g last %d matches %+v\n", filepath.Base(h.Path), h.Removed, h.Score, h.Last, h.Matches)
	}
	return b.String()
}

// FuzzDecodeSummary: a summary of any bytes decodes or fails without panicking,
// and what the writer encodes decodes to the frontier it was given.
func FuzzDecodeSummary(f *testing.F) {
	var w sumWriter
	for i := range 40 {
		w.doc(&docRec{Unit: uint32(i / 7), Len: uint16(3 + i%11), Time: uint32(1700000000 + i)})
	}
	var tl termList
	for d := range uint32(40) {
		tl.add(d, 1+d%4)
	}
	good, err := w.summarize(tl.buf, tl.n)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		err := decodeSummary(b, func(e *sumEntry) {
			n++
			for i := 1; i < len(e.front); i++ {
				if bytes.Equal(b, good) && (e.front[i].tf <= e.front[i-1].tf || e.front[i].len <= e.front[i-1].len) {
					t.Errorf("frontier %v not ascending", e.front)
				}
			}
		})
		if bytes.Equal(b, good) && (err != nil || n != 6) {
			t.Errorf("the writer's summary: %d entries, %v; want 6 sessions", n, err)
		}
	})
}

// TestUvarintEqualsBinary: the fast varint reader agrees with encoding/binary on
// every length, on truncated input and on overlong encodings.
func TestUvarintEqualsBinary(t *testing.T) {
	var inputs [][]byte
	for _, v := range []uint64{0, 1, 127, 128, 129, 300, 16383, 16384, 1 << 21, 1<<63 + 5, ^uint64(0)} {
		b := binary.AppendUvarint(nil, v)
		for n := 0; n <= len(b); n++ {
			inputs = append(inputs, b[:n], append(b[:n:n], 0x01, 0x80))
		}
	}
	inputs = append(inputs, []byte{0x80, 0x80}, []byte{0xff}, []byte{0x80, 0x00}, bytes.Repeat([]byte{0xff}, 11))
	for _, b := range inputs {
		v, n := uvarint(b)
		wv, wn := binary.Uvarint(b)
		if v != wv || n != wn {
			t.Errorf("uvarint(% x) = %d, %d; binary.Uvarint: %d, %d", b, v, n, wv, wn)
		}
	}
}
