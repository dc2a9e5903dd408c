package indexer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recorder is a Consumer that keeps, per unit, the lines it was handed keyed by
// offset, and checks the contract's ordering rules as it goes.
type recorder struct {
	t        *testing.T
	state    string // state dir: Sync checks no catalog is ahead of it
	mu       sync.Mutex
	lines    map[string]map[int64]string // unit → offset → line
	dup      int                         // lines handed twice at the same offset
	pos      map[string]recPos
	docs     map[string]int // unit → Document calls
	docSess  map[string]int // unit → sessions handed with its last Document
	removed  map[string]bool
	resets   int
	syncs    int
	failSync error
	synced   []SessionRef
	prev     map[string]int64 // unit → offset as of the previous Sync
}

type recPos struct {
	dev, ino uint64
	off      int64
	fp       string
}

func newRecorder(t *testing.T, state string) *recorder {
	return &recorder{t: t, state: state, lines: map[string]map[int64]string{}, pos: map[string]recPos{},
		docs: map[string]int{}, docSess: map[string]int{}, removed: map[string]bool{}, prev: map[string]int64{}}
}

func (r *recorder) Resume(u UnitRef) (int64, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pos[u.Unit]
	if !ok || p.dev != u.Dev || p.ino != u.Ino {
		return 0, "", false
	}
	return p.off, p.fp, true
}

func (r *recorder) Reset(u UnitRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets++
	delete(r.lines, u.Unit)
	delete(r.pos, u.Unit)
}

func (r *recorder) Line(u UnitRef, off int64, line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.lines[u.Unit]
	if m == nil {
		m = map[int64]string{}
		r.lines[u.Unit] = m
	}
	if _, ok := m[off]; ok {
		r.dup++
	}
	m[off] = string(line)
}

func (r *recorder) Done(u UnitRef, off int64, fp string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pos[u.Unit] = recPos{u.Dev, u.Ino, off, fp}
}

func (r *recorder) Document(u UnitRef, data []byte, ss []*Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.docs[u.Unit]++
	r.docSess[u.Unit] = len(ss)
}

func (r *recorder) Remove(u UnitRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed[u.Unit] = true
	delete(r.lines, u.Unit)
	delete(r.pos, u.Unit)
}

func (r *recorder) Sync(ss []SessionRef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failSync != nil {
		return r.failSync
	}
	r.syncs++
	r.synced = append(r.synced, ss...)
	// The catalogs on disk are those of earlier flushes: none may hold an offset
	// beyond what this consumer had synced by then.
	cats, _ := filepath.Glob(filepath.Join(r.state, "index", "*", "*", CatalogName))
	for _, path := range cats {
		c, err := ReadCatalog(path) // with the tails of its resume file
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			r.t.Errorf("catalog %s: %v", path, err)
			continue
		}
		for _, s := range c.Sessions {
			for unit, off := range r.prev {
				if strings.HasSuffix(s.File, "/"+unit) && s.Tail != nil && s.Tail.Offset > off {
					r.t.Errorf("catalog %s holds offset %d of %s, beyond what the consumer had synced (%d)", path, s.Tail.Offset, unit, off)
				}
			}
		}
	}
	for unit, p := range r.pos {
		r.prev[unit] = max(r.prev[unit], p.off)
	}
	return nil
}

// text is every line the recorder holds for a unit, in offset order.
func (r *recorder) text(unit string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.lines[unit]
	var offs []int64
	for o := range m {
		offs = append(offs, o)
	}
	for i := range offs {
		for j := i + 1; j < len(offs); j++ {
			if offs[j] < offs[i] {
				offs[i], offs[j] = offs[j], offs[i]
			}
		}
	}
	var b strings.Builder
	for _, o := range offs {
		b.WriteString(m[o])
		b.WriteByte('\n')
	}
	return b.String()
}

func attach(ix *Indexer, c Consumer) {
	ix.mu.Lock()
	ix.consumers = append(ix.consumers, c)
	ix.mu.Unlock()
}

func TestConsumerSeesEveryLineOnce(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	unit := "p/" + uuidA + ".jsonl"
	file := filepath.Join(root, filepath.FromSlash(unit))
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	want := header + msg("2026-01-01T00:00:01Z", "one")
	appendFile(t, file, want+"not json\n")

	ix := newLayoutIndexer(t, "wave", root, state, false)
	rec := newRecorder(t, state)
	attach(ix, rec)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := rec.text(unit); got != want {
		t.Fatalf("after cold read the consumer holds %q, want %q", got, want)
	}
	// An append, then a partial line: only complete lines are handed over, once.
	more := msg("2026-01-02T00:00:00Z", "two")
	appendFile(t, file, more+`{"timestamp":"2026-01-03T`)
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	want += more
	if got := rec.text(unit); got != want {
		t.Errorf("after append the consumer holds %q, want %q", got, want)
	}
	if rec.dup != 0 {
		t.Errorf("%d lines handed over twice", rec.dup)
	}
	if len(rec.synced) == 0 || rec.synced[len(rec.synced)-1].Project != "/w/p" || rec.synced[len(rec.synced)-1].ID != uuidA {
		t.Errorf("synced sessions %+v, want the session with its project /w/p", rec.synced)
	}

	// Truncated and rewritten: the consumer starts over.
	os.WriteFile(file, []byte(header), 0o600)
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	if got := rec.text(unit); got != header {
		t.Errorf("after truncation the consumer holds %q, want %q", got, header)
	}
	os.Remove(file)
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	if !rec.removed[unit] {
		t.Errorf("removal of %s not handed over", unit)
	}
}

func TestConsumerCatchesUpAndSkipsWhatItHas(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "p"), 0o700)
	unit := "p/" + uuidA + ".jsonl"
	file := filepath.Join(root, filepath.FromSlash(unit))
	first := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n" + msg("2026-01-01T00:00:01Z", "one")
	appendFile(t, file, first)
	ix0 := newLayoutIndexer(t, "wave", root, state, false) // catalogs exist, no consumer yet
	if err := ix0.Reconcile(); err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(state, "index", "wave", "w-p", CatalogName)
	older, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatal(err)
	}
	olderResume, err := os.ReadFile(resumePath(catalog))
	if err != nil {
		t.Fatal(err)
	}

	// A consumer attached to a restarted indexer is handed the lines it lacks,
	// although the indexer itself reads only what was appended.
	more := msg("2026-01-02T00:00:00Z", "two")
	appendFile(t, file, more)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t, state)
	attach(ix, rec)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := rec.text(unit); got != first+more {
		t.Fatalf("late consumer holds %q, want %q", got, first+more)
	}
	if got, want := ix.Stats().BytesRead, int64(len(first)+len(more)+2*fpWindow+min(len(first), headWindow)); got != want {
		t.Errorf("catch-up read %d bytes, want %d (each byte once, plus the fingerprint windows)", got, want)
	}
	if c := layoutCatalog(t, state, "wave", "/w/p"); c.Sessions[0].MessageCount != 2 {
		t.Errorf("catch-up reached the accumulator: %d messages, want 2", c.Sessions[0].MessageCount)
	}

	// A consumer ahead of the catalog (it synced, then the process died before the
	// catalog was written) is not handed the lines it has again.
	if err := os.WriteFile(catalog, older, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resumePath(catalog), olderResume, 0o600); err != nil {
		t.Fatal(err)
	}
	ix2 := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	rec.dup, rec.resets = 0, 0
	attach(ix2, rec)
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if rec.dup != 0 || rec.resets != 0 {
		t.Errorf("consumer ahead of the catalog: %d lines handed twice, %d resets; want 0, 0", rec.dup, rec.resets)
	}
	if got := rec.text(unit); got != first+more {
		t.Errorf("consumer holds %q, want %q", got, first+more)
	}
	if c := layoutCatalog(t, state, "wave", "/w/p"); c.Sessions[0].MessageCount != 2 {
		t.Errorf("catalog after the replay has %d messages, want 2", c.Sessions[0].MessageCount)
	}

	// Bytes below the consumer's position rewritten (same length, and the catalog
	// again behind): its fingerprint no longer matches, so it starts over rather
	// than keep stale text.
	if err := os.WriteFile(catalog, older, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resumePath(catalog), olderResume, 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	edited := strings.Replace(string(data), `"two"`, `"TWO"`, 1)
	os.WriteFile(file, []byte(edited), 0o600)
	ix3 := newLayoutIndexer(t, "wave", root, state, false)
	ix3.Load()
	attach(ix3, rec)
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := rec.text(unit); got != edited {
		t.Errorf("after an edit below its position the consumer holds %q, want %q", got, edited)
	}
}

func TestConsumerSyncFailureWritesNoCatalog(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "p"), 0o700)
	file := filepath.Join(root, "p", uuidA+".jsonl")
	appendFile(t, file, `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}`+"\n")
	ix := newLayoutIndexer(t, "wave", root, state, false)
	rec := newRecorder(t, state)
	rec.failSync = errors.New("disk full")
	attach(ix, rec)
	if err := ix.Reconcile(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Reconcile with a failing consumer = %v, want its error", err)
	}
	if cats, _ := filepath.Glob(filepath.Join(state, "index", "*", "*", CatalogName)); len(cats) != 0 {
		t.Fatalf("catalogs written although the consumer could not sync: %v", cats)
	}
	rec.failSync = nil
	if err := ix.Update(nil); err != nil {
		t.Fatal(err)
	}
	if c := layoutCatalog(t, state, "wave", "/w/p"); len(c.Sessions) != 1 {
		t.Errorf("after the consumer recovered the catalog holds %d sessions, want 1", len(c.Sessions))
	}
}

func TestConsumerGetsDocuments(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	file := filepath.Join(root, "sessions.json")
	os.WriteFile(file, []byte(`{"hyper_0000abcd":{"backend":"claude","nativeId":"n1","createdAt":"2026-01-01T00:00:00Z"}}`), 0o600)
	ix := newLayoutIndexer(t, "hyperyolo", file, state, false)
	rec := newRecorder(t, state)
	attach(ix, rec)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if rec.docs["sessions.json"] != 1 {
		t.Errorf("document handed over %d times over two passes, want 1", rec.docs["sessions.json"])
	}
	// A consumer attached later is handed the unchanged document once.
	rec2 := newRecorder(t, state)
	attach(ix, rec2)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if rec2.docs["sessions.json"] != 1 || rec.docs["sessions.json"] != 1 {
		t.Errorf("late consumer got %d documents, first %d; want 1 and 1", rec2.docs["sessions.json"], rec.docs["sessions.json"])
	}
}

// TestReloadFeedsConsumersWhatAnotherWriterAdded: a command that writes while
// the daemon runs (restore, clean) indexes a file the daemon's consumers (search
// index, usage ledger) have not seen; the daemon reloads the catalogs at its next
// flush, in which the file is already consumed up to its end. Its consumers must
// still be handed the file's lines and synced, or they stay behind the catalogs
// (reindex --check "missing from the search index") until the hourly rescan.
func TestReloadFeedsConsumersWhatAnotherWriterAdded(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	fileA := filepath.Join(dir, uuidA+".jsonl")
	appendFile(t, fileA, header+msg("2026-01-01T00:00:01Z", "first"))
	d := daemonIndexer(t, root, state)
	rec := newRecorder(t, state)
	attach(d, rec)
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reconcile(); err != nil {
		t.Fatal(err)
	}
	// The other writer: a restored session appears and is indexed by it first.
	fileB := filepath.Join(dir, "11111111-2222-4333-8444-555555555555.jsonl")
	appendFile(t, fileB, header+msg("2026-01-01T00:00:00Z", "restored"))
	other := daemonIndexer(t, root, state)
	if err := other.Load(); err != nil {
		t.Fatal(err)
	}
	if err := other.Update([]string{fileB}); err != nil {
		t.Fatal(err)
	}
	// The daemon's event for the new file arrives after.
	if err := d.Update([]string{fileB}); err != nil {
		t.Fatal(err)
	}
	unit := "p/11111111-2222-4333-8444-555555555555.jsonl"
	if got := rec.text(unit); !strings.Contains(got, "restored") {
		t.Fatalf("consumer holds %q of the file another writer indexed, want its lines", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	synced := false
	for _, s := range rec.synced {
		synced = synced || s.File == fileB
	}
	if !synced {
		t.Errorf("the file's session was never synced to the consumer")
	}
}
