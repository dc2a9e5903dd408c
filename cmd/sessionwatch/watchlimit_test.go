package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/watcher"
)

// fakeWatchLimits points doctor at fake kernel limits, with no watches in use by
// other programs (the real count moves as other processes come and go).
func fakeWatchLimits(t *testing.T, maxWatches int) {
	t.Helper()
	fake := t.TempDir()
	oldDir, oldUsage := inotifyDir, inotifyUsage
	inotifyDir = fake
	inotifyUsage = func(int) (int, int) { return 1, 0 }
	t.Cleanup(func() { inotifyDir, inotifyUsage = oldDir, oldUsage })
	os.WriteFile(filepath.Join(fake, "max_user_instances"), []byte("128\n"), 0o600)
	os.WriteFile(filepath.Join(fake, "max_user_watches"), []byte(fmt.Sprintf("%d\n", maxWatches)), 0o600)
}

// TestDoctorWarnsBeforeWatchesRunOut: doctor names the watches needed and the
// sysctl while they still fit but leave little room, without failing.
func TestDoctorWarnsBeforeWatchesRunOut(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		e.project(fmt.Sprintf("/doc/p%d", i))
	}
	fakeWatchLimits(t, 7) // 6 needed (the root and 5 project dirs): fits, under 25% spare
	out, _, code := e.cli("doctor")
	if code != 0 || !strings.Contains(out, "inotify watches: 6 needed, 7 of fs.inotify.max_user_watches=7 free") ||
		!strings.Contains(out, "close to the limit") || !strings.Contains(out, "sudo sysctl fs.inotify.max_user_watches=524288") {
		t.Errorf("doctor with 6 of 7 watches needed = %d\n%s", code, out)
	}
	fakeWatchLimits(t, 100)
	out, _, code = e.cli("doctor")
	if code != 0 || !strings.Contains(out, "ok       inotify watches: 6 needed, 100 of 100 free") || strings.Contains(out, "sysctl") {
		t.Errorf("doctor with 6 of 100 watches needed = %d\n%s", code, out)
	}
}

// TestDaemonOutOfWatchesStillIndexes runs the daemon in-process with room for two
// inotify watches over a store of five directories: the files in the unwatched
// directories are still indexed, by the fallback rescans, and status and doctor
// say that directories are unwatched and how to fix it.
func TestDaemonOutOfWatchesStillIndexes(t *testing.T) {
	e := newEnv(t)
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var files []string
	for i := range 4 {
		f := filepath.Join(e.project(fmt.Sprintf("/lim/p%d", i)), fmt.Sprintf("%08d-0000-4000-8000-000000000001.jsonl", i))
		appendTo(t, f, header(fmt.Sprintf("/lim/p%d", i))+message(base, "first"))
		files = append(files, f)
	}
	testWatcherOptions = func(o *watcher.Options) {
		o.MaxWatches = 2
		o.FallbackInterval = 300 * time.Millisecond
	}
	t.Cleanup(func() { testWatcherOptions = nil })
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncWriter{b: &bytes.Buffer{}}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run"}, io.Discard, stderr) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon: %v\n%s", err, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("daemon did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	waitFor(t, 20*time.Second, "daemon ready", func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.Running && st.PID == os.Getpid()
	})
	if st, _ := readStatusFile(e.state); st.Watches != 2 || st.Unwatched != 3 {
		t.Fatalf("status: %d watches, %d unwatched; want 2 and 3 (the root and 4 project dirs, 2 watches)", st.Watches, st.Unwatched)
	}

	// Appends to every session, two of which at least live in unwatched dirs,
	// and a new project dir (also beyond the limit).
	for i, f := range files {
		appendTo(t, f, message(base.Add(time.Minute), fmt.Sprintf("second %d", i)))
	}
	late := filepath.Join(e.root, "lim-new")
	os.MkdirAll(late, 0o700)
	appendTo(t, filepath.Join(late, "00000009-0000-4000-8000-000000000001.jsonl"), header("/lim/new")+message(base, "late"))
	for i := range files {
		waitFor(t, 10*time.Second, fmt.Sprintf("append to p%d indexed", i), func() bool {
			s := e.sessionIn(fmt.Sprintf("/lim/p%d", i), fmt.Sprintf("%08d-0000-4000-8000-000000000001", i))
			return s != nil && s.MessageCount == 2
		})
	}
	waitFor(t, 10*time.Second, "new project's session indexed", func() bool {
		return e.sessionIn("/lim/new", "00000009-0000-4000-8000-000000000001") != nil
	})
	waitFor(t, 10*time.Second, "a watch-limit rescan counted", func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.Reasons[watcher.ReasonWatchLimit] > 0
	})

	out, _, code := e.cli("status", "--json")
	var js struct {
		WatchError string `json:"watchError"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &js) != nil || !strings.Contains(js.WatchError, "max_user_watches") {
		t.Errorf("status --json = %d, watchError %q; want it to name max_user_watches\n%s", code, js.WatchError, out)
	}
	out, _, _ = e.cli("status")
	if !strings.Contains(out, "watch error: inotify watch limit (fs.inotify.max_user_watches) reached") || !strings.Contains(out, "watch-limit") {
		t.Errorf("status does not say directories are unwatched and rescanned:\n%s", out)
	}
	fakeWatchLimits(t, 1000000)
	out, _, code = e.cli("doctor")
	if code != 1 || !strings.Contains(out, "directories are not watched: inotify watch limit (fs.inotify.max_user_watches) reached; changes there are indexed by periodic rescans") ||
		!strings.Contains(out, "fix: raise it: sudo sysctl fs.inotify.max_user_watches=524288") {
		t.Errorf("doctor while the daemon is out of watches = %d\n%s", code, out)
	}
	stop()
	if _, _, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check after the daemon stopped = %d, want 0", code)
	}
}
