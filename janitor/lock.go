package janitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxLockBytes bounds how much of a lock file is read; a real one is a few dozen bytes.
const maxLockBytes = 64 << 10

// LockInfo is what a session lock file (SPEC §3.5: JSON {"pid","timestamp",
// "sessionId","ownerToken"}) says, and how it looks on disk.
type LockInfo struct {
	Path string
	// Readable: the file parsed as a JSON object. PID and Timestamp are only
	// meaningful then.
	Readable  bool
	PID       int
	Timestamp time.Time // zero when absent or unparseable
	SessionID string
	Mtime     time.Time // the lock file's own modification time (never followed)
	// Flocked: some process holds a flock on the file right now.
	Flocked bool
}

// LockVerdict is the judgement of one lock file.
type LockVerdict struct {
	Held   bool   // the session is in use; otherwise the lock is stale
	PID    int    // the holder, when known
	Reason string // why, for messages and the journal
}

// Proc is what JudgeLock knows about a lock's process.
type Proc struct {
	Alive bool
	// Start is when the process started; zero when unknown (no /proc). A
	// process that started after its lock was written is not the one that
	// wrote it: its pid was reused.
	Start time.Time
}

// startSlack absorbs the rounding of a process start time read from /proc
// (boot time in whole seconds, clock ticks of 10 ms) and of file mtimes.
const startSlack = 2 * time.Second

// JudgeLock decides whether a lock holds its session (SPEC §3.5, §5.2). A
// flocked file is held. A readable lock with a pid > 0 is held while that pid
// is alive and the process started before the lock was written (its mtime):
// age alone never releases a live owner's lock. A live pid whose process
// started after the lock was written was reused: the lock is stale. Where the
// start time is unknown (no /proc), the age rule stands in: the lock's
// timestamp (its mtime when it has none) must be younger than staleAfter. An
// unreadable lock, or one naming pid 0 or less (kill(0,0) would probe our own
// process group), is judged by its age alone. staleAfter <= 0 means locks never
// go stale by age. proc describes a pid.
func JudgeLock(now time.Time, l LockInfo, staleAfter time.Duration, proc func(pid int) Proc) LockVerdict {
	if l.Flocked {
		return LockVerdict{Held: true, PID: l.PID, Reason: "flock held on " + l.Path}
	}
	ts := l.Timestamp
	if !l.Readable || ts.IsZero() {
		ts = l.Mtime
	}
	age := now.Sub(ts)
	young := staleAfter <= 0 || age < staleAfter
	if !l.Readable || l.PID <= 0 {
		what := "unreadable lock " + l.Path
		if l.Readable {
			what = fmt.Sprintf("lock %s without a valid pid (%d)", l.Path, l.PID)
		}
		if young {
			return LockVerdict{Held: true, Reason: fmt.Sprintf("%s, %s old (stale after %s)", what, ageString(age), staleString(staleAfter))}
		}
		return LockVerdict{Reason: fmt.Sprintf("%s, %s old (stale after %s)", what, ageString(age), staleString(staleAfter))}
	}
	p := proc(l.PID)
	if !p.Alive {
		return LockVerdict{PID: l.PID, Reason: fmt.Sprintf("lock %s names pid %d, which is not running", l.Path, l.PID)}
	}
	if !p.Start.IsZero() && !l.Mtime.IsZero() {
		if p.Start.After(l.Mtime.Add(startSlack)) {
			return LockVerdict{PID: l.PID, Reason: fmt.Sprintf("lock %s names pid %d, reused: that process started %s, after the lock was written %s",
				l.Path, l.PID, p.Start.UTC().Format(time.RFC3339), l.Mtime.UTC().Format(time.RFC3339))}
		}
		return LockVerdict{Held: true, PID: l.PID, Reason: "lock " + l.Path + " held"}
	}
	if young {
		return LockVerdict{Held: true, PID: l.PID, Reason: "lock " + l.Path + " held"}
	}
	return LockVerdict{PID: l.PID, Reason: fmt.Sprintf("lock %s of running pid %d is %s old (stale after %s; the process start time is unknown)", l.Path, l.PID, ageString(age), staleString(staleAfter))}
}

// ProcInfo describes a pid from the system: alive per kill(pid, 0), and its
// start time from /proc on Linux (zero elsewhere).
func ProcInfo(pid int) Proc {
	if !PIDAlive(pid) {
		return Proc{}
	}
	return Proc{Alive: true, Start: procStart(pid)}
}

// clockTicks is sysconf(_SC_CLK_TCK), the unit of /proc/<pid>/stat's
// starttime; it is 100 on every Linux architecture Go supports.
const clockTicks = 100

// procStart reads when a process started: /proc/stat's btime (boot, in unix
// seconds) plus field 22 of /proc/<pid>/stat (clock ticks after boot). Zero
// when either cannot be read.
func procStart(pid int) time.Time {
	boot := bootTime()
	if boot.IsZero() {
		return time.Time{}
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}
	}
	ticks, ok := statStartTicks(string(data))
	if !ok {
		return time.Time{}
	}
	return boot.Add(time.Duration(ticks) * time.Second / clockTicks)
}

// statStartTicks parses field 22 (starttime) of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces and ')', so the
// fields are counted from the last ')'.
func statStartTicks(line string) (uint64, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(f[19], 10, 64)
	return n, err == nil
}

var (
	bootOnce sync.Once
	bootAt   time.Time
)

// bootTime reads btime from /proc/stat once.
func bootTime() time.Time {
	bootOnce.Do(func() {
		data, err := os.ReadFile("/proc/stat")
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "btime "); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					bootAt = time.Unix(n, 0)
				}
			}
		}
	})
	return bootAt
}

func staleString(d time.Duration) string {
	if d <= 0 {
		return "never"
	}
	return durString(d)
}

// PIDAlive reports whether a process with that pid exists: kill(pid, 0)
// succeeds, or fails with EPERM (it runs as another user).
func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ReadLock looks at a lock file without following a symlink: ok is false when
// there is none. A file that cannot be parsed is returned with Readable false
// (it is judged by its mtime); err is only for a lock that cannot even be stat'ed.
func ReadLock(path string) (l LockInfo, ok bool, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return LockInfo{}, false, nil
		}
		return LockInfo{}, false, fmt.Errorf("stat lock %s: %w", path, err)
	}
	l = LockInfo{Path: path, Mtime: fi.ModTime()}
	if !fi.Mode().IsRegular() {
		return l, true, nil // a symlink or a directory is never read through
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return l, true, nil
	}
	defer f.Close()
	// A shared flock fails while another process holds an exclusive one.
	if ferr := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(ferr, syscall.EWOULDBLOCK) {
		l.Flocked = true
	} else if ferr == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLockBytes))
	if err != nil {
		return l, true, nil
	}
	var raw struct {
		PID       json.RawMessage `json:"pid"`
		Timestamp json.RawMessage `json:"timestamp"`
		SessionID string          `json:"sessionId"`
	}
	if json.Unmarshal(data, &raw) != nil {
		return l, true, nil
	}
	pid, okPID := jsonInt(raw.PID)
	if !okPID {
		return l, true, nil
	}
	l.Readable = true
	l.PID = int(pid)
	l.SessionID = raw.SessionID
	l.Timestamp = jsonTime(raw.Timestamp)
	return l, true, nil
}

// jsonInt reads a JSON number or numeric string.
func jsonInt(raw json.RawMessage) (int64, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > 1<<31 {
		return 0, false
	}
	return n, true
}

// jsonTime reads a timestamp: an RFC 3339 string, or epoch milliseconds (numbers
// below 1e11 are taken as seconds), as a number or a string. Zero if neither.
func jsonTime(raw json.RawMessage) time.Time {
	if len(raw) == 0 {
		return time.Time{}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	} else {
		s = string(raw)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f <= 0 {
		return time.Time{}
	}
	if f < 1e11 {
		return time.Unix(0, int64(f*1e9))
	}
	return time.UnixMilli(int64(f))
}
