package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// maxQueuedEvents is the kernel's inotify queue length: past it, events are dropped
// and one IN_Q_OVERFLOW is queued (fsnotify.ErrEventOverflow).
const maxQueuedEvents = "/proc/sys/fs/inotify/max_queued_events"

// TestOverflowRescanRestoresExactness forces a real inotify queue overflow without
// touching any system setting: it stops the daemon with SIGSTOP (as Watchman's
// test_force_recrawl suspends its server), makes more changes than the kernel queue
// holds, then creates a project and appends to a session whose events are dropped,
// and resumes the daemon with SIGCONT. Only the overflow rescan can find those
// changes; status.json must count it, and the catalogs must equal a rebuild. The new
// project must also be watched afterwards.
func TestOverflowRescanRestoresExactness(t *testing.T) {
	data, err := os.ReadFile(maxQueuedEvents)
	if err != nil {
		t.Skipf("no inotify queue limit to overflow: %v", err)
	}
	queue, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || queue > 1<<18 {
		t.Skipf("%s = %q: too large to overflow cheaply", maxQueuedEvents, data)
	}
	e := newEnv(t)
	st, err := gen.Plan(e.root, gen.Spec{Layout: "wave", Projects: 2, Sessions: 10, Lines: 2, LineSize: 200, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	late, err := gen.Plan(e.root, gen.Spec{Layout: "wave", Projects: 1, Sessions: 3, Lines: 2, LineSize: 200, Seed: 4, ProjectPrefix: "after-overflow-"})
	if err != nil {
		t.Fatal(err)
	}
	d := e.startDaemon()
	pid := d.cmd.Process.Pid

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	// Fill the queue: one IN_MODIFY per write, alternating between two files so the
	// kernel cannot merge consecutive identical events.
	a, b := st.Sessions[0], st.Sessions[1]
	fa, err := os.OpenFile(st.Path(a), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.OpenFile(st.Path(b), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	clock := gen.UniqueClock()
	for i := 0; i < queue+500; i++ {
		s, f := a, fa
		if i%2 == 1 {
			s, f = b, fb
		}
		if _, err := f.Write(st.Next(s, clock())); err != nil {
			t.Fatal(err)
		}
	}
	fa.Close()
	fb.Close()
	// Changes whose events the full queue drops: a new project dir with sessions,
	// and an append to a third session.
	for _, s := range late.Sessions {
		writeSession(t, late, s)
	}
	c := st.Sessions[2]
	appendTo(t, st.Path(c), string(st.Next(c, clock())))

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false

	// The daemon refreshes status.json every 10 s.
	waitFor(t, 40*time.Second, `status.json counting an "overflow" rescan`, func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.PID == pid && st.Reasons["overflow"] >= 1
	})
	waitFor(t, 30*time.Second, "catalog and native indexes equal a rebuild", func() bool {
		_, _, code := e.cli("reindex", "--check")
		return code == 0
	})
	all := append(append([]*gen.Session{}, st.Sessions...), late.Sessions...)
	for _, s := range all {
		got := e.sessionIn(s.Project, s.ID)
		if got == nil || got.MessageCount != s.Messages || got.LastActiveAt != indexer.FormatTime(s.LastTS) {
			t.Errorf("after the overflow rescan, session %s = %+v, want %d messages, last active %s", s.Rel, got, s.Messages, indexer.FormatTime(s.LastTS))
		}
	}

	// The project created while events were being dropped must be watched now:
	// an append to it reaches the catalog without another rescan.
	s := late.Sessions[0]
	appendTo(t, late.Path(s), string(late.Next(s, clock())))
	want := indexer.FormatTime(s.LastTS)
	waitFor(t, 10*time.Second, "append in the project created during the overflow indexed ("+filepath.Base(filepath.Dir(late.Path(s)))+")", func() bool {
		got := e.sessionIn(s.Project, s.ID)
		return got != nil && got.LastActiveAt == want
	})
	if code := d.stop(); code != 0 {
		t.Errorf("daemon exit code %d, want 0; stderr:\n%s", code, d.stderr)
	}
}
