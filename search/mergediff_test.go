package search

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A differential test of the merge's one-pass summaries: random segment sets
// (sessions in runs recurring across inputs, tfs about the frontier table's end
// and of many varint bytes, lengths at the extremes, dictionaries that overstate
// or understate df, dropped docs in some inputs, damaged postings) merged
// through the merge as it is (termMerger.sum: summarized while spliced) and
// through the merge as it was (spliced, then each list summarized after by
// refSummarize), whole or cut in two into a .part file: the same bytes, or the
// same failure.

// chooser makes a merge's choices from the fuzzer's bytes, then from rng.
type chooser struct {
	b   []byte
	rng *rand.Rand
}

func (c *chooser) n(k int) int {
	if len(c.b) > 0 {
		v := int(c.b[0])
		c.b = c.b[1:]
		return v % k
	}
	return c.rng.IntN(k)
}

// tf is a term frequency about the values where encodings and the frontier
// table change.
func (c *chooser) tf() uint32 {
	switch c.n(16) {
	case 0:
		return uint32(sumBest - 2 + c.n(5)) // 62..66
	case 1:
		return []uint32{0, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 28, 1<<31 + 7, 1<<32 - 1}[c.n(9)]
	case 2:
		return uint32(sumBest + c.n(300))
	case 3, 4:
		return uint32(1 + c.n(63))
	case 5, 6, 7:
		return uint32(1 + c.n(6))
	}
	return 1
}

func (c *chooser) length() uint16 {
	switch c.n(12) {
	case 0:
		return 0
	case 1:
		return 1<<16 - 1
	case 2:
		return uint16(1 + c.n(3))
	case 3:
		return uint16(1<<16 - 2 - c.n(3))
	}
	return uint16(100 + c.n(400))
}

// diffSegment is one input: its docs, and per term its list and what its
// dictionary says.
type diffSegment struct {
	docs  []docRec
	names []string
	lists map[string][]byte
	dfs   map[string]uint32
	noSum bool
}

// mergeDiffCase builds one case (from seed and the fuzzer's shape bytes) and
// merges it both ways.
func mergeDiffCase(t *testing.T, dir string, seed uint64, shape []byte) {
	t.Helper()
	c := &chooser{b: shape, rng: rand.New(rand.NewPCG(seed, seed>>7^0x9e37))}
	defer func(d uint32) { sumMinDF = d }(sumMinDF)
	sumMinDF = uint32(2 + c.n(12))
	nsess := 1 + c.n(8)
	k := 1 + c.n(5)
	terms := []string{"a", "b", "c", "d", "e", "f"}[:1+c.n(6)]
	damaged := false
	var segs []diffSegment
	for range k {
		var s diffSegment
		n := 1 + c.n(90)
		if c.n(8) == 0 {
			n = 150 + c.n(250)
		}
		for len(s.docs) < n {
			u := uint32(c.n(nsess))
			for range 1 + c.n(10) {
				s.docs = append(s.docs, docRec{Unit: u, Sess: uint16(u % 3), Len: c.length(), Time: 1_700_000_000 + uint32(c.n(256))<<8})
			}
		}
		s.docs = s.docs[:n]
		s.lists, s.dfs = map[string][]byte{}, map[string]uint32{}
		for _, name := range terms {
			if c.n(4) == 0 {
				continue
			}
			var tl termList
			dens := []int{1, 3, 10, 30}[c.n(4)]
			for d := range s.docs {
				if c.n(32) < dens {
					tl.add(uint32(d), c.tf())
				}
			}
			if tl.n == 0 {
				tl.add(uint32(c.n(len(s.docs))), c.tf())
			}
			df := tl.n
			switch c.n(10) {
			case 0:
				df += uint32(1 + c.n(int(sumMinDF)+2)) // overstated
			case 1:
				df -= uint32(c.n(int(df))) // understated (at least 1)
			case 2:
				df = 1<<32 - 1
			}
			list := tl.buf
			if c.n(24) == 0 {
				// Damaged: cut, a byte changed, a varint left open.
				list = slices.Clone(list)
				switch c.n(4) {
				case 0:
					list = list[:c.n(len(list))]
				case 1:
					list[c.n(len(list))] ^= byte(1 + c.n(255))
				case 2:
					list = append(list, 0x80)
				default:
					list = append(list, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
				}
				damaged = true
			}
			s.names = append(s.names, name)
			s.lists[name], s.dfs[name] = list, df
		}
		s.noSum = damaged || c.n(2) == 0
		segs = append(segs, s)
	}
	// Drops: none in some inputs, some or all in others.
	rm := &remapper{dropped: make([][]uint32, k), base: make([]uint32, k)}
	var outDocs []docRec
	for i, s := range segs {
		rm.base[i] = uint32(len(outDocs))
		mode := c.n(4)
		for d := range s.docs {
			if mode == 1 && c.n(3) == 0 || mode == 2 && c.n(20) != 0 {
				rm.dropped[i] = append(rm.dropped[i], uint32(d))
				continue
			}
			outDocs = append(outDocs, s.docs[d])
		}
	}
	pivot := ""
	switch c.n(3) {
	case 1:
		pivot = terms[c.n(len(terms))]
	case 2:
		pivot = terms[c.n(len(terms))] + "\x00"
	}
	outNoSum := c.n(6) == 0

	var in []*segment
	for i, s := range segs {
		w, err := newSegWriter(filepath.Join(dir, fmt.Sprintf("in%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		w.noSum = s.noSum
		w.units(nil)
		w.docs(s.docs, 0)
		for _, name := range s.names {
			w.term(name, s.dfs[name], s.lists[name])
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		seg, err := openSegment(filepath.Join(dir, fmt.Sprintf("in%d", i)), false)
		if err != nil {
			t.Fatal(err)
		}
		defer seg.close()
		in = append(in, seg)
	}

	merge := func(name string, fused bool) (string, error) {
		path := filepath.Join(dir, name)
		w, err := newSegWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		w.noSum = outNoSum
		w.units(nil)
		w.docs(outDocs, 0)
		// The old path: spliced, then summarized after by refSummarize.
		old := func(sw *sumWriter, noSum bool, emit func(string, uint32, []byte, []byte, bool), failed *error) func(string, uint32, []byte, []byte, bool) {
			return func(term string, df uint32, post, sum []byte, summed bool) {
				if summed {
					t.Fatalf("term %q summarized by the merge through the old path", term)
				}
				if df >= sumMinDF && !noSum {
					var err error
					if sum, err = sw.refSummarize(post, df); err != nil {
						// The writer's failure: the segment is not written.
						sum = nil
						if *failed == nil {
							*failed = fmt.Errorf("term %q: %w", term, err)
						}
					}
				}
				emit(term, df, post, sum, true)
			}
		}
		run := func() error {
			lo, err := newTermMerger(in, rm, "", pivot)
			if err != nil {
				return err
			}
			if pivot == "" {
				if fused && !w.noSum {
					lo.sum = &w.sum
				}
				if fused {
					return lo.run(w.termSum)
				}
				return lo.run(old(&w.sum, w.noSum, w.termSum, &w.err))
			}
			hi, err := newTermMerger(in, rm, pivot, "")
			if err != nil {
				return err
			}
			part, err := newMergePart(path+".part", w)
			if err != nil {
				return err
			}
			defer part.remove()
			var herr error
			done := make(chan struct{})
			if fused {
				if !w.noSum {
					lo.sum, hi.sum = &w.sum, &part.sum
				}
				go func() {
					defer close(done)
					if herr = hi.run(part.term); herr == nil {
						herr = part.err
					}
				}()
				err = lo.run(w.termSum)
			} else {
				go func() {
					defer close(done)
					if herr = hi.run(old(&part.sum, part.noSum, part.term, &part.err)); herr == nil {
						herr = part.err
					}
				}()
				err = lo.run(old(&w.sum, w.noSum, w.termSum, &w.err))
			}
			<-done
			if err != nil {
				return err
			}
			if herr != nil {
				return herr
			}
			return part.copyTo(w)
		}
		if err := run(); err != nil {
			w.abort()
			return path, err
		}
		return path, w.finish()
	}
	newPath, newErr := merge("new", true)
	oldPath, oldErr := merge("old", false)
	if _, err := os.Stat(newPath + ".part"); err == nil {
		t.Fatalf("the .part file is left")
	}
	if newErr != nil && !errors.Is(newErr, errCorrupt) {
		t.Fatalf("new merge: %v, not errCorrupt", newErr)
	}
	if newErr == nil && oldErr == nil {
		a, b := readBoth(t, newPath, oldPath)
		if !bytes.Equal(a, b) {
			t.Fatalf("merged segment of %d bytes, the old merge's %d (pivot %q, k %d, sumMinDF %d)", len(a), len(b), pivot, k, sumMinDF)
		}
		os.Remove(newPath)
		os.Remove(oldPath)
		diffStats.same++
		return
	}
	if newErr != nil && oldErr == nil {
		// The one divergence allowed: the old merge wrote without a summary a
		// list whose docs are past the segment's (a term that the dictionaries
		// said is common but is not); the new one scanned it, and refused it.
		if !damaged || !oldHasDocPastEnd(t, oldPath) {
			t.Fatalf("new merge failed (%v) where the old one did not", newErr)
		}
		os.Remove(oldPath)
		diffStats.refused++
		return
	}
	if newErr == nil {
		t.Fatalf("new merge succeeded where the old one failed (%v)", oldErr)
	}
	diffStats.failed++
	if !damaged && !errors.Is(oldErr, errCorrupt) {
		t.Fatalf("both failed on undamaged lists: %v / %v", newErr, oldErr)
	}
}

// oldHasDocPastEnd: a term of the segment at path lists a doc it has not.
func oldHasDocPastEnd(t *testing.T, path string) bool {
	s, err := openSegment(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	past := false
	err = s.dictScan("", func(e dictEntry) bool {
		post, err := s.postings(e)
		if err != nil {
			t.Fatal(err)
		}
		var doc uint64
		for i := 0; i < len(post); {
			v, n := binary.Uvarint(post[i:])
			if n <= 0 {
				return true
			}
			i += n
			if v&1 == 0 {
				if _, n = binary.Uvarint(post[i:]); n <= 0 {
					return true
				}
				i += n
			}
			doc += v >> 1
			if doc >= s.ft.ndocs {
				past = true
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return past
}

func FuzzMergeSummarizedWhileSpliced(f *testing.F) {
	f.Add(uint64(1), []byte{})
	f.Add(uint64(2), []byte{5, 7, 4, 5, 3})
	f.Add(uint64(3), bytes.Repeat([]byte{0}, 64))
	f.Add(uint64(4), bytes.Repeat([]byte{1, 2, 3}, 40))
	f.Fuzz(func(t *testing.T, seed uint64, shape []byte) {
		mergeDiffCase(t, t.TempDir(), seed, shape)
	})
}

// diffStats counts the cases that merged alike, that the new merge refused
// (see above), and that both failed.
var diffStats struct{ same, refused, failed int }

// TestMergeDiff runs the differential merge on many random cases.
func TestMergeDiff(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	for seed := range uint64(n) {
		mergeDiffCase(t, t.TempDir(), seed, nil)
	}
	t.Logf("%+v", diffStats)
}

// TestMergeRefusesDocPastEnd: the one way the merge's one-pass summaries
// differ from the merge before them. A term its inputs' dictionaries call
// common (so it is summarized as spliced) but whose lists are short and name
// a doc the merged segment has not: the old merge wrote that list as it was
// (no summary for so few postings, so no scan of it), the merge now fails with
// errCorrupt, as both did for such a list of sumMinDF postings or more.
func TestMergeRefusesDocPastEnd(t *testing.T) {
	defer func(d uint32) { sumMinDF = d }(sumMinDF)
	sumMinDF = 8
	dir := t.TempDir()
	docs := make([]docRec, 10)
	for i := range docs {
		docs[i] = docRec{Unit: uint32(i / 4), Len: 50, Time: uint32(i)}
	}
	var in []*segment
	for i, ds := range [][]uint32{{0, 1, 2, 50}, {0, 1}} {
		var tl termList
		for _, d := range ds {
			tl.add(d, 2)
		}
		path := filepath.Join(dir, fmt.Sprintf("in%d", i))
		w, err := newSegWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		w.noSum = true
		w.units(nil)
		w.docs(docs, 0)
		w.term("x", tl.n+4, tl.buf) // the dictionary overstates: 8 and 6
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		s, err := openSegment(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		in = append(in, s)
	}
	rm := &remapper{dropped: make([][]uint32, 2), base: []uint32{0, 10}}
	w, err := newSegWriter(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.abort()
	w.units(nil)
	w.docs(append(slices.Clone(docs), docs...), 0)
	m, err := newTermMerger(in, rm, "", "")
	if err != nil {
		t.Fatal(err)
	}
	m.sum = &w.sum
	if err := m.run(w.termSum); !errors.Is(err, errCorrupt) {
		t.Fatalf("merge: %v, want errCorrupt", err)
	}
}

// readBoth reads the two files a merge through each path wrote.
func readBoth(t testing.TB, pa, pb string) ([]byte, []byte) {
	t.Helper()
	a, err := os.ReadFile(pa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}
