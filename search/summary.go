package search

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
)

// Session summaries let a query rank sessions without visiting every posting of a
// common term. A session's score for a word is the best BM25 score of its
// messages, and BM25 grows with a message's term frequency and shrinks with its
// length: so the best message is among the (tf, length) pairs no other message of
// the session beats on both (the Pareto frontier), whatever the collection's idf
// and average length at query time. A summary stores, per session holding the
// term, that frontier, the newest time of those messages, and where the session's
// postings begin and end in the term's list (so the matching messages of the
// sessions shown are found without decoding the rest). Scores computed from it are
// the exhaustive ranking's, bit for bit.

// sumMinDF: terms with at least this many docs in a segment get a summary (if
// its sessions hold them in sumMinPerSession docs each on average); rarer ones are
// ranked from their postings, which are few.
var sumMinDF uint32 = 256

const sumMinPerSession = 2

// sessRec is the size of one session-table record: unit u32, session index u16.
const sessRec = 6

// sumWriter is what a segment writer keeps to summarize postings: each doc's
// session (as runs of docs of one session), length and time.
type sumWriter struct {
	sessions  []sessKey          // by ordinal, in order of first doc (until table)
	ord       map[sessKey]uint32 // session → ordinal (until table)
	nsessions int                // sessions seen (sessions is let go at table)
	runs      []sumRun           // ascending first doc
	lens      []uint16           // per doc
	times     []uint32           // per doc
	// Per term, reused: the state of each session seen (at[ordinal] is its index
	// in state plus one; reset after each term).
	at    []int32
	state []sumState
	out   []byte // the last summary's bytes, reused
}

// sumRun: docs from first on belong to session ord (until the next run).
type sumRun struct{ first, ord uint32 }

type sumPair struct{ tf, len uint32 }

type sumState struct {
	ord         uint32
	first, last uint32 // docs
	off         uint64 // byte offset of the first posting in the list
	maxTime     uint32
	front       []sumPair // Pareto frontier, ascending tf (and length)
}

func (w *sumWriter) doc(d *docRec) {
	if w.ord == nil {
		w.ord = map[sessKey]uint32{}
	}
	k := sessKey{d.Unit, d.Sess}
	o, ok := w.ord[k]
	if !ok {
		o = uint32(len(w.sessions))
		w.ord[k] = o
		w.sessions = append(w.sessions, k)
		w.nsessions++
	}
	n := uint32(len(w.lens))
	if len(w.runs) == 0 || w.runs[len(w.runs)-1].ord != o {
		w.runs = append(w.runs, sumRun{n, o})
	}
	w.lens = append(w.lens, d.Len)
	w.times = append(w.times, d.Time)
}

// reserve makes room for up to docs docs of up to sessions sessions (a merge
// knows its inputs' counts), so that the per-doc slices are not grown by
// copying.
func (w *sumWriter) reserve(docs, sessions int) {
	w.lens = slices.Grow(w.lens, docs)
	w.times = slices.Grow(w.times, docs)
	w.sessions = slices.Grow(w.sessions, sessions)
	if w.ord == nil {
		w.ord = make(map[sessKey]uint32, sessions)
	}
}

// table is the session table: per ordinal, unit u32 and session index u16. It
// ends the docs: what only they needed is let go.
func (w *sumWriter) table() []byte {
	b := make([]byte, 0, len(w.sessions)*sessRec)
	for _, k := range w.sessions {
		b = binary.LittleEndian.AppendUint32(b, k.unit)
		b = binary.LittleEndian.AppendUint16(b, k.sess)
	}
	w.ord, w.sessions = nil, nil
	return b
}

// summarize encodes the summary of one term's postings (nil if not worth it):
// per session, in order of its first posting, `ordinal (signed delta), first doc
// (delta), byte offset of its first posting
// (delta), last doc - first doc, newest time (signed delta), n, n× (tf, length)
// (deltas after the first)`.
func (w *sumWriter) summarize(post []byte, df uint32) ([]byte, error) {
	if len(w.at) < w.nsessions {
		w.at = make([]int32, w.nsessions)
	}
	w.state = w.state[:0]
	if n := min(int(df), w.nsessions); cap(w.state) < n {
		// At most one state per session holding the term: grown once to that,
		// not by appends (a large slice grows by a quarter at a time).
		w.state = make([]sumState, 0, n)
	}
	defer func() {
		for i := range w.state {
			w.at[w.state[i].ord] = 0
		}
	}()
	run := -1
	var runEnd uint32 // the first doc of the run after run; 0: none yet
	var st *sumState  // run's session's
	var doc uint64
	first := true
	off := 0
	for off < len(post) {
		at := off
		// A one-byte gap of tf 1 (most postings) without a call.
		v := uint64(post[off])
		if v < 0x80 {
			off++
		} else {
			var n int
			if v, n = uvarint(post[off:]); n <= 0 {
				return nil, errCorrupt
			}
			off += n
		}
		tf := uint64(1)
		if v&1 == 0 {
			var n int
			if tf, n = uvarint(post[off:]); n <= 0 {
				return nil, errCorrupt
			}
			off += n
		}
		if first {
			doc, first = v>>1, false
		} else {
			doc += v >> 1
		}
		if doc >= uint64(len(w.lens)) {
			return nil, errCorrupt
		}
		d := uint32(doc)
		// The run holding d: postings ascend, so the cursor only moves forward,
		// and the session's state is looked up only when it moves.
		if d >= runEnd {
			run = w.runAfter(run, d)
			runEnd = math.MaxUint32
			if run+1 < len(w.runs) {
				runEnd = w.runs[run+1].first
			}
			o := w.runs[run].ord
			i := int(w.at[o]) - 1
			if i < 0 {
				i = len(w.state)
				w.at[o] = int32(i + 1)
				if i < cap(w.state) {
					w.state = w.state[:i+1]
				} else {
					w.state = append(w.state, sumState{})
				}
				st := &w.state[i]
				front := st.front[:0]
				*st = sumState{ord: o, first: d, off: uint64(at), front: front}
			}
			st = &w.state[i]
		}
		st.last = d
		st.maxTime = max(st.maxTime, w.times[d])
		// A pair the frontier's first beats (most: a posting of tf 1) is
		// dropped without a call.
		p := sumPair{uint32(tf), uint32(w.lens[d])}
		if f := st.front; len(f) == 0 || f[0].tf < p.tf || f[0].len > p.len {
			st.front = addFrontier(f, p)
		}
	}
	if len(w.state)*sumMinPerSession > int(df) {
		// Sessions hold the term in about one message each: the summary would be
		// no shorter to walk than the postings, and several times their size.
		return nil, nil
	}
	b := w.out[:0] // the caller writes it out before the next term
	defer func() { w.out = b[:0] }()
	var prevOrd int64
	var prevFirst uint32
	var prevOff uint64
	var prevTime int64
	for i := range w.state {
		st := &w.state[i]
		b = binary.AppendVarint(b, int64(st.ord)-prevOrd)
		b = binary.AppendUvarint(b, uint64(st.first-prevFirst))
		b = binary.AppendUvarint(b, st.off-prevOff)
		b = binary.AppendUvarint(b, uint64(st.last-st.first))
		b = binary.AppendVarint(b, int64(st.maxTime)-prevTime)
		b = binary.AppendUvarint(b, uint64(len(st.front)))
		var p sumPair
		for _, q := range st.front {
			b = binary.AppendUvarint(b, uint64(q.tf-p.tf))
			b = binary.AppendUvarint(b, uint64(q.len-p.len))
			p = q
		}
		prevOrd, prevFirst, prevOff, prevTime = int64(st.ord), st.first, st.off, int64(st.maxTime)
	}
	return b, nil
}

// runAfter returns the run holding doc d, the last whose first doc is at most d,
// given that it is after run (-1: from the start). The cursor mostly moves by a
// few runs: it gallops, then searches the last stride.
func (w *sumWriter) runAfter(run int, d uint32) int {
	lo, hi := run+1, run+2
	for step := 1; hi < len(w.runs) && w.runs[hi].first <= d; step *= 2 {
		lo, hi = hi, hi+step
	}
	rs := w.runs[lo:min(hi, len(w.runs))]
	return lo + sort.Search(len(rs), func(i int) bool { return rs[i].first > d }) - 1
}

// addFrontier adds p to a Pareto frontier of (higher tf, lower length) pairs kept
// in ascending tf: p is dropped if a pair has as high a tf and as low a length,
// and drops the pairs it beats so.
//
// A frontier ascends strictly in length as in tf (of two pairs, the one of lower
// tf and no shorter length is beaten). So the pairs of as high a tf as p's are
// those from the first such, i, on, the shortest of them first: p is beaten iff
// f[i] is as short. Else p beats the pairs before i as long as it or longer (a
// run ending at i) and f[i] if of p's tf, and takes their place: in place, without
// a call per pair (this runs for every posting written).
func addFrontier(f []sumPair, p sumPair) []sumPair {
	i := 0
	for i < len(f) && f[i].tf < p.tf {
		i++
	}
	if i < len(f) && f[i].len <= p.len {
		return f
	}
	j := i
	for j > 0 && f[j-1].len >= p.len {
		j--
	}
	e := i
	if e < len(f) && f[e].tf == p.tf {
		e++
	}
	if e > j {
		f[j] = p
		return append(f[:j+1], f[e:]...)
	}
	f = append(f, sumPair{})
	copy(f[j+1:], f[j:])
	f[j] = p
	return f
}

// sumEntry is one session of a term's summary in a segment.
type sumEntry struct {
	sess        uint32 // ordinal in the segment's session table
	first, last uint32 // docs
	off         uint64 // of the first posting, in the term's list
	maxTime     uint32
	front       []sumPair
}

// decodeSummary calls fn for each entry of a summary (front is reused between
// calls).
func decodeSummary(b []byte, fn func(e *sumEntry)) error {
	var e sumEntry
	var prevOrd int64
	var prevFirst uint32
	var prevOff uint64
	var prevTime int64
	p := 0
	for p < len(b) {
		o, n := binary.Varint(b[p:])
		if n <= 0 {
			return errCorrupt
		}
		p += n
		prevOrd += o
		e.sess = uint32(prevOrd)
		var v [3]uint64
		for j := range v {
			x, n := uvarint(b[p:])
			if n <= 0 {
				return errCorrupt
			}
			v[j], p = x, p+n
		}
		e.first = prevFirst + uint32(v[0])
		e.off = prevOff + v[1]
		e.last = e.first + uint32(v[2])
		t, n := binary.Varint(b[p:])
		if n <= 0 {
			return errCorrupt
		}
		p += n
		prevTime += t
		e.maxTime = uint32(prevTime)
		np, n := uvarint(b[p:])
		if n <= 0 || np == 0 || np > uint64(len(b)-p) {
			return errCorrupt
		}
		p += n
		e.front = e.front[:0]
		var q sumPair
		for range np {
			tf, n1 := uvarint(b[p:])
			if n1 <= 0 {
				return errCorrupt
			}
			l, n2 := uvarint(b[p+n1:])
			if n2 <= 0 {
				return errCorrupt
			}
			p += n1 + n2
			q.tf += uint32(tf)
			q.len += uint32(l)
			e.front = append(e.front, q)
		}
		prevFirst, prevOff = e.first, e.off
		fn(&e)
	}
	return nil
}

// uvarint is binary.Uvarint with the one- and two-byte cases first (most summary
// fields; message lengths).
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2
	}
	return binary.Uvarint(b)
}

// summary reads a term's summary (nil if it has none).
func (s *segment) summary(e dictEntry) ([]byte, error) {
	if e.slen == 0 {
		return nil, nil
	}
	if e.off > s.ft.postLen || e.len > s.ft.postLen-e.off || e.slen > s.ft.postLen-e.off-e.len {
		return nil, errCorrupt
	}
	return s.read(s.ft.postOff+e.off+e.len, e.slen)
}
