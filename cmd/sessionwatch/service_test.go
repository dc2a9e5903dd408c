package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// notifySocket binds a unixgram socket and collects every datagram sent to it.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	// Unix socket paths are short: use a short temp dir.
	dir, err := os.MkdirTemp("", "swn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ns := &notifySocket{path: filepath.Join(dir, "n.sock")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ns.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			ns.mu.Lock()
			ns.msgs = append(ns.msgs, string(buf[:n]))
			ns.mu.Unlock()
		}
	}()
	return ns
}

func (ns *notifySocket) count(prefix string) int {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	n := 0
	for _, m := range ns.msgs {
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
	}
	return n
}

func TestDaemonNotifyAndReload(t *testing.T) {
	e := newEnv(t)
	ns := newNotifySocket(t)
	dir := e.project("/svc/a")
	appendTo(t, filepath.Join(dir, idA+".jsonl"), header("/svc/a")+message(time.Now(), "a"))
	cmd := exec.Command(binPath, "run")
	cmd.Env = append(os.Environ(), "HOME="+e.home, "SESSIONWATCH_CONFIG="+e.config, "NOTIFY_SOCKET="+ns.path, "WATCHDOG_USEC=100000")
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	waitFor(t, 20*time.Second, "READY=1", func() bool { return ns.count("READY=1") == 1 })
	if ns.count("STATUS=watching 1 sources: 1 sessions") == 0 {
		t.Errorf("no STATUS= line with a summary; got %q", ns.msgs)
	}
	waitFor(t, 5*time.Second, "watchdog pings", func() bool { return ns.count("WATCHDOG=1") >= 3 })

	// SIGHUP with a second source added: its sessions get indexed.
	root2 := filepath.Join(e.home, "wave2")
	p2 := filepath.Join(root2, "svc-b")
	os.MkdirAll(p2, 0o700)
	appendTo(t, filepath.Join(p2, idA+".jsonl"), header("/svc/b")+message(time.Now(), "b"))
	e.writeConfig(`{"state_dir":%q,"settle":"20ms","janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"wave","layout":"wave","root":%q},{"name":"wave2","layout":"wave","root":%q}]}`, e.state, e.root, root2)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, "RELOADING=1", func() bool { return ns.count("RELOADING=1") == 1 })
	waitFor(t, 10*time.Second, "second source indexed", func() bool {
		_, err := os.Stat(filepath.Join(e.state, "index", "wave2"))
		return err == nil
	})
	// A bad config on reload is rejected; the old one keeps working.
	os.WriteFile(e.config, []byte(`{"settle":"soon","sources":[]}`), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, "rejection logged", func() bool { return strings.Contains(stderr.String(), "config reload rejected") })
	if !strings.Contains(stderr.String(), "settle") {
		t.Errorf("rejection does not name the bad field:\n%s", stderr.String())
	}
	appendTo(t, filepath.Join(p2, idA+".jsonl"), message(time.Now(), "still indexed"))
	waitFor(t, 10*time.Second, "append after rejected reload", func() bool {
		data, _ := os.ReadFile(filepath.Join(p2, "sessions-index.json"))
		return strings.Contains(string(data), "svc/b")
	})

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0\n%s", code, stderr.String())
	}
	if ns.count("STOPPING=1") != 1 {
		t.Errorf("STOPPING=1 sent %d times, want 1", ns.count("STOPPING=1"))
	}
}

// syncBuf is a goroutine-safe string buffer for a subprocess's stderr.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStatusRunningAndNot(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/st/a")
	appendTo(t, filepath.Join(dir, idA+".jsonl"), header("/st/a")+message(time.Now(), "a"))

	out, _, code := e.cli("status", "--json")
	var st statusOut
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Running || st.PID != 0 {
		t.Fatalf("status --json with no daemon = %d %s", code, out)
	}
	out, _, _ = e.cli("status")
	if !strings.HasPrefix(out, "sessionwatch: not running") {
		t.Errorf("status = %q, want not running", out)
	}

	d := e.startDaemon()
	out, _, code = e.cli("status", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json = %d %s", code, out)
	}
	if !st.Running || st.PID != d.cmd.Process.Pid || len(st.Sources) != 1 {
		t.Fatalf("status while running = %+v", st)
	}
	s := st.Sources[0]
	if s.Name != "wave" || !s.Present || s.Sessions != 1 || s.Projects != 1 || s.Watches != 2 || s.Rescans < 1 || s.Bytes == 0 {
		t.Errorf("source status = %+v, want 1 session in 1 project, 2 watches", s)
	}
	var raw map[string]any
	json.Unmarshal([]byte(out), &raw)
	for _, k := range []string{"running", "pid", "uptime", "sources", "janitor", "warnings", "lastError"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("status --json lacks %q", k)
		}
	}
	out, _, _ = e.cli("status")
	if !strings.Contains(out, fmt.Sprintf("running (pid %d", d.cmd.Process.Pid)) || !strings.Contains(out, "wave") {
		t.Errorf("status = %q", out)
	}
}

func TestServiceFiles(t *testing.T) {
	e := newEnv(t)
	bin := filepath.Join(e.home, "bin", "sessionwatch")
	out, _, code := e.cli("service", "print", "--binary", bin, "--launchd=false")
	if code != 0 {
		t.Fatalf("service print = %d", code)
	}
	for _, want := range []string{"Type=notify", "ExecStart=" + bin + " run", "Restart=on-failure", "WatchdogSec=", "TimeoutStopSec=30", "WantedBy=default.target"} {
		if !strings.Contains(out, want) {
			t.Errorf("unit lacks %q:\n%s", want, out)
		}
	}
	repo, err := os.ReadFile("../../sessionwatch.service")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(unitTemplate, "%h/.local/bin/sessionwatch"); string(repo) != want {
		t.Errorf("sessionwatch.service differs from the unit template; regenerate it:\n%s", want)
	}
	out, _, code = e.cli("service", "install", "--binary", bin, "--launchd=false")
	unit := filepath.Join(e.home, ".config", "systemd", "user", "sessionwatch.service")
	if data, err := os.ReadFile(unit); code != 0 || err != nil || !strings.Contains(string(data), "ExecStart="+bin+" run") {
		t.Fatalf("service install = %d %s (%v)", code, out, err)
	}
	if !strings.Contains(out, "systemctl --user daemon-reload && systemctl --user enable --now sessionwatch") || !strings.Contains(out, "loginctl enable-linger") {
		t.Errorf("install output lacks the systemctl/loginctl lines:\n%s", out)
	}
	if _, _, code := e.cli("service", "uninstall", "--launchd=false"); code != 0 {
		t.Errorf("uninstall = %d", code)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("unit still there after uninstall")
	}
	out, _, _ = e.cli("service", "print", "--binary", bin, "--launchd")
	for _, want := range []string{"<key>KeepAlive</key>", "<key>SuccessfulExit</key>", "<string>" + bin + "</string>", "sessionwatch.log"} {
		if !strings.Contains(out, want) {
			t.Errorf("launchd plist lacks %q", want)
		}
	}
}

func TestDoctorWatchBudget(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 5; i++ {
		e.project(fmt.Sprintf("/doc/p%d", i))
	}
	fake := t.TempDir()
	old := inotifyDir
	inotifyDir = fake
	t.Cleanup(func() { inotifyDir = old })
	os.WriteFile(filepath.Join(fake, "max_user_instances"), []byte("1000000\n"), 0o600)

	os.WriteFile(filepath.Join(fake, "max_user_watches"), []byte("100000000\n"), 0o600)
	out, _, code := e.cli("doctor")
	if code != 0 || !strings.Contains(out, "inotify watches: 6 needed") {
		t.Errorf("doctor with a big budget = %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(fake, "max_user_watches"), []byte("3\n"), 0o600)
	out, _, code = e.cli("doctor")
	if code != 1 || !strings.Contains(out, "sysctl fs.inotify.max_user_watches=") || !strings.Contains(out, "6 directories to watch") {
		t.Errorf("doctor with a budget of 3 = %d\n%s", code, out)
	}
	e.writeConfig(`{"sources":[{"layout":"wave","bogus":1}]}`)
	out, _, code = e.cli("doctor")
	if code != 1 || !strings.Contains(out, "bogus") {
		t.Errorf("doctor with a bad config = %d\n%s", code, out)
	}
}
