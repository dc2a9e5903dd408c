package search

import "github.com/sessionwatch/sessionwatch/indexer"

// The index is an indexer.Preparer: on a cold pass the indexer's read workers
// extract each line's messages and cut them into terms (the bulk of the work,
// on every core), and only the counting of the terms into the buffer's posting
// lists is left to LinesPrepared, under the index's lock.

// preparedLines is one unit's lines, extracted and tokenized on a read worker.
type preparedLines struct {
	x       *lineExtractor
	msgs    []Message // scratch
	termBuf []byte    // scratch
	n       int       // terms of the message being cut
	addTerm func(t []byte)

	docs     []preparedDoc
	terms    []byte  // every doc's terms in order, with repeats, each after its length byte
	lineEnds []int32 // for each line handed over: len(docs) after it
}

// preparedDoc is a message as addLocked would record it, less its unit and doc
// number (known only under the lock).
type preparedDoc struct {
	rec      docRec
	n        int // terms, with repeats
	termsEnd int // where its terms end in terms
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
		start := len(p.terms)
		p.n = 0
		if p.addTerm == nil {
			p.addTerm = p.add // bound once: no closure per message
		}
		p.termBuf = Terms(m.Text, p.termBuf, p.addTerm)
		n := p.n
		if n == 0 {
			p.terms = p.terms[:start]
			continue
		}
		t := m.Time / 1000
		if t < 0 || t > 1<<32-1 {
			t = 0
		}
		p.docs = append(p.docs, preparedDoc{
			rec:      docRec{Part: m.Part, Role: roleCode(m.Role), Offset: m.Offset, Time: uint32(t), Len: uint16(min(n, 1<<16-1))},
			n:        n,
			termsEnd: len(p.terms),
		})
	}
	p.lineEnds = append(p.lineEnds, int32(len(p.docs)))
}

func (p *preparedLines) add(t []byte) {
	p.terms = append(append(p.terms, byte(len(t))), t...) // len(t) <= MaxTermBytes
	p.n++
}

// Size implements indexer.Prepared.
func (p *preparedLines) Size() int64 {
	return int64(cap(p.terms) + cap(p.docs)*40 + cap(p.lineEnds)*4 + cap(p.termBuf))
}

// LinesPrepared implements indexer.Preparer: the prepared lines are counted into
// the buffer exactly as Line would count them one by one (the same docs, terms and
// spills).
func (x *Index) LinesPrepared(u indexer.UnitRef, prep indexer.Prepared) {
	p := prep.(*preparedLines)
	if len(p.lineEnds) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	id := x.u.recs[x.liveLocked(u)].id
	d, at := 0, 0
	for _, end := range p.lineEnds {
		for ; d < int(end); d++ {
			pd := &p.docs[d]
			b := x.buf // a spill replaces it
			doc := uint32(len(b.docs))
			for at < pd.termsEnd {
				n := int(p.terms[at])
				t := p.terms[at+1 : at+1+n]
				at += 1 + n
				b.count(t, doc)
			}
			rec := pd.rec
			rec.Unit = id
			b.docs = append(b.docs, rec)
			b.tokens += uint64(pd.n)
			b.bytes += docSize
			x.stats.Docs++
		}
		x.maybeSpillLocked()
	}
}
