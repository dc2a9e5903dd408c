package indexer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// daemonIndexer is an indexer as the daemon builds it: writer lock, CleanTemps.
func daemonIndexer(t *testing.T, root, state string) *Indexer {
	t.Helper()
	ix, err := New(Options{Source: "wave", Layout: "wave", Root: root, StateDir: state, NativeIndex: true, Writer: NewWriterLock(state), CleanTemps: true})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// A read-only pass (reindex --check: Load and Reconcile in check mode) and a
// command's writer deletes no temp file, however old: it may be another
// writer's in-flight file.
func TestCheckAndCommandsDeleteNoTempFiles(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	appendFile(t, filepath.Join(dir, uuidA+".jsonl"), msg("2026-01-01T00:00:00Z", "a"))
	if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	catDir := filepath.Join(CatalogDir(state, "wave"), ProjectKey("/p"))
	if c := layoutCatalog(t, state, "wave", "/p"); c == nil {
		t.Fatalf("no catalog in %s", catDir)
	}
	old := processStart.Add(-time.Hour)
	var temps []string
	for _, d := range []string{dir, catDir} {
		p := filepath.Join(d, TempPrefix+CatalogName+"-inflight")
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		temps = append(temps, p)
	}
	for _, check := range []bool{true, false} {
		ix := newLayoutIndexer(t, "wave", root, state, check)
		if err := ix.Load(); err != nil {
			t.Fatal(err)
		}
		if err := ix.Reconcile(); err != nil {
			t.Fatal(err)
		}
		for _, p := range temps {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("check=%v: in-flight temp file %s removed: %v", check, p, err)
			}
		}
	}
}

// A rebuild by a command while a daemon runs is not overwritten by the daemon's
// older memory: the daemon sees the newer generation and reloads first.
func TestRebuildNotOverwrittenByDaemon(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	fileA := filepath.Join(dir, uuidA+".jsonl")
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	appendFile(t, fileA, header+msg("2026-01-01T00:00:01Z", "before"))
	d := daemonIndexer(t, root, state)
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reconcile(); err != nil {
		t.Fatal(err)
	}
	// A change the daemon does not see (no event reaches it): a new file with
	// other content under the same name.
	os.Remove(fileA)
	appendFile(t, fileA, header+msg("2026-01-01T00:00:01Z", "rebuilt by the command"))

	rewriteAsWriter(t, root, state)

	// The daemon then flushes that project for an unrelated new session.
	fileB := filepath.Join(dir, "11111111-2222-4333-8444-555555555555.jsonl")
	appendFile(t, fileB, header+msg("2026-01-01T00:00:00Z", "other"))
	if err := d.Update([]string{fileB}); err != nil {
		t.Fatal(err)
	}
	c := layoutCatalog(t, state, "wave", "/w/p")
	var prompts []string
	for _, s := range c.Sessions {
		prompts = append(prompts, s.FirstPrompt)
	}
	if got := strings.Join(prompts, ","); got != "rebuilt by the command,other" {
		t.Errorf("catalog after the daemon's flush holds %q, want the rebuild's %q", got, "rebuilt by the command,other")
	}
	assertLayoutConverged(t, "wave", root, state)
}

// While a command holds the writer lock, the daemon's passes wait for it.
func TestDaemonWaitsForCommandWriter(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(dir, uuidA+".jsonl")
	appendFile(t, file, msg("2026-01-01T00:00:00Z", "a"))
	d := daemonIndexer(t, root, state)
	w, err := AcquireWriter(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	if !WriterHeld(state) {
		t.Error("WriterHeld = false while a command holds the lock")
	}
	var done atomic.Bool
	finished := make(chan error, 1)
	go func() {
		err := d.Reconcile()
		done.Store(true)
		finished <- err
	}()
	// The daemon must still be waiting after a while.
	time.Sleep(100 * time.Millisecond)
	if done.Load() {
		t.Fatal("the daemon's pass ran while a command held the writer lock")
	}
	w.Release()
	select {
	case err := <-finished:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon's pass did not run after the lock was released")
	}
	if WriterHeld(state) {
		t.Error("WriterHeld = true after every holder released it")
	}
}

// A failed catalog write (ENOSPC) stays dirty and is retried with backoff: once
// space is free again the catalog is written without any new change or restart.
func TestFailedWriteIsRetried(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(dir, uuidA+".jsonl")
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	appendFile(t, file, header+msg("2026-01-01T00:00:00Z", "first"))
	d := daemonIndexer(t, root, state)
	if err := d.Reconcile(); err != nil {
		t.Fatal(err)
	}

	full := diskFull(t)
	full.Store(true)

	appendFile(t, file, msg("2026-01-02T00:00:00Z", "second"))
	if err := d.Update([]string{file}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Update on a full disk = %v, want ENOSPC", err)
	}
	st := d.Stats()
	if st.WriteFailures == 0 || !st.RetryPending {
		t.Fatalf("after a failed write: WriteFailures %d RetryPending %v, want >0 and true", st.WriteFailures, st.RetryPending)
	}
	// Still full at the first retry: it fails again and backs off further.
	if err := d.Retry(time.Now().Add(retryMax)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Retry on a full disk = %v, want ENOSPC", err)
	}
	if err := d.Retry(time.Now()); err != nil {
		t.Fatalf("Retry before the backoff passed = %v, want nil (nothing tried)", err)
	}
	full.Store(false) // space freed
	if err := d.Retry(time.Now().Add(retryMax + time.Second)); err != nil {
		t.Fatal(err)
	}
	if c := layoutCatalog(t, state, "wave", "/w/p"); c.Sessions[0].MessageCount != 2 {
		t.Errorf("catalog after the retry has %d messages, want 2", c.Sessions[0].MessageCount)
	}
	if d.Stats().RetryPending {
		t.Error("RetryPending still set after a successful retry")
	}
	assertLayoutConverged(t, "wave", root, state)
}

// Two processes that both write per pass (the daemon, and a clean or delete from
// the command line) never overwrite each other's newer catalog with older memory.
func TestPerPassWritersSeeEachOther(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	fileA := filepath.Join(dir, uuidA+".jsonl")
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	appendFile(t, fileA, header+msg("2026-01-01T00:00:01Z", "first"))
	a, b := daemonIndexer(t, root, state), daemonIndexer(t, root, state)
	for _, ix := range []*Indexer{a, b} {
		if err := ix.Load(); err != nil {
			t.Fatal(err)
		}
		if err := ix.Reconcile(); err != nil {
			t.Fatal(err)
		}
	}
	appendFile(t, fileA, msg("2026-01-02T00:00:00Z", "seen by b only"))
	if err := b.Update([]string{fileA}); err != nil {
		t.Fatal(err)
	}
	fileB := filepath.Join(dir, "11111111-2222-4333-8444-555555555555.jsonl")
	appendFile(t, fileB, header+msg("2026-01-01T00:00:00Z", "other"))
	if err := a.Update([]string{fileB}); err != nil {
		t.Fatal(err)
	}
	c := layoutCatalog(t, state, "wave", "/w/p")
	for _, s := range c.Sessions {
		if s.ID == uuidA && s.MessageCount != 2 {
			t.Errorf("session A has %d messages after the other writer's flush, want 2 (the newer truth)", s.MessageCount)
		}
	}
	assertLayoutConverged(t, "wave", root, state)
}

// diskFull makes the indexer's atomic writes fail with ENOSPC while the flag it
// returns is set (unset at first), until the test ends.
func diskFull(t *testing.T) *atomic.Bool {
	full := new(atomic.Bool)
	writeFileAtomic = func(path string, data []byte) error {
		if full.Load() {
			return fmt.Errorf("write %s: %w", path, syscall.ENOSPC)
		}
		return WriteFileAtomic(path, data)
	}
	t.Cleanup(func() { writeFileAtomic = WriteFileAtomic })
	return full
}

// rewriteAsWriter plays another writer (a reindex while the daemon runs): it
// takes the writer lock, rewrites the wave source's catalogs from the files
// under root, and lets the lock go.
func rewriteAsWriter(t *testing.T, root, state string) {
	t.Helper()
	w, err := AcquireWriter(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(); err != nil {
		t.Fatal(err)
	}
}
