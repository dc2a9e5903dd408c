package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const idB2 = "bbbbbbbb-0000-4000-8000-00000000000b"

// The daemon lists the store for its first pass while the usage ledger and the
// search index open (Group.ProveAll), with the watches already in place: what
// changes after that listing — an append, a new session in a listed directory,
// a new project directory, a session removed — is not lost but indexed from its
// events once the daemon is ready.
func TestDaemonChangeAfterStartListingIsIndexed(t *testing.T) {
	e := newEnv(t)
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	a := filepath.Join(e.project("/ev/a"), idA+".jsonl")
	gone := filepath.Join(e.project("/ev/b"), idA+".jsonl")
	appendTo(t, a, header("/ev/a")+message(base, "first"))
	appendTo(t, gone, header("/ev/b")+message(base, "to be removed"))
	d := e.startDaemon()
	if code := d.stop(); code != 0 {
		t.Fatalf("stop = %d", code)
	}

	listed := make(chan struct{})
	testAfterProve = func() {
		appendTo(t, a, message(base.Add(time.Minute), "after the listing"))
		appendTo(t, filepath.Join(e.project("/ev/a"), idB2+".jsonl"), header("/ev/a")+message(base, "new in a listed dir"))
		appendTo(t, filepath.Join(e.project("/ev/new"), idA+".jsonl"), header("/ev/new")+message(base, "new dir"))
		os.Remove(gone)
		close(listed)
	}
	t.Cleanup(func() { testAfterProve = nil })
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncWriter{b: &bytes.Buffer{}}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run"}, io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon: %v\n%s", err, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("daemon did not stop within 30s")
		}
	})
	waitFor(t, 20*time.Second, "daemon ready", func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.Running && st.PID == os.Getpid()
	})
	select {
	case <-listed:
	default:
		t.Fatal("the daemon was ready without listing the store ahead of its first pass")
	}
	waitFor(t, 10*time.Second, "the append after the listing indexed", func() bool {
		s := e.sessionIn("/ev/a", idA)
		return s != nil && s.MessageCount == 2
	})
	waitFor(t, 10*time.Second, "the new session in a listed dir indexed", func() bool {
		return e.sessionIn("/ev/a", idB2) != nil
	})
	waitFor(t, 10*time.Second, "the new project dir's session indexed", func() bool {
		return e.sessionIn("/ev/new", idA) != nil
	})
	waitFor(t, 10*time.Second, "the removed session gone", func() bool {
		return e.sessionIn("/ev/b", idA) == nil
	})
}
