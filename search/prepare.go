package search

import (
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The index is an indexer.Preparer: on a cold pass the indexer's read workers
// extract each line's messages, cut them into terms and count each message's
// distinct terms (the bulk of the work, on every core), and only the counting of
// those into the buffer's posting lists is left to LinesPrepared, under the
// index's lock: one map lookup per distinct term of the unit, not one per term.

// preparedLines is one unit's lines, extracted and tokenized on a read worker.
type preparedLines struct {
	x       *lineExtractor
	layout  string
	scratch []byte          // scratch: one message's terms, each after its length byte
	long    [blockSpan]byte // countWord's: a word lower case
	cut     blockWords      // countBlocks': the words cut and not yet counted

	dict termDict // the unit's distinct terms, by local id

	docs     []preparedDoc
	pairs    []termTF // each doc's distinct terms in order of first occurrence
	lineEnds []int32  // for each line handed over: len(docs) after it

	bufIDs []uint32 // LinesPrepared's: by local id, 1 + the term's id in the buffer (0: not looked up)
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
	p := preparedPool.Get().(*preparedLines)
	if p.x == nil || p.layout != u.Layout || p.x.tools != x.opt.ToolOutput {
		p.x, p.layout = newLineExtractor(u.Layout, x.opt.ToolOutput), u.Layout
		p.x.prep = p
	}
	return p
}

// preparedPool keeps the buffers of the units LinesPrepared is done with for the
// next units the workers read (most of what a cold pass's search work allocated).
var preparedPool = sync.Pool{New: func() any { return new(preparedLines) }}

// release empties p and puts it back in the pool.
func (p *preparedLines) release() {
	p.dict.reset()
	p.docs, p.pairs, p.lineEnds = p.docs[:0], p.pairs[:0], p.lineEnds[:0]
	preparedPool.Put(p)
}

// Line implements indexer.Prepared: what Index.Line does before it takes the lock.
func (p *preparedLines) Line(off int64, line []byte) { p.line(off, line, nil) }

// LineMembers implements indexer.MembersPrepared.
func (p *preparedLines) LineMembers(off int64, m *indexer.Members) { p.line(off, m.Line(), m) }

func (p *preparedLines) line(off int64, line []byte, m *indexer.Members) {
	p.x.extract(nil, off, line, m) // each message goes to p.message
	p.lineEnds = append(p.lineEnds, int32(len(p.docs)))
}

// message tokenizes one message of the line, its text's parts read where they
// are in the line, and counts its distinct terms as they are cut
// (countTermsJSON): what addLocked does but for the buffer's lists. A message of
// no terms is no doc.
func (p *preparedLines) message(off int64, part uint8, role string, ms int64, text *textParts) {
	doc := uint32(len(p.docs)) + 1
	start := len(p.pairs)
	var n int
	for _, raw := range text.raw {
		k, ok := p.countTermsJSON(raw, doc)
		if !ok {
			n = p.recount(start, doc, text)
			break
		}
		n += k
	}
	if n == 0 {
		return
	}
	p.addDoc(off, part, role, ms, n)
}

// recount counts the message of doc again the way that decodes a part that
// does not decode where it is (appendTermsJSON), its pairs from start on undone
// first. The terms the undone count added to the dict stay there, in no pair.
func (p *preparedLines) recount(start int, doc uint32, text *textParts) int {
	for _, e := range p.pairs[start:] {
		p.dict.find(p.dict.name(e.id)).mark = 0
	}
	p.pairs = p.pairs[:start]
	return p.countScratch(doc, text)
}

// countScratch counts the message of doc as message did before its terms were
// counted as they are cut: all of them tokenized into the scratch first, then
// counted one by one. It returns how many terms it counted.
func (p *preparedLines) countScratch(doc uint32, text *textParts) int {
	p.scratch = p.scratch[:0]
	var n int
	for _, raw := range text.raw {
		var k int
		p.scratch, k = appendTermsJSON(p.scratch, raw)
		n += k
	}
	if n == 0 {
		return 0
	}
	end := len(p.scratch)
	p.scratch = append(p.scratch, 0, 0, 0, 0, 0, 0, 0, 0) // the dict reads 8 bytes of a term at once
	for b := p.scratch[:end]; len(b) > 0; {
		k := int(b[0])
		p.pairs = p.countTerm(p.pairs, b[1:1+k:cap(b)], doc)
		b = b[1+k:]
	}
	return n
}

// addDoc adds the doc of the message whose n terms were just counted.
func (p *preparedLines) addDoc(off int64, part uint8, role string, ms int64, n int) {
	t := ms / 1000
	if t < 0 || t > 1<<32-1 {
		t = 0
	}
	p.docs = append(p.docs, preparedDoc{
		rec:      docRec{Part: part, Role: roleCode(role), Offset: off, Time: uint32(t), Len: uint16(min(n, 1<<16-1))},
		n:        n,
		pairsEnd: len(p.pairs),
	})
}

// Size implements indexer.Prepared.
func (p *preparedLines) Size() int64 {
	return int64(cap(p.pairs)*8 + cap(p.docs)*40 + cap(p.lineEnds)*4 + cap(p.scratch) +
		cap(p.dict.arena) + cap(p.dict.table)*24 + cap(p.dict.ends)*4)
}

// countTF counts tf occurrences of the term in doc at once, as that many count
// calls in a row would (the same bytes, the same return in all).
func (t *termList) countTF(doc, tf uint32) int {
	if t.curTF > 0 && t.cur == doc {
		t.curTF += tf
		return 0
	}
	before := len(t.buf)
	if t.curTF > 0 {
		t.add(t.cur, t.curTF) // flush, inline
	}
	t.cur, t.curTF = doc, tf
	return len(t.buf) - before + 2 // + the pending entry, about
}

// LinesPrepared implements indexer.Preparer: the prepared lines are counted into
// the buffer exactly as Line would count them one by one (the same docs, terms and
// spills): a doc's terms in another order, each term's occurrences at once, which
// the buffer's lists and its size do not tell apart.
func (x *Index) LinesPrepared(u indexer.UnitRef, prep indexer.Prepared) {
	p := prep.(*preparedLines)
	defer p.release()
	if len(p.lineEnds) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	id := x.u.recs[x.liveLocked(u)].id
	n := len(p.dict.ends)
	if cap(p.bufIDs) < n {
		p.bufIDs = make([]uint32, n)
	}
	ids := p.bufIDs[:n]
	clear(ids)
	b := x.buf
	d, at := 0, 0
	for _, end := range p.lineEnds {
		for ; d < int(end); d++ {
			if x.buf != b { // a spill replaced the buffer: its lists are written
				b = x.buf
				clear(ids)
			}
			pd := &p.docs[d]
			doc := uint32(len(b.docs))
			for ; at < pd.pairsEnd; at++ {
				e := p.pairs[at]
				var tl *termList
				if bid := ids[e.id]; bid != 0 {
					tl = &b.lists[bid-1]
				} else {
					var tid uint32
					tid, tl = b.list(p.dict.name(e.id))
					ids[e.id] = tid + 1
				}
				b.bytes += tl.countTF(doc, e.tf)
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

var dictSeed = maphash.MakeSeed()

// dictMul hashes a term of up to 8 bytes: its key times an odd constant, the
// high bits taken.
const dictMul = 0x9E3779B97F4A7C15

// termDict numbers the distinct terms of a unit in order of first occurrence: an
// open-addressing table over one arena of names, no string per term. A slot
// holds a term's key (its first 8 bytes; a longer term's of another form), its
// length and 24 bits of its hash, so that a term of up to 8 bytes (most words)
// is found by comparing one slot, hashed without a call (its key alone tells
// it: blockWords.count); a longer one is compared with its name in the arena
// too. The slot also keeps what preparedLines counts of the term in the doc at
// hand, so that a term costs one slot's cache line.
type termDict struct {
	table []dictSlot // a power of two, at most a quarter full (most terms in their first slot)
	arena []byte     // the names back to back
	ends  []uint32   // by id: where its name ends in arena
}

type dictSlot struct {
	key  uint64 // a term of up to 8 bytes': its bytes, little-endian, zero-padded (no term holds a 0 byte); a longer one's: its first 6, a 0 and a 1 (no shorter term's)
	id   uint32 // 1 + id; 0: empty
	lh   uint32 // hash<<8 | length
	mark uint32 // preparedLines': 1 + the doc the term last occurred in
	pair uint32 // preparedLines': its entry in pairs for that doc
}

// reset empties the dict, keeping its buffers; a table far larger than the unit
// just done needed (it was grown by a larger unit before) is let go, so that a
// small unit does not pay for clearing it.
func (d *termDict) reset() {
	if len(d.table) > 1024 && len(d.table) > 8*len(d.ends) {
		d.table = nil
	} else {
		clear(d.table)
	}
	d.arena, d.ends = d.arena[:0], d.ends[:0]
}

// name returns term id's bytes.
func (d *termDict) name(id uint32) []byte {
	start := uint32(0)
	if id > 0 {
		start = d.ends[id-1]
	}
	return d.arena[start:d.ends[id]]
}

// termKey returns t's slot key and lh. t's capacity may run past it (a term in
// the tokenizer's buffer): 8 bytes are then read at once.
func termKey(t []byte) (uint64, uint32) {
	var key uint64
	if n := len(t); n >= 8 {
		key = binary.LittleEndian.Uint64(t)
	} else if cap(t) >= 8 {
		key = binary.LittleEndian.Uint64(t[:8]) & (1<<(8*n) - 1)
	} else {
		var b [8]byte
		copy(b[:], t)
		key = binary.LittleEndian.Uint64(b[:])
	}
	var h uint64
	if len(t) <= 8 {
		h = key * dictMul
	} else {
		h = maphash.Bytes(dictSeed, t)
		key = key&^(0xffff<<48) | 1<<56 // a 0 byte, then one that is not: no shorter term's key
	}
	return key, uint32(h>>40)<<8 | uint32(len(t))
}

// id returns the id of term t (at most 255 bytes), added (true) if it is new.
func (d *termDict) id(t []byte) (uint32, bool) {
	n := len(d.ends)
	e := d.find(t)
	return e.id - 1, len(d.ends) > n
}

// find returns term t's slot (at most 255 bytes; added if it is new), valid
// until the next term is added.
func (d *termDict) find(t []byte) *dictSlot {
	key, lh := termKey(t)
	return d.findKey(t, key, lh)
}

// findKey is find of t's termKey.
func (d *termDict) findKey(t []byte, key uint64, lh uint32) *dictSlot {
	if len(d.table) == 0 || 4*(len(d.ends)+1) > len(d.table) {
		d.grow() // before the slot is taken: its pointer stays valid
	}
	mask := uint32(len(d.table) - 1)
	for i := lh >> 8 & mask; ; i = (i + 1) & mask {
		e := &d.table[i]
		if e.id == 0 {
			d.arena = append(d.arena, t...)
			d.ends = append(d.ends, uint32(len(d.arena)))
			*e = dictSlot{key: key, id: uint32(len(d.ends)), lh: lh}
			return e
		}
		if e.key == key && e.lh == lh && (len(t) <= 8 || string(d.name(e.id-1)) == string(t)) {
			return e
		}
	}
}

// grow doubles the table (or makes its first), placing every slot again.
func (d *termDict) grow() {
	old := d.table
	d.table = make([]dictSlot, max(256, 2*len(old)))
	mask := uint32(len(d.table) - 1)
	for _, e := range old {
		if e.id == 0 {
			continue
		}
		i := e.lh >> 8 & mask
		for d.table[i].id != 0 {
			i = (i + 1) & mask
		}
		d.table[i] = e
	}
}
