package usage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// DirName is the ledger's directory in the state dir.
const DirName = "usage"

// Ledger is the usage ledger. It is an indexer.Consumer: attach it to every source
// with Group.AddConsumer before the first Load or Reconcile. It is safe for use by
// several indexers at once (it locks itself).
//
// Beside the units it keeps what the summary holds (the totals per quarter hour,
// source, project and model, and the units filed under each session), changed as
// each unit changes, so a flush writes only what changed since the last one
// (docs/usage.md, "Files").
type Ledger struct {
	mu      sync.Mutex
	peekMu  sync.Mutex // a body read back while the two writes run side by side (sidebyside.go)
	dir     string     // "" keeps the ledger in memory only (a rebuild for a check)
	units   recTable   // the resident live records, by (source, unit) (the rest: cold)
	retired map[ukey][]*unitRec
	strs    strSet    // the strings records and rows share (intern)
	filings filingSet // what records are filed under (canonFiling)
	now     func() time.Time

	rows   rowTable         // the summary's B rows
	days   map[rowID]Tokens // its D rows: q is the day's first quarter hour, the project "" (rollup.go)
	loc    *time.Location   // the D rows' time zone
	segs   []daySeg         // the days of loc met so far, sorted
	cols   []rowCols        // the columns of the B rows, by rowID.c
	colIDs colSet           // rowID.c of each cols entry
	// The units (live and retired) filed under each session, by session id (a
	// groupKey's sid): the first of them, the others chained by unitRec.next.
	// A key of one string rather than four, as an id is rarely filed under two
	// sources, projects or types (groupRows tells them apart).
	members recTable
	// The S rows of the sessions in dirtyGroups as the summary holds them, taken
	// before their first change since the last write (the S rows of every session
	// are not kept: they are in the summary, and add up from the members).
	before map[groupKey][]SessionRow

	// What changed since the last Sync. Each is replaced by a new map once written,
	// never cleared: a map keeps the size it once had (every unit, after the
	// start-up pass), and clearing or ranging over it costs that size, not its length.
	dirtyUnits  map[ukey]bool     // units whose records changed since the last Sync
	dirtyRows   map[rowID]bool    // rows that changed
	dirtyDays   map[rowID]bool    // D rows that changed
	dirtyGroups map[groupKey]bool // sessions whose units or usage changed

	reading                int // units with a read in progress
	unitsFile, summaryFile logFile
	hot                    []*unitRec // records whose body is in memory (resident.go)
	rd                     *os.File   // the units file, to read bodies back from
	err                    error      // a body could not be read back: Sync fails
	v1                     []string   // files of a first-version ledger, removed once rewritten
	trusted                bool       // Open read the totals from the summary its stamp vouched for
	indexed                bool       // the units file's base has its index (unitindex.go)
	fromIndex              bool       // Open read the base's records from the index
	// Where the units file's last stamp ends and the summary it names (stamp.go).
	stampAt struct {
		units int64
		sum   stamp
	}
	bulk bool // a rebuild in one batch: no compactions (ColdBuild)
	// The records left in units.idx, not held in memory (cold.go); coldOK:
	// the ledger leaves them there (a writer's, opened by Open).
	cold   *coldSet
	coldOK bool
	// resident: a compaction leaves the records in memory (EndColdBuild).
	resident bool
	// Every record load read, in the order it read them (the index's, then
	// the batches'), those replaced since cleared: what an open walks (held);
	// nil once it is open.
	loaded []*unitRec
	// Records counted but not yet filed (pending.go): each Sync files them.
	// eagerFiling files a new unit at its Reset instead (tests compare).
	pending     []*unitRec
	eagerFiling bool
}

// ColdBuild tells the ledger that a rebuild (reindex) is feeding it every unit
// once, a source at a time: each Sync appends that source's records and rows to
// its files, which are not compacted again meanwhile (today's compactions, one
// per source, wrote the file again and again: a third of the ledger's cost of a
// reindex). The first write of an empty ledger is still a whole file; a later
// Sync (the daemon's) compacts what became due, as ever.
func (l *Ledger) ColdBuild() {
	l.mu.Lock()
	l.bulk = true
	l.mu.Unlock()
}

// nextSize is the size to make a set of what changed that replaces one of n:
// in a cold build the next Sync's (the next source's) changes about as many,
// which the set holds without growing step by step; otherwise it starts empty
// (a map keeps the size it once had, see dirtyUnits).
func (l *Ledger) nextSize(n int) int {
	if l.bulk {
		return n
	}
	return 0
}

// compactionDue reports whether f is to be rewritten whole at this Sync: when
// due, unless a cold build is appending to a sound file.
func (l *Ledger) compactionDue(f *logFile, ratio, min int64) bool {
	if l.bulk && f.base > 0 && !f.compact {
		return false
	}
	return f.due(ratio, min)
}

type ukey struct{ source, unit string }

// rowKey is a B row's key: quarter hour, source, project, model.
type rowKey struct {
	q                int32
	src, proj, model string
}

// rowCols are the columns of a B row but its quarter hour: few (the sources,
// projects and models seen together), so the B rows key them by number.
type rowCols struct{ src, proj, model string }

// rowID is a B row's key as the ledger holds it, 8 bytes rather than a rowKey's
// 56: a ledger of a large store holds tens of thousands of rows (docs/usage.md).
type rowID struct {
	q int32
	c uint32 // index in Ledger.cols
}

// rowIDOf is k's rowID, numbering its columns if they are new.
func (l *Ledger) rowIDOf(k rowKey) rowID {
	c := rowCols{k.src, k.proj, k.model}
	n, ok := l.colIDs.get(l.cols, c)
	if !ok {
		n = uint32(len(l.cols))
		l.cols = append(l.cols, c)
		l.colIDs.add(l.cols)
	}
	return rowID{k.q, n}
}

// findRow is k's rowID if its columns are numbered (without numbering them).
func (l *Ledger) findRow(k rowKey) (rowID, bool) {
	n, ok := l.colIDs.get(l.cols, rowCols{k.src, k.proj, k.model})
	return rowID{k.q, n}, ok
}

// rowKeyOf is the rowKey of id.
func (l *Ledger) rowKeyOf(id rowID) rowKey {
	c := l.cols[id.c]
	return rowKey{id.q, c.src, c.proj, c.model}
}

// groupKey is a session as the summary files it: source, project, id, type.
type groupKey struct{ src, proj, sid, typ string }

// NewRebuild is an in-memory ledger that starts from the retired part of the
// ledger in stateDir: attached to a fresh index pass it is what the ledger must
// equal (the store files plus what left the store).
func NewRebuild(stateDir string) (*Ledger, error) {
	l := newLedger(filepath.Join(stateDir, DirName))
	if _, err := l.load(false, false); err != nil {
		return nil, err
	}
	l.units = newUnitTable()
	l.dir = ""
	l.loaded = nil
	l.fileAll()
	return l, nil
}

func newLedger(dir string) *Ledger {
	return &Ledger{dir: dir, units: newUnitTable(), retired: map[ukey][]*unitRec{}, now: time.Now,
		days: map[rowID]Tokens{}, loc: time.Local, dirtyDays: map[rowID]bool{}, members: newSessionTable(), before: map[groupKey][]SessionRow{},
		dirtyUnits: map[ukey]bool{}, dirtyRows: map[rowID]bool{}, dirtyGroups: map[groupKey]bool{},
		unitsFile: logFile{path: filepath.Join(dir, UnitsName)}, summaryFile: logFile{path: filepath.Join(dir, SummaryName)}}
}

func (l *Ledger) intern(s string) string {
	return l.strs.intern(s)
}

func (l *Ledger) touch(k ukey) { l.dirtyUnits[k] = true }

// touchRec is touch of r's key: a pending record's was touched by its Reset,
// and stays so until the Sync that files it (only a Sync replaces dirtyUnits).
func (l *Ledger) touchRec(r *unitRec, u indexer.UnitRef) {
	if !r.isPending() {
		l.touch(keyOf(u))
	}
}

// addRow changes a B row by t (sign 1 or -1).
func (l *Ledger) addRow(rk rowKey, t Tokens, sign int) {
	id := l.rowIDOf(rk)
	v := l.rows.get(id)
	if sign > 0 {
		v.Add(t)
	} else {
		v.Sub(t)
	}
	l.rows.set(id, v)
	l.dirtyRows[id] = true
	l.addDay(rk, t, sign)
}

// addTokens changes row k of rows by t (sign 1 or -1), drops it at zero and marks
// it dirty: the B rows and the D rows alike.
func addTokens(rows map[rowID]Tokens, dirty map[rowID]bool, k rowID, t Tokens, sign int) {
	v := rows[k]
	if sign > 0 {
		v.Add(t)
	} else {
		v.Sub(t)
	}
	if v.IsZero() {
		delete(rows, k)
	} else {
		rows[k] = v
	}
	dirty[k] = true
}

// observe is the observer of a record's account: the B row of each bucket follows.
func (l *Ledger) observe(r *unitRec) observer {
	if r.isPending() {
		return l.pendingObserver(r)
	}
	return func(q int32, model string, t Tokens, sign int) {
		l.markGroup(r.group()) // before the account changes
		l.addRow(rowKey{q, r.source(), r.project(), model}, t, sign)
	}
}

// dropRetired forgets the retired records of k (the file is counted again).
func (l *Ledger) dropRetired(k ukey) {
	for _, r := range l.retired[k] {
		l.file(r, -1)
		letGo(r)
	}
	delete(l.retired, k)
}

// letGo clears a record the ledger no longer holds (replaced or dropped): one
// read from the index stays in its slab while any other record of it is held,
// and would keep its body, and its name the arena it was cut from
// (decodeIndex), as the records an Open replaces would (loadFile).
func letGo(r *unitRec) { *r = unitRec{} }

func keyOf(u indexer.UnitRef) ukey { return ukey{u.Source, u.Unit} }

// Resume reports the position the ledger holds for the unit (indexer.Consumer).
func (l *Ledger) Resume(u indexer.UnitRef) (int64, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.adopt(u)
	if r == nil {
		return l.coldResume(u) // read from the index, left there
	}
	if r.dev() != u.Dev || r.Ino != u.Ino {
		return 0, "", false
	}
	return r.Off, r.Fp(), true
}

// Reset forgets what was counted from the unit: it is read again from the start
// (indexer.Consumer). A unit that comes back where one had left the store (a
// restored session) is counted from its file again, no longer from the retired part.
func (l *Ledger) Reset(u indexer.UnitRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := keyOf(u)
	l.warm(k.source, k.unit)
	r := l.units.get(k.source, k.unit)
	if r != nil && isDocument(l.bodyOf(r)) {
		// Documents are never reset by the indexer; a new identity keeps the total seen.
		r.setDev(u.Dev)
		r.Ino = u.Ino
		l.canonFiling(r)
		l.touch(k)
		return
	}
	n := l.newRec(u)
	if r == nil && !l.eagerFiling {
		// New to the ledger: filed by the next Sync, under its session (pending.go).
		n.pending = true
		l.pending = append(l.pending, n)
		l.units.put(n)
		l.dropRetired(k)
		l.touch(k)
		return
	}
	if r != nil {
		l.fileNow(r) // the record replaced is taken from where it is filed
		n.setSession(r.session())
		l.fileAs(n, r.typ(), r.project())
		l.endRead(r)
		l.file(r, -1)
	}
	l.units.put(n)
	if r != nil {
		letGo(r) // not before: its key finds its slot
	}
	l.file(n, 1)
	l.dropRetired(k)
	l.touch(k)
}

// newRec is a new, empty record of u (resident: it has nothing on disk yet).
func (l *Ledger) newRec(u indexer.UnitRef) *unitRec {
	r := &unitRec{Unit: u.Unit, Ino: u.Ino, devLo: uint32(u.Dev), unitBody: &unitBody{Layout: l.intern(u.Layout)}}
	// Its filing as setSource, setDev and setPath make it, found, not made.
	f := filing{source: u.Source, devHi: uint32(u.Dev >> 32)}
	if root, ok := rootOf(u.Unit, u.Path); ok {
		f.root = root
	} else {
		r.pathWhole, r.odd = true, &recOdd{path: u.Path}
	}
	r.filed = l.filingOf(f)
	l.hot = append(l.hot, r)
	return r
}

// adopt is u's live record, or nil. The record takes the indexer's string of
// the unit's name, equal to its own: the names read from units.idx are cut
// from arenas of many (decodeIndex), each freed once every unit cut from it has
// been handed over, so a unit's name is held once in the daemon, by the
// indexer, not once more by the ledger.
func (l *Ledger) adopt(u indexer.UnitRef) *unitRec {
	r := l.units.get(u.Source, u.Unit)
	if r != nil {
		r.Unit = u.Unit // its session, a part of it, is where it was
	}
	return r
}

func (l *Ledger) recLocked(u indexer.UnitRef) *unitRec {
	k := keyOf(u)
	l.warm(k.source, k.unit)
	r := l.adopt(u)
	if r == nil {
		r = l.newRec(u)
		l.units.put(r)
		l.file(r, 1)
		l.dropRetired(k)
		l.touch(k)
	}
	return r
}

// Line counts one line of the unit (indexer.Consumer). A line below the position
// the ledger holds is one it has counted already.
func (l *Ledger) Line(u indexer.UnitRef, off int64, line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recLocked(u)
	if off < r.Off {
		return
	}
	b := l.bodyOf(r)
	if off < b.fed {
		return
	}
	b.fed = off + 1
	if !b.reading {
		b.reading = true
		l.reading++
	}
	ev, ok := ParseLine(u.Layout, &b.St, line)
	if !ok {
		if b.St.Model != "" || b.St.Prev != nil {
			l.touchRec(r, u) // the parser's state moved on
		}
		return
	}
	l.accOf(r).add(ev, l.intern, l.observe(r))
	l.touchRec(r, u)
}

// Done records how far the unit has been read (indexer.Consumer).
func (l *Ledger) Done(u indexer.UnitRef, offset int64, fp string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recLocked(u)
	l.endRead(r)
	if r.Off == offset && r.fpIs(fp) && r.dev() == u.Dev && r.Ino == u.Ino && r.pathIs(u.Path) {
		return
	}
	r.Off, r.Ino = offset, u.Ino // an evicted body is copied from its line when the record is written
	was := r.filed
	r.setDev(u.Dev)
	r.setFp(fp)
	r.setPath(u.Path)
	if r.filed != was { // the ledger's still (a filing is never changed)
		l.canonFiling(r)
	}
	l.touchRec(r, u)
}

func (l *Ledger) endRead(r *unitRec) {
	if r.isReading() {
		r.reading = false
		l.reading--
	}
}

// Remove moves the unit's usage to the retired part: its file left the store, the
// spend happened (indexer.Consumer).
func (l *Ledger) Remove(u indexer.UnitRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := keyOf(u)
	l.warm(k.source, k.unit)
	if r := l.units.get(k.source, k.unit); r != nil {
		l.fileNow(r)
		l.retireLocked(k, r, indexer.FormatTime(l.now()))
	}
}

func (l *Ledger) retireLocked(k ukey, r *unitRec, now string) {
	l.units.del(k.source, k.unit)
	l.endRead(r)
	if len(l.accOf(r).Buckets) > 0 {
		// Its own copy of its name: a retired unit's is never adopted (it would
		// keep the arena it was cut from).
		r.Unit = strings.Clone(r.Unit)
		k.unit = r.Unit
		r.Retired = now
		r.acc.Win, r.St, r.Ino, r.Off = nil, ParseState{}, 0, 0
		r.setDev(0)
		l.canonFiling(r)
		r.setFp("")
		l.retired[k] = append(l.retired[k], r)
	} else {
		l.file(r, -1)
		letGo(r)
	}
	l.touch(k)
}

// Sync files the units under their sessions' projects and appends what changed
// since the last Sync (indexer.Consumer): the changed units' records to the units
// file, then the changed rows to the summary, each as one batch closed by a commit
// line and fsynced. The cost is that of what changed; a file is compacted (rewritten
// whole, atomically) once its appended batches outgrow its base, which keeps the
// cost per change constant on average. A crash between the two appends leaves the
// summary behind; Open rewrites it from the units.
func (l *Ledger) Sync(sessions []indexer.SessionRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range sessions {
		k := ukey{s.Source, s.Unit}
		l.warm(k.source, k.unit)
		r := l.units.get(k.source, k.unit)
		if r == nil {
			continue
		}
		if r.isPending() {
			// Filed once, under its session (pending.go).
			if r.session() != s.ID || r.typ() != s.Type || r.project() != s.Project {
				r.setSession(s.ID)
				l.fileAs(r, s.Type, s.Project) // touched (touchRec)
			}
			l.fileNow(r)
			continue
		}
		if r.session() != s.ID || r.typ() != s.Type || r.project() != s.Project {
			l.file(r, -1)
			r.setSession(s.ID)
			l.fileAs(r, s.Type, s.Project)
			l.file(r, 1)
			l.touch(k)
		}
	}
	l.settlePending() // those of no session: under their own name
	if l.err != nil {
		return fmt.Errorf("%w (run 'sessionwatch reindex')", l.err)
	}
	if l.dir == "" {
		l.settleGroups(false)
		l.dirtyUnits, l.dirtyRows, l.dirtyDays = map[ukey]bool{}, map[rowID]bool{}, map[rowID]bool{}
		return nil
	}
	if l.sideBySide() {
		if err := l.syncSideBySide(); err != nil {
			return err
		}
	} else {
		if err := l.writeUnits(); err != nil {
			return err
		}
		if err := l.writeSummary(); err != nil {
			return err
		}
	}
	if l.err != nil { // an account read back while writing
		return fmt.Errorf("%w (run 'sessionwatch reindex')", l.err)
	}
	if err := l.writeStamp(); err != nil {
		return err
	}
	l.evictLocked()
	return nil
}
