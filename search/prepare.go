package search

import "github.com/sessionwatch/sessionwatch/indexer"

// The index is an indexer.Preparer: on a cold pass the indexer's read workers
// extract each line's messages, cut them into terms and count each message's
// distinct terms (the bulk of the work, on every core), and only the counting of
// those into the buffer's posting lists is left to LinesPrepared, under the
// index's lock: one map lookup per distinct term of the unit, not one per term.

// preparedLines is one unit's lines, extracted and tokenized on a read worker.
type preparedLines struct {
	x       *lineExtractor
	msgs    []Message // scratch
	scratch []byte    // scratch: one message's terms, each after its length byte

	dict      map[string]uint32 // the unit's distinct terms, to their local ids
	names     []string          // by local id: the term
	mark      []uint32          // by local id: 1 + the doc it last occurred in
	slot      []uint32          // by local id: its entry in pairs for that doc
	nameBytes int

	docs     []preparedDoc
	pairs    []termTF // each doc's distinct terms in order of first occurrence
	lineEnds []int32  // for each line handed over: len(docs) after it

	lists []*termList // LinesPrepared's: by local id, the buffer's list (nil: not looked up)
}

// termTF is one distinct term of a doc and how often it occurs there.
type termTF struct{ id, tf uint32 }

// preparedDoc is a message as addLocked would record it, less its unit and doc
// number (known only under the lock).
type preparedDoc struct {
	rec      docRec
	n        int // terms, with repeats
	pairsEnd int // where its terms end in pairs
}

// Prepare implements indexer.Preparer. It reads nothing of the index but its
// options, fixed since Open.
func (x *Index) Prepare(u indexer.UnitRef) indexer.Prepared {
	return &preparedLines{x: newLineExtractor(u.Layout, x.opt.ToolOutput)}
}

// Line implements indexer.Prepared: what Index.Line does before it takes the lock.
func (p *preparedLines) Line(off int64, line []byte) {
	p.msgs = p.x.extract(p.msgs[:0], off, line)
	for i := range p.msgs {
		m := &p.msgs[i]
		var n int
		p.scratch, n = appendTerms(p.scratch[:0], m.Text)
		if n == 0 {
			continue
		}
		if p.dict == nil {
			p.dict = map[string]uint32{}
		}
		doc := uint32(len(p.docs)) + 1
		for b := p.scratch; len(b) > 0; {
			k := int(b[0])
			t := b[1 : 1+k]
			b = b[1+k:]
			id, ok := p.dict[string(t)]
			if !ok {
				id = uint32(len(p.names))
				name := string(t)
				p.names = append(p.names, name)
				p.dict[name] = id
				p.mark = append(p.mark, 0)
				p.slot = append(p.slot, 0)
				p.nameBytes += len(name)
			}
			if p.mark[id] == doc {
				p.pairs[p.slot[id]].tf++
				continue
			}
			p.mark[id], p.slot[id] = doc, uint32(len(p.pairs))
			p.pairs = append(p.pairs, termTF{id, 1})
		}
		t := m.Time / 1000
		if t < 0 || t > 1<<32-1 {
			t = 0
		}
		p.docs = append(p.docs, preparedDoc{
			rec:      docRec{Part: m.Part, Role: roleCode(m.Role), Offset: m.Offset, Time: uint32(t), Len: uint16(min(n, 1<<16-1))},
			n:        n,
			pairsEnd: len(p.pairs),
		})
	}
	p.lineEnds = append(p.lineEnds, int32(len(p.docs)))
}

// Size implements indexer.Prepared.
func (p *preparedLines) Size() int64 {
	return int64(cap(p.pairs)*8 + cap(p.docs)*40 + cap(p.lineEnds)*4 + cap(p.scratch) +
		p.nameBytes + len(p.names)*(16+8+8+24)) // a name's header, mark and slot, its map entry
}

// countTF counts tf occurrences of the term in doc at once, as that many count
// calls in a row would (the same bytes, the same return in all).
func (t *termList) countTF(doc, tf uint32) int {
	if t.curTF > 0 && t.cur == doc {
		t.curTF += tf
		return 0
	}
	before := len(t.buf)
	t.flush()
	t.cur, t.curTF = doc, tf
	return len(t.buf) - before + 2 // + the pending entry, about
}

// LinesPrepared implements indexer.Preparer: the prepared lines are counted into
// the buffer exactly as Line would count them one by one (the same docs, terms and
// spills): a doc's terms in another order, each term's occurrences at once, which
// the buffer's lists and its size do not tell apart.
func (x *Index) LinesPrepared(u indexer.UnitRef, prep indexer.Prepared) {
	p := prep.(*preparedLines)
	if len(p.lineEnds) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.liveLocked(u)
	if cap(p.lists) < len(p.names) {
		p.lists = make([]*termList, len(p.names))
	}
	lists := p.lists[:len(p.names)]
	clear(lists)
	b := x.buf
	d, at := 0, 0
	for _, end := range p.lineEnds {
		for ; d < int(end); d++ {
			if x.buf != b { // a spill replaced the buffer: its lists are written
				b = x.buf
				clear(lists)
			}
			pd := &p.docs[d]
			doc := uint32(len(b.docs))
			for ; at < pd.pairsEnd; at++ {
				e := p.pairs[at]
				tl := lists[e.id]
				if tl == nil {
					name := p.names[e.id]
					if tl = b.terms[name]; tl == nil {
						tl = &termList{}
						b.terms[name] = tl
						b.bytes += len(name) + 64
					}
					lists[e.id] = tl
				}
				b.bytes += tl.countTF(doc, e.tf)
			}
			rec := pd.rec
			rec.Unit = r.ID
			b.docs = append(b.docs, rec)
			b.tokens += uint64(pd.n)
			b.bytes += docSize
			x.stats.Docs++
		}
		x.maybeSpillLocked()
	}
}
