package watcher

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
)

// errWatchLimit is what the MaxWatches test seam returns: the errno the kernel gives
// when fs.inotify.max_user_watches is exhausted.
var errWatchLimit error = syscall.ENOSPC

// Limit kinds returned by limitKind.
const (
	limitWatches   = "watches"
	limitInstances = "instances"
)

// limitKind classifies err as a kernel resource limit: "watches" for ENOSPC (which
// inotify_add_watch returns when fs.inotify.max_user_watches is exhausted, not when a
// disk is full), "instances" for EMFILE/ENFILE (fs.inotify.max_user_instances or the
// open-file limit), "" for anything else.
func limitKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ENOSPC):
		return limitWatches
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return limitInstances
	}
	return ""
}

// limitAdvice names the limit behind kind and how to raise it. It never repeats the
// errno text: "no space left on device" sends users looking at their disks.
func limitAdvice(kind string) (limit, hint string) {
	if runtime.GOOS != "linux" {
		return "open file limit", "raise the open file limit (ulimit -n; on macOS also kern.maxfiles and kern.maxfilesperproc)"
	}
	if kind == limitInstances {
		return "inotify instance limit (fs.inotify.max_user_instances) or open file limit",
			"raise it: sudo sysctl fs.inotify.max_user_instances=1024 (persist it in /etc/sysctl.d/), or raise ulimit -n"
	}
	return "inotify watch limit (fs.inotify.max_user_watches)",
		"raise it: sudo sysctl fs.inotify.max_user_watches=524288 (persist it in /etc/sysctl.d/)"
}

// LimitAdvice names the kernel limit that a Stats.WatchError reports, and how to
// raise it (for doctor, which reads the error from the daemon's status file).
func LimitAdvice(watchError string) (limit, hint string) {
	if strings.Contains(watchError, "max_user_instances") {
		return limitAdvice(limitInstances)
	}
	return limitAdvice(limitWatches)
}
