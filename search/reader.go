package search

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// ErrNoIndex: the state dir holds no search index yet.
var ErrNoIndex = errors.New("no search index")

// Reader answers queries from the committed segments. It opens files only for
// reading, so it is safe while a daemon writes: a segment is never changed, and a
// merged-away one stays readable through the open file.
type Reader struct {
	dir    string
	man    manifest
	segs   []*segment
	units  map[uint32]*unitRec // read on demand through the segments' unit tables
	docs   uint64
	tokens uint64
	cache  map[uint32][]Message // unit → its messages, read back for verification
	// The transcript last read back, kept open: a hit's messages are read together.
	file    *os.File
	lineBuf []byte
}

// OpenReader opens the index in dir (<state_dir>/search). It reads the manifest
// and maps the segments; everything else is read as a query needs it.
func OpenReader(dir string) (*Reader, error) {
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoIndex
	}
	// A merge may remove a segment between our reading the manifest and opening
	// it: read the manifest again then.
	var err error
	for range 5 {
		var man manifest
		var segs []*segment
		man, segs, err = openSegments(dir, true)
		if err == nil {
			r := &Reader{dir: dir, man: man, segs: segs, units: map[uint32]*unitRec{}, cache: map[uint32][]Message{}}
			for _, s := range segs {
				r.docs += s.ft.ndocs
				r.tokens += s.ft.tokens
			}
			return r, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return nil, fmt.Errorf("open search index: %w", err)
}

// unit returns the current record of id: the one of the newest segment that has
// it (nil if none has).
func (r *Reader) unit(id uint32) (*unitRec, error) {
	if u, ok := r.units[id]; ok {
		return u, nil
	}
	var u *unitRec
	for i := len(r.segs) - 1; i >= 0 && u == nil; i-- {
		var err error
		if u, err = r.segs[i].unit(id); err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Base(r.segs[i].name), err)
		}
	}
	r.units[id] = u
	return u, nil
}

// allUnits reads every unit record (later segments override earlier ones).
func (r *Reader) allUnits() (map[uint32]*unitRec, error) {
	out := map[uint32]*unitRec{}
	for _, s := range r.segs {
		us, err := s.readUnits()
		if err != nil {
			return nil, err
		}
		for _, u := range us {
			out[u.ID] = u
		}
	}
	return out, nil
}

// Close releases the files.
func (r *Reader) Close() {
	if r.file != nil {
		r.file.Close()
	}
	for _, s := range r.segs {
		s.close()
	}
}

// ToolOutput reports whether the index holds tool inputs and outputs.
func (r *Reader) ToolOutput() bool { return r.man.ToolOutput }

// Unit is a unit as a search result names it.
type Unit struct {
	Source, Layout, Rel, Path string
	Removed                   bool   // the file left the store (archived or deleted)
	Session                   string // document units: the session's id; "" for line units
	// Project is the project the catalogs filed the session under when it was last
	// indexed: a hint of which catalog lists it ("" unknown).
	Project string
}

// Filter narrows a search.
type Filter struct {
	Sources      []string  // only units of these sources (nil: all)
	Since, Until time.Time // message time (a message without one passes)
	Role         string    // "", RoleUser or RoleAssistant (RoleTool for tool text)
	Archived     bool      // include units that left the store
	Keep         func(u Unit) bool
}

// Match is one matching message of a hit.
type Match struct {
	Offset int64
	Part   uint8
	Role   string
	Time   int64 // Unix seconds, 0 if unknown
	Items  int   // how many query items it holds
	Score  float64
}

// Hit is one matching session.
type Hit struct {
	Unit
	id      uint32 // the unit's record
	Score   float64
	Last    int64   // newest matching message time, Unix seconds
	Matches []Match // best first, at most MaxMatches
}

// MaxMatches is how many messages a hit keeps.
const MaxMatches = 3

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

type posting struct {
	seg int
	doc uint32
	tf  uint32
}

// docsFor returns the postings of every doc holding all of an item's lookups, in
// (segment, doc) order, tf summed over its lookups; and the idf sum.
func (r *Reader) docsFor(it Item) ([]posting, float64, error) {
	var out []posting
	idf := 0.0
	for li, l := range it.Lookups() {
		var list []posting
		df := 0
		for si, s := range r.segs {
			es, err := s.lookup(l.Term, l.Prefix)
			if err != nil {
				return nil, 0, err
			}
			start := len(list)
			for _, e := range es {
				df += int(e.df)
				post, err := s.postings(e)
				if err != nil {
					return nil, 0, err
				}
				if err := decodePostings(post, func(doc, tf uint32) { list = append(list, posting{si, doc, tf}) }); err != nil {
					return nil, 0, err
				}
			}
			if len(es) > 1 {
				// A prefix: the union of several sorted lists.
				seg := list[start:]
				sort.Slice(seg, func(i, j int) bool { return seg[i].doc < seg[j].doc })
				k := start
				for _, p := range seg {
					if k > start && list[k-1].doc == p.doc {
						list[k-1].tf += p.tf
						continue
					}
					list[k] = p
					k++
				}
				list = list[:k]
			}
		}
		n := float64(max(r.docs, 1))
		idf += math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		if li == 0 {
			out = list
			continue
		}
		// Intersect (both sorted by segment, then doc).
		var both []posting
		i, j := 0, 0
		for i < len(out) && j < len(list) {
			a, b := out[i], list[j]
			switch {
			case a.seg == b.seg && a.doc == b.doc:
				both = append(both, posting{a.seg, a.doc, a.tf + b.tf})
				i++
				j++
			case a.seg < b.seg || a.seg == b.seg && a.doc < b.doc:
				i++
			default:
				j++
			}
		}
		out = both
	}
	return out, idf, nil
}

type sessKey struct {
	unit uint32
	sess uint16
}

// sessAgg is what ranking needs of one session: per query item its best
// message score, and its newest matching message.
type sessAgg struct {
	best []float64 // per item; 0: the item does not occur (scores are > 0)
	last int64
}

// searchScan is Search by visiting every posting of every item (the reference
// the summaries' ranking must equal, and the way for what summaries cannot rank:
// prefixes, phrases, role and time filters).
func (r *Reader) searchScan(q Query, f Filter, limit int) ([]Hit, error) {
	avgdl := float64(r.tokens) / float64(max(r.docs, 1))
	filter := r.unitFilter(f)
	var uerr error
	okUnit := func(id uint32, sess uint16) (*unitRec, bool) {
		u, ok, err := filter(id, sess)
		if err != nil {
			uerr = err
		}
		return u, ok
	}
	// match calls fn for each message that matches item i (after the filters).
	posts := make([][]posting, len(q.Must))
	idfs := make([]float64, len(q.Must))
	for i, it := range q.Must {
		var err error
		if posts[i], idfs[i], err = r.docsFor(it); err != nil {
			return nil, err
		}
	}
	match := func(i int, only map[sessKey]bool, fn func(k sessKey, m Match)) error {
		it := q.Must[i]
		// A session's messages are mostly numbered together: the last session's
		// verdict spares the map lookups.
		var lastK sessKey
		var lastU *unitRec
		lastOK, have := false, false
		for _, p := range posts[i] {
			d, err := r.segs[p.seg].doc(p.doc)
			if err != nil {
				return err
			}
			k := sessKey{d.Unit, d.Sess}
			if !have || k != lastK {
				lastK, have = k, true
				lastU, lastOK = okUnit(d.Unit, d.Sess)
				if only != nil && !only[k] {
					lastOK = false
				}
			}
			u, ok := lastU, lastOK
			if !ok || !f.passes(d) {
				continue
			}
			if it.NeedsVerify() && !r.verify(u, d, it) {
				continue
			}
			score := bm25(idfs[i], p.tf, uint32(d.Len), avgdl)
			fn(k, Match{Offset: d.Offset, Part: d.Part, Role: roleCodes[min(int(d.Role), len(roleCodes)-1)], Time: int64(d.Time), Score: score, Items: 1})
		}
		return uerr
	}
	// Pass 1: rank. A session must hold every item (the rarest first narrows the
	// candidates: later items only update sessions already found).
	order := make([]int, len(q.Must))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(posts[order[a]]) < len(posts[order[b]]) })
	aggs := map[sessKey]*sessAgg{}
	for n, i := range order {
		var lastK sessKey
		var lastA *sessAgg
		err := match(i, nil, func(k sessKey, m Match) {
			a := lastA
			if a == nil || k != lastK {
				a = aggs[k]
				lastK, lastA = k, a
			}
			if a == nil {
				if n > 0 {
					return // lacks an earlier item
				}
				a = &sessAgg{best: make([]float64, len(q.Must))}
				aggs[k] = a
				lastA = a
			}
			a.best[i] = max(a.best[i], m.Score)
			a.last = max(a.last, m.Time)
		})
		if err != nil {
			return nil, err
		}
	}
	// Exclusions: any message of the session (whatever the filters) that holds one.
	excluded := map[sessKey]bool{}
	for _, it := range q.Not {
		ps, _, err := r.docsFor(it)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			d, err := r.segs[p.seg].doc(p.doc)
			if err != nil {
				return nil, err
			}
			k := sessKey{d.Unit, d.Sess}
			if excluded[k] || aggs[k] == nil {
				continue
			}
			u, err := r.unit(d.Unit)
			if err != nil {
				return nil, err
			}
			if u != nil && (!it.NeedsVerify() || r.verify(u, d, it)) {
				excluded[k] = true
			}
		}
	}
	var hits []Hit
	for k, a := range aggs {
		if excluded[k] || slices.Contains(a.best, 0) {
			continue
		}
		h := Hit{Unit: r.unitOf(r.units[k.unit], k.sess), id: k.unit, Last: a.last}
		for _, sc := range a.best {
			h.Score += sc
		}
		hits = append(hits, h)
	}
	sortHits(hits)
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	// Pass 2: the matching messages of the sessions returned.
	top := make(map[sessKey]bool, len(hits))
	idx := make(map[sessKey]int, len(hits))
	for i, h := range hits {
		k := sessKey{h.id, sessIndex(r.units[h.id], h.Session)}
		top[k], idx[k] = true, i
	}
	type msgKey struct {
		k   sessKey
		off int64
		prt uint8
	}
	byMsg := map[msgKey]*Match{}
	for i := range q.Must {
		err := match(i, top, func(k sessKey, m Match) {
			mk := msgKey{k, m.Offset, m.Part}
			if have := byMsg[mk]; have != nil {
				have.Score += m.Score
				have.Items++
				return
			}
			c := m
			byMsg[mk] = &c
		})
		if err != nil {
			return nil, err
		}
	}
	for mk, m := range byMsg {
		h := &hits[idx[mk.k]]
		h.Matches = append(h.Matches, *m)
	}
	for i := range hits {
		ms := hits[i].Matches
		sortMatches(ms)
		if len(ms) > MaxMatches {
			hits[i].Matches = ms[:MaxMatches]
		}
	}
	return hits, nil
}

// sortMatches sorts a hit's messages best first: those holding more items, then
// by score, then in file order.
func sortMatches(ms []Match) {
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Items != b.Items {
			return a.Items > b.Items
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Offset < b.Offset || a.Offset == b.Offset && a.Part < b.Part
	})
}

// sortHits sorts hits best first: by score, then newest, then by path and session.
func sortHits(hits []Hit) {
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if math.Abs(a.Score-b.Score) > scoreTie {
			return a.Score > b.Score
		}
		if a.Last != b.Last {
			return a.Last > b.Last
		}
		return a.Path < b.Path || a.Path == b.Path && a.Session < b.Session
	})
}

// scoreTie: scores this close are equal (sums in another order differ by less).
const scoreTie = 1e-9

// sessIndex is the index of session id in a document unit's sessions (0 for a
// line unit).
func sessIndex(u *unitRec, id string) uint16 {
	if id == "" {
		return 0
	}
	return uint16(max(slices.Index(u.Sids, id), 0))
}

func (f *Filter) passes(d docRec) bool {
	if f.Role != "" && roleCodes[min(int(d.Role), len(roleCodes)-1)] != f.Role {
		return false
	}
	if d.Time != 0 {
		t := time.Unix(int64(d.Time), 0)
		if !f.Since.IsZero() && t.Before(f.Since.Truncate(time.Second)) {
			return false
		}
		if !f.Until.IsZero() && t.After(f.Until) {
			return false
		}
	}
	return true
}

func (r *Reader) unitOf(u *unitRec, sess uint16) Unit {
	out := Unit{Source: u.Source, Layout: u.Layout, Rel: u.Rel, Path: u.Path, Removed: u.State != unitLive, Project: u.project(sess)}
	if int(sess) < len(u.Sids) {
		out.Session = u.Sids[sess]
	}
	return out
}

// verify reads the message back from its transcript and matches the item on its
// normalized text.
func (r *Reader) verify(u *unitRec, d docRec, it Item) bool {
	m, err := r.message(u, d.Offset, d.Part)
	if err != nil {
		// An archived session's file is gone: its words matched, which is all
		// that can be checked without unpacking the archive.
		return u.State == unitRemoved
	}
	return it.Matches(Normalize(m.Text))
}

// message reads one indexed message back from its file.
func (r *Reader) message(u *unitRec, off int64, part uint8) (Message, error) {
	if _, isLines := lineExtractors[u.Layout]; !isLines {
		msgs, ok := r.cache[u.ID]
		if !ok {
			data, err := os.ReadFile(u.Path)
			if err != nil {
				return Message{}, err
			}
			msgs = ExtractDocument(u.Layout, data, r.man.ToolOutput)
			r.cache[u.ID] = msgs
		}
		for _, m := range msgs {
			if m.Offset == off && m.Part == part {
				return m, nil
			}
		}
		return Message{}, fmt.Errorf("message %d of %s: %w", off, u.Path, os.ErrNotExist)
	}
	if r.file == nil || r.file.Name() != u.Path {
		if r.file != nil {
			r.file.Close()
			r.file = nil
		}
		f, err := os.Open(u.Path)
		if err != nil {
			return Message{}, err
		}
		r.file = f
	}
	line, err := readLineFrom(r.file, off, &r.lineBuf)
	if err != nil {
		return Message{}, err
	}
	for _, m := range ExtractLine(nil, u.Layout, off, line, r.man.ToolOutput) {
		if m.Part == part {
			return m, nil
		}
	}
	return Message{}, fmt.Errorf("message at %d of %s: %w", off, u.Path, os.ErrNotExist)
}

// Message reads a hit's message back from its file (for snippets).
func (r *Reader) Message(h Hit, m Match) (Message, error) {
	u, err := r.unit(h.id)
	if err != nil {
		return Message{}, err
	}
	if u == nil {
		return Message{}, fmt.Errorf("unit %s: %w", h.Path, os.ErrNotExist)
	}
	return r.message(u, m.Offset, m.Part)
}

// MaxLineBytes bounds a line read back (the indexer skips longer lines).
const MaxLineBytes = 16 << 20

// readLineFrom reads the line that starts at byte off of f into *buf (reused):
// most lines fit in the first read.
func readLineFrom(f *os.File, off int64, buf *[]byte) ([]byte, error) {
	if cap(*buf) < 8<<10 {
		*buf = make([]byte, 8<<10)
	}
	b := (*buf)[:cap(*buf)]
	n, err := f.ReadAt(b, off)
	if i := bytes.IndexByte(b[:n], '\n'); i >= 0 {
		return b[:i], nil
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n < len(b) {
		return nil, fmt.Errorf("read line at %d of %s: %w", off, f.Name(), io.ErrUnexpectedEOF)
	}
	line, err := readLine(f, off)
	if err == nil && cap(line) > cap(*buf) && cap(line) <= 1<<20 {
		*buf = line[:0]
	}
	return line, err
}

// ReadLineAt reads the line that starts at byte off of the file.
func ReadLineAt(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLine(f, off)
}

// readLine reads the line that starts at byte off of f, up to MaxLineBytes.
func readLine(f *os.File, off int64) ([]byte, error) {
	path := f.Name()
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, MaxLineBytes+1), 16<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if err == nil {
			return line[:len(line)-1], nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF {
				return nil, fmt.Errorf("read line at %d of %s: %w", off, path, io.ErrUnexpectedEOF)
			}
			return nil, err
		}
	}
}
