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
	pairs []sumPair // the frontiers of state (sumState.front)
	// Pairs of pairs no state's frontier is (a session seen again, in a later
	// run of its docs, wrote its frontier anew), and where pairs is compacted.
	dead  int
	spare []sumPair
	out   []byte  // the last summary's bytes, reused
	sc    sumScan // the term being scanned
	// The current session's frontier: as a table, or (a pair of a large tf
	// came) as its pairs.
	best     sumBestTable
	bigFront []sumPair
}

// sumRun: docs from first on belong to session ord (until the next run).
type sumRun struct{ first, ord uint32 }

type sumPair struct{ tf, len uint32 }

type sumState struct {
	ord         uint32
	first, last uint32 // docs
	off         uint64 // byte offset of the first posting in the list
	maxTime     uint32
	// The session's Pareto frontier, ascending tf (and length): pairs[front :
	// front+nfront], written when its postings end (in one array, not a slice
	// per session: end reads them in order).
	front, nfront uint32
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
	w.begin(df)
	if err := w.scan(post, 0); err != nil {
		return nil, err
	}
	return w.end(df), nil
}

// sumBest: the current session's frontier is kept as a table of tfs below it
// (sumBestTable) until a pair of a larger tf comes, then by addFrontier.
const sumBest = 64

// sumShortRun: a run of a session's docs this long or shorter keeps the
// session's frontier as pairs (as after a pair of a large tf).
const sumShortRun = 8

// sumScan is where a term's scan stands between two calls of scan (a merge
// scans a term's list as each input's postings are appended to it).
type sumScan struct {
	run    int    // the run of the last posting (-1: none yet)
	runEnd uint32 // the first doc of the run after it (0: none yet)
	doc    uint64 // the last posting's doc
	n      uint32 // postings scanned
	cur    int    // the last posting's session: its index in state (-1: none)
	// The current session's last doc and newest time (in state when it changes).
	last, maxTime uint32
	hi            int  // best[:hi+1] may be set
	big           bool // the current session has a pair of tf sumBest or more: its frontier is in bigFront
}

// begin starts the summary of a term of about df postings: scan its list, then
// end.
func (w *sumWriter) begin(df uint32) {
	if len(w.at) < w.nsessions {
		w.at = make([]int32, w.nsessions)
	}
	w.state, w.pairs, w.dead = w.state[:0], w.pairs[:0], 0
	if n := min(int(df), w.nsessions); cap(w.state) < n {
		// At most one state per session holding the term: grown once to that,
		// not by appends (a large slice grows by a quarter at a time).
		w.state = make([]sumState, 0, n)
	}
	w.sc = sumScan{run: -1, cur: -1, hi: -1}
}

// scan summarizes the postings of post[off:], which go on those scanned before
// (post is the term's list so far: a posting's offset is its index in post).
// This runs for every posting a merge writes: the current session's state is
// kept in locals, and its frontier as a table (best) where a posting is one
// lookup (about half of them are not beaten by the frontier so far), made into
// the frontier's pairs once the session's postings end.
func (w *sumWriter) scan(post []byte, off int) error {
	sc := w.sc
	run, runEnd, doc, n, cur, last, maxTime, hi, big := sc.run, sc.runEnd, sc.doc, sc.n, sc.cur, sc.last, sc.maxTime, sc.hi, sc.big
	lens, times := w.lens, w.times
	best := &w.best
	for off < len(post) {
		at := off
		// One-byte gaps and tfs (most postings) without a call.
		v := uint64(post[off])
		if v < 0x80 {
			off++
		} else {
			var k int
			if v, k = uvarint(post[off:]); k <= 0 {
				w.abortScan(hi)
				return errCorrupt
			}
			off += k
		}
		tf := uint64(1)
		if v&1 == 0 {
			if off < len(post) && post[off] < 0x80 {
				tf = uint64(post[off])
				off++
			} else {
				var k int
				if tf, k = uvarint(post[off:]); k <= 0 {
					w.abortScan(hi)
					return errCorrupt
				}
				off += k
			}
		}
		if n == 0 {
			doc = v >> 1
		} else {
			doc += v >> 1
		}
		n++
		if doc >= uint64(len(lens)) {
			w.abortScan(hi)
			return errCorrupt
		}
		d := uint32(doc)
		// The run holding d: postings ascend, so the cursor only moves forward,
		// and the session's state is looked up only when it moves.
		if d >= runEnd {
			if cur >= 0 {
				w.leave(cur, last, maxTime, hi, big)
			}
			run = w.runAfter(run, d)
			runEnd = math.MaxUint32
			if run+1 < len(w.runs) {
				runEnd = w.runs[run+1].first
			}
			o := w.runs[run].ord
			// A run of few docs: its few postings go into the session's
			// frontier as pairs (bigFront, addFrontier), not through a table
			// made for them and made into pairs after. (best then holds only
			// this run's pairs: what it says is beaten still is.)
			short := runEnd-d <= sumShortRun
			hi, big = -1, short
			cur = int(w.at[o]) - 1
			if cur < 0 {
				cur = len(w.state)
				w.at[o] = int32(cur + 1)
				if cur < cap(w.state) {
					w.state = w.state[:cur+1]
				} else {
					w.state = append(w.state, sumState{})
				}
				w.state[cur] = sumState{ord: o, first: d, off: uint64(at)}
				last, maxTime = d, 0
				if short {
					w.bigFront = w.bigFront[:0]
				}
			} else {
				// A session seen before (its docs are in two runs): its
				// frontier goes back into best (or bigFront).
				st := &w.state[cur]
				last, maxTime = st.last, st.maxTime
				f := w.pairs[st.front : st.front+st.nfront]
				if !short {
					for _, q := range f {
						hi = best.add(q, hi)
					}
					big = len(f) > 0 && f[len(f)-1].tf >= sumBest
				}
				if big {
					w.bigFront = append(w.bigFront[:0], f...)
				}
			}
		}
		last = d
		maxTime = max(maxTime, times[d])
		p := sumPair{uint32(tf), uint32(lens[d])}
		if p.tf < sumBest && best[p.tf] >= 1<<16-p.len {
			continue // a pair seen has as high a tf and as low a length
		}
		if p.tf >= sumBest && !big {
			// The table would not tell this pair from one of tf sumBest-1:
			// from here on the session's frontier is kept as pairs.
			w.bigFront = best.frontier(w.bigFront[:0], hi)
			big = true
		}
		if big {
			w.bigFront = addFrontier(w.bigFront, p)
		}
		hi = best.add(p, hi)
	}
	w.sc = sumScan{run: run, runEnd: runEnd, doc: doc, n: n, cur: cur, last: last, maxTime: maxTime, hi: hi, big: big}
	return nil
}

// leave stores the current session's state when its postings end (or the
// term's) and empties best.
//
// A session seen before (its docs are in several runs: a session appended to
// across flushes) had its frontier written: the new one goes over it if it is
// the last written or no longer, else after the others, and pairs is compacted
// once most of it is frontiers written over, so that it holds about one
// frontier per session however many runs their docs are in.
func (w *sumWriter) leave(cur int, last, maxTime uint32, hi int, big bool) {
	st := &w.state[cur]
	st.last, st.maxTime = last, maxTime
	old, nold := st.front, st.nfront
	if nold > 0 && int(old+nold) == len(w.pairs) {
		w.pairs = w.pairs[:old]
	}
	st.front = uint32(len(w.pairs))
	if big {
		w.pairs = append(w.pairs, w.bigFront...)
	} else {
		w.pairs = w.best.frontier(w.pairs, hi)
	}
	st.nfront = uint32(len(w.pairs)) - st.front
	clear(w.best[:hi+1])
	if nold == 0 || st.front == old {
		return
	}
	if st.nfront <= nold {
		copy(w.pairs[old:], w.pairs[st.front:])
		w.pairs = w.pairs[:st.front]
		st.front = old
		w.dead += int(nold - st.nfront)
	} else {
		w.dead += int(nold)
	}
	if w.dead > len(w.pairs)/2 {
		f := w.spare[:0]
		for i := range w.state {
			st := &w.state[i]
			n := len(f)
			f = append(f, w.pairs[st.front:st.front+st.nfront]...)
			st.front = uint32(n)
		}
		w.pairs, w.spare, w.dead = f, w.pairs[:0], 0
	}
}

// sumBestTable is a session's frontier as a lookup table: t[k] is 1<<16 minus
// the least length of the session's pairs of tf k or more (k below sumBest; a
// pair of a larger tf counts as sumBest-1), 0 if none. Lengths are 16 bits. A
// pair (tf, len) of tf below sumBest is beaten iff t[tf] >= 1<<16 - len.
type sumBestTable [sumBest + 1]uint32

// add records pair p, beaten or not, and returns the new highest index set.
func (t *sumBestTable) add(p sumPair, hi int) int {
	k := int(min(p.tf, sumBest-1))
	v := 1<<16 - p.len
	hi = max(hi, k)
	for ; k >= 0 && t[k] < v; k-- {
		t[k] = v
	}
	return hi
}

// frontier appends the frontier of the pairs added (all of tf below sumBest),
// in ascending tf: the pairs no other beats are those (k, least length of tf k
// or more) whose length is less than that of tf k+1 or more. (t[hi+1] is 0:
// t[sumBest] is never set. Each k is written, and kept or not without a branch:
// which are kept is not predictable.)
func (t *sumBestTable) frontier(f []sumPair, hi int) []sumPair {
	n := len(f)
	f = slices.Grow(f, hi+1)[:n+hi+1]
	for k := 0; k <= hi && k < sumBest; k++ {
		v := t[k]
		f[n] = sumPair{uint32(k), 1<<16 - v}
		keep := 0
		if v > t[k+1] {
			keep = 1
		}
		n += keep
	}
	return f[:n]
}

// abortScan leaves the per-term scratch as begin expects it after a failed scan.
func (w *sumWriter) abortScan(hi int) {
	clear(w.best[:hi+1])
	for i := range w.state {
		w.at[w.state[i].ord] = 0
	}
	w.state = w.state[:0]
	w.sc = sumScan{run: -1, cur: -1, hi: -1}
}

// end returns the summary of the postings scanned since begin (df of them: nil
// if not worth it); its bytes are valid until the next term's.
func (w *sumWriter) end(df uint32) []byte {
	if sc := &w.sc; sc.cur >= 0 {
		w.leave(sc.cur, sc.last, sc.maxTime, sc.hi, sc.big)
	} else {
		clear(w.best[:sc.hi+1])
	}
	w.sc = sumScan{run: -1, cur: -1, hi: -1}
	for i := range w.state {
		w.at[w.state[i].ord] = 0
	}
	if len(w.state)*sumMinPerSession > int(df) {
		// Sessions hold the term in about one message each: the summary would be
		// no shorter to walk than the postings, and several times their size.
		return nil
	}
	b := w.out[:0] // the caller writes it out before the next term
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
		b = binary.AppendUvarint(b, uint64(st.nfront))
		var p sumPair
		for _, q := range w.pairs[st.front : st.front+st.nfront] {
			b = binary.AppendUvarint(b, uint64(q.tf-p.tf))
			b = binary.AppendUvarint(b, uint64(q.len-p.len))
			p = q
		}
		prevOrd, prevFirst, prevOff, prevTime = int64(st.ord), st.first, st.off, int64(st.maxTime)
	}
	w.out = b[:0]
	return b
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
