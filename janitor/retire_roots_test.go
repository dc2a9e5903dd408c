package janitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The retirement protocol opens each session directory inside the source root
// and checks it again before anything is removed (openDirIn, stillAt). These
// tests run it on the shapes a store really has, so that a check too strict
// cannot make a legitimate retirement fail forever: a configured root that is
// a symlink (to another disk) given with a trailing slash or not cleaned, a
// session directly in the root that is a directory (Mogzi), Claude's companion
// directory and recording, Codex's date directories, and an archive on another
// file system than the store.

// storeCase is one store shape: the layout, how the root is configured (a
// symlink, a trailing slash…), and the session files a due session consists of.
type storeCase struct {
	name   string
	layout string
	// mk writes one session last active long ago under real (the root's real
	// directory) and returns its id and every file of it (relative to real).
	mk func(t *testing.T, real string, old time.Time) (id string, files []string)
	// configured is the root as the user writes it, given the real directory
	// and the test's temp dir.
	configured func(t *testing.T, dir, real string) string
}

func writeOld(t *testing.T, path, content string, old time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

var (
	// plain: the real directory, as is.
	plainRoot = func(t *testing.T, dir, real string) string { return real }
	// symlinkedRoot: ~/.claude/projects → another disk, written with a
	// trailing slash.
	symlinkedRoot = func(t *testing.T, dir, real string) string {
		link := filepath.Join(dir, "home-link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		return link + "/"
	}
	// uncleanRoot: a root written with "." and ".." and a trailing slash.
	uncleanRoot = func(t *testing.T, dir, real string) string {
		return filepath.Dir(real) + "/./x/../" + filepath.Base(real) + "/"
	}
)

func waveCase(name string, configured func(t *testing.T, dir, real string) string) storeCase {
	return storeCase{name: name, layout: "wave", configured: configured,
		mk: func(t *testing.T, real string, old time.Time) (string, []string) {
			const id = "aaaaaaaa-1111-4000-8000-000000000001"
			rel := filepath.Join(indexer.EncodeProject("/w/roots"), id+".jsonl")
			writeOld(t, filepath.Join(real, rel), fmt.Sprintf(`{"type":"metadata","workdir":"/w/roots","createdAt":%q}`+"\n", old.UTC().Format(time.RFC3339))+
				fmt.Sprintf(`{"timestamp":%q,"id":"m1","role":"user","blocks":[{"type":"text","content":"hello"}]}`+"\n", old.UTC().Format(time.RFC3339Nano)), old)
			return id, []string{rel}
		}}
}

// claudeCase: a main session with its companions, the <uuid>/ directory
// (tool results) and the <uuid>.cast recording, retired and restored with it.
func claudeCase(name string, configured func(t *testing.T, dir, real string) string) storeCase {
	return storeCase{name: name, layout: "claude", configured: configured,
		mk: func(t *testing.T, real string, old time.Time) (string, []string) {
			const id = "aaaaaaaa-2222-4000-8000-000000000001"
			proj := "-w-claude"
			main := filepath.Join(proj, id+".jsonl")
			tool := filepath.Join(proj, id, "tool-results", "r1.txt")
			cast := filepath.Join(proj, id+".cast")
			writeOld(t, filepath.Join(real, main), claudeLine(id, "", old), old)
			writeOld(t, filepath.Join(real, tool), "tool output\n", old)
			writeOld(t, filepath.Join(real, cast), `{"version":2}`+"\n", old)
			for _, d := range []string{filepath.Join(proj, id, "tool-results"), filepath.Join(proj, id)} {
				os.Chtimes(filepath.Join(real, d), old, old)
			}
			return id, []string{main, tool, cast}
		}}
}

// claudeSubagentCase: a subagent transcript due on its own (its parent is
// active), three directories below the root: <proj>/<uuid>/subagents/.
func claudeSubagentCase(name string, configured func(t *testing.T, dir, real string) string) storeCase {
	return storeCase{name: name, layout: "claude", configured: configured,
		mk: func(t *testing.T, real string, old time.Time) (string, []string) {
			const id = "aaaaaaaa-2222-4000-8000-000000000002"
			proj := "-w-claude"
			now := time.Now()
			writeOld(t, filepath.Join(real, proj, id+".jsonl"), claudeLine(id, "", now), now)
			sub := filepath.Join(proj, id, "subagents", "agent-a1b2c3.jsonl")
			writeOld(t, filepath.Join(real, sub), claudeLine(id, "a1b2c3", old), old)
			return "a1b2c3", []string{sub}
		}}
}

func claudeLine(id, agent string, ts time.Time) string {
	extra := ""
	if agent != "" {
		extra = fmt.Sprintf(`"agentId":%q,"isSidechain":true,`, agent)
	}
	return fmt.Sprintf(`{"type":"user","uuid":"u1","sessionId":%q,%s"timestamp":%q,"cwd":"/w/claude","message":{"role":"user","content":"hi"}}`+"\n", id, extra, ts.UTC().Format(time.RFC3339))
}

func codexCase(name string, configured func(t *testing.T, dir, real string) string) storeCase {
	return storeCase{name: name, layout: "codex", configured: configured,
		mk: func(t *testing.T, real string, old time.Time) (string, []string) {
			const id = "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"
			day := old.UTC()
			rel := filepath.Join(day.Format("2006"), day.Format("01"), day.Format("02"), "rollout-"+day.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
			ts := day.Format(time.RFC3339Nano)
			writeOld(t, filepath.Join(real, rel),
				fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"timestamp":%q,"cwd":"/w/codex","originator":"codex_cli_rs","cli_version":"0.98.0","source":"cli","model_provider":"openai"}}`+"\n", ts, id, ts)+
					fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"user_message","message":"fix it"}}`+"\n", ts), old)
			return id, []string{rel}
		}}
}

func mogziCase(name string, configured func(t *testing.T, dir, real string) string) storeCase {
	return storeCase{name: name, layout: "mogzi", configured: configured,
		mk: func(t *testing.T, real string, old time.Time) (string, []string) {
			const id = "0197a1b2-3333-7000-8000-000000000001"
			js := filepath.Join(id, "session.json")
			pic := filepath.Join(id, "attachments", "pic.png")
			writeOld(t, filepath.Join(real, js), fmt.Sprintf(`{"id":%q,"name":"t","createdAt":%q,"lastModifiedAt":%q,"history":[{"role":"user","content":"hi"}]}`,
				id, old.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339)), old)
			writeOld(t, filepath.Join(real, pic), "\x89PNG data", old)
			os.Chtimes(filepath.Join(real, id, "attachments"), old, old)
			os.Chtimes(filepath.Join(real, id), old, old)
			return id, []string{js, pic}
		}}
}

// fileState is a session file's mode, mtime and content.
func fileState(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		return "missing"
	}
	data, _ := os.ReadFile(path)
	return fmt.Sprintf("%v %d %q", fi.Mode(), fi.ModTime().UnixNano(), data)
}

// TestRetireRootShapes: for each store shape, a pass archives the due session
// (nothing left under a staging name, one archive), restore brings every
// file back byte for byte with its mode and mtime, and `delete --permanent`
// then removes it (no archive), each journaled and closed.
func TestRetireRootShapes(t *testing.T) {
	cases := []storeCase{
		waveCase("wave", plainRoot),
		waveCase("wave symlinked root with trailing slash", symlinkedRoot),
		waveCase("wave unclean root", uncleanRoot),
		claudeCase("claude companions", plainRoot),
		claudeCase("claude symlinked root", symlinkedRoot),
		claudeSubagentCase("claude subagent", plainRoot),
		claudeSubagentCase("claude subagent symlinked root", symlinkedRoot),
		codexCase("codex date dirs", plainRoot),
		codexCase("codex symlinked root", symlinkedRoot),
		mogziCase("mogzi session dir in the root", plainRoot),
		mogziCase("mogzi symlinked root", symlinkedRoot),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			real := filepath.Join(dir, "disk2", "store")
			if err := os.MkdirAll(real, 0o700); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-40 * day)
			id, files := tc.mk(t, real, old)
			before := map[string]string{}
			for _, f := range files {
				before[f] = fileState(t, filepath.Join(real, f))
			}
			state, archive := filepath.Join(dir, "state"), filepath.Join(dir, "archive")
			cfg, err := parseConfig(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off","active_grace":"off"},"sources":[{"name":"s","layout":%q,"root":%q,"retention":"30d"}]}`,
				state, archive, tc.layout, tc.configured(t, dir, real)))
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{t: t, dir: dir, root: real, state: state, archive: archive, cfg: cfg, logs: &syncBuffer{}}
			f.index()
			j := f.janitor()
			checkRoundTrip(t, f, j, id, real, files, before)
		})
	}
}

// checkRoundTrip archives the session id by a pass, restores it, deletes it
// permanently, checking the store, the archive and the journal at each step.
func checkRoundTrip(t *testing.T, f *fixture, j *Janitor, id, real string, files []string, before map[string]string) {
	t.Helper()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	archived := ids(rep.Actions, KindArchive)
	if fmt.Sprint(archived) != fmt.Sprint([]string{id}) {
		t.Fatalf("pass archived %v, want %s: %+v", archived, id, rep.Actions)
	}
	for _, p := range files {
		if exists(filepath.Join(real, p)) {
			t.Errorf("%s still in the store after the pass", p)
		}
	}
	noTemps(t, real, f.archive)
	ars, _ := ListArchives(f.archive, nil)
	if len(ars) != len(archived) {
		t.Fatalf("%d archives after the passes, want %d", len(ars), len(archived))
	}
	for _, ar := range ars {
		if _, err := j.Restore(context.Background(), ar); err != nil {
			t.Fatalf("Restore %s: %v", ar.Path, err)
		}
	}
	for _, p := range files {
		if got := fileState(t, filepath.Join(real, p)); got != before[p] {
			t.Errorf("%s after restore = %s, want %s", p, got, before[p])
		}
	}
	if left, _ := ListArchives(f.archive, nil); len(left) != 0 {
		t.Errorf("%d archives left after restore", len(left))
	}
	f.index()
	es, _ := indexer.ReadCatalogs(f.state, nil, nil)
	en, err := indexer.ResolveID(es, id)
	if err != nil {
		t.Fatalf("restored session not in the catalog: %v", err)
	}
	j2 := f.janitor()
	rep, err = j2.Delete(context.Background(), en, DeleteOptions{Permanent: true})
	if err != nil || rep.Deleted != 1 {
		t.Fatalf("delete --permanent = %+v, %v", rep.Actions, err)
	}
	for _, p := range files {
		if exists(filepath.Join(real, p)) {
			t.Errorf("%s still in the store after delete --permanent", p)
		}
	}
	if left, _ := ListArchives(f.archive, nil); len(left) != 0 {
		t.Errorf("delete --permanent wrote %d archives", len(left))
	}
	noTemps(t, real, f.archive)
	if open, _ := openIntents(filepath.Join(f.state, JournalName)); len(open) != 0 {
		t.Errorf("journal leaves %d intents open: %+v", len(open), open)
	}
	js, _ := ReadJournal(filepath.Join(f.state, JournalName))
	n := map[string]int{}
	for _, e := range js {
		if e.Error != "" {
			t.Errorf("journal error line: %+v", e)
		}
		n[e.Action]++
	}
	if n[KindArchive] != len(archived) || n[KindRestore] != len(archived) || n[KindDelete] != 1 {
		t.Errorf("journal completions %v, want %d archive, %d restore, 1 delete", n, len(archived), len(archived))
	}
}

// TestRetireArchiveOnAnotherFileSystem: the archive directory on another file
// system than the store (tmpfs /dev/shm against the temp dir's disk): the
// archive is written from the held files, never renamed across, so the
// retirement and the restore work as on one disk.
func TestRetireArchiveOnAnotherFileSystem(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "revtrust-archive-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	dir := t.TempDir()
	if devOfPath(t, shm) == devOfPath(t, dir) {
		t.Skip("/dev/shm is on the temp dir's file system")
	}
	for _, tc := range []storeCase{waveCase("wave", plainRoot), mogziCase("mogzi", plainRoot)} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			real := filepath.Join(dir, "store")
			os.MkdirAll(real, 0o700)
			old := time.Now().Add(-40 * day)
			id, files := tc.mk(t, real, old)
			before := map[string]string{}
			for _, f := range files {
				before[f] = fileState(t, filepath.Join(real, f))
			}
			state, archive := filepath.Join(dir, "state"), filepath.Join(shm, tc.name)
			cfg, err := parseConfig(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off","active_grace":"off"},"sources":[{"name":"s","layout":%q,"root":%q,"retention":"30d"}]}`,
				state, archive, tc.layout, real))
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{t: t, dir: dir, root: real, state: state, archive: archive, cfg: cfg, logs: &syncBuffer{}}
			f.index()
			checkRoundTrip(t, f, f.janitor(), id, real, files, before)
		})
	}
}

func devOfPath(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return devOf(fi)
}

// TestSessionInRootWhoseRootIsSwapped (commit 283da4a): a session directly in
// the root (Mogzi's <root>/<uuid>/) whose root is moved away after the intent
// and replaced by a symlink, either to another directory holding a directory
// of the same name, or to the moved root itself (the tree seen through the
// symlink is then the very one held). The directory the retirement holds is
// the root, no longer the directory at the root's path: as for a root that
// was a symlink when the pass began, nothing is archived or removed through
// it. The session is put back where it is, the directory outside is not
// touched, and the rollback is journaled.
func TestSessionInRootWhoseRootIsSwapped(t *testing.T) {
	for _, action := range []string{"archive", "delete"} {
		for _, to := range []string{"elsewhere", "the moved root"} {
			t.Run(action+" to "+to, func(t *testing.T) {
				dir := t.TempDir()
				root := filepath.Join(dir, "chats")
				os.MkdirAll(root, 0o700)
				old := time.Now().Add(-40 * day)
				id, files := mogziCase("", plainRoot).mk(t, root, old)
				state, archive := filepath.Join(dir, "state"), filepath.Join(dir, "archive")
				cfg, err := parseConfig(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off","active_grace":"off"},"sources":[{"name":"mogzi","layout":"mogzi","root":%q,"retention":"30d","action":%q}]}`,
					state, archive, root, action))
				if err != nil {
					t.Fatal(err)
				}
				f := &fixture{t: t, dir: dir, root: root, state: state, archive: archive, cfg: cfg, logs: &syncBuffer{}}
				f.index()
				moved := filepath.Join(dir, "chats.moved")
				target := moved
				if to == "elsewhere" {
					target = filepath.Join(dir, "elsewhere")
					writeOld(t, filepath.Join(target, id, "session.json"), "not the session", old)
				}
				outside := hashTree(t, filepath.Join(dir, "elsewhere"))
				rep, err := passSwappingAtIntent(t, f.janitor(), func() {
					if err := os.Rename(root, moved); err != nil {
						t.Error(err)
					}
					if err := os.Symlink(target, root); err != nil {
						t.Error(err)
					}
				})
				if got := ids(rep.Actions, KindSkipInUse); fmt.Sprint(got) != fmt.Sprint([]string{id}) {
					t.Errorf("pass: kept %v, want %s kept (its root moved); actions %+v, errors %v", got, id, rep.Actions, rep.Errors)
				}
				if ars, _ := ListArchives(archive, nil); len(ars) != 0 {
					t.Errorf("%d archives written while the root was a symlink", len(ars))
				}
				for _, p := range files {
					if !exists(filepath.Join(moved, p)) {
						t.Errorf("%s is gone from the moved root", p)
					}
				}
				noTemps(t, moved, target)
				if hashTree(t, filepath.Join(dir, "elsewhere")) != outside {
					t.Errorf("the directory the symlinked root points at changed")
				}
				js, _ := ReadJournalAll(filepath.Join(state, JournalName))
				var rolled bool
				for _, e := range js {
					rolled = rolled || e.Phase == PhaseRollback && e.ID == id
				}
				if open, _ := openIntents(filepath.Join(state, JournalName)); len(open) != 0 || !rolled {
					t.Errorf("journal: %d intents open, rollback line %v", len(open), rolled)
				}
			})
		}
	}
}

// TestRetirementsLeakNoDescriptor: many retirements, some of them kept (a
// file held open elsewhere, a file changed after the intent: put back), leave
// no descriptor open: the directories held (os.Root) and the files leased are
// closed on every path.
func TestRetirementsLeakNoDescriptor(t *testing.T) {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
	const n = 300
	var paths []string
	for i := 0; i < n; i++ {
		paths = append(paths, f.session(fmt.Sprintf("/w/fd-%d", i%25), fmt.Sprintf("dddddddd-0000-4000-8000-%012d", i), 5*day))
	}
	holdOpen(t, paths[0])
	f.index()
	changed := 0
	crashHook = func(step string) bool {
		// Every tenth retirement finds its file touched once staged (its
		// mtime, not an open: no lease breaks): it is put back.
		if step == "staged" {
			changed++
			if changed%10 == 0 {
				staged, _ := filepath.Glob(filepath.Join(f.root, "*", indexer.RetirePrefix+"*"))
				for _, s := range staged {
					now := time.Now()
					os.Chtimes(s, now, now)
				}
			}
		}
		return false
	}
	defer func() { crashHook = nil }()
	fds := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	// No garbage collection meanwhile: a leaked *os.Root or *os.File would
	// otherwise be closed by its cleanup and go unseen.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	j := f.janitor()
	base := fds()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	crashHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if kept := len(ids(rep.Actions, KindSkipInUse)); rep.Archived+kept != n || kept < 1+(n-1)/10 || len(rep.Errors) > 0 {
		t.Errorf("archived %d, kept %d of %d (want one held open and every tenth put back), errors %v", rep.Archived, kept, n, rep.Errors)
	}
	if got := fds(); got > base+2 {
		t.Errorf("%d descriptors open after %d retirements, %d before", got, n, base)
	}
}

// TestRootTurnedSymlinkDuringRetirement: TestRootTurnedSymlinkIsNotRetiredThrough
// with the store moved (and a symlink left in its place, to the moved store)
// after the pass began, between the intent and the renames. A session in a
// project directory is then held through a directory reached from the root
// path by a symlink: as for a session directly in the root (283da4a) and as
// when the pass began so, nothing is archived or removed; the session is put
// back in the moved store and the rollback journaled.
func TestRootTurnedSymlinkDuringRetirement(t *testing.T) {
	for _, action := range []string{"archive", "delete"} {
		t.Run(action, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d","action":"`+action+`"`)
			const id = "dddddddd-0000-4000-8000-000000000004"
			path := f.session("/w/moved", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			f.index()
			moved := f.root + ".real"
			rep, _ := passSwappingAtIntent(t, f.janitor(), func() {
				if err := os.Rename(f.root, moved); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(moved, f.root); err != nil {
					t.Error(err)
				}
			})
			if rep.Retired != 0 || fmt.Sprint(ids(rep.Actions, KindSkipInUse)) != fmt.Sprint([]string{id}) {
				t.Errorf("pass retired %d through the symlinked root; actions %+v, errors %v", rep.Retired, rep.Actions, rep.Errors)
			}
			if ars, _ := ListArchives(f.archive, nil); len(ars) != 0 {
				t.Errorf("%d archives written through the symlinked root", len(ars))
			}
			real := filepath.Join(moved, filepath.Base(filepath.Dir(path)), filepath.Base(path))
			if got, err := os.ReadFile(real); err != nil || string(got) != string(orig) {
				t.Errorf("the session in the moved store: %v", err)
			}
			noTemps(t, moved)
			if open, _ := openIntents(filepath.Join(f.state, JournalName)); len(open) != 0 {
				t.Errorf("journal leaves %d intents open", len(open))
			}
		})
	}
}
