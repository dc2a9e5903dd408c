package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/search"
)

// daemonBehindWriter starts a daemon over a one-session store, indexed, while
// the test holds the writer lock as a reindex begun before the daemon would;
// prepare runs before the daemon starts. It returns once the daemon logs that
// it waits; unlock releases the lock (later calls do nothing).
func daemonBehindWriter(t *testing.T, prepare func(e *testEnv)) (e *testEnv, d *daemonProc, unlock func()) {
	t.Helper()
	e = newEnv(t)
	p := e.project("/w/app")
	appendTo(t, filepath.Join(p, "s1.jsonl"), header("/w/app")+message(time.Now(), "hello"))
	if _, errOut, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex: %d %s", code, errOut)
	}
	w := indexer.NewWriterLock(e.state)
	if err := w.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() { once.Do(w.Unlock) }
	t.Cleanup(unlock)
	if prepare != nil {
		prepare(e)
	}
	d = e.launchDaemon()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", d.stderr)
		}
	})
	waitFor(t, 20*time.Second, "the daemon waiting for the writer", func() bool {
		return strings.Contains(d.stderr.String(), "waiting for another writer")
	})
	return e, d, unlock
}

// A daemon started while a reindex writes (it holds the writer lock, having
// seen no daemon) opens the search index and the ledger only once the reindex
// is done: opened meanwhile, the index would remove the reindex's uncommitted
// segments as strays.
func TestDaemonOpensConsumersAfterRunningWriter(t *testing.T) {
	var stray string
	_, d, unlock := daemonBehindWriter(t, func(e *testEnv) {
		// What a reindex in progress has written and not yet committed.
		stray = filepath.Join(search.IndexDir(e.state), "seg-uncommitted")
		if err := os.WriteFile(stray, []byte("postings"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	// While the writer holds the lock the daemon must neither open the index
	// (the stray stays) nor be ready: watched for a while (the old code opened
	// it at once, beside loading the catalogs).
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(stray); err != nil {
			t.Fatalf("the daemon opened the search index while a writer held the lock: %v", err)
		}
		if d.ready() {
			t.Fatal("the daemon is ready while a writer holds the lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	unlock()
	waitFor(t, 20*time.Second, "daemon ready once the writer is done", d.ready)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("a file the manifest does not name is left after the daemon opened the index: %v", err)
	}
}
