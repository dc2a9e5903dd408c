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
)

// A daemon stopped (SIGTERM) while it waits for a writer that began before it
// exits at once and cleanly (0), without having opened the ledger or the
// search index, and leaves the writer's lock to the writer.
func TestDaemonStopsWhileWaitingForWriter(t *testing.T) {
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
	defer w.Unlock()
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
	waitFor(t, 20*time.Second, "the daemon's pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(e.state, "daemon.pid"))
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(cmd.Process.Pid)
	})
	waitFor(t, 20*time.Second, "the daemon waiting for the writer", func() bool {
		return strings.Contains(errb.String(), "waiting for another writer")
	})
	start := time.Now()
	code := d.stop()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the daemon took %v to stop", took)
	}
	if code != 0 {
		t.Fatalf("daemon stopped while waiting for a writer exits %d; stderr:\n%s", code, errb)
	}
	if !indexer.WriterHeld(e.state) {
		t.Fatal("the writer's lock is not held after the daemon stopped")
	}
}
