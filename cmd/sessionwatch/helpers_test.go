package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// binPath is the sessionwatch binary built once for the daemon tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sessionwatch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "sessionwatch")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build sessionwatch: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testEnv is a temp HOME with a Wave store and a config pointing only at temp dirs.
type testEnv struct {
	t      *testing.T
	home   string
	root   string // wave root
	state  string
	config string
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	home := t.TempDir()
	e := &testEnv{t: t, home: home, root: filepath.Join(home, ".wave", "projects"), state: filepath.Join(home, "state"), config: filepath.Join(home, "config.json")}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("SESSIONWATCH_CONFIG", e.config)
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"settle":"20ms","max_settle":"200ms",
	 "janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"wave","layout":"wave","root":%q}]}`, e.state, filepath.Join(home, "archive"), e.root)
	return e
}

func (e *testEnv) writeConfig(format string, args ...any) {
	e.t.Helper()
	if err := os.WriteFile(e.config, []byte(fmt.Sprintf(format, args...)), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// cli runs the command in-process and returns stdout, stderr and the exit code.
func (e *testEnv) cli(args ...string) (string, string, int) {
	e.t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// project makes a Wave project dir for workdir and returns its path.
func (e *testEnv) project(workdir string) string {
	e.t.Helper()
	d := filepath.Join(e.root, indexer.EncodeProject(workdir))
	if err := os.MkdirAll(d, 0o700); err != nil {
		e.t.Fatal(err)
	}
	return d
}

func header(workdir string) string {
	return fmt.Sprintf(`{"type":"metadata","workdir":%q,"createdAt":"2026-11-01T10:00:00Z"}`+"\n", workdir)
}

func message(ts time.Time, text string) string {
	return fmt.Sprintf(`{"timestamp":%q,"id":"m","role":"user","blocks":[{"type":"text","content":%q}]}`+"\n", ts.UTC().Format(time.RFC3339Nano), text)
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// daemonProc is a running `sessionwatch run`.
type daemonProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *syncWriter
	done   chan error
	state  string // its state dir
}

func (e *testEnv) startDaemon(args ...string) *daemonProc {
	e.t.Helper()
	d := e.launchDaemon(args...)
	waitFor(e.t, 20*time.Second, "daemon ready", d.ready)
	return d
}

// launchDaemon starts `sessionwatch run` and returns at once (not waiting
// until it is ready); it is stopped when the test ends.
func (e *testEnv) launchDaemon(args ...string) *daemonProc {
	e.t.Helper()
	cmd := exec.Command(binPath, append([]string{"run"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+e.home, "SESSIONWATCH_CONFIG="+e.config)
	errb := &syncWriter{b: &bytes.Buffer{}}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	d := &daemonProc{t: e.t, cmd: cmd, stderr: errb, done: make(chan error, 1), state: e.state}
	go func() { d.done <- cmd.Wait() }()
	e.t.Cleanup(func() { d.stop() })
	return d
}

// ready reports whether the status file names this daemon as running.
func (d *daemonProc) ready() bool {
	st, err := readStatusFile(d.state)
	return err == nil && st.PID == d.cmd.Process.Pid && st.Running
}

// stop sends SIGTERM and waits; it returns the exit code.
func (d *daemonProc) stop() int {
	if d.cmd.ProcessState != nil {
		return d.cmd.ProcessState.ExitCode()
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		d.t.Errorf("daemon did not stop on SIGTERM; stderr:\n%s", d.stderr)
	}
	return d.cmd.ProcessState.ExitCode()
}

// syncWriter lets the test read a subprocess's stderr while it is written.
type syncWriter struct {
	b  *bytes.Buffer
	mu sync.Mutex
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// catalogOf reads the catalog of a project, nil if there is none (yet).
func (e *testEnv) catalogOf(project string) *indexer.Catalog {
	c, err := indexer.ReadCatalog(filepath.Join(e.state, "index", "wave", indexer.ProjectKey(project), indexer.CatalogName))
	if err != nil {
		return nil
	}
	return c
}

func (c *testEnv) sessionIn(project, id string) *indexer.Session {
	cat := c.catalogOf(project)
	if cat == nil {
		return nil
	}
	for _, s := range cat.Sessions {
		if s.ID == id {
			return s
		}
	}
	return nil
}
