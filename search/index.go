package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// DirName is the index's directory inside the state dir.
const DirName = "search"

// ManifestName is the file that names the committed segments: the one commit point.
const ManifestName = "manifest.json"

// DefaultSpillBytes is how much the in-memory buffer may hold before it is written
// to a segment file (committed only at the next Sync).
const DefaultSpillBytes = 16 << 20

// DefaultMaxSegments: a commit that leaves more segments than this merges.
const DefaultMaxSegments = 12

// Options configure an Index.
type Options struct {
	Dir         string // <state_dir>/search
	ToolOutput  bool   // index tool inputs and outputs (config search.tool_output)
	SpillBytes  int    // 0: DefaultSpillBytes
	MaxSegments int    // 0: DefaultMaxSegments
	MergeBudget int64  // 0: DefaultMergeBudget; larger merges run in the background
	// KeepRemoved reports whether the docs of a unit whose file left the store are
	// kept when segments are merged (its session was archived: searchable with
	// --archived). nil keeps none. The answer must see every archive made before
	// since (when the merge asking was planned: the units' ends it asks about were
	// committed before it, so their archives were made before it too); an answer
	// cached from before since may be stale.
	KeepRemoved func(source, path string, since time.Time) bool
	Logger      *slog.Logger
	Now         func() time.Time
}

// manifest is the commit record: which segments make up the index.
type manifest struct {
	Version    int      `json:"version"`
	ToolOutput bool     `json:"toolOutput"`
	NextSeg    uint64   `json:"nextSeg"`
	NextUnit   uint32   `json:"nextUnit"`
	Segments   []string `json:"segments"`
}

const manifestVersion = 3 // 1: segments without unit tables and projects; 2: without session summaries

// Index is the search index as the daemon (or a CLI writer) maintains it: an
// indexer.Consumer. Committed segments are on disk and never change; what was
// handed over since the last Sync is in a bounded buffer (spilled to uncommitted
// segment files when large). Sync writes a segment with the buffer and the changed
// units, then replaces the manifest: the manifest's rename is the commit.
type Index struct {
	opt Options
	log *slog.Logger

	mu      sync.Mutex // the indexer calls in per source; several sources share us
	man     manifest
	segs    []*segment // committed, oldest first
	spilled []*segment // written since the last commit, not yet in the manifest
	u       *units     // the live units' ids and positions, the ended ids' states (units.go)
	// Since the last commit: the ids whose record changed (the slot of a live
	// one, -1 for one that ended), the records not yet in a segment or whose
	// projects changed (their fields but the positions, which are in u), and
	// the units that ended.
	dirty    map[uint32]int32
	pending  map[uint32]*unitRec
	endedNow map[uint32]endedHot
	buf      *memBuf
	termBuf  []byte
	msgs     []Message
	stats    Stats

	// cold: a cold build (ColdBuild): segments are written without summaries
	// and merged only when many; Close or Compact merges them all with them.
	cold bool
	// seen: during a cold build, the ids of the units it was handed anything of
	// (or asked where it stood); RemoveUnseen ends the others.
	seen map[uint32]struct{}

	merging   int            // background merges running (0 or 1)
	mergeHeld int            // segs[:mergeHeld] may be inputs of the background merge
	mergeWG   sync.WaitGroup // the background merge
	mergeGate chan struct{}  // tests: a background merge waits for it to close
	busy      busyGate       // Busy: a background merge pauses while it is held
	stop      chan struct{}  // closed by Close: a background merge gives up at its next step
	closed    bool           // stop is closed
}

// Stats are counters of an index's work.
type Stats struct {
	Commits, Spills, Merges int
	Docs                    int64
}

// memBuf holds docs and postings not yet written to a segment. Its terms are
// numbered by a termDict (no string, no map entry and no list allocated per
// term), their lists kept by id.
type memBuf struct {
	docs   []docRec
	dict   termDict   // the buffer's distinct terms, by id
	lists  []termList // by id
	tokens uint64
	bytes  int
}

func newMemBuf() *memBuf {
	return &memBuf{}
}

// list returns the id of term t (at most 255 bytes) and its list, added empty
// (and counted in the buffer's size) if t is new. The list is valid until the
// next term is added.
func (b *memBuf) list(t []byte) (uint32, *termList) {
	id, added := b.dict.id(t)
	if added {
		b.lists = append(b.lists, termList{})
		b.bytes += len(t) + 64
	}
	return id, &b.lists[id]
}

// count adds one occurrence of term t in doc.
func (b *memBuf) count(t []byte, doc uint32) {
	_, tl := b.list(t)
	b.bytes += tl.count(doc)
}

// sortedTerms returns the buffer's term ids in the order of their names.
func (b *memBuf) sortedTerms() []uint32 {
	ids := make([]uint32, len(b.lists))
	for i := range ids {
		ids[i] = uint32(i)
	}
	slices.SortFunc(ids, func(i, j uint32) int { return bytes.Compare(b.dict.name(i), b.dict.name(j)) })
	return ids
}

// Open opens (or creates) the index in opt.Dir as its writer: files the manifest
// does not name (left by a crash) are removed. An index built with another
// tool_output setting is emptied, so every unit is handed over again.
func Open(opt Options) (*Index, error) {
	if opt.SpillBytes <= 0 {
		opt.SpillBytes = DefaultSpillBytes
	}
	if opt.MaxSegments <= 0 {
		opt.MaxSegments = DefaultMaxSegments
	}
	if opt.MergeBudget <= 0 {
		opt.MergeBudget = DefaultMergeBudget
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	x := &Index{opt: opt, log: opt.Logger, buf: newMemBuf(), stop: make(chan struct{})}
	x.resetChanges()
	if x.log == nil {
		x.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create search dir: %w", err)
	}
	man, segs, t, err := load(opt.Dir)
	if err != nil {
		// A damaged index is rebuilt from the transcripts, like a catalog.
		x.log.Warn("search index unreadable, rebuilding", "dir", opt.Dir, "err", err)
		man, segs, t = manifest{Version: manifestVersion}, nil, newUnits()
	}
	if man.ToolOutput != opt.ToolOutput && len(man.Segments) > 0 {
		x.log.Info("search.tool_output changed, rebuilding the search index", "tool_output", opt.ToolOutput)
		for _, s := range segs {
			s.close()
		}
		man, segs, t = manifest{Version: manifestVersion, NextSeg: man.NextSeg, NextUnit: man.NextUnit}, nil, newUnits()
	}
	man.ToolOutput = opt.ToolOutput
	x.man, x.segs, x.u = man, segs, t
	x.removeStray()
	return x, nil
}

// resetChanges empties what the index keeps between two commits (maps that grew
// large, as in a first pass over a store, are let go rather than cleared).
func (x *Index) resetChanges() {
	if x.dirty == nil || len(x.dirty) > 1024 {
		x.dirty, x.pending, x.endedNow = map[uint32]int32{}, map[uint32]*unitRec{}, map[uint32]endedHot{}
		return
	}
	clear(x.dirty)
	clear(x.pending)
	clear(x.endedNow)
}

// load reads the manifest and opens its segments, folding their unit records.
func load(dir string) (manifest, []*segment, *units, error) {
	man, segs, err := openSegments(dir, false)
	if err != nil {
		return man, nil, nil, err
	}
	t, err := loadUnits(man.NextUnit, segs)
	if err != nil {
		for _, o := range segs {
			o.close()
		}
		return man, nil, nil, err
	}
	return man, segs, t, nil
}

// openSegments reads the manifest and opens the segments it names (mapped for a
// reader).
func openSegments(dir string, mapped bool) (manifest, []*segment, error) {
	var man manifest
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return manifest{Version: manifestVersion}, nil, nil
	}
	if err != nil {
		return man, nil, err
	}
	if err := json.Unmarshal(data, &man); err != nil || man.Version != manifestVersion {
		return man, nil, fmt.Errorf("read %s: not a version %d manifest", ManifestName, manifestVersion)
	}
	var segs []*segment
	for _, name := range man.Segments {
		if name != filepath.Base(name) {
			return man, nil, fmt.Errorf("manifest names %q", name)
		}
		s, err := openSegment(filepath.Join(dir, name), mapped)
		if err != nil {
			for _, o := range segs {
				o.close()
			}
			return man, nil, err
		}
		segs = append(segs, s)
	}
	return man, segs, nil
}

// removeStray deletes files of the directory the manifest does not name.
func (x *Index) removeStray() {
	ents, _ := os.ReadDir(x.opt.Dir)
	for _, e := range ents {
		if e.Name() == ManifestName || slices.Contains(x.man.Segments, e.Name()) {
			continue
		}
		os.Remove(filepath.Join(x.opt.Dir, e.Name()))
	}
}

// ColdBuild tells the index that a cold build (reindex) follows, which ends with
// Close or Compact: until then its segments are written without session
// summaries (a query ranks a term without one from its postings, the same
// scores) and are not merged by size tier, only when there are too many; the end
// merges them all into one segment with summaries. Every posting is then
// summarized and rewritten once, not once per segment and again per merge. A
// crash in between leaves committed segments without summaries, which the next
// merges summarize.
func (x *Index) ColdBuild() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cold = true
	x.seen = map[uint32]struct{}{}
}

// RemoveUnseen ends, as Remove does, every unit of the sources named that this
// cold build was handed nothing of: a reindex starts from no catalog, so nothing
// else says that a file left the store while no daemon ran. Call it once every
// source named was passed whole; Sync makes it durable.
func (x *Index) RemoveUnseen(sources []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.seen == nil {
		return
	}
	want := map[uint16]bool{}
	for _, s := range sources {
		if i, ok := x.u.srcLookup(s); ok {
			want[i] = true
		}
	}
	var gone []indexer.UnitRef
	for _, h := range x.u.recs {
		if h.flags&flagUsed == 0 {
			continue
		}
		if src, rel := x.u.key(&h); want[src] {
			if _, ok := x.seen[h.id]; !ok {
				gone = append(gone, indexer.UnitRef{Source: x.u.srcs[src], Unit: rel})
			}
		}
	}
	for _, u := range gone {
		x.endLocked(u, unitRemoved)
	}
}

// Close releases the segment files (uncommitted data is dropped, as after a
// crash). A background merge gives up at its next step (its file is removed,
// the segments stay as they are: the next start merges them again), so that a
// daemon stops in time even during the merge of a large index. A cold build's
// committed segments are first merged into one.
func (x *Index) Close() error {
	x.mu.Lock()
	if !x.closed {
		x.closed = true
		close(x.stop) // a background merge, even one waiting for Busy, gives up
	}
	x.mu.Unlock()
	x.mergeWG.Wait()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cold {
		x.cold, x.seen = false, nil
		if len(x.segs) > 0 {
			if err := x.mergeLocked(0); err != nil {
				x.log.Warn("merge search segments", "err", err)
			}
		}
	}
	for _, s := range append(x.segs, x.spilled...) {
		s.close()
	}
	x.segs, x.spilled = nil, nil
	return nil
}

// Stats returns the index's counters.
func (x *Index) Stats() Stats {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats
}

// Resume implements indexer.Consumer.
func (x *Index) Resume(u indexer.UnitRef) (int64, string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	at, ok := x.u.findRef(u)
	if !ok {
		return 0, "", false
	}
	h := &x.u.recs[at]
	if x.seen != nil {
		x.seen[h.id] = struct{}{}
	}
	p := x.u.pos(h)
	if x.u.devs[p.dev] != u.Dev || p.ino != u.Ino {
		return 0, "", false
	}
	return p.off, x.u.fpOf(h), true
}

// Reset implements indexer.Consumer: the unit's docs are tombstoned by ending its id.
func (x *Index) Reset(u indexer.UnitRef) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.endLocked(u, unitDead)
}

// Line implements indexer.Consumer.
func (x *Index) Line(u indexer.UnitRef, off int64, line []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id := x.u.recs[x.liveLocked(u)].id
	x.msgs = ExtractLine(x.msgs[:0], u.Layout, off, line, x.opt.ToolOutput)
	for i := range x.msgs {
		x.addLocked(id, 0, &x.msgs[i])
	}
	x.maybeSpillLocked()
}

// Done implements indexer.Consumer.
func (x *Index) Done(u indexer.UnitRef, off int64, fp string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	at := x.liveLocked(u)
	h := &x.u.recs[at]
	if p, dev := x.u.pos(h), x.u.devIndex(u.Dev); p.off != off || !x.u.sameFp(h, fp) || p.dev != dev || p.ino != u.Ino {
		x.u.setPlace(h, off, dev, u.Ino)
		x.u.setFp(h, fp)
		x.dirty[h.id] = int32(at)
	}
}

// Document implements indexer.Consumer: a document is indexed whole under a new id.
func (x *Index) Document(u indexer.UnitRef, data []byte, sessions []*indexer.Session) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.endLocked(u, unitDead)
	at := x.liveLocked(u)
	r := x.pending[x.u.recs[at].id] // a new id's record
	sess := map[string]int{}
	for _, s := range sessions {
		if _, ok := sess[s.ID]; !ok && len(r.Sids) < 1<<16 {
			sess[s.ID] = len(r.Sids)
			r.Sids = append(r.Sids, s.ID)
		}
	}
	msgs := ExtractDocument(u.Layout, data, x.opt.ToolOutput)
	for i := range msgs {
		m := &msgs[i]
		si, ok := sess[m.Session]
		if !ok {
			if len(r.Sids) != 1 {
				continue // a record the layout did not make a session of
			}
			si = 0 // one session per document (Mogzi): its id may be the directory's
		}
		x.addLocked(r.ID, uint16(si), m)
	}
	x.maybeSpillLocked()
}

// Remove implements indexer.Consumer: the unit leaves the results at once (it stays
// searchable with --archived while an archive of it exists).
func (x *Index) Remove(u indexer.UnitRef) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.endLocked(u, unitRemoved)
}

// addLocked indexes one message: each of its terms is counted in the term's list
// directly (one map lookup per term, no allocation for a term seen before).
func (x *Index) addLocked(unit uint32, sess uint16, m *Message) {
	b := x.buf
	doc := uint32(len(b.docs))
	n := 0
	x.termBuf = Terms(m.Text, x.termBuf, func(t []byte) {
		b.count(t, doc)
		n++
	})
	if n == 0 {
		return
	}
	t := m.Time / 1000
	if t < 0 || t > 1<<32-1 {
		t = 0
	}
	b.docs = append(b.docs, docRec{Unit: unit, Sess: sess, Part: m.Part, Role: roleCode(m.Role), Offset: m.Offset, Time: uint32(t), Len: uint16(min(n, 1<<16-1))})
	b.tokens += uint64(n)
	b.bytes += docSize
	x.stats.Docs++
}

// maybeSpillLocked writes the buffer to an uncommitted segment once it is large.
func (x *Index) maybeSpillLocked() {
	if x.buf.bytes < x.opt.SpillBytes {
		return
	}
	s, err := x.writeBufLocked(nil)
	if err != nil {
		// Keep buffering: Sync reports the error and retries.
		x.log.Warn("spill search buffer", "err", err)
		return
	}
	x.spilled = append(x.spilled, s)
	x.stats.Spills++
}

func (x *Index) newSegName() string {
	n := x.man.NextSeg
	x.man.NextSeg++
	return fmt.Sprintf("seg-%016x.sws", n)
}

// writeBufLocked writes the buffer (and the given unit records) to a new segment
// file and empties the buffer.
func (x *Index) writeBufLocked(units []*unitRec) (*segment, error) {
	name := x.newSegName()
	path := filepath.Join(x.opt.Dir, name)
	w, err := newSegWriter(path)
	if err != nil {
		return nil, err
	}
	w.noSum = x.cold
	w.units(units)
	w.docs(x.buf.docs, x.buf.tokens)
	for _, id := range x.buf.sortedTerms() {
		tl := &x.buf.lists[id]
		tl.flush()
		w.term(string(x.buf.dict.name(id)), tl.n, tl.buf)
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	x.buf = newMemBuf()
	return openSegment(path, false)
}

// Sync implements indexer.Consumer: it commits what was handed over, with the
// projects the sessions are filed under.
func (x *Index) Sync(sessions []indexer.SessionRef) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.setProjectsLocked(sessions); err != nil {
		return fmt.Errorf("commit search index: %w", err)
	}
	return x.commitLocked()
}

func (x *Index) commitLocked() error {
	if len(x.dirty) == 0 && len(x.buf.docs) == 0 && len(x.spilled) == 0 {
		clear(x.pending) // records read back for a document whose projects held
		return nil
	}
	ids := make([]uint32, 0, len(x.dirty))
	for id := range x.dirty {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	units := make([]*unitRec, len(ids))
	for i, id := range ids {
		r, err := x.recordLocked(id, x.dirty[id])
		if err != nil {
			return fmt.Errorf("commit search index: %w", err)
		}
		units[i] = r
	}
	s, err := x.writeBufLocked(units)
	if err != nil {
		return fmt.Errorf("commit search index: %w", err)
	}
	segs := append(append(slices.Clip(x.segs), x.spilled...), s)
	if err := x.writeManifestLocked(segs); err != nil {
		// The buffer's messages are only in s now, and the units' offsets stay
		// changed: keep s for the next commit as a spill. (The manifest may even
		// name it already, if it failed after the rename.) A crash before that
		// commit leaves s a stray file, and the committed offsets read it again.
		x.spilled = append(x.spilled, s)
		return err
	}
	x.segs, x.spilled = segs, nil
	for id, at := range x.dirty {
		if at < 0 {
			x.u.ended[id] = ended{state: x.u.ended[id].state, committed: true}
		}
	}
	x.resetChanges()
	x.stats.Commits++
	if err := x.maybeMergeLocked(); err != nil {
		// The commit stands; a failed merge leaves more segments, not wrong ones.
		x.log.Warn("merge search segments", "err", err)
	}
	return nil
}

func (x *Index) writeManifestLocked(segs []*segment) error {
	m := x.man
	m.Segments = make([]string, len(segs))
	for i, s := range segs {
		m.Segments[i] = filepath.Base(s.name)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	// The segment files are durable (fsynced); the directory entries must be too
	// before the manifest names them.
	if err := indexer.SyncDir(x.opt.Dir); err != nil {
		return err
	}
	if err := indexer.WriteFileAtomic(filepath.Join(x.opt.Dir, ManifestName), append(data, '\n')); err != nil {
		return fmt.Errorf("commit search index: %w", err)
	}
	x.man = m
	return nil
}

// Segments is the number of committed segments.
func (x *Index) Segments() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.segs)
}

// SizeBytes is the size of the committed segment files.
func (x *Index) SizeBytes() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	var n int64
	for _, s := range x.segs {
		n += s.size
	}
	return n
}
