package search

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// The terms of a merge: a k-way merge of the inputs' sorted dictionaries. A large
// merge is cut in two at a term near the middle of the postings (terms before it,
// terms from it on), and the upper range is merged on a second goroutine into a
// part file that is appended to the segment once the lower range is written: the
// output is the same bytes as a merge in one piece.

// remapper maps an input's doc numbers to the merged segment's.
type remapper struct {
	dropped [][]uint32 // by input: the doc numbers it drops, ascending
	base    []uint32   // by input: the merged number of its first doc
}

// remap returns doc of input i's new number, or false if it is dropped: its old
// number minus the drops before it, plus the base.
func (r *remapper) remap(i int, doc uint32) (uint32, bool) {
	d := r.dropped[i]
	k := sort.Search(len(d), func(j int) bool { return d[j] >= doc })
	if k < len(d) && d[k] == doc {
		return 0, false
	}
	return r.base[i] + doc - uint32(k), true
}

// parallelMergeMin: a merge of inputs holding more postings bytes than this (and
// a second core) merges its terms in two ranges at once.
var parallelMergeMin uint64 = 4 << 20

// mergeSplits counts the merges cut in two (tests).
var mergeSplits atomic.Int64

// mergeTerms writes the merged terms and their postings to w.
func (job *mergeJob) mergeTerms(w *segWriter, rm *remapper) error {
	pivot := ""
	if job.pivot != nil {
		pivot = *job.pivot
	} else if runtime.GOMAXPROCS(0) > 1 {
		var err error
		if pivot, err = splitTerm(job.in); err != nil {
			return err
		}
	}
	if pivot == "" {
		m, err := newTermMerger(job.in, rm, "", "")
		if err != nil {
			return err
		}
		m.yield = job.yield
		if !w.noSum {
			m.sum = &w.sum
		}
		return m.run(w.termSum)
	}
	lo, err := newTermMerger(job.in, rm, "", pivot)
	if err != nil {
		return err
	}
	hi, err := newTermMerger(job.in, rm, pivot, "")
	if err != nil {
		return err
	}
	lo.yield, hi.yield = job.yield, job.yield
	part, err := newMergePart(job.path+".part", w)
	if err != nil {
		return err
	}
	if !w.noSum {
		lo.sum, hi.sum = &w.sum, &part.sum
	}
	defer part.remove()
	mergeSplits.Add(1)
	var wg sync.WaitGroup
	var herr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if herr = hi.run(part.term); herr == nil {
			herr = part.err
		}
	}()
	err = lo.run(w.termSum)
	wg.Wait()
	if err != nil {
		return err
	}
	if herr != nil {
		return herr
	}
	return part.copyTo(w)
}

// termMerger merges the terms of one range [from, to) of the inputs.
type termMerger struct {
	in   []*segment
	rm   *remapper
	its  []*dictIter
	to   string // "": to the end
	tl   termList
	pbuf []byte // the postings being read, reused
	// yield is called before each term (mergeJob.yield); its error ends the run
	yield func() error
	// sum is the summarizer of the writer the terms go to (nil: no summaries):
	// a term whose postings need no remap is summarized as its list is
	// spliced, in the one pass that finds where each input's list ends.
	sum *sumWriter
}

func newTermMerger(in []*segment, rm *remapper, from, to string) (*termMerger, error) {
	m := &termMerger{in: in, rm: rm, to: to, its: make([]*dictIter, len(in))}
	for i, s := range in {
		it, err := newDictIterFrom(s, from)
		if err != nil {
			return nil, err
		}
		m.its[i] = it
	}
	return m, nil
}

// run merges the range's terms in order, handing each to emit (its bytes valid
// during the call), with its summary if summed (nil: none, or not worth it).
func (m *termMerger) run(emit func(term string, df uint32, post, sum []byte, summed bool)) error {
	for {
		term := ""
		have := false
		for _, it := range m.its {
			if it.ok && (!have || it.e.term < term) {
				term, have = it.e.term, true
			}
		}
		if !have || m.to != "" && term >= m.to {
			return nil
		}
		if m.yield != nil {
			if err := m.yield(); err != nil {
				return err
			}
		}
		m.tl = termList{buf: m.tl.buf[:0]}
		// Summarized while spliced: a term the writer summarizes (by the
		// inputs' dictionaries; its true count decides below) whose lists are
		// all spliced.
		fused := false
		if m.sum != nil {
			var df uint64
			fused = true
			for i, it := range m.its {
				if it.ok && it.e.term == term {
					df += uint64(it.e.df)
					fused = fused && len(m.rm.dropped[i]) == 0
				}
			}
			if fused = fused && df >= uint64(sumMinDF); fused {
				m.sum.begin(uint32(min(df, 1<<32-1)))
			}
		}
		for i, it := range m.its {
			if !it.ok || it.e.term != term {
				continue
			}
			post, err := m.in[i].postingsInto(it.e, m.pbuf)
			if err != nil {
				return err
			}
			m.pbuf = post
			switch {
			case fused:
				if err = m.tl.spliceScan(post, m.rm.base[i], m.sum); err != nil {
					err = fmt.Errorf("term %q: %w", term, err)
				}
			case len(m.rm.dropped[i]) == 0:
				err = m.tl.splice(post, m.rm.base[i])
			default:
				err = decodePostings(post, func(doc, tf uint32) {
					if nd, ok := m.rm.remap(i, doc); ok {
						m.tl.add(nd, tf)
					}
				})
			}
			if err != nil {
				return err
			}
			if err := it.next(); err != nil {
				return err
			}
		}
		var sum []byte
		if fused {
			sum = m.sum.end(m.tl.n)
			if m.tl.n < sumMinDF {
				sum = nil // as the writer would: no summary for so few
			}
		}
		if m.tl.n > 0 {
			emit(term, m.tl.n, m.tl.buf, sum, fused)
		}
	}
}

// firstPosting decodes the first entry of an encoded list: its doc (absolute),
// its tf, and where the entries after it start.
func firstPosting(post []byte) (doc, tf uint64, p int, err error) {
	v, n := binary.Uvarint(post)
	if n <= 0 {
		return 0, 0, 0, errCorrupt
	}
	p, tf = n, 1
	if v&1 == 0 {
		if tf, n = binary.Uvarint(post[p:]); n <= 0 {
			return 0, 0, 0, errCorrupt
		}
		p += n
	}
	return v >> 1, tf, p, nil
}

// splice appends an input's encoded postings, none dropped, each doc moved up by
// base: only the first entry is encoded again (its doc is absolute, or now a delta
// from the list's last doc); the deltas after it stay as they are.
func (t *termList) splice(post []byte, base uint32) error {
	doc, tf, p, err := firstPosting(post)
	if err != nil {
		return err
	}
	t.add(uint32(doc)+base, uint32(tf))
	rest := post[p:]
	var count uint32
	for q := 0; q < len(rest); {
		v, n := uvarint(rest[q:])
		if n <= 0 {
			return errCorrupt
		}
		q += n
		if v&1 == 0 {
			if _, n = uvarint(rest[q:]); n <= 0 {
				return errCorrupt
			}
			q += n
		}
		doc += v >> 1
		count++
	}
	t.buf = append(t.buf, rest...)
	t.last = uint32(doc) + base
	t.n += count
	return nil
}

// spliceScan is splice summarizing the postings appended (sw.scan): that pass
// over them is the one that finds the list's last doc and count.
func (t *termList) spliceScan(post []byte, base uint32, sw *sumWriter) error {
	doc, tf, p, err := firstPosting(post)
	if err != nil {
		return err
	}
	at := len(t.buf)
	t.add(uint32(doc)+base, uint32(tf))
	t.buf = append(t.buf, post[p:]...)
	if err := sw.scan(t.buf, at); err != nil {
		return err
	}
	t.last, t.n = uint32(sw.sc.doc), sw.sc.n
	return nil
}

// splitTerm picks where a merge's terms are cut in two: the first term of the
// dictionary block of the largest input where half of its postings lie before
// it. "" when the merge is too small to split.
func splitTerm(in []*segment) (string, error) {
	var big *segment
	var total uint64
	for _, s := range in {
		total += s.ft.postLen
		if big == nil || s.ft.postLen > big.ft.postLen {
			big = s
		}
	}
	if total < parallelMergeMin || big.ft.nblocks < 4 {
		return "", nil
	}
	var ferr error
	i := sort.Search(int(big.ft.nblocks), func(i int) bool {
		_, off, err := big.blockEntry(uint64(i))
		if err != nil {
			ferr = err
			return true
		}
		return off >= big.ft.postLen/2
	})
	if ferr != nil {
		return "", ferr
	}
	if i <= 0 || i >= int(big.ft.nblocks) {
		return "", nil
	}
	t, _, err := big.blockEntry(uint64(i))
	return t, err
}

// blockEntry reads the first entry of dictionary block i: its term and where its
// postings are.
func (s *segment) blockEntry(i uint64) (string, uint64, error) {
	b, err := s.read(s.ft.blocksOff+8*i, 8)
	if err != nil {
		return "", 0, err
	}
	off := binary.LittleEndian.Uint64(b)
	if off >= s.ft.dictLen {
		return "", 0, errCorrupt
	}
	head, err := s.read(s.ft.dictOff+off, min(s.ft.dictLen-off, 4*binary.MaxVarintLen64+MaxTermBytes*4))
	if err != nil {
		return "", 0, err
	}
	if len(head) == 0 || head[0] != 0 {
		return "", 0, errCorrupt // a block starts with a whole term
	}
	t, n := readStr(head[1:])
	if n <= 0 {
		return "", 0, errCorrupt
	}
	rest := head[1+n:]
	_, n1 := binary.Uvarint(rest) // df
	if n1 <= 0 {
		return "", 0, errCorrupt
	}
	poff, n2 := binary.Uvarint(rest[n1:])
	if n2 <= 0 {
		return "", 0, errCorrupt
	}
	return t, poff, nil
}

// newDictIterFrom is newDictIter positioned at the first term at or after from
// (found from the block table, as dictScan does).
func newDictIterFrom(s *segment, from string) (*dictIter, error) {
	if from == "" || s.ft.nblocks == 0 {
		it := newDictIter(s)
		return it, it.next()
	}
	start, err := s.dictStart(from)
	if err != nil {
		return nil, err
	}
	it := &dictIter{r: bufio.NewReaderSize(io.NewSectionReader(s.f, int64(s.ft.dictOff+start), int64(s.ft.dictLen-start)), 64<<10)}
	for {
		if err := it.next(); err != nil {
			return nil, err
		}
		if !it.ok || it.e.term >= from {
			return it, nil
		}
	}
}

// mergePart is the upper range of a split merge: its postings and summaries in a
// file beside the segment, its dictionary entries in memory.
type mergePart struct {
	f     *os.File
	w     *bufio.Writer
	sum   sumWriter // the segment's doc tables, its own scratch
	noSum bool
	ents  []partEntry
	err   error
}

type partEntry struct {
	term       string
	df         uint32
	plen, slen uint64
}

func newMergePart(path string, seg *segWriter) (*mergePart, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create merge part: %w", err)
	}
	p := &mergePart{f: f, w: bufio.NewWriterSize(f, segBufSize), noSum: seg.noSum}
	p.sum = sumWriter{nsessions: seg.sum.nsessions, runs: seg.sum.runs, lens: seg.sum.lens, times: seg.sum.times}
	return p, nil
}

// term is segWriter.termSum into the part.
func (p *mergePart) term(term string, df uint32, post, sum []byte, summed bool) {
	if p.err != nil {
		return
	}
	if !summed && df >= sumMinDF && !p.noSum {
		if sum, p.err = p.sum.summarize(post, df); p.err != nil {
			p.err = fmt.Errorf("term %q: %w", term, p.err)
			return
		}
	}
	if _, p.err = p.w.Write(post); p.err == nil {
		_, p.err = p.w.Write(sum)
	}
	p.ents = append(p.ents, partEntry{term, df, uint64(len(post)), uint64(len(sum))})
}

// copyTo appends the part's terms to w.
func (p *mergePart) copyTo(w *segWriter) error {
	if err := p.w.Flush(); err != nil {
		return err
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(p.f, 64<<10)
	for _, e := range p.ents {
		w.entry(e.term, e.df, e.plen, e.slen)
		w.copyFrom(r, int64(e.plen+e.slen))
	}
	return w.err
}

func (p *mergePart) remove() {
	p.f.Close()
	os.Remove(p.f.Name())
}
