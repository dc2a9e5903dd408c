package janitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

func TestJudgeLock(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	// pid 100 runs since three days before now (it wrote its locks);
	// pid 300 is alive but started a minute ago (a reused pid); pid 400 is
	// alive with no start time known (no /proc); every other pid is dead.
	proc := func(pid int) Proc {
		switch pid {
		case 100:
			return Proc{Alive: true, Start: now.Add(-72 * time.Hour)}
		case 300:
			return Proc{Alive: true, Start: now.Add(-time.Minute)}
		case 400:
			return Proc{Alive: true}
		}
		return Proc{}
	}
	const stale = 48 * time.Hour
	tests := []struct {
		name       string
		l          LockInfo
		staleAfter time.Duration
		held       bool
		pid        int
		reason     string // part of the reason
	}{
		{"dead pid is stale", LockInfo{Readable: true, PID: 200, Timestamp: now.Add(-time.Minute), Mtime: now.Add(-time.Minute)}, stale, false, 200, "not running"},
		{"alive and fresh is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-time.Hour), Mtime: now.Add(-time.Hour)}, stale, true, 100, "held"},
		{"alive at 47h59m is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-stale + time.Minute), Mtime: now.Add(-stale + time.Minute)}, stale, true, 100, "held"},
		// §9: age alone never releases a live owner's lock.
		{"live owner at exactly 48h is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-stale), Mtime: now.Add(-stale)}, stale, true, 100, "held"},
		{"live owner, lock 70h old, is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-70 * time.Hour), Mtime: now.Add(-70 * time.Hour)}, stale, true, 100, "held"},
		{"live owner, written as it started, is held", LockInfo{Readable: true, PID: 100, Mtime: now.Add(-72*time.Hour + time.Second)}, stale, true, 100, "held"},
		// A pid reused by a process that started after the lock was written.
		{"reused pid is stale", LockInfo{Readable: true, PID: 300, Timestamp: now.Add(-time.Hour), Mtime: now.Add(-time.Hour)}, stale, false, 300, "reused"},
		{"reused pid, no age limit, is stale", LockInfo{Readable: true, PID: 300, Mtime: now.Add(-time.Hour)}, 0, false, 300, "reused"},
		{"reused pid beyond the slack is stale", LockInfo{Readable: true, PID: 300, Mtime: now.Add(-time.Minute - startSlack - time.Second)}, stale, false, 300, "reused"},
		{"start within the slack of the mtime is held", LockInfo{Readable: true, PID: 300, Mtime: now.Add(-time.Minute - time.Second)}, stale, true, 300, "held"},
		// Without /proc the age rule stays.
		{"no start time: fresh is held", LockInfo{Readable: true, PID: 400, Timestamp: now.Add(-time.Hour), Mtime: now.Add(-time.Hour)}, stale, true, 400, "held"},
		{"no start time: exactly 48h is stale", LockInfo{Readable: true, PID: 400, Timestamp: now.Add(-stale), Mtime: now.Add(-stale)}, stale, false, 400, "start time is unknown"},
		{"no start time: 49h is stale", LockInfo{Readable: true, PID: 400, Timestamp: now.Add(-49 * time.Hour)}, stale, false, 400, "2d1h old (stale after 48h"},
		{"no start time, no age limit, is held", LockInfo{Readable: true, PID: 400, Timestamp: now.Add(-49 * time.Hour)}, 0, true, 400, "held"},
		{"no start time, no timestamp: the mtime", LockInfo{Readable: true, PID: 400, Mtime: now.Add(-50 * time.Hour)}, stale, false, 400, "2d2h old"},
		{"no mtime known: the age rule", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-50 * time.Hour)}, stale, false, 100, "stale after"},
		{"alive with a future timestamp is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(time.Hour), Mtime: now}, stale, true, 100, "held"},
		{"dead pid with no age limit is stale", LockInfo{Readable: true, PID: 200, Timestamp: now, Mtime: now}, 0, false, 200, "not running"},
		{"unreadable with a fresh mtime is held", LockInfo{Mtime: now.Add(-time.Hour)}, stale, true, 0, "unreadable"},
		{"unreadable and old is stale", LockInfo{Mtime: now.Add(-72 * time.Hour)}, stale, false, 0, "unreadable"},
		{"unreadable with no age limit is held", LockInfo{Mtime: now.Add(-720 * time.Hour)}, 0, true, 0, "unreadable"},
		{"pid 0 is judged by age: fresh", LockInfo{Readable: true, PID: 0, Timestamp: now.Add(-time.Hour)}, stale, true, 0, "without a valid pid"},
		{"pid 0 is judged by age: old", LockInfo{Readable: true, PID: 0, Timestamp: now.Add(-72 * time.Hour)}, stale, false, 0, "without a valid pid"},
		{"negative pid is judged by age", LockInfo{Readable: true, PID: -1, Mtime: now.Add(-72 * time.Hour)}, stale, false, 0, "without a valid pid"},
		{"a flock wins over a dead pid", LockInfo{Readable: true, PID: 200, Timestamp: now.Add(-99 * time.Hour), Flocked: true}, stale, true, 200, "flock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.l.Path = "/r/x.lock"
			v := JudgeLock(now, tt.l, tt.staleAfter, proc)
			if v.Held != tt.held || v.PID != tt.pid || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("JudgeLock(%+v, %v) = %+v, want held=%v pid=%d and a reason with %q", tt.l, tt.staleAfter, v, tt.held, tt.pid, tt.reason)
			}
		})
	}
}

func TestStatStartTicks(t *testing.T) {
	tests := []struct {
		name, line string
		want       uint64
		ok         bool
	}{
		{"plain", "1234 (bash) S 1 1234 1234 34816 1234 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615", 987654, true},
		{"name with spaces and parens", "77 (a) b (c d) R 1 77 77 0 -1 4194560 5 0 0 0 0 0 0 0 20 0 1 0 42 0 0", 42, true},
		{"truncated", "77 (x) R 1 2 3", 0, false},
		{"no name", "77 x R", 0, false},
	}
	for _, tt := range tests {
		got, ok := statStartTicks(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: statStartTicks(%q) = %d, %v, want %d, %v", tt.name, tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestProcInfo(t *testing.T) {
	p := ProcInfo(os.Getpid())
	if !p.Alive {
		t.Fatalf("ProcInfo(self) = %+v, want alive", p)
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		// This test process started before now and after boot.
		if p.Start.IsZero() || p.Start.After(time.Now().Add(startSlack)) || p.Start.Before(bootTime()) {
			t.Errorf("ProcInfo(self).Start = %v, want between boot %v and now", p.Start, bootTime())
		}
	}
	if d := ProcInfo(deadPID(t)); d.Alive {
		t.Errorf("ProcInfo(exited child) = %+v", d)
	}
}

// TestLiveLockOlderThanStaleAfterIsHeld: a lock written by a process that
// still runs keeps its session however old the lock is (it failed before
// §9: the 48 h rule released it), and a lock whose pid now belongs to a
// younger process does not.
func TestLiveLockOlderThanStaleAfterIsHeld(t *testing.T) {
	f := newFixture(t, `{"active_grace":"off","lock_stale_after":"48h"}`, `"retention":"1d"`)
	held := f.session("/w/lock", "aaaaaaaa-0000-4000-8000-000000000001", 5*24*time.Hour)
	reused := f.session("/w/lock", "aaaaaaaa-0000-4000-8000-000000000002", 5*24*time.Hour)
	// The live agent is a child started now, whose lock is written a second
	// after it started; the pass then runs three days later.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	start := ProcInfo(cmd.Process.Pid).Start
	if start.IsZero() {
		t.Skip("no /proc start times here")
	}
	writeLock(t, held+LockSuffix, cmd.Process.Pid, start.Add(time.Second))
	os.Chtimes(held+LockSuffix, start.Add(time.Second), start.Add(time.Second))
	// The reused pid: a lock naming the same live pid, written an hour before it started.
	writeLock(t, reused+LockSuffix, cmd.Process.Pid, start.Add(-time.Hour))
	os.Chtimes(reused+LockSuffix, start.Add(-time.Hour), start.Add(-time.Hour))
	f.index()
	j, err := New(f.cfg, f.group, nil, Options{Now: func() time.Time { return time.Now().Add(72 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(held) || !exists(held+LockSuffix) {
		t.Errorf("session whose live owner's lock is 72h old was retired: %+v", rep.Actions)
	}
	if exists(reused) || exists(reused+LockSuffix) {
		t.Errorf("session whose lock names a reused pid was kept: %+v", rep.Actions)
	}
}

func TestPIDAlive(t *testing.T) {
	if !PIDAlive(os.Getpid()) {
		t.Errorf("PIDAlive(self) = false")
	}
	if PIDAlive(0) || PIDAlive(-5) {
		t.Errorf("PIDAlive(0 or negative) = true")
	}
	if !PIDAlive(1) { // init runs as root: EPERM counts as alive
		t.Errorf("PIDAlive(1) = false")
	}
	if PIDAlive(deadPID(t)) {
		t.Errorf("PIDAlive(exited child) = true")
	}
}

func TestReadLock(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, content string
		readable      bool
		pid           int
		ts            time.Time
	}{
		{"ms", `{"pid":123,"timestamp":1795000000000,"sessionId":"s","ownerToken":"t"}`, true, 123, time.UnixMilli(1795000000000)},
		{"seconds", `{"pid":"123","timestamp":1795000000}`, true, 123, time.Unix(1795000000, 0)},
		{"rfc3339", `{"pid":7,"timestamp":"2026-11-20T10:00:00.000Z"}`, true, 7, time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)},
		{"no timestamp", `{"pid":7}`, true, 7, time.Time{}},
		{"garbage", `not json`, false, 0, time.Time{}},
		{"no pid", `{"timestamp":1}`, false, 0, time.Time{}},
		{"empty", ``, false, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(tt.name+".lock", tt.content)
			l, ok, err := ReadLock(p)
			if err != nil || !ok {
				t.Fatalf("ReadLock(%s) = %v, %v", tt.name, ok, err)
			}
			if l.Readable != tt.readable || l.PID != tt.pid || !l.Timestamp.Equal(tt.ts) || l.Mtime.IsZero() {
				t.Errorf("ReadLock(%q) = %+v, want readable=%v pid=%d ts=%v", tt.content, l, tt.readable, tt.pid, tt.ts)
			}
		})
	}
	if _, ok, err := ReadLock(filepath.Join(dir, "none.lock")); ok || err != nil {
		t.Errorf("ReadLock(missing) = %v, %v; want not ok, nil", ok, err)
	}
	// A symlink is never read through.
	target := write("target", `{"pid":1}`)
	link := filepath.Join(dir, "link.lock")
	os.Symlink(target, link)
	if l, ok, _ := ReadLock(link); !ok || l.Readable {
		t.Errorf("ReadLock(symlink) = %+v, %v; want present, unreadable", l, ok)
	}
	// A flock held by another open file description is seen.
	p := write("flocked.lock", `{"pid":1}`)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if l, _, _ := ReadLock(p); !l.Flocked {
		t.Errorf("ReadLock(flocked) = %+v, want Flocked", l)
	}
	if v := JudgeLock(time.Now(), func() LockInfo { l, _, _ := ReadLock(p); return l }(), time.Hour, ProcInfo); !v.Held || !strings.Contains(v.Reason, "flock") {
		t.Errorf("JudgeLock(flocked) = %+v", v)
	}
}

// TestLockNameTooLong: a session whose file name leaves no room for ".lock"
// (255 bytes) is kept as "cannot check lock: name too long", not as in use
// by a live lock (before §9 it read "in use … file name too long").
func TestLockNameTooLong(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "gemini")
	chats := filepath.Join(root, "proj", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	name := "session-" + strings.Repeat("a", 255-len("session-")-len(".jsonl")) + ".jsonl"
	path := filepath.Join(chats, name)
	old := time.Now().Add(-10 * 24 * time.Hour)
	data := fmt.Sprintf(`{"sessionId":"s-long","projectHash":"h","startTime":%q,"lastUpdated":%q}`+"\n"+
		`{"id":"1","timestamp":%q,"type":"user","content":"hi"}`+"\n", old.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, old, old)
	cfg, err := parseConfig(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"active_grace":"off"},"sources":[{"name":"gemini","layout":"gemini","root":%q,"retention":"1d"}]}`,
		filepath.Join(dir, "state"), filepath.Join(dir, "archive"), root))
	if err != nil {
		t.Fatal(err)
	}
	g, err := indexer.NewGroup(cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		t.Fatal(err)
	}
	j, err := New(cfg, g, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	var got []Action
	for _, a := range rep.Actions {
		if a.ID == "s-long" {
			got = append(got, a)
		}
	}
	if len(got) != 1 || got[0].Kind != KindSkip || !strings.Contains(got[0].Reason, "cannot check lock") || !strings.Contains(got[0].Reason, "name too long") {
		t.Errorf("actions for the long-named session = %+v, want one skip \"cannot check lock …: name too long\"", got)
	}
	if !exists(path) {
		t.Errorf("session with an uncheckable lock was retired")
	}
	en := indexer.Entry{Source: "gemini", Layout: "gemini", Session: &indexer.Session{ID: "s-long", File: path}}
	if h := NewLiveChecker(cfg).InUse(en); h.Held() {
		t.Errorf("InUse = %+v, want not in use", h)
	}
}

// FuzzStatStartTicks: any /proc/<pid>/stat line parses without panicking, and
// a parsed start time is field 22 counted after the last ')'.
func FuzzStatStartTicks(f *testing.F) {
	f.Add("1234 (bash) S 1 1234 1234 34816 1234 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100")
	f.Add("77 (a) b (c d) R 1 77 77 0 -1 4194560 5 0 0 0 0 0 0 0 20 0 1 0 42 0 0")
	f.Add(")")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		n, ok := statStartTicks(line)
		if !ok {
			return
		}
		i := strings.LastIndexByte(line, ')')
		if f := strings.Fields(line[i+1:]); len(f) < 20 || f[19] != fmt.Sprint(n) && strings.TrimLeft(f[19], "0") != fmt.Sprint(n) && !(n == 0 && strings.Trim(f[19], "0") == "") {
			t.Errorf("statStartTicks(%q) = %d, not field 22", line, n)
		}
	})
}
