package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codexStore is n Codex sessions in one date directory, each in its own project.
func codexStore(t testing.TB, n int) (root string, files []string) {
	root = t.TempDir()
	dir := filepath.Join(root, "2026", "03", "01")
	os.MkdirAll(dir, 0o700)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("0199a1b2-0000-7000-8000-%012d", i)
		f := filepath.Join(dir, fmt.Sprintf("rollout-2026-03-01T10-00-00-%s.jsonl", id))
		data := fmt.Sprintf(`{"timestamp":"2026-03-01T09:05:00.000Z","type":"session_meta","payload":{"id":%q,"timestamp":"2026-03-01T09:05:00.000Z","cwd":"/w/p%d","originator":"codex_cli_rs","cli_version":"0.98.0","source":"cli","model_provider":"openai"}}`+"\n", id, i) +
			`{"timestamp":"2026-03-01T09:05:00.200Z","type":"event_msg","payload":{"type":"user_message","message":"hello","images":[]}}` + "\n"
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return root, files
}

// Codex has no project directories (ProjectDir ""): a change there must not bring
// back every catalog of the source, only the changed unit's.
func TestCodexAppendBringsBackOneUnit(t *testing.T) {
	defer func() { trackSessionPeak = false }()
	trackSessionPeak = true
	const n = 20
	root, files := codexStore(t, n)
	state := t.TempDir()
	ix := restartedIndexer(t, "codex", root, state)
	held, parked := inMemory(ix)
	t.Logf("after Start: %d held, %d parked", held, parked)
	ix.mu.Lock()
	ix.sessionPeak = 0
	ix.mu.Unlock()
	appendFile(t, files[0], `{"timestamp":"2026-03-01T09:06:00.200Z","type":"event_msg","payload":{"type":"user_message","message":"more","images":[]}}`+"\n")
	if err := ix.Update([]string{files[0]}); err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	peak := ix.sessionPeak
	ix.mu.Unlock()
	t.Logf("one append to one codex session: %d of %d units held their sessions at the flush's end", peak, n)
	if peak > 2 {
		t.Errorf("one append brought back %d units' sessions (every catalog read back), want 1", peak)
	}
}

// The rescan's batches over a Codex store bring back a batch each, not every
// catalog (dir "" is every unit's project directory).
func TestCodexRescanBringsBackABatch(t *testing.T) {
	defer func(b int) { verifyBatch, trackSessionPeak = b, false }(verifyBatch)
	verifyBatch, trackSessionPeak = 4, true
	const n = 20
	root, _ := codexStore(t, n)
	state := t.TempDir()
	ix := restartedIndexer(t, "codex", root, state)
	ix.mu.Lock()
	ix.sessionPeak = 0
	ix.mu.Unlock()
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	peak := ix.sessionPeak
	ix.mu.Unlock()
	if peak > 6 {
		t.Errorf("rescan in batches of 4: %d of %d units held sessions at once (each batch brought back every catalog)", peak, n)
	}
}

// A consumer attached late (its state lost: a search index rebuilt) over
// unchanged Gemini .json chats of one project: Start hands it each document
// with its sessions, read from their one catalog once, not once per document.
func TestLateConsumerOverParkedDocumentsReadsTheCatalogOnce(t *testing.T) {
	const m = 40
	root, state := t.TempDir(), t.TempDir()
	src, err := os.ReadFile("testdata/gemini/basic/store/orphan/chats/session-2026-01-15T09-00-deadbeef.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "orphan", "chats")
	os.MkdirAll(dir, 0o700)
	for i := 0; i < m; i++ {
		id := fmt.Sprintf("%08x", i)
		data := strings.Replace(string(src), "deadbeef-0000-4000-8000-000000000000", id+"-0000-4000-8000-000000000000", 1)
		os.WriteFile(filepath.Join(dir, "session-2026-01-15T09-00-"+id+".json"), []byte(data), 0o600)
	}
	if err := newLayoutIndexer(t, "gemini", root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t, state)
	attach(ix, rec)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if len(rec.docs) != m {
		t.Fatalf("the late consumer was handed %d documents, want %d", len(rec.docs), m)
	}
	for unit, n := range rec.docSess {
		if n != 1 {
			t.Fatalf("%s handed with %d sessions, want 1", unit, n)
		}
	}
	if ix.parkedReads > 3 {
		t.Errorf("%d catalog reads for parked sessions to hand over %d documents of one project", ix.parkedReads, m)
	}
}

// A plain failed write (disk full) of a project, then its retry: the units
// whose states the failed flush fetched park again once the retry has written
// their catalog (they held their states and sessions for good).
func TestFailedWriteUnitsParkAgain(t *testing.T) {
	root, state, files := startStore(t, 2)
	first := newLayoutIndexer(t, "wave", root, state, false)
	if err := first.Reconcile(); err != nil {
		t.Fatal(err)
	}
	ix, err := New(Options{Source: "wave", Layout: "wave", Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	full := diskFull(t)
	full.Store(true)
	appendFile(t, files[0], msg("2026-01-02T00:00:00Z", "more"))
	if err := ix.Update([]string{files[0]}); err == nil {
		t.Fatal("no write error")
	}
	full.Store(false)
	if err := ix.Retry(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := len(ix.Sessions()); got != len(files) {
		t.Fatalf("%d sessions after the retry, want %d", got, len(files))
	}
	for i := 0; i < 3; i++ { // later appends to the other project's files
		appendFile(t, files[2], msg(fmt.Sprintf("2026-01-03T00:00:0%dZ", i), "other"))
		ix.Update([]string{files[2]})
	}
	appendFile(t, files[0], msg("2026-01-04T00:00:00Z", "again")) // and to the same file
	ix.Update([]string{files[0]})
	if held, parked := inMemory(ix); held != 0 {
		ix.mu.Lock()
		for u := range ix.units.all() {
			if len(u.sessions()) > 0 {
				t.Logf("held: %s state=%d bytes parked=%v lazyKey=%q", u.rel, len(u.state()), u.parked, ix.lazyKeyOf(u))
			}
		}
		ix.mu.Unlock()
		t.Errorf("after a failed write, its retry and further flushes of the project: %d units hold sessions, %d parked; want 0", held, parked)
	}
}
