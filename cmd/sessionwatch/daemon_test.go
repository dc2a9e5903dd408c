package main

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionwatch/sessionwatch/indexer"
)

const idA = "aaaaaaaa-0000-4000-8000-00000000000a"

func TestDaemonAppendNewDirsDeleteAndShutdown(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/work/alpha")
	file := filepath.Join(dir, idA+".jsonl")
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	appendTo(t, file, header("/work/alpha")+message(base, "first prompt"))
	d := e.startDaemon()

	if s := e.sessionIn("/work/alpha", idA); s == nil || s.FirstPrompt != "first prompt" {
		t.Fatalf("initial index: session %+v", s)
	}
	// An append reaches the catalog and the native index.
	appendTo(t, file, message(base.Add(time.Minute), "second"))
	waitFor(t, 5*time.Second, "append in catalog", func() bool {
		s := e.sessionIn("/work/alpha", idA)
		return s != nil && s.MessageCount == 2
	})
	waitFor(t, 5*time.Second, "append in native index", func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, indexer.CatalogName))
		return strings.Contains(string(data), `"lastActiveAt": "2026-11-01T10:01:00.000Z"`)
	})

	// A new project dir with a file written at once (mkdir -p + write).
	deep := filepath.Join(e.root, "work-beta")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(deep, idA[:35]+"b.jsonl"), header("/work/beta")+message(base, "beta"))
	waitFor(t, 5*time.Second, "new dir's session", func() bool { return e.sessionIn("/work/beta", idA[:35]+"b") != nil })

	// Deleting a session removes it from the catalog.
	os.Remove(file)
	waitFor(t, 5*time.Second, "deleted session gone", func() bool { return e.catalogOf("/work/alpha") == nil })
	if _, err := os.Stat(filepath.Join(dir, indexer.CatalogName)); !os.IsNotExist(err) {
		t.Errorf("native index of the emptied project still exists: %v", err)
	}
	if code := d.stop(); code != 0 {
		t.Errorf("SIGTERM exit code = %d, want 0; stderr:\n%s", code, d.stderr)
	}
	if _, _, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check after shutdown = %d, want 0", code)
	}
}

func TestDaemonBurstOfNewDirs(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(e.root, 0o700)
	e.startDaemon()
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	want := map[string]string{}
	for i := 0; i < 20; i++ {
		wd := fmt.Sprintf("/burst/p%02d", i)
		dir := e.project(wd)
		for j := 0; j < 50; j++ {
			id := fmt.Sprintf("%08d-0000-4000-8000-%012d", i, j)
			appendTo(t, filepath.Join(dir, id+".jsonl"), header(wd)+message(base, id))
			want[id] = wd
		}
	}
	waitFor(t, 30*time.Second, "1,000 sessions indexed", func() bool {
		n := 0
		for i := 0; i < 20; i++ {
			if c := e.catalogOf(fmt.Sprintf("/burst/p%02d", i)); c != nil {
				n += len(c.Sessions)
			}
		}
		return n == len(want)
	})
	waitFor(t, 30*time.Second, "reindex --check clean", func() bool {
		_, _, code := e.cli("reindex", "--check")
		return code == 0
	})
}

func TestDaemonRebuildsCorruptNativeIndexAndDoesNotLoop(t *testing.T) {
	e := newEnv(t)
	dirA := e.project("/loop/a")
	fileA := filepath.Join(dirA, idA+".jsonl")
	appendTo(t, fileA, header("/loop/a")+message(time.Now(), "a"))
	e.startDaemon()
	native := filepath.Join(dirA, indexer.CatalogName)
	good, err := os.ReadFile(native)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(native, []byte("{broken"), 0o600)
	waitFor(t, 5*time.Second, "native index rebuilt", func() bool {
		got, _ := os.ReadFile(native)
		return string(got) == string(good)
	})

	// Watch A's directory ourselves, then bracket an interval with a sentinel
	// project the daemon must index: a rewrite loop on A would show up inside it.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(dirA)
	var mu sync.Mutex
	rewrites := 0
	go func() {
		for ev := range w.Events {
			if filepath.Base(ev.Name) == indexer.CatalogName && ev.Has(fsnotify.Create) {
				mu.Lock()
				rewrites++
				mu.Unlock()
			}
		}
	}()
	for i := 0; i < 3; i++ {
		wd := fmt.Sprintf("/loop/sentinel%d", i)
		appendTo(t, filepath.Join(e.project(wd), idA+".jsonl"), header(wd)+message(time.Now(), "s"))
		waitFor(t, 5*time.Second, "sentinel indexed", func() bool { return e.catalogOf(wd) != nil })
	}
	mu.Lock()
	defer mu.Unlock()
	if rewrites != 0 {
		t.Errorf("idle native index of A was rewritten %d times", rewrites)
	}
}

func TestDaemonRestartReadsOnlyAppendedBytes(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/big/one")
	file := filepath.Join(dir, idA+".jsonl")
	var b strings.Builder
	b.WriteString(header("/big/one"))
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for b.Len() < 5<<20 {
		b.WriteString(message(base, strings.Repeat("x", 2000)))
	}
	appendTo(t, file, b.String())
	d := e.startDaemon()
	if code := d.stop(); code != 0 {
		t.Fatalf("stop = %d", code)
	}
	line := message(base.Add(time.Hour), "after restart")
	appendTo(t, file, line)
	e.startDaemon()
	st, err := readStatusFile(e.state)
	if err != nil {
		t.Fatal(err)
	}
	// The indexer reads the appended line plus two 64-byte tail fingerprint
	// windows and the 1 KiB head fingerprint window.
	if got, max := st.Sources[0].BytesRead, int64(len(line)+128+1024); got > max {
		t.Errorf("restart read %d bytes of session files, want at most %d (the appended line)", got, max)
	}
	if s := e.sessionIn("/big/one", idA); s == nil || s.FirstPrompt == "" || s.LastActiveAt != "2026-11-01T11:00:00.000Z" {
		t.Errorf("after restart: %+v", s)
	}
}

func TestDaemonSecondInstanceRefused(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon()
	cmd := exec.Command(binPath, "run")
	cmd.Env = append(os.Environ(), "HOME="+e.home, "SESSIONWATCH_CONFIG="+e.config)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("second daemon exit = %d (%v), want 1; output:\n%s", code, err, out)
	}
	if want := fmt.Sprintf("pid %d", d.cmd.Process.Pid); !strings.Contains(string(out), want) {
		t.Errorf("second daemon said %q, want it to name %q", out, want)
	}
}

// TestDaemonInterruptExitsZero: SIGINT, as SIGTERM, shuts the daemon down
// cleanly: what was appended before is in the catalog, the status file says it
// stopped, the exit code is 0, and the state dir is free for the next daemon.
func TestDaemonInterruptExitsZero(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/sig/int")
	file := filepath.Join(dir, idA+".jsonl")
	appendTo(t, file, header("/sig/int")+message(time.Now(), "before"))
	d := e.startDaemon()
	appendTo(t, file, message(time.Now(), "appended"))
	waitFor(t, 10*time.Second, "the append indexed", func() bool {
		s := e.sessionIn("/sig/int", idA)
		return s != nil && s.MessageCount == 2
	})
	d.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGINT; stderr:\n%s", d.stderr)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after SIGINT = %d, want 0; stderr:\n%s", code, d.stderr)
	}
	if st, err := readStatusFile(e.state); err != nil || st.Running {
		t.Errorf("status file after SIGINT = %+v, %v; want not running", st, err)
	}
	e.startDaemon().stop()
}

// TestDaemonModel runs random store operations against the live daemon (real
// fsnotify) and checks that once writes stop, reindex --check passes.
func TestDaemonModel(t *testing.T) {
	seeds := []int64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t)
			os.MkdirAll(e.root, 0o700)
			e.startDaemon()
			rng := rand.New(rand.NewSource(seed))
			n := 0
			line := func() string {
				n++
				if rng.Intn(7) == 0 {
					return "junk\n"
				}
				return message(time.Date(2026, 11, 1, 0, 0, n, 0, time.UTC), fmt.Sprint("p", n))
			}
			for step := 0; step < 300; step++ {
				dirs, _ := filepath.Glob(filepath.Join(e.root, "*"))
				files, _ := filepath.Glob(filepath.Join(e.root, "*", "*.jsonl"))
				switch op := rng.Intn(12); {
				case op == 0 || len(dirs) == 0:
					os.MkdirAll(filepath.Join(e.root, fmt.Sprintf("m-p%d", rng.Intn(6))), 0o700)
				case op <= 2 || len(files) == 0:
					d := dirs[rng.Intn(len(dirs))]
					id := fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Intn(1<<30), rng.Intn(1<<30))
					appendTo(t, filepath.Join(d, id+".jsonl"), header("/m/"+filepath.Base(d))+line())
				case op <= 6:
					appendTo(t, files[rng.Intn(len(files))], line())
				case op == 7:
					l := line()
					appendTo(t, files[rng.Intn(len(files))], l[:rng.Intn(len(l))])
				case op == 8:
					p := files[rng.Intn(len(files))]
					if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
						os.Truncate(p, rng.Int63n(fi.Size()))
					}
				case op == 9:
					p := files[rng.Intn(len(files))]
					tmp := p + ".tmp"
					os.WriteFile(tmp, []byte(line()+line()), 0o600)
					os.Rename(tmp, p)
				case op == 10:
					os.Remove(files[rng.Intn(len(files))])
				default:
					os.RemoveAll(dirs[rng.Intn(len(dirs))])
				}
			}
			waitFor(t, 30*time.Second, "catalog equals a rebuild", func() bool {
				_, _, code := e.cli("reindex", "--check")
				return code == 0
			})
		})
	}
}

func TestDaemonRemovesStaleStateTempFiles(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(e.state, 0o700)
	stale := filepath.Join(e.state, indexer.TempPrefix+"status.json-123")
	os.WriteFile(stale, []byte("{"), 0o600)
	e.startDaemon()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("temp file a killed daemon left in the state dir is still there (%v)", err)
	}
}

// A restart over a store that did not change rewrites no catalog, resume file or
// native index (their inodes and mtimes stay), reads no session byte, and still
// counts every session; a native index broken while no daemon ran is put right
// once the daemon is ready (it compares every output after its first pass).
func TestDaemonRestartOverUnchangedStoreWritesNothing(t *testing.T) {
	e := newEnv(t)
	for _, wd := range []string{"/same/a", "/same/b"} {
		appendTo(t, filepath.Join(e.project(wd), idA+".jsonl"), header(wd)+message(time.Now(), "hello "+wd))
	}
	d := e.startDaemon()
	if code := d.stop(); code != 0 {
		t.Fatalf("stop = %d", code)
	}
	type ident struct {
		ino   uint64
		mtime time.Time
	}
	outputs := map[string]ident{}
	for _, pat := range []string{filepath.Join(e.state, "index", "wave", "*", "*"), filepath.Join(e.root, "*", indexer.CatalogName)} {
		paths, _ := filepath.Glob(pat)
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			outputs[p] = ident{fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime()}
		}
	}
	if len(outputs) != 6 {
		t.Fatalf("outputs after the first run: %v, want 2 catalogs, 2 resume files and 2 native indexes", outputs)
	}
	broken := filepath.Join(e.project("/same/b"), indexer.CatalogName)
	good, _ := os.ReadFile(broken)
	os.WriteFile(broken, []byte("{broken"), 0o600)
	delete(outputs, broken)

	e.startDaemon()
	st, err := readStatusFile(e.state)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Sources[0].BytesRead; got != 0 {
		t.Errorf("restart over an unchanged store read %d bytes of session files, want 0", got)
	}
	if got := st.Sources[0].Sessions; got != 2 {
		t.Errorf("restart: status counts %d sessions, want 2", got)
	}
	waitFor(t, 10*time.Second, "broken native index put right", func() bool {
		got, _ := os.ReadFile(broken)
		return string(got) == string(good)
	})
	for p, want := range outputs {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := (ident{fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime()}); got != want {
			t.Errorf("%s was rewritten by a restart over an unchanged store", p)
		}
	}
}
