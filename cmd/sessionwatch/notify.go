package main

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// notifier speaks systemd's sd_notify protocol: one unixgram datagram per state
// change to $NOTIFY_SOCKET (a path, or an abstract name starting with '@'). Without
// the variable every call is a no-op, so the daemon runs the same outside systemd.
type notifier struct {
	addr *net.UnixAddr
}

func newNotifier() *notifier {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return &notifier{}
	}
	return &notifier{addr: &net.UnixAddr{Name: sock, Net: "unixgram"}}
}

// send delivers one state string, e.g. "READY=1" or "STATUS=indexing".
func (n *notifier) send(state string) error {
	if n.addr == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

// watchdogInterval is how often to send WATCHDOG=1: half of $WATCHDOG_USEC, or 0 when
// systemd asked for no watchdog (or asked another pid).
func watchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, sent with RELOADING=1.
func monotonicUsec() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Sec*1e6 + ts.Nsec/1e3
}
