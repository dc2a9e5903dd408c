package usage

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// DirName is the ledger's directory in the state dir.
const DirName = "usage"

// Shards is how many unit files the ledger is split into, so a flush rewrites only
// the few that changed.
const Shards = 64

// Ledger is the usage ledger. It is an indexer.Consumer: attach it to every source
// with Group.AddConsumer before the first Load or Reconcile. It is safe for use by
// several indexers at once (it locks itself).
type Ledger struct {
	mu      sync.Mutex
	dir     string // "" keeps the ledger in memory only (a rebuild for a check)
	units   map[ukey]*unitRec
	retired map[ukey][]*unitRec
	dirty   [Shards]bool
	changed bool // the summary is behind the units
	models  map[string]string
	now     func() time.Time
}

type ukey struct{ source, unit string }

// unitRec is what the ledger holds of one unit: its position, the parser's state,
// the session it belongs to, and the usage counted from it.
type unitRec struct {
	Source, Unit, Layout, Path string
	Dev, Ino                   uint64
	Off                        int64
	Fp                         string
	Session, Type, Project     string
	St                         ParseState
	Seen                       *Tokens // Mogzi: the running total last seen
	Retired                    string  // when the unit left the store ("" while it is there)
	acc                        account
}

// Open loads the ledger of stateDir for writing (the caller is the state dir's one
// writer). Units whose file is gone without the ledger having been told (a crash
// before the catalog knew them) are retired, and the summary is rewritten if a
// crash left it behind the units.
func Open(stateDir string) (*Ledger, error) {
	l := newLedger(filepath.Join(stateDir, DirName))
	// A writer killed mid-write leaves a temp file; we are the writer now.
	indexer.CleanTemp(l.dir)
	if err := l.load(true); err != nil {
		return nil, err
	}
	now := indexer.FormatTime(l.now())
	for k, r := range l.units {
		if _, err := os.Lstat(r.Path); errors.Is(err, fs.ErrNotExist) {
			l.retireLocked(k, r, now)
		}
	}
	summary, err := l.renderSummary()
	if err != nil {
		return nil, err
	}
	if old, err := os.ReadFile(filepath.Join(l.dir, SummaryName)); err != nil || string(old) != string(summary) {
		l.changed = true
	}
	if err := l.Sync(nil); err != nil {
		return nil, err
	}
	return l, nil
}

// NewRebuild is an in-memory ledger that starts from the retired part of the
// ledger in stateDir: attached to a fresh index pass it is what the ledger must
// equal (the store files plus what left the store).
func NewRebuild(stateDir string) (*Ledger, error) {
	l := newLedger(filepath.Join(stateDir, DirName))
	if err := l.load(false); err != nil {
		return nil, err
	}
	l.units = map[ukey]*unitRec{}
	l.dir = ""
	return l, nil
}

func newLedger(dir string) *Ledger {
	return &Ledger{dir: dir, units: map[ukey]*unitRec{}, retired: map[ukey][]*unitRec{}, models: map[string]string{}, now: time.Now}
}

func (l *Ledger) intern(s string) string {
	if v, ok := l.models[s]; ok {
		return v
	}
	l.models[s] = s
	return s
}

func shardOf(k ukey) int {
	h := fnv.New32a()
	h.Write([]byte(k.source))
	h.Write([]byte{0})
	h.Write([]byte(k.unit))
	return int(h.Sum32() % Shards)
}

func (l *Ledger) touch(k ukey) {
	l.dirty[shardOf(k)] = true
	l.changed = true
}

func keyOf(u indexer.UnitRef) ukey { return ukey{u.Source, u.Unit} }

// Resume reports the position the ledger holds for the unit (indexer.Consumer).
func (l *Ledger) Resume(u indexer.UnitRef) (int64, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.units[keyOf(u)]
	if r == nil || r.Dev != u.Dev || r.Ino != u.Ino {
		return 0, "", false
	}
	return r.Off, r.Fp, true
}

// Reset forgets what was counted from the unit: it is read again from the start
// (indexer.Consumer). A unit that comes back where one had left the store (a
// restored session) is counted from its file again, no longer from the retired part.
func (l *Ledger) Reset(u indexer.UnitRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := keyOf(u)
	r := l.units[k]
	if r != nil && isDocument(r) {
		// Documents are never reset by the indexer; a new identity keeps the total seen.
		r.Dev, r.Ino = u.Dev, u.Ino
		return
	}
	l.units[k] = &unitRec{Source: u.Source, Unit: u.Unit, Layout: u.Layout, Path: u.Path, Dev: u.Dev, Ino: u.Ino}
	if r != nil {
		l.units[k].Session, l.units[k].Type, l.units[k].Project = r.Session, r.Type, r.Project
	}
	delete(l.retired, k)
	l.touch(k)
}

func isDocument(r *unitRec) bool { return r.Seen != nil }

func (l *Ledger) recLocked(u indexer.UnitRef) *unitRec {
	k := keyOf(u)
	r := l.units[k]
	if r == nil {
		r = &unitRec{Source: u.Source, Unit: u.Unit, Layout: u.Layout, Path: u.Path, Dev: u.Dev, Ino: u.Ino}
		l.units[k] = r
		delete(l.retired, k)
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
	ev, ok := ParseLine(u.Layout, &r.St, line)
	if !ok {
		if r.St.Model != "" || r.St.Prev != nil {
			l.touch(keyOf(u)) // the parser's state moved on
		}
		return
	}
	r.acc.add(ev, l.intern)
	l.touch(keyOf(u))
}

// Done records how far the unit has been read (indexer.Consumer).
func (l *Ledger) Done(u indexer.UnitRef, offset int64, fp string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recLocked(u)
	if r.Off == offset && r.Fp == fp && r.Dev == u.Dev && r.Ino == u.Ino {
		return
	}
	r.Off, r.Fp, r.Dev, r.Ino, r.Path = offset, fp, u.Dev, u.Ino, u.Path
	l.touch(keyOf(u))
}

// Document counts a changed document unit (indexer.Consumer). Mogzi's usageMetrics
// is a running total: what it grew by since the last look is counted, at its
// lastUpdated time. A total that went down (the session was reset) counts anew.
func (l *Ledger) Document(u indexer.UnitRef, data []byte, sessions []*indexer.Session) {
	if u.Layout != "mogzi" {
		return
	}
	t, at, ok := MogziTotals(data)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recLocked(u)
	var seen Tokens
	if r.Seen != nil {
		seen = *r.Seen
	}
	if t.Input < seen.Input || t.Output < seen.Output || t.CacheWrite < seen.CacheWrite || t.CacheRead < seen.CacheRead {
		// The total went down: the session was reset. What was counted stays, in
		// the retired part; the unit counts from zero again, so its live usage is
		// always its current total (what a rebuild finds).
		if len(r.acc.Buckets) > 0 {
			old := *r
			old.Retired, old.Seen, old.acc.Win = indexer.FormatTime(l.now()), nil, nil
			l.retired[keyOf(u)] = append(l.retired[keyOf(u)], &old)
		}
		r.acc = account{}
		seen = Tokens{}
	}
	d := t
	d.Sub(seen)
	r.Seen = &t
	if at == 0 {
		at = l.now().UnixMilli()
	}
	model := ""
	if len(sessions) > 0 {
		model = sessions[0].Model
	}
	r.acc.credit(Quarter(at), l.intern(model), d, 1)
	l.touch(keyOf(u))
}

// Remove moves the unit's usage to the retired part: its file left the store, the
// spend happened (indexer.Consumer).
func (l *Ledger) Remove(u indexer.UnitRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := keyOf(u)
	if r := l.units[k]; r != nil {
		l.retireLocked(k, r, indexer.FormatTime(l.now()))
	}
}

func (l *Ledger) retireLocked(k ukey, r *unitRec, now string) {
	delete(l.units, k)
	if len(r.acc.Buckets) > 0 {
		r.Retired = now
		r.acc.Win, r.St, r.Dev, r.Ino, r.Off, r.Fp = nil, ParseState{}, 0, 0, 0, ""
		l.retired[k] = append(l.retired[k], r)
	}
	l.touch(k)
}

// Sync files the units under their sessions' projects and writes what changed:
// the unit shards (each atomically), then the summary the CLI reads
// (indexer.Consumer). A crash between the two leaves the summary behind; Open
// rewrites it from the shards.
func (l *Ledger) Sync(sessions []indexer.SessionRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range sessions {
		k := ukey{s.Source, s.Unit}
		r := l.units[k]
		if r == nil {
			continue
		}
		if r.Session != s.ID || r.Type != s.Type || r.Project != s.Project {
			r.Session, r.Type, r.Project = s.ID, s.Type, s.Project
			l.touch(k)
		}
	}
	if l.dir == "" || !l.changed {
		l.changed = false
		return nil
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", l.dir, err)
	}
	byShard := l.byShardLocked()
	for i := range l.dirty {
		if !l.dirty[i] {
			continue
		}
		data, err := encodeShard(byShard[i].live, byShard[i].retired)
		if err != nil {
			return err
		}
		if err := indexer.WriteFileAtomic(filepath.Join(l.dir, shardName(i)), data); err != nil {
			return fmt.Errorf("write usage ledger: %w", err)
		}
		l.dirty[i] = false
	}
	summary, err := l.renderSummary()
	if err != nil {
		return err
	}
	path := filepath.Join(l.dir, SummaryName)
	if old, err := os.ReadFile(path); err != nil || string(old) != string(summary) {
		if err := indexer.WriteFileAtomic(path, summary); err != nil {
			return fmt.Errorf("write usage summary: %w", err)
		}
	}
	l.changed = false
	return nil
}

type shardUnits struct{ live, retired []*unitRec }

func (l *Ledger) byShardLocked() [Shards]shardUnits {
	var out [Shards]shardUnits
	for k, r := range l.units {
		i := shardOf(k)
		out[i].live = append(out[i].live, r)
	}
	for k, rs := range l.retired {
		i := shardOf(k)
		out[i].retired = append(out[i].retired, rs...)
	}
	return out
}

func shardName(i int) string { return fmt.Sprintf("units-%02d.json", i) }

// load reads every shard (a missing ledger is empty). With live unset only the
// retired part is kept.
func (l *Ledger) load(live bool) error {
	for i := 0; i < Shards; i++ {
		path := filepath.Join(l.dir, shardName(i))
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read usage ledger: %w", err)
		}
		lv, rt, err := decodeShard(data, l.intern)
		if err != nil {
			// A shard that does not parse is rebuilt from the files (its retired
			// part is lost): say so rather than stop.
			return fmt.Errorf("usage ledger %s: %w", path, err)
		}
		if live {
			for _, r := range lv {
				l.units[ukey{r.Source, r.Unit}] = r
			}
		}
		for _, r := range rt {
			k := ukey{r.Source, r.Unit}
			l.retired[k] = append(l.retired[k], r)
		}
	}
	return nil
}
