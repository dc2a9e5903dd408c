package search

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// randSumDocs makes n docs whose sessions come in runs, a session now and then
// coming back after others (two runs of one session), as the doc table of a
// segment.
func randSumDocs(rng *rand.Rand, n, sessions int) []docRec {
	docs := make([]docRec, 0, n)
	for len(docs) < n {
		u := uint32(rng.IntN(sessions))
		for range 1 + rng.IntN(12) {
			docs = append(docs, docRec{Unit: u, Sess: uint16(u % 3), Len: randLen(rng), Time: 1_700_000_000 + uint32(rng.IntN(1_000_000))})
		}
	}
	return docs[:n]
}

// randLen is a message length: mostly hundreds of terms, now and then the
// extremes.
func randLen(rng *rand.Rand) uint16 {
	switch rng.IntN(20) {
	case 0:
		return 0
	case 1:
		return 1<<16 - 1
	case 2:
		return uint16(1 + rng.IntN(4))
	}
	return uint16(200 + rng.IntN(1200))
}

// randTF is a term frequency: mostly small, now and then at and past the
// frontier table's end (sumBest), rarely 0 (a damaged list).
func randTF(rng *rand.Rand, zero bool) uint32 {
	switch r := rng.IntN(40); {
	case r == 0 && zero:
		return 0
	case r < 3:
		return uint32(sumBest - 2 + rng.IntN(5))
	case r < 5:
		return uint32(sumBest + rng.IntN(400))
	case r < 15:
		return 1
	}
	return uint32(1 + rng.IntN(20))
}

// TestSummarizeMatchesReference: summarize (and a scan of the same list in
// pieces, as a merge splices it) encodes the summary refSummarize does, on
// random doc tables (sessions in several runs) and lists (tfs past the table's
// end, lengths at the extremes).
func TestSummarizeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 9))
	for iter := range 300 {
		var w sumWriter
		docs := randSumDocs(rng, 1+rng.IntN(600), 1+rng.IntN(40))
		for i := range docs {
			w.doc(&docs[i])
		}
		// Several terms in a row through one writer: its scratch is reused.
		for term := range 4 {
			var tl termList
			var starts []int // where each posting begins
			density := 0.05 + rng.Float64()
			for d := range len(docs) {
				if rng.Float64() < density {
					starts = append(starts, len(tl.buf))
					tl.add(uint32(d), randTF(rng, true))
				}
			}
			if tl.n == 0 {
				continue
			}
			want, werr := w.refSummarize(tl.buf, tl.n)
			want = slices.Clone(want)
			got, err := w.summarize(tl.buf, tl.n)
			if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("iter %d term %d: summarize %x (%v), want %x (%v)", iter, term, got, err, want, werr)
			}
			// In pieces cut at postings.
			w.begin(tl.n)
			from := 0
			for from < len(tl.buf) {
				to := len(tl.buf)
				if k := rng.IntN(len(starts) + 1); k < len(starts) && starts[k] > from {
					to = starts[k]
				}
				if err := w.scan(tl.buf[:to], from); err != nil {
					t.Fatal(err)
				}
				from = to
			}
			if got := w.end(tl.n); !bytes.Equal(got, want) {
				t.Fatalf("iter %d term %d: in pieces %x, want %x", iter, term, got, want)
			}
		}
	}
}

// FuzzSummarize: on any bytes as a term's list, summarize fails where
// refSummarize fails and encodes what it encodes otherwise; the writer's
// scratch is left as begin expects after a failure (a good list after it
// summarizes the same).
func FuzzSummarize(f *testing.F) {
	var tl termList
	for d := range uint32(60) {
		tl.add(d, 1+d%5+d/50*70)
	}
	f.Add(tl.buf, uint32(3))
	f.Add([]byte{0x03, 0x02, 0x05, 0x02, 0x41, 0x80, 0x01, 0x00}, uint32(2))
	f.Add([]byte{0x80}, uint32(1))
	rng := rand.New(rand.NewPCG(1, 2))
	docs := randSumDocs(rng, 90, 7)
	f.Fuzz(func(t *testing.T, b []byte, df uint32) {
		var w sumWriter
		for i := range docs {
			w.doc(&docs[i])
		}
		df %= 200
		want, werr := w.refSummarize(b, df)
		want = slices.Clone(want)
		got, err := w.summarize(b, df)
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("summarize %x (%v), want %x (%v)", got, err, want, werr)
		}
		want, _ = w.refSummarize(tl.buf, tl.n)
		want = slices.Clone(want)
		if got, err := w.summarize(tl.buf, tl.n); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after it, a good list: %x (%v), want %x", got, err, want)
		}
	})
}

// TestMergeSummarizedWhileSpliced merges random segments whose terms are in one
// input (the first, whose docs keep their numbers, or a later one) or in
// several, with dropped docs (remapped postings) in some inputs or none: the
// terms summarized as they are spliced write the same segment as the merge that
// summarizes each list after it (the writer's), and that segment holds each
// term's postings remapped and the summary refSummarize makes of them.
func TestMergeSummarizedWhileSpliced(t *testing.T) {
	defer func(d uint32) { sumMinDF = d }(sumMinDF)
	sumMinDF = 6
	rng := rand.New(rand.NewPCG(5, 77))
	for iter := range 40 {
		dir := t.TempDir()
		k := 2 + rng.IntN(4)
		drops := iter%2 == 1 // half the merges drop docs of some inputs
		var in []*segment
		var inDocs [][]docRec
		inTerms := make([]map[string][]tpost, k)
		for i := range k {
			docs := randSumDocs(rng, 20+rng.IntN(300), 12) // sessions recur across inputs
			inDocs = append(inDocs, docs)
			terms := map[string][]tpost{}
			add := func(name string, density float64) {
				for d := range len(docs) {
					if rng.Float64() < density {
						terms[name] = append(terms[name], tpost{uint32(d), randTF(rng, false)})
					}
				}
			}
			add("every", 0.9)
			add(fmt.Sprintf("only%d", i), 0.6) // in this input alone
			add(fmt.Sprintf("rare%d", i), 0.01)
			if i%2 == 0 {
				add("some", 0.3)
			}
			if i == k-1 {
				add("last", 0.5)
			}
			if i == 0 {
				terms["liar"] = []tpost{{0, 2}, {uint32(len(docs) - 1), 1}} // its dictionary says more
			}
			inTerms[i] = terms
			in = append(in, writeTestSegment(t, filepath.Join(dir, fmt.Sprintf("in%d", i)), docs, terms, rng.IntN(2) == 0))
		}
		rm := &remapper{dropped: make([][]uint32, k), base: make([]uint32, k)}
		var outDocs []docRec
		for i, docs := range inDocs {
			rm.base[i] = uint32(len(outDocs))
			for d := range docs {
				if drops && i%2 == 1 && rng.IntN(4) == 0 {
					rm.dropped[i] = append(rm.dropped[i], uint32(d))
					continue
				}
				outDocs = append(outDocs, docs[d])
			}
		}
		merge := func(name string, fused bool) string {
			path := filepath.Join(dir, name)
			w, err := newSegWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			w.units(nil)
			w.docs(outDocs, 0)
			m, err := newTermMerger(in, rm, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if fused {
				m.sum = &w.sum
			}
			if err := m.run(w.termSum); err != nil {
				t.Fatal(err)
			}
			if err := w.finish(); err != nil {
				t.Fatal(err)
			}
			return path
		}
		fusedPath, afterPath := merge("fused", true), merge("after", false)
		a, b := readBoth(t, fusedPath, afterPath)
		if !bytes.Equal(a, b) {
			t.Fatalf("iter %d: the merge summarizing while splicing wrote %d bytes unlike the one summarizing after (%d)", iter, len(a), len(b))
		}
		// The reference: each term's postings remapped, summarized by refSummarize.
		want := map[string][]tpost{}
		for i, terms := range inTerms {
			for name, ps := range terms {
				for _, p := range ps {
					if nd, ok := rm.remap(i, p.doc); ok {
						want[name] = append(want[name], tpost{nd, p.tf})
					}
				}
			}
		}
		out, err := openSegment(fusedPath, false)
		if err != nil {
			t.Fatal(err)
		}
		var ref sumWriter
		for i := range outDocs {
			ref.doc(&outDocs[i])
		}
		summed := 0
		err = out.dictScan("", func(e dictEntry) bool {
			post, err := out.postings(e)
			if err != nil {
				t.Fatal(err)
			}
			var got []tpost
			if err := decodePostings(post, func(doc, tf uint32) { got = append(got, tpost{doc, tf}) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want[e.term]) || e.df != uint32(len(got)) {
				t.Fatalf("iter %d term %q: df %d postings %v, want %v", iter, e.term, e.df, got, want[e.term])
			}
			delete(want, e.term)
			sum, err := out.summary(e)
			if err != nil {
				t.Fatal(err)
			}
			var wantSum []byte
			if e.df >= sumMinDF {
				if wantSum, err = ref.refSummarize(post, e.df); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(sum, wantSum) {
				t.Fatalf("iter %d term %q: summary %x, want %x", iter, e.term, sum, wantSum)
			}
			if len(sum) > 0 {
				summed++
			}
			return true
		})
		out.close()
		if err != nil {
			t.Fatal(err)
		}
		for name, ps := range want {
			if len(ps) > 0 {
				t.Fatalf("iter %d: term %q missing from the merge", iter, name)
			}
		}
		if summed == 0 {
			t.Fatalf("iter %d: no term summarized", iter)
		}
		for _, s := range in {
			s.close()
		}
	}
}

type tpost struct{ doc, tf uint32 }

// writeTestSegment writes a segment of docs and terms (with summaries unless
// noSum) and opens it. The dictionary overstates the df of "liar".
func writeTestSegment(t *testing.T, path string, docs []docRec, terms map[string][]tpost, noSum bool) *segment {
	t.Helper()
	w, err := newSegWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	w.noSum = noSum
	w.units(nil)
	w.docs(docs, 0)
	names := make([]string, 0, len(terms))
	for name := range terms {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var tl termList
		for _, p := range terms[name] {
			tl.add(p.doc, p.tf)
		}
		df := tl.n
		if name == "liar" {
			df += sumMinDF // a damaged dictionary: the merge goes by the postings
		}
		w.term(name, df, tl.buf)
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	s, err := openSegment(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSummarizeFrontiersBounded: the frontiers a summary holds are those of
// its sessions, however many runs the sessions' docs are in: a session of a
// 60-pair frontier whose docs alternate with another's (a run per doc, a
// session appended to across many flushes) keeps about 60 pairs, not 60 a
// run (as summarize did before scan: one frontier per session).
func TestSummarizeFrontiersBounded(t *testing.T) {
	// Runs of 1 doc (the frontier kept as pairs) and of 20 (as a table).
	for _, runLen := range []uint32{1, 20} {
		const runs = 4000
		var w sumWriter
		var tl termList
		for d := range 2 * runs * runLen {
			a := d/runLen%2 == 0
			u, ln, tf := uint32(1), uint16(300), uint32(1)
			if a {
				u, ln = 0, 1000
				if i := d/runLen/2*runLen + d%runLen; i < 60 {
					// Session 0: tf and length growing together, a frontier of
					// 60 pairs; then pairs it beats.
					ln, tf = uint16(100+i), i+1
				}
			}
			w.doc(&docRec{Unit: u, Len: ln, Time: d})
			tl.add(d, tf)
		}
		want, err := w.refSummarize(tl.buf, tl.n)
		if err != nil {
			t.Fatal(err)
		}
		want = slices.Clone(want)
		got, err := w.summarize(tl.buf, tl.n)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("runs of %d: summarize %x (%v), want %x", runLen, got, err, want)
		}
		live := 0
		for _, st := range w.state {
			live += int(st.nfront)
		}
		if live != 61 {
			t.Fatalf("runs of %d: %d frontier pairs, want 61", runLen, live)
		}
		if c := cap(w.pairs); c > 4*live+4*sumBest {
			t.Fatalf("runs of %d: %d pairs held for %d sessions' %d frontier pairs (%d runs)", runLen, c, len(w.state), live, 2*runs)
		}
	}
}
