package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
)

// machine describes the host a benchmark ran on.
func machine(dir string) string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	var mem int64
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = kbField(data, "MemTotal:")
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	load, _ := os.ReadFile("/proc/loadavg")
	var sfs syscall.Statfs_t
	free := ""
	if syscall.Statfs(dir, &sfs) == nil {
		free = ", " + human(int64(sfs.Bavail)*int64(sfs.Bsize)) + " free"
	}
	watches, _ := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	queued, _ := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	return fmt.Sprintf("%s, %d CPUs (GOMAXPROCS %d), %s RAM; Linux %s; %s on %s (%s%s); "+
		"inotify max_user_watches %s, max_queued_events %s; load average at start %s",
		model, runtime.NumCPU(), runtime.GOMAXPROCS(0), human(mem), trim(kernel), runtime.Version(), dir, fsType(dir), free,
		trim(watches), trim(queued), strings.Join(strings.Fields(string(load))[:3], " "))
}

// fsType is the type of the filesystem holding dir, as stat -f names it.
func fsType(dir string) string {
	if out, err := exec.Command("stat", "-f", "-c", "%T", dir).Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return "?"
}

func trim(b []byte) string { return string(bytes.TrimSpace(b)) }

func loadAvg() string {
	load, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(load))[:3], " ")
}
