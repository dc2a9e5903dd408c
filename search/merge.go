package search

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// mergeFanIn: a trailing run of this many segments of one size tier is merged.
const mergeFanIn = 6

// tier groups segments by size: 0 below 256 KiB, then one tier per factor of 4.
func tier(size int64) int {
	t := 0
	for size >= 256<<10 {
		size >>= 2
		t++
	}
	return t
}

// maybeMergeLocked merges the newest segments when a size tier holds mergeFanIn of
// them (each byte is rewritten about once per tier), or everything when there are
// more than MaxSegments. It runs right after a commit, when the units in memory
// are exactly the committed ones.
func (x *Index) maybeMergeLocked() error {
	for {
		n := len(x.segs)
		if n > x.opt.MaxSegments {
			return x.mergeLocked(0)
		}
		k := 0
		last := tier(x.segs[n-1].size)
		for k < n && tier(x.segs[n-1-k].size) <= last {
			k++
		}
		if k < mergeFanIn {
			return nil
		}
		if err := x.mergeLocked(n - k); err != nil {
			return err
		}
	}
}

// Compact merges every segment into one (dropping the docs of replaced and
// removed units); it commits first what was handed over.
func (x *Index) Compact() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.commitLocked(); err != nil {
		return err
	}
	if len(x.segs) <= 1 && x.garbageLocked() == 0 {
		return nil
	}
	return x.mergeLocked(0)
}

// garbageLocked counts unit records whose docs are garbage.
func (x *Index) garbageLocked() int {
	n := 0
	for _, u := range x.units {
		if u.State == unitDead || u.State == unitRemoved && !x.keepLocked(u) {
			n++
		}
	}
	return n
}

func (x *Index) keepLocked(u *unitRec) bool {
	return u.State == unitLive || u.State == unitRemoved && x.opt.KeepRemoved != nil && x.opt.KeepRemoved(u.Source, u.Path)
}

// mergeLocked replaces segs[from:] by one segment holding their live docs, then
// commits the new manifest. Docs are renumbered in order, so postings stay sorted.
func (x *Index) mergeLocked(from int) error {
	in := x.segs[from:]
	keep := map[uint32]bool{}
	for id, u := range x.units {
		keep[id] = x.keepLocked(u)
	}
	// Unit records of the inputs, folded (later wins); a full merge drops the
	// records nothing refers to any more.
	folded := map[uint32]*unitRec{}
	for _, s := range in {
		us, err := s.readUnits()
		if err != nil {
			return err
		}
		for _, u := range us {
			folded[u.ID] = u
		}
	}
	var units []*unitRec
	for id, u := range folded {
		if from == 0 && !keep[id] {
			continue
		}
		units = append(units, u)
	}
	sort.Slice(units, func(i, j int) bool { return units[i].ID < units[j].ID })

	name := x.newSegName()
	path := filepath.Join(x.opt.Dir, name)
	w, err := newSegWriter(path)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		w.abort()
		return fmt.Errorf("merge search segments: %w", err)
	}
	w.units(units)
	// Docs: copied in chunks; dropped[i] lists input i's dropped doc numbers, so a
	// doc's new number is its old one minus the drops before it plus the base.
	dropped := make([][]uint32, len(in))
	base := make([]uint32, len(in))
	var tokens uint64
	w.beginDocs()
	var next uint32
	for i, s := range in {
		base[i] = next
		const chunk = 32 << 10
		buf := make([]byte, chunk*docSize)
		for d := uint64(0); d < s.ft.ndocs; d += chunk {
			cnt := min(chunk, s.ft.ndocs-d)
			b := buf[:cnt*docSize]
			if _, err := s.f.ReadAt(b, int64(s.ft.docsOff+d*docSize)); err != nil {
				return fail(err)
			}
			for j := uint64(0); j < cnt; j++ {
				rec := getDoc(b[j*docSize:])
				if !keep[rec.Unit] {
					dropped[i] = append(dropped[i], uint32(d+j))
					continue
				}
				w.addDoc(&rec)
				tokens += uint64(rec.Len)
				next++
			}
		}
	}
	w.endDocs(tokens)
	remap := func(i int, doc uint32) (uint32, bool) {
		k := sort.Search(len(dropped[i]), func(j int) bool { return dropped[i][j] >= doc })
		if k < len(dropped[i]) && dropped[i][k] == doc {
			return 0, false
		}
		return base[i] + doc - uint32(k), true
	}
	// Terms: a k-way merge of the sorted dictionaries.
	its := make([]*dictIter, len(in))
	for i, s := range in {
		its[i] = newDictIter(s)
		if err := its[i].next(); err != nil {
			return fail(err)
		}
	}
	var tl termList
	for {
		term := ""
		have := false
		for _, it := range its {
			if it.ok && (!have || it.e.term < term) {
				term, have = it.e.term, true
			}
		}
		if !have {
			break
		}
		tl = termList{buf: tl.buf[:0]}
		for i, it := range its {
			if !it.ok || it.e.term != term {
				continue
			}
			post, err := in[i].postings(it.e)
			if err != nil {
				return fail(err)
			}
			if err := decodePostings(post, func(doc, tf uint32) {
				if nd, ok := remap(i, doc); ok {
					tl.add(nd, tf)
				}
			}); err != nil {
				return fail(err)
			}
			if err := it.next(); err != nil {
				return fail(err)
			}
		}
		if tl.n > 0 {
			w.term(term, tl.n, tl.buf)
		}
	}
	if err := w.finish(); err != nil {
		return err
	}
	s, err := openSegment(path, false)
	if err != nil {
		return err
	}
	segs := append(slices.Clone(x.segs[:from]), s)
	if err := x.writeManifestLocked(segs); err != nil {
		s.close()
		os.Remove(path)
		return err
	}
	for _, old := range in {
		old.close()
		os.Remove(old.name)
	}
	x.segs = segs
	if from == 0 {
		for id := range x.units {
			if !keep[id] {
				delete(x.units, id)
			}
		}
	}
	x.stats.Merges++
	return nil
}

// dictIter reads a segment's dictionary in order.
type dictIter struct {
	r    byteReader
	prev []byte
	e    dictEntry
	ok   bool
}

// byteReader is what a dictionary is read through: a bufio.Reader on the file, or
// a bytes.Reader on its mapping.
type byteReader interface {
	io.Reader
	io.ByteReader
}

func newDictIter(s *segment) *dictIter {
	return &dictIter{r: bufio.NewReaderSize(io.NewSectionReader(s.f, int64(s.ft.dictOff), int64(s.ft.dictLen)), 64<<10)}
}

func (it *dictIter) next() error {
	shared, err := binary.ReadUvarint(it.r)
	if err == io.EOF {
		it.ok = false
		return nil
	}
	if err != nil {
		return errCorrupt
	}
	l, err := binary.ReadUvarint(it.r)
	if err != nil || l > MaxTermBytes*4 {
		return errCorrupt
	}
	if shared > uint64(len(it.prev)) {
		// A block boundary restarts prefix sharing at 0; anything else is damage.
		return errCorrupt
	}
	term := append(it.prev[:shared:shared], make([]byte, l)...)
	if _, err := io.ReadFull(it.r, term[shared:]); err != nil {
		return errCorrupt
	}
	df, e1 := binary.ReadUvarint(it.r)
	off, e2 := binary.ReadUvarint(it.r)
	ln, e3 := binary.ReadUvarint(it.r)
	if e1 != nil || e2 != nil || e3 != nil {
		return errCorrupt
	}
	it.prev = term
	it.e = dictEntry{term: string(term), df: uint32(df), off: off, len: ln}
	it.ok = true
	return nil
}
