package main

import (
	"net"
	"os"
	"strconv"
	"time"
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
