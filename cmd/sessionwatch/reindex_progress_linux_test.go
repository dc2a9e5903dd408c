package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: what is written to tty is read from
// master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no /dev/ptmx:", err)
	}
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		m.Close()
		t.Skip("unlockpt:", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		m.Close()
		t.Skip("ptsname:", errno)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skip("open pts:", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestReindexProgressOnATerminal: reindex reports its progress (one line per
// source) on stderr when that is a terminal, and nothing there otherwise.
func TestReindexProgressOnATerminal(t *testing.T) {
	e := newEnv(t)
	appendTo(t, e.project("/prog/a")+"/"+idA+".jsonl", header("/prog/a")+message(time.Now(), "a"))
	master, tty := openPTY(t)
	// Read the terminal while reindex writes to it (a full pty buffer would
	// block it), until EIO once the terminal side is closed and drained, or
	// the deadline: a read that never ends fails the test instead of hanging.
	if err := master.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Skip("no deadline on the pty:", err)
	}
	read := make(chan []byte, 1)
	go func() {
		var got []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				read <- got
				return
			}
		}
	}()
	var out bytes.Buffer
	code := exitCode(run(context.Background(), []string{"reindex"}, &out, tty), tty)
	tty.Close()
	got := <-read
	if code != 0 {
		t.Fatalf("reindex on a terminal = %d", code)
	}
	if !strings.Contains(string(got), "[1/1] wave: scanning ") {
		t.Errorf("reindex on a terminal printed no progress on stderr: %q", got)
	}
	_, errs, code := e.cli("reindex")
	if code != 0 || errs != "" {
		t.Errorf("reindex to a pipe = %d, stderr %q; want no progress", code, errs)
	}
}
