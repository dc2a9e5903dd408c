package janitor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestJudgeLock(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	alive := func(pid int) bool { return pid == 100 }
	const stale = 48 * time.Hour
	tests := []struct {
		name       string
		l          LockInfo
		staleAfter time.Duration
		held       bool
		pid        int
	}{
		{"dead pid is stale", LockInfo{Readable: true, PID: 200, Timestamp: now.Add(-time.Minute)}, stale, false, 200},
		{"alive and fresh is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-time.Hour)}, stale, true, 100},
		{"alive at 47h59m is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-stale + time.Minute)}, stale, true, 100},
		{"alive at exactly 48h is stale", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-stale)}, stale, false, 100},
		{"alive and 49h old is stale", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-49 * time.Hour)}, stale, false, 100},
		{"alive, 49h old, no age limit is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(-49 * time.Hour)}, 0, true, 100},
		{"dead pid with no age limit is stale", LockInfo{Readable: true, PID: 200, Timestamp: now}, 0, false, 200},
		{"alive without timestamp uses the mtime", LockInfo{Readable: true, PID: 100, Mtime: now.Add(-50 * time.Hour)}, stale, false, 100},
		{"alive with a future timestamp is held", LockInfo{Readable: true, PID: 100, Timestamp: now.Add(time.Hour)}, stale, true, 100},
		{"unreadable with a fresh mtime is held", LockInfo{Mtime: now.Add(-time.Hour)}, stale, true, 0},
		{"unreadable and old is stale", LockInfo{Mtime: now.Add(-72 * time.Hour)}, stale, false, 0},
		{"unreadable with no age limit is held", LockInfo{Mtime: now.Add(-720 * time.Hour)}, 0, true, 0},
		{"pid 0 is judged by age: fresh", LockInfo{Readable: true, PID: 0, Timestamp: now.Add(-time.Hour)}, stale, true, 0},
		{"pid 0 is judged by age: old", LockInfo{Readable: true, PID: 0, Timestamp: now.Add(-72 * time.Hour)}, stale, false, 0},
		{"negative pid is judged by age", LockInfo{Readable: true, PID: -1, Mtime: now.Add(-72 * time.Hour)}, stale, false, 0},
		{"a flock wins over a dead pid", LockInfo{Readable: true, PID: 200, Timestamp: now.Add(-99 * time.Hour), Flocked: true}, stale, true, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.l.Path = "/r/x.lock"
			v := JudgeLock(now, tt.l, tt.staleAfter, alive)
			if v.Held != tt.held || v.PID != tt.pid || v.Reason == "" {
				t.Errorf("JudgeLock(%+v, %v) = %+v, want held=%v pid=%d and a reason", tt.l, tt.staleAfter, v, tt.held, tt.pid)
			}
		})
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
	if v := JudgeLock(time.Now(), func() LockInfo { l, _, _ := ReadLock(p); return l }(), time.Hour, PIDAlive); !v.Held || !strings.Contains(v.Reason, "flock") {
		t.Errorf("JudgeLock(flocked) = %+v", v)
	}
}
