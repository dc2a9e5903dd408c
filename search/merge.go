package search

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
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

// coldMaxSegments: during a cold build, segments are merged when more than this
// many times MaxSegments of them are committed.
const coldMaxSegments = 4

// DefaultMergeBudget: a merge of at most this many input bytes runs inside the
// Sync that calls for it; a larger one runs on its own goroutine, so that a Sync
// (which the indexer calls with its lock held, before it writes the catalogs)
// never waits for a large merge.
const DefaultMergeBudget = 8 << 20

// maybeMergeLocked merges the newest segments when a size tier holds mergeFanIn of
// them (each byte is rewritten about once per tier), or all but a large leader
// when there are more than MaxSegments. It runs right after a commit. Small merges run here; a
// large one is handed to the background (one at a time; the segments it merges
// are left alone meanwhile).
func (x *Index) maybeMergeLocked() error {
	for {
		from, ok := x.mergeCandidateLocked()
		if !ok {
			return nil
		}
		var size int64
		for _, s := range x.segs[from:] {
			size += s.size
		}
		if size > x.opt.MergeBudget {
			if x.merging == 0 {
				x.mergeInBackgroundLocked(from)
			}
			return nil
		}
		if err := x.mergeLocked(from); err != nil {
			return err
		}
	}
}

// mergeCandidateLocked picks the segments to merge next, segs[from:], if any:
// only segments after those a background merge holds.
func (x *Index) mergeCandidateLocked() (int, bool) {
	n := len(x.segs)
	lo := x.mergeHeld
	if x.cold {
		// A cold build merges everything at its end; meanwhile only a long run
		// of segments is merged (each query opens every segment).
		return lo, n-lo > coldMaxSegments*x.opt.MaxSegments
	}
	if n-lo > x.opt.MaxSegments && n-lo > 1 {
		// Too many: the newest are merged, not a leading segment at least as
		// large as all those after it (the index a start-up pass or an
		// earlier merge left), which would be rewritten whole for a few small
		// ones.
		from := lo
		for from < n-2 && x.segs[from].size >= sizeOf(x.segs[from+1:]) {
			from++
		}
		return from, true
	}
	if n == 0 {
		return 0, false
	}
	k := 0
	last := tier(x.segs[n-1].size)
	for k < n-lo && tier(x.segs[n-1-k].size) <= last {
		k++
	}
	return n - k, k >= mergeFanIn
}

func sizeOf(segs []*segment) int64 {
	var n int64
	for _, s := range segs {
		n += s.size
	}
	return n
}

// mergeInBackgroundLocked merges segs[from:] on a goroutine and installs the
// result under the lock; commits go on meanwhile, appending newer segments.
func (x *Index) mergeInBackgroundLocked(from int) {
	job := x.planMergeLocked(from, true)
	x.merging++
	x.mergeHeld = len(x.segs)
	x.mergeWG.Add(1)
	go func() {
		defer x.mergeWG.Done()
		if x.mergeGate != nil {
			<-x.mergeGate
		}
		s, err := job.build()
		if err == nil {
			// The install takes the lock and commits a manifest: not while
			// a batch is being handled either, nor once Close was called.
			if err = job.yield(); err != nil {
				s.close()
				os.Remove(s.name)
			}
		}
		x.mu.Lock()
		x.merging--
		x.mergeHeld = 0
		var old []*segment
		if err == nil {
			old, err = x.installMergeLocked(job, s)
		}
		x.mu.Unlock()
		removeSegments(old) // off the lock: unlinking large files takes a while
		if err != nil && !errors.Is(err, errClosing) {
			x.log.Warn("merge search segments", "err", err)
		}
	}()
}

// Settle is called once a daemon's start-up pass is done: the segments it
// committed (a first pass over a store writes one per spill and per source, a
// dozen on a large store) are merged into one in the background now, while the
// daemon has just been busy anyway, rather than when the first appends after
// start-up tip their count over MaxSegments, where the merge of the whole index
// would compete with the commits of those appends. An index of fewer than
// mergeFanIn segments is left as it is (a restart that read little).
func (x *Index) Settle() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cold || x.merging > 0 || len(x.segs) < mergeFanIn {
		return
	}
	x.mergeInBackgroundLocked(0)
}

// Compact merges every segment into one (dropping the docs of replaced and
// removed units); it commits first what was handed over.
func (x *Index) Compact() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	// A merge decides on committed states only: commit again after waiting for
	// a merge, since calls may have come in meanwhile.
	for {
		if err := x.commitLocked(); err != nil {
			return err
		}
		if x.merging == 0 {
			break
		}
		x.mu.Unlock()
		x.mergeWG.Wait() // a merge the commit started
		x.mu.Lock()
	}
	cold := x.cold
	x.cold, x.seen = false, nil // the end of a cold build: this merge writes summaries
	if cold && len(x.segs) == 0 || !cold && len(x.segs) <= 1 && x.garbageLocked() == 0 {
		return nil
	}
	return x.mergeLocked(0)
}

// garbageLocked counts the ids whose docs a merge would drop.
func (x *Index) garbageLocked() int {
	n, since := 0, time.Now()
	for id := range x.u.ended {
		if x.dropLocked(id, since) {
			n++
		}
	}
	return n
}

// dropLocked reports whether a merge drops the docs of id: its unit ended, a
// commit has written that, and (a removed unit) no archive of it is kept. Ends
// are final (a unit that comes back gets a new id), so a verdict taken at any
// time between a merge's plan and its install holds at the install.
func (x *Index) dropLocked(id uint32, since time.Time) bool {
	e, ok := x.u.ended[id]
	if !ok || !e.committed {
		return false
	}
	return e.state == unitDead || !x.keepRemovedLocked(id, since)
}

// keepRemovedLocked reports whether the docs of removed unit id are kept (its
// session was archived). Its source and path are read from its record.
func (x *Index) keepRemovedLocked(id uint32, since time.Time) bool {
	if x.opt.KeepRemoved == nil {
		return false
	}
	r, err := x.diskRecordLocked(id)
	if err != nil {
		x.log.Warn("read search unit record", "unit", id, "err", err)
		return true // kept when in doubt
	}
	return x.opt.KeepRemoved(r.Source, r.Path, since)
}

// mergeJob is a merge planned under the lock and built without it (a background
// merge) or with it: its inputs are immutable files.
type mergeJob struct {
	x    *Index
	in   []*segment
	full bool // the inputs are every segment: records of dropped units go too
	path string
	// noSum: the merged segment gets no session summaries (a merge during a cold
	// build, whose segments are merged again at its end)
	noSum bool
	pivot *string   // tests: where the terms are split ("": not), instead of splitTerm's choice
	bg    bool      // built without the lock: ended ids from snap, removed ones asked under the lock
	at    time.Time // when it was planned: KeepRemoved's since
	snap  []endedID
	// verdict caches drop verdicts on ended ids; dropped lists the ids whose
	// records a full merge left out.
	verdict map[uint32]bool
	dropped []uint32
	busy    busyShare // what a background merge waited for batches (yieldBg)
}

// yield is called between two steps of the merge: a background merge waits
// there while the index is Busy, and gives up (errClosing) once the index is
// closing. A merge under the lock goes on (a commit waiting for the lock would
// wait for it).
func (job *mergeJob) yield() error {
	if job.bg {
		return job.x.yieldBg(&job.busy)
	}
	return nil
}

// endedID is an id whose unit's end was committed when a background merge was planned.
type endedID struct {
	id    uint32
	state uint8
}

func (x *Index) planMergeLocked(from int, bg bool) *mergeJob {
	job := &mergeJob{x: x, in: slices.Clone(x.segs[from:]), full: from == 0, noSum: x.cold, bg: bg, at: time.Now(), verdict: map[uint32]bool{},
		path: filepath.Join(x.opt.Dir, x.newSegName())}
	if bg {
		for id, e := range x.u.ended {
			if e.committed {
				job.snap = append(job.snap, endedID{id, e.state})
			}
		}
		slices.SortFunc(job.snap, func(a, b endedID) int { return cmp.Compare(a.id, b.id) })
	}
	return job
}

// drop reports whether the merge drops the docs (and, in a full merge, the
// record) of id.
func (job *mergeJob) drop(id uint32) bool {
	if v, ok := job.verdict[id]; ok {
		return v
	}
	var v bool
	if job.bg {
		i, ok := slices.BinarySearchFunc(job.snap, id, func(e endedID, id uint32) int { return cmp.Compare(e.id, id) })
		if !ok {
			return false // live when planned
		}
		v = job.snap[i].state == unitDead
		if !v {
			job.x.mu.Lock()
			v = !job.x.keepRemovedLocked(id, job.at)
			job.x.mu.Unlock()
		}
	} else {
		if _, ok := job.x.u.ended[id]; !ok {
			return false
		}
		v = job.x.dropLocked(id, job.at)
	}
	job.verdict[id] = v
	return v
}

// mergeLocked replaces segs[from:] by one segment holding their live docs, then
// commits the new manifest.
func (x *Index) mergeLocked(from int) error {
	job := x.planMergeLocked(from, false)
	s, err := job.build()
	if err != nil {
		return err
	}
	old, err := x.installMergeLocked(job, s)
	removeSegments(old)
	return err
}

// removeSegments closes and deletes segments a merge replaced (no manifest
// names them any more).
func removeSegments(segs []*segment) {
	for _, old := range segs {
		old.close()
		os.Remove(old.name)
	}
}

// installMergeLocked puts the merged segment in the place of its inputs (which
// are still a run of x.segs: only merges remove segments, one at a time) and
// commits the manifest. It returns the inputs, for the caller to remove.
func (x *Index) installMergeLocked(job *mergeJob, s *segment) ([]*segment, error) {
	at := slices.Index(x.segs, job.in[0])
	if at < 0 || at+len(job.in) > len(x.segs) || !slices.Equal(x.segs[at:at+len(job.in)], job.in) {
		s.close()
		os.Remove(s.name)
		return nil, fmt.Errorf("merge search segments: the inputs changed")
	}
	segs := append(append(slices.Clone(x.segs[:at]), s), x.segs[at+len(job.in):]...)
	if err := x.writeManifestLocked(segs); err != nil {
		// The manifest on disk may name s already (a failure after its
		// rename): s stays on disk, beside its inputs, which the index goes on
		// using; the next open removes whichever one no manifest names.
		s.close()
		return nil, err
	}
	x.segs = segs
	if job.full && at == 0 {
		for _, id := range job.dropped {
			delete(x.u.ended, id) // no record of it is left
		}
	}
	x.stats.Merges++
	return job.in, nil
}

// build writes the merged segment. Docs are renumbered in order, so postings
// stay sorted. Everything is streamed: unit records are copied one at a time
// (a k-way merge of the inputs' unit tables), docs in chunks, terms one at a
// time (a k-way merge of the dictionaries).
func (job *mergeJob) build() (*segment, error) {
	in := job.in
	path := job.path
	w, err := newSegWriter(path)
	if err != nil {
		return nil, err
	}
	w.noSum = job.noSum
	fail := func(err error) (*segment, error) {
		w.abort()
		return nil, fmt.Errorf("merge search segments: %w", err)
	}
	if err := job.yield(); err != nil {
		return fail(err)
	}
	if err := job.copyUnits(w); err != nil {
		return fail(err)
	}
	var lastID uint32
	lastDrop, haveLast := false, false
	drop := func(id uint32) bool { // docs come in runs of one unit
		if !haveLast || id != lastID {
			lastID, lastDrop, haveLast = id, job.drop(id), true
		}
		return lastDrop
	}
	// Docs: copied in chunks; dropped[i] lists input i's dropped doc numbers, so a
	// doc's new number is its old one minus the drops before it plus the base.
	dropped := make([][]uint32, len(in))
	base := make([]uint32, len(in))
	var tokens uint64
	w.beginDocs()
	var next uint32
	const chunk = 32 << 10
	var most uint64 // the most docs of an input: the chunk buffer need not be longer
	for _, s := range in {
		most = max(most, s.ft.ndocs)
	}
	var ndocs, nsess uint64
	for _, s := range in {
		ndocs += s.ft.ndocs
		nsess += s.ft.nsess
	}
	w.sum.reserve(int(ndocs), int(nsess))
	buf := make([]byte, min(chunk, most)*docSize)
	for i, s := range in {
		base[i] = next
		for d := uint64(0); d < s.ft.ndocs; d += chunk {
			if err := job.yield(); err != nil {
				return fail(err)
			}
			cnt := min(chunk, s.ft.ndocs-d)
			b := buf[:cnt*docSize]
			if _, err := s.f.ReadAt(b, int64(s.ft.docsOff+d*docSize)); err != nil {
				return fail(err)
			}
			for j := uint64(0); j < cnt; j++ {
				rec := getDoc(b[j*docSize:])
				if drop(rec.Unit) {
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
	if err := job.mergeTerms(w, &remapper{dropped: dropped, base: base}); err != nil {
		return fail(err)
	}
	if err := job.yield(); err != nil { // before the fsync
		return fail(err)
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	return openSegment(path, false)
}

// copyUnits writes the unit records of the merged segment: for each id, the
// newest input's record (a later segment's overrides), as it is; a full merge
// leaves out those of dropped ids.
func (job *mergeJob) copyUnits(w *segWriter) error {
	type cursor struct {
		s   *segment
		t   *tabCursor
		i   int
		pos uint64 // where r is in the units section
		r   *bufio.Reader
	}
	cs := make([]cursor, len(job.in))
	for k, s := range job.in {
		cs[k] = cursor{s: s, t: s.cursor(), r: bufio.NewReaderSize(io.NewSectionReader(s.f, int64(s.ft.unitsOff), int64(s.ft.unitsLen)), 32<<10)}
	}
	w.beginUnits()
	var nunits int
	for _, s := range job.in {
		nunits += int(s.ft.nunits)
	}
	w.tab = slices.Grow(w.tab, nunits*unitTabRec)
	var rec []byte
	for {
		var id uint32
		have, win := false, -1
		for k := range cs {
			c := &cs[k]
			if c.i < int(c.s.ft.nunits) {
				if t := c.t.id(c.i); !have || t < id {
					id, have = t, true
				}
				if c.t.err != nil {
					return c.t.err
				}
			}
		}
		if !have {
			break
		}
		if err := job.yield(); err != nil {
			return err
		}
		for k := range cs {
			if c := &cs[k]; c.i < int(c.s.ft.nunits) && c.t.id(c.i) == id {
				win = k
			}
		}
		keep := !job.full || !job.drop(id)
		if !keep {
			job.dropped = append(job.dropped, id)
		}
		for k := range cs {
			c := &cs[k]
			if c.i >= int(c.s.ft.nunits) || c.t.id(c.i) != id {
				continue
			}
			off, end, err := c.t.span(c.i)
			if err != nil {
				return err
			}
			if off < c.pos {
				return errCorrupt
			}
			if _, err := c.r.Discard(int(off - c.pos)); err != nil {
				return err
			}
			n := int(end - off)
			if k == win && keep {
				rec = slices.Grow(rec[:0], n)[:n]
				if _, err := io.ReadFull(c.r, rec); err != nil {
					return err
				}
				if got, m := binary.Uvarint(rec); m <= 0 || got != uint64(id) {
					return errCorrupt
				}
				w.unit(id, rec)
			} else if _, err := c.r.Discard(n); err != nil {
				return err
			}
			c.pos = end
			c.i++
		}
	}
	w.endUnits()
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
	sl, e4 := binary.ReadUvarint(it.r)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
		return errCorrupt
	}
	it.prev = term
	it.e = dictEntry{term: string(term), df: uint32(df), off: off, len: ln, slen: sl}
	it.ok = true
	return nil
}
