package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is 100
// on every Linux architecture Go supports.
const clockTicks = 100

// procSample is one reading of a process's counters from /proc.
type procSample struct {
	at        time.Time
	cpu       time.Duration // utime + stime
	rss, hwm  int64         // VmRSS and VmHWM, bytes
	rchar     int64         // bytes passed to read() and friends (page cache included)
	readBytes int64         // bytes fetched from storage
	wchar     int64         // bytes passed to write() and friends
}

func sampleProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return s, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.cpu = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	s.rss = kbField(status, "VmRSS:")
	s.hwm = kbField(status, "VmHWM:")
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(bytes.NewReader(io))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "rchar":
			s.rchar = n
		case "read_bytes":
			s.readBytes = n
		case "wchar":
			s.wchar = n
		}
	}
	return s, nil
}

func kbField(status []byte, key string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

// inotifyWatches counts the inotify watches a process holds, from its fdinfo (one
// "inotify wd:" line per watch), independently of what the process reports.
func inotifyWatches(pid int) int {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	n := 0
	for _, fd := range fds {
		data, err := os.ReadFile(fd)
		if err != nil {
			continue
		}
		n += bytes.Count(data, []byte("inotify wd:"))
	}
	return n
}
