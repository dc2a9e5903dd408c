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

// JudgeLock decides whether a lock holds its session (SPEC §3.5). A flocked
// file is held. A readable lock with a pid > 0 is held while the pid is alive
// and its timestamp (the file mtime when it has none) is younger than
// staleAfter; it is stale once the pid is dead or the timestamp that old. An
// unreadable lock, or one naming pid 0 or less (kill(0,0) would probe our own
// process group), is judged by its age alone. staleAfter <= 0 means locks never
// go stale by age: only a dead pid makes one stale, and an unreadable lock then
// stays held. alive reports whether a pid runs.
func JudgeLock(now time.Time, l LockInfo, staleAfter time.Duration, alive func(pid int) bool) LockVerdict {
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
	if !alive(l.PID) {
		return LockVerdict{PID: l.PID, Reason: fmt.Sprintf("lock %s names pid %d, which is not running", l.Path, l.PID)}
	}
	if young {
		return LockVerdict{Held: true, PID: l.PID, Reason: "lock " + l.Path + " held"}
	}
	return LockVerdict{PID: l.PID, Reason: fmt.Sprintf("lock %s of running pid %d is %s old (stale after %s)", l.Path, l.PID, ageString(age), staleString(staleAfter))}
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
