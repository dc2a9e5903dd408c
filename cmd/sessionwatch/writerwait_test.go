package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/search"
)

// A daemon started while a reindex writes (it holds the writer lock, having
// seen no daemon) opens the search index and the ledger only once the reindex
// is done: opened meanwhile, the index would remove the reindex's uncommitted
// segments as strays.
func TestDaemonOpensConsumersAfterRunningWriter(t *testing.T) {
	e := newEnv(t)
	p := e.project("/w/app")
	appendTo(t, filepath.Join(p, "s1.jsonl"), header("/w/app")+message(time.Now(), "hello"))
	if _, errOut, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex: %d %s", code, errOut)
	}
	w := indexer.NewWriterLock(e.state)
	if err := w.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			w.Unlock()
		}
	}()
	// What a reindex in progress has written and not yet committed.
	stray := filepath.Join(search.IndexDir(e.state), "seg-uncommitted")
	if err := os.WriteFile(stray, []byte("postings"), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(binPath, "run")
	cmd.Env = append(os.Environ(), "HOME="+e.home, "SESSIONWATCH_CONFIG="+e.config)
	errb := &syncWriter{b: &bytes.Buffer{}}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{t: t, cmd: cmd, stderr: errb, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() { d.stop() })
	ready := func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.PID == cmd.Process.Pid && st.Running
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", errb)
		}
	})
	waitFor(t, 20*time.Second, "the daemon's pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(e.state, "daemon.pid"))
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(cmd.Process.Pid)
	})
	// While the writer holds the lock the daemon must neither open the index
	// (the stray stays) nor be ready: watched for a while (the old code opened
	// it at once, beside loading the catalogs).
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(stray); err != nil {
			t.Fatalf("the daemon opened the search index while a writer held the lock: %v\n%s", err, errb)
		}
		if ready() {
			t.Fatalf("the daemon is ready while a writer holds the lock\n%s", errb)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Unlock()
	locked = false
	waitFor(t, 20*time.Second, "daemon ready once the writer is done", ready)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("a file the manifest does not name is left after the daemon opened the index: %v", err)
	}
}
