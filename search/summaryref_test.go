package search

import (
	"encoding/binary"
	"math"
)

// refSummarize is summarize as it was before scan (a frontier table per
// session, the state in locals, a scan resumed across a merge's inputs): the
// reference the tests compare it with.
func (wr *sumWriter) refSummarize(post []byte, df uint32) ([]byte, error) {
	type sumState struct {
		ord         uint32
		first, last uint32 // docs
		off         uint64 // byte offset of the first posting in the list
		maxTime     uint32
		front       []sumPair // Pareto frontier, ascending tf (and length)
	}
	var w struct {
		*sumWriter
		at    []int32
		state []sumState
		out   []byte
	}
	w.sumWriter = wr
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
