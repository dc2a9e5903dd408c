package search

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
)

// Search runs q and returns the matching sessions, best first (newest first on
// equal scores), at most limit (0: all). A query of plain words without role or
// time filters is ranked from the terms' session summaries (searchRanked); any
// other from every posting (searchScan). Both give the same hits in the same
// order; the matching messages are gathered for the returned sessions only.
func (r *Reader) Search(q Query, f Filter, limit int) ([]Hit, error) {
	if f.Role != "" || !f.Since.IsZero() || !f.Until.IsZero() {
		return r.searchScan(q, f, limit)
	}
	if len(r.segs) >= maxRankedSlots || len(q.Must) >= maxRankedSlots {
		return r.searchScan(q, f, limit)
	}
	for _, it := range q.Must {
		if _, ok := plainTerm(it); !ok {
			return r.searchScan(q, f, limit)
		}
	}
	return r.searchRanked(q, f, limit)
}

// plainTerm is the one term an item is, if it is a plain word: a message holds the
// item exactly when its postings hold the term.
func plainTerm(it Item) (string, bool) {
	if it.Prefix || it.NeedsVerify() {
		return "", false
	}
	ls := it.Lookups()
	if len(ls) != 1 || ls[0].Prefix {
		return "", false
	}
	return ls[0].Term, true
}

// bm25 is one message's score for a term. The conversions keep the compiler from
// fusing a multiply and an add, so that every path computes the same bits.
func bm25(idf float64, tf uint32, length uint32, avgdl float64) float64 {
	t := float64(tf)
	norm := float64(bm25K1 * (1 - bm25B + float64(bm25B*float64(length)/max(avgdl, 1))))
	return float64(idf*t*(bm25K1+1)) / float64(t+norm)
}

// postLoc is where a session's postings of a term lie in a segment: entries from
// byte off (whose doc is first) up to doc last, other sessions' docs among them.
// A query ranks tens of thousands of candidates in a fresh process, where every
// page of these arrays costs a page fault: they are kept small (24 bytes each).
type postLoc struct {
	off         uint64
	first, last uint32
	next        int32  // the session's next location (-1: none)
	seg         uint16 // Search leaves queries of more segments or items to the scan
	item        uint16
}

// rankAgg is one candidate session of searchRanked; its best message score per
// item is in a shared array (0: not found).
type rankAgg struct {
	key   sessKey
	score float64
	last  uint32
	locs  int32 // head of its location list
}

// maxRankedSlots bounds the segments and items searchRanked handles (postLoc's
// fields).
const maxRankedSlots = 1 << 16

// termEntries are an item's dictionary entries per segment (df 0: none).
type termEntries struct {
	es  []dictEntry
	df  int
	idf float64
}

func (r *Reader) termEntries(term string) (termEntries, error) {
	te := termEntries{es: make([]dictEntry, len(r.segs))}
	for si, s := range r.segs {
		es, err := s.lookup(term, false)
		if err != nil {
			return te, fmt.Errorf("read %s: %w", filepath.Base(s.name), err)
		}
		if len(es) == 1 {
			te.es[si] = es[0]
			te.df += int(es[0].df)
		}
	}
	n := float64(max(r.docs, 1))
	te.idf = math.Log(1 + (n-float64(te.df)+0.5)/(float64(te.df)+0.5))
	return te, nil
}

// sessionsOf calls fn for each session of segment si holding the term of entry e,
// with its best score, its newest matching time and where its postings lie.
func (r *Reader) sessionsOf(si int, e dictEntry, idf, avgdl float64, fn func(k sessKey, best float64, last uint32, loc postLoc)) error {
	s := r.segs[si]
	if e.df == 0 {
		return nil
	}
	sum, err := s.summary(e)
	if err != nil {
		return err
	}
	if sum != nil {
		sessions, err := s.read(s.ft.sessOff, s.ft.nsess*sessRec)
		if err != nil {
			return err
		}
		var ferr error
		err = decodeSummary(sum, func(se *sumEntry) {
			if ferr != nil {
				return
			}
			if uint64(se.sess) >= s.ft.nsess {
				ferr = errCorrupt
				return
			}
			rec := sessions[uint64(se.sess)*sessRec:][:sessRec]
			k := sessKey{binary.LittleEndian.Uint32(rec), binary.LittleEndian.Uint16(rec[4:])}
			best := 0.0
			for _, p := range se.front {
				best = max(best, bm25(idf, p.tf, p.len, avgdl))
			}
			fn(k, best, se.maxTime, postLoc{seg: uint16(si), off: se.off, first: se.first, last: se.last})
		})
		if err == nil {
			err = ferr
		}
		return err
	}
	// A term without a summary: its postings, each with its doc record (read in
	// place); a run of one session's postings is one location.
	post, err := s.postings(e)
	if err != nil {
		return err
	}
	table, err := s.read(s.ft.docsOff, s.ft.ndocs*docSize)
	if err != nil {
		return err
	}
	var cur sessKey
	var loc postLoc
	var best float64
	var btf, blen, last uint32 // the best message's tf and length
	have := false
	var doc uint64
	// The doc records lie scattered over the table (a cache miss each): they are
	// read in batches, in a loop of loads alone, so that the misses overlap.
	const batch = 64
	var docs, tfs [batch]uint32
	var starts [batch]uint64
	var recs [batch]struct {
		k      sessKey
		length uint16
		t      uint32
	}
	for at := 0; at < len(post); {
		nb := 0
		for ; nb < batch && at < len(post); nb++ {
			start := at
			v, n := uvarint(post[at:])
			if n <= 0 {
				return errCorrupt
			}
			at += n
			tf := uint64(1)
			if v&1 == 0 {
				if tf, n = uvarint(post[at:]); n <= 0 {
					return errCorrupt
				}
				at += n
			}
			if start == 0 {
				doc = v >> 1
			} else {
				doc += v >> 1
			}
			if doc >= s.ft.ndocs {
				return errCorrupt
			}
			docs[nb], tfs[nb], starts[nb] = uint32(doc), uint32(tf), uint64(start)
		}
		for j := range nb {
			rec := table[uint64(docs[j])*docSize:][:docSize]
			recs[j].k = sessKey{binary.LittleEndian.Uint32(rec[0:]), binary.LittleEndian.Uint16(rec[4:])}
			recs[j].length, recs[j].t = binary.LittleEndian.Uint16(rec[18:]), binary.LittleEndian.Uint32(rec[14:])
		}
		for j := range nb {
			k, length, t, tf := recs[j].k, uint32(recs[j].length), recs[j].t, tfs[j]
			if !have || k != cur {
				if have {
					fn(cur, best, last, loc)
				}
				cur, have = k, true
				loc = postLoc{seg: uint16(si), off: starts[j], first: docs[j]}
				best, btf, blen, last = 0, 0, 0, 0
			}
			loc.last = docs[j]
			last = max(last, t)
			// A message with no higher tf and no shorter length than the best one
			// scores no higher: skip the arithmetic.
			if best == 0 || tf > btf || length < blen {
				if sc := bm25(idf, tf, length, avgdl); sc > best {
					best, btf, blen = sc, tf, length
				}
			}
		}
	}
	if have {
		fn(cur, best, last, loc)
	}
	return nil
}

// walkPostings decodes an encoded list from byte at, whose entry is for doc0 (at
// 0 the first doc is read from the list), calling fn with each doc, its tf and the
// byte offset of its entry until fn returns false.
func walkPostings(b []byte, at int, doc0 uint32, fn func(doc, tf uint32, at int) bool) error {
	doc := uint64(doc0)
	first := true
	for at < len(b) {
		start := at
		v, n := binary.Uvarint(b[at:])
		if n <= 0 {
			return errCorrupt
		}
		at += n
		tf := uint64(1)
		if v&1 == 0 {
			if tf, n = binary.Uvarint(b[at:]); n <= 0 {
				return errCorrupt
			}
			at += n
		}
		switch {
		case first && start == 0:
			doc = v >> 1
		case !first:
			doc += v >> 1
		}
		first = false
		if !fn(uint32(doc), uint32(tf), start) {
			return nil
		}
	}
	return nil
}

// searchRanked is Search for plain words from the session summaries: each item's
// sessions with their best message score and newest time, intersected, ranked;
// the units are read only for the sessions walked in rank order until limit are
// kept; their matching messages are found through the stored locations.
func (r *Reader) searchRanked(q Query, f Filter, limit int) ([]Hit, error) {
	avgdl := float64(r.tokens) / float64(max(r.docs, 1))
	items := make([]termEntries, len(q.Must))
	for i, it := range q.Must {
		term, _ := plainTerm(it)
		var err error
		if items[i], err = r.termEntries(term); err != nil {
			return nil, err
		}
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return items[a].df - items[b].df })
	if items[order[0]].df == 0 {
		return nil, nil
	}

	nItems := len(items)
	// At most one candidate per session of the rarest item's segments.
	var nsess uint64
	for _, s := range r.segs {
		nsess += s.ft.nsess
	}
	hint := int(min(uint64(items[order[0]].df), nsess, 1<<20))
	index := newCandIndex(r.man.NextUnit)
	aggs := make([]rankAgg, 0, hint)
	bests := make([]float64, 0, hint*nItems) // candidate ai's are bests[ai*nItems:][:nItems]
	locs := make([]postLoc, 0, hint*nItems)
	for n, i := range order {
		for si, e := range items[i].es {
			err := r.sessionsOf(si, e, items[i].idf, avgdl, func(k sessKey, best float64, last uint32, loc postLoc) {
				ai, ok := index.get(k)
				if !ok {
					if n > 0 {
						return // lacks an earlier item
					}
					ai = int32(len(aggs))
					index.put(k, ai)
					aggs = append(aggs, rankAgg{key: k, locs: -1})
					for range nItems {
						bests = append(bests, 0)
					}
				}
				a := &aggs[ai]
				b := &bests[int(ai)*nItems+i]
				*b = max(*b, best)
				a.last = max(a.last, last)
				loc.item, loc.next = uint16(i), a.locs
				a.locs = int32(len(locs))
				locs = append(locs, loc)
			})
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", filepath.Base(r.segs[si].name), err)
			}
		}
	}
	// Exclusions: any message of the session holding one.
	excluded := map[int32]bool{}
	for _, it := range q.Not {
		if err := r.excludeInto(it, index, excluded, avgdl); err != nil {
			return nil, err
		}
	}
	cand := make([]int32, 0, len(aggs))
	for ai := range aggs {
		a := &aggs[ai]
		best := bests[ai*nItems:][:nItems]
		if excluded[int32(ai)] || slices.Contains(best, 0) {
			continue
		}
		for _, sc := range best {
			a.score += sc
		}
		cand = append(cand, int32(ai))
	}
	// Walk the candidates best first (a heap: only the first few are taken) and
	// keep those whose unit passes, until limit are kept and the next scores
	// below the last kept (within the tie margin, the final sort decides).
	better := func(x, y int32) bool {
		a, b := &aggs[x], &aggs[y]
		if a.score != b.score {
			return a.score > b.score
		}
		return a.last > b.last
	}
	h := candHeap{c: cand, better: better}
	h.init()
	okUnit := r.unitFilter(f)
	var hits []Hit
	theta := math.Inf(1)
	for h.len() > 0 {
		ai := h.pop()
		a := &aggs[ai]
		if limit > 0 && len(hits) >= limit && a.score < theta-scoreTie {
			break
		}
		u, ok, err := okUnit(a.key.unit, a.key.sess)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		hits = append(hits, Hit{Unit: r.unitOf(u, a.key.sess), id: a.key.unit, Score: a.score, Last: int64(a.last)})
		if len(hits) == limit {
			theta = a.score
		}
	}
	// The final order, with the scan's comparator.
	sortHits(hits)
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	for i := range hits {
		k := sessKey{hits[i].id, sessIndex(r.units[hits[i].id], hits[i].Session)}
		ms, err := r.rankedMatches(q, &aggs[index.must(k)], locs, items, avgdl)
		if err != nil {
			return nil, err
		}
		hits[i].Matches = ms
	}
	return hits, nil
}

// rankedMatches gathers a session's matching messages from its locations, as the
// scan does: per message the items it holds and the sum of their scores; the
// best MaxMatches.
func (r *Reader) rankedMatches(q Query, a *rankAgg, locs []postLoc, items []termEntries, avgdl float64) ([]Match, error) {
	type msgKey struct {
		off int64
		prt uint8
	}
	byMsg := map[msgKey]*Match{}
	// Items in order, as the scan adds their scores.
	for i := range q.Must {
		for li := a.locs; li >= 0; li = locs[li].next {
			loc := locs[li]
			if int(loc.item) != i {
				continue
			}
			s := r.segs[loc.seg]
			post, err := s.postings(items[i].es[loc.seg])
			if err != nil {
				return nil, err
			}
			var derr error
			err = walkPostings(post, int(loc.off), loc.first, func(doc, tf uint32, _ int) bool {
				if doc > loc.last {
					return false
				}
				d, err := s.doc(doc)
				if err != nil {
					derr = err
					return false
				}
				if d.Unit != a.key.unit || d.Sess != a.key.sess {
					return true
				}
				m := Match{Offset: d.Offset, Part: d.Part, Role: roleCodes[min(int(d.Role), len(roleCodes)-1)], Time: int64(d.Time),
					Score: bm25(items[i].idf, tf, uint32(d.Len), avgdl), Items: 1}
				mk := msgKey{m.Offset, m.Part}
				if have := byMsg[mk]; have != nil {
					have.Score += m.Score
					have.Items++
					return true
				}
				byMsg[mk] = &m
				return true
			})
			if err == nil {
				err = derr
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", filepath.Base(s.name), err)
			}
		}
	}
	ms := make([]Match, 0, len(byMsg))
	for _, m := range byMsg {
		ms = append(ms, *m)
	}
	sortMatches(ms)
	if len(ms) > MaxMatches {
		ms = ms[:MaxMatches]
	}
	return ms, nil
}

// excludeInto marks the candidates (index) holding item it in any message.
func (r *Reader) excludeInto(it Item, index *candIndex, excluded map[int32]bool, avgdl float64) error {
	if term, ok := plainTerm(it); ok {
		te, err := r.termEntries(term)
		if err != nil {
			return err
		}
		for si, e := range te.es {
			err := r.sessionsOf(si, e, te.idf, avgdl, func(k sessKey, _ float64, _ uint32, _ postLoc) {
				if ai, ok := index.get(k); ok {
					excluded[ai] = true
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	ps, _, err := r.docsFor(it)
	if err != nil {
		return err
	}
	for _, p := range ps {
		d, err := r.segs[p.seg].doc(p.doc)
		if err != nil {
			return err
		}
		ai, ok := index.get(sessKey{d.Unit, d.Sess})
		if !ok || excluded[ai] {
			continue
		}
		u, err := r.unit(d.Unit)
		if err != nil {
			return err
		}
		if u != nil && (!it.NeedsVerify() || r.verify(u, d, it)) {
			excluded[ai] = true
		}
	}
	return nil
}

// candHeap is a binary heap of candidates, best on top.
type candHeap struct {
	c      []int32
	better func(a, b int32) bool
}

func (h *candHeap) len() int { return len(h.c) }

func (h *candHeap) init() {
	for i := len(h.c)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candHeap) pop() int32 {
	top := h.c[0]
	n := len(h.c) - 1
	h.c[0] = h.c[n]
	h.c = h.c[:n]
	h.down(0)
	return top
}

func (h *candHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.c) {
			return
		}
		b := l
		if r := l + 1; r < len(h.c) && h.better(h.c[r], h.c[l]) {
			b = r
		}
		if !h.better(h.c[b], h.c[i]) {
			return
		}
		h.c[i], h.c[b] = h.c[b], h.c[i]
		i = b
	}
}

// unitFilter returns the verdict on a session's unit under f: live (or removed,
// with Archived), of the sources, kept by Keep. Verdicts are cached per session.
func (r *Reader) unitFilter(f Filter) func(id uint32, sess uint16) (*unitRec, bool, error) {
	seen := map[sessKey]bool{}
	return func(id uint32, sess uint16) (*unitRec, bool, error) {
		u, err := r.unit(id)
		if err != nil || u == nil {
			return nil, false, err
		}
		k := sessKey{id, sess}
		if v, ok := seen[k]; ok {
			return u, v, nil
		}
		ok := u.State == unitLive || u.State == unitRemoved && f.Archived
		if ok && f.Sources != nil {
			ok = slices.Contains(f.Sources, u.Source)
		}
		if ok && f.Keep != nil {
			ok = f.Keep(r.unitOf(u, sess))
		}
		seen[k] = ok
		return u, ok, nil
	}
}

// candIndex maps a session to its candidate: through a slice by unit id for a
// unit's first session (ids are handed out densely), a map for the others.
type candIndex struct {
	byUnit []int32 // candidate + 1 of (id, 0); 0: none
	other  map[sessKey]int32
}

func newCandIndex(nextUnit uint32) *candIndex {
	return &candIndex{byUnit: make([]int32, min(nextUnit, 1<<22)), other: map[sessKey]int32{}}
}

func (c *candIndex) get(k sessKey) (int32, bool) {
	if k.sess == 0 && int(k.unit) < len(c.byUnit) {
		v := c.byUnit[k.unit]
		return v - 1, v > 0
	}
	v, ok := c.other[k]
	return v, ok
}

func (c *candIndex) put(k sessKey, v int32) {
	if k.sess == 0 && int(k.unit) < len(c.byUnit) {
		c.byUnit[k.unit] = v + 1
		return
	}
	c.other[k] = v
}

// must is the candidate of a session known to be one.
func (c *candIndex) must(k sessKey) int32 {
	v, _ := c.get(k)
	return v
}
