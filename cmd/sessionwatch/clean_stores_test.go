package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// privateTmux points tmux at a private server (TMUX_TMPDIR in a short temp
// dir, TMUX unset), killed when the test ends, and starts the named sessions.
// It skips the test when tmux is not installed.
func privateTmux(t *testing.T, sessions ...string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the collab-terminals reconcile tests need it (.ci/run installs it)")
	}
	dir, err := os.MkdirTemp("", "swtmux")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX_TMPDIR", dir)
	t.Setenv("TMUX", "")
	os.Unsetenv("TMUX") // never the user's server, even inside tmux
	t.Cleanup(func() {
		exec.Command("tmux", "kill-server").Run()
		os.RemoveAll(dir)
	})
	for _, s := range sessions {
		if out, err := exec.Command("tmux", "new-session", "-d", "-s", s).CombinedOutput(); err != nil {
			t.Fatalf("tmux new-session %s: %v: %s", s, err, out)
		}
	}
}

func tmuxNames(t *testing.T) string {
	t.Helper()
	out, _ := exec.Command("tmux", "list-sessions", "-F", "#{session_name}").Output()
	names := strings.Fields(string(out))
	sort.Strings(names)
	return strings.Join(names, " ")
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// writeHyStore writes a HyperYOLO store the way HyperYOLO does, records in order.
func writeHyStore(t *testing.T, path string, kv ...string) {
	t.Helper()
	recs := map[string]json.RawMessage{}
	var order []string
	for i := 0; i+1 < len(kv); i += 2 {
		recs[kv[i]] = json.RawMessage(kv[i+1])
		order = append(order, kv[i])
	}
	data, err := indexer.EncodeHyperyoloStore(recs, order)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// mogziSession writes <root>/<id>/session.json and an attachment, all with
// the given mtime; content "" writes a session.json that does not parse.
func mogziSession(t *testing.T, root, id, name string, at time.Time, corrupt bool) string {
	t.Helper()
	dir := filepath.Join(root, id)
	os.MkdirAll(filepath.Join(dir, "attachments"), 0o700)
	content := fmt.Sprintf(`{"id":%q,"name":%q,"createdAt":%q,"lastModifiedAt":%q,"history":[{"role":"user","content":"hello %s"}],"initialPrompt":"hello %s"}`,
		id, name, iso(at), iso(at), name, name)
	if corrupt {
		content = `{"id": "` + id + `", broken`
	}
	files := []string{filepath.Join(dir, "session.json"), filepath.Join(dir, "attachments", "0-0-0123456789ABCDEF.png")}
	os.WriteFile(files[0], []byte(content), 0o600)
	os.WriteFile(files[1], []byte("\x89PNG attachment of "+name), 0o644)
	for _, p := range append(files, filepath.Join(dir, "attachments"), dir) {
		os.Chtimes(p, at, at)
	}
	return dir
}

// treeState records path → mode, mtime and content of every file and
// directory under root, skipping the subtrees in skip.
func treeState(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		fi, _ := d.Info()
		v := fi.Mode().String() + " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
		if d.IsDir() {
			v = fi.Mode().String() // a directory's mtime moves when an entry comes or goes
		} else if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			v += " " + string(data)
		}
		out[p] = v
		return nil
	})
	return out
}

// changed lists the paths whose state differs, sorted, each with "+", "-" or "~".
func changed(before, after map[string]string) []string {
	var out []string
	for p, v := range before {
		if w, ok := after[p]; !ok {
			out = append(out, "- "+p)
		} else if w != v {
			out = append(out, "~ "+p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "+ "+p)
		}
	}
	sort.Strings(out)
	return out
}

type listedSession struct {
	ID      string `json:"id"`
	Source  string `json:"source"`
	Corrupt bool   `json:"corrupt"`
	Invalid bool   `json:"invalid"`
}

func (e *testEnv) listAll() []string {
	e.t.Helper()
	out, errs, code := e.cli("list", "--all", "--json")
	if code != 0 {
		e.t.Fatalf("list --all --json = %d: %s", code, errs)
	}
	var ls []listedSession
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		e.t.Fatalf("list --json: %v\n%s", err, out)
	}
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.Source+":"+l.ID)
	}
	sort.Strings(ids)
	return ids
}

// TestNewUserThreeStores is the acceptance run: a new user with a
// HyperYOLO store, Mogzi chats and a collab project in a temp HOME. `list
// --all` shows them; `clean --dry-run` then `clean` retire exactly the stale
// and invalid HyperYOLO records and the old Mogzi session; a collab file loses
// its dead terminal record while the live one and unknown tmux sessions are
// left alone (the orphan reported); nothing else changes. Restore brings the
// Mogzi session back byte for byte, and the HyperYOLO record too.
func TestNewUserThreeStores(t *testing.T) {
	privateTmux(t, "mc-s1-a", "mc-s1-orphan", "work")
	e := newEnv(t)
	home := e.home
	e.state = filepath.Join(home, ".local", "state", "sessionwatch")
	archive := filepath.Join(home, ".local", "share", "sessionwatch", "archive")
	e.writeConfig(`{"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"layout":"hyperyolo"},
	            {"layout":"mogzi","retention":"30d"},
	            {"name":"collab","layout":"collab-terminals","root":"~/projects"}]}`)
	now := time.Now()
	day := 24 * time.Hour

	store := filepath.Join(home, ".config", "hyperyolo", "sessions.json")
	writeHyStore(t, store,
		"hyper_11111111", fmt.Sprintf(`{"backend":"claude","nativeId":"n1","createdAt":%q,"lastSeenAt":%q,"lastPrompt":"stale one"}`, iso(now.Add(-60*day)), iso(now.Add(-40*day))),
		"hyper_22222222", fmt.Sprintf(`{"backend":"codex","nativeId":"n2","createdAt":%q,"lastPrompt":"rejected","invalid":true,"lastResumeStatus":"rejected"}`, iso(now.Add(-3*day))),
		"hyper_33333333", fmt.Sprintf(`{"backend":"gemini","nativeId":"n3","createdAt":%q,"lastSeenAt":%q,"lastPrompt":"caf\u00e9 \"kept\"","n":[1.50,1e3],"o":{}}`, iso(now.Add(-5*day)), iso(now.Add(-day))),
		"hyper_44444444", fmt.Sprintf(`{"backend":"claude","nativeId":"n4","createdAt":%q,"lastSeenAt":%q,"invalid":true}`, iso(now.Add(-2*day)), iso(now.Add(-10*time.Minute))),
		"lastCleanup", `"2026-01-01T00:00:00.000Z"`)
	storeBefore, _ := os.ReadFile(store)
	origRecs, _, _ := indexer.DecodeHyperyoloStore(storeBefore)

	chats := filepath.Join(home, ".mogzi", "chats")
	const (
		mOld     = "0197a1b2-0000-7000-8000-000000000001"
		mYoung   = "0197a1b2-0000-7000-8000-000000000002"
		mCorrupt = "0197a1b2-0000-7000-8000-000000000003"
	)
	oldDir := mogziSession(t, chats, mOld, "old chat", now.Add(-45*day), false)
	mogziSession(t, chats, mYoung, "young chat", now.Add(-2*day), false)
	mogziSession(t, chats, mCorrupt, "corrupt", now.Add(-90*day), true)
	oldState := treeState(t, oldDir)

	collab := filepath.Join(home, "projects", "webapp", ".collab", "sessions", "s1", indexer.CollabFileName)
	os.MkdirAll(filepath.Dir(collab), 0o755)
	collabBefore := fmt.Sprintf(`{
  "sessions": [
    {
      "id": "3f2a1b0c-1111-4a2b-8c3d-000000000001",
      "name": "Terminal 1",
      "tmuxSession": "mc-s1-dead",
      "created": %q,
      "order": 0
    },
    {
      "id": "3f2a1b0c-1111-4a2b-8c3d-000000000002",
      "name": "server",
      "tmuxSession": "mc-s1-a",
      "created": %q,
      "order": 1,
      "cwd": "/srv/app"
    }
  ],
  "lastModified": %q,
  "version": 2
}`, iso(now.Add(-10*day)), iso(now.Add(-10*day)), iso(now.Add(-9*day)))
	os.WriteFile(collab, []byte(collabBefore), 0o644)

	// A new user indexes, then lists.
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d: %s", code, errs)
	}
	all := "[collab:3f2a1b0c-1111-4a2b-8c3d-000000000001 collab:3f2a1b0c-1111-4a2b-8c3d-000000000002 " +
		"hyperyolo:hyper_11111111 hyperyolo:hyper_22222222 hyperyolo:hyper_33333333 hyperyolo:hyper_44444444 " +
		"mogzi:" + mOld + " mogzi:" + mYoung + " mogzi:" + mCorrupt + "]"
	if got := fmt.Sprint(e.listAll()); got != all {
		t.Fatalf("list --all = %s\nwant %s", got, all)
	}
	before := treeState(t, home, filepath.Join(home, ".local"), os.Getenv("TMUX_TMPDIR"))

	wantLines := []string{
		"skip-in-use hyperyolo hyper_44444444 active 10m",
		"archive hyperyolo hyper_22222222 marked invalid by its agent",
		"archive hyperyolo hyper_11111111 inactive 40d (retention 30d)",
		"archive mogzi 0197a1b2 inactive 45d (retention 30d)",
		"skip mogzi 0197a1b2 corrupt (unparseable): only 'clean --invalid-only' retires it",
		"remove-record collab 3f2a1b0c tmux session mc-s1-dead is gone",
		"orphan collab mc-s1-orphan tmux session mc-s1-orphan belongs to collab session s1",
	}
	checkOut := func(what, out, summary string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(wantLines)+1 {
			t.Fatalf("%s printed %d lines, want %d:\n%s", what, len(lines), len(wantLines)+1, out)
		}
		for i, w := range wantLines {
			f := strings.Fields(w)
			got := strings.Join(strings.Fields(lines[i]), " ")
			prefix := strings.Join(f[:3], " ") + " "
			if !strings.HasPrefix(got, prefix) || !strings.Contains(got, strings.Join(f[3:], " ")) {
				t.Errorf("%s line %d = %q, want %q", what, i+1, lines[i], w)
			}
		}
		if !strings.HasPrefix(lines[len(lines)-1], summary) || !strings.Contains(lines[len(lines)-1], "removed 1 dead terminal record(s), 1 orphan tmux session(s) (0 killed)") {
			t.Errorf("%s summary = %q", what, lines[len(lines)-1])
		}
	}

	out, errs, code := e.cli("clean", "--dry-run")
	if code != 0 {
		t.Fatalf("clean --dry-run = %d: %s", code, errs)
	}
	checkOut("clean --dry-run", out, "dry run, nothing changed: retired 3 (archived 3, deleted 0), skipped in use 1")
	if d := changed(before, treeState(t, home, filepath.Join(home, ".local"), os.Getenv("TMUX_TMPDIR"))); len(d) > 0 || fileExists(archive) || fileExists(filepath.Join(e.state, janitor.JournalName)) {
		t.Fatalf("clean --dry-run changed %v", d)
	}

	out, errs, code = e.cli("clean")
	if code != 0 {
		t.Fatalf("clean = %d: %s\n%s", code, errs, out)
	}
	checkOut("clean", out, "retired 3 (archived 3, deleted 0), skipped in use 1")

	// Exactly the three stores' retired parts changed.
	var want []string
	for p := range oldState {
		want = append(want, "- "+p)
	}
	want = append(want, "~ "+collab, "~ "+store)
	sort.Strings(want)
	if got := changed(before, treeState(t, home, filepath.Join(home, ".local"), os.Getenv("TMUX_TMPDIR"))); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("clean changed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	storeAfter, _ := os.ReadFile(store)
	recs, keys, err := indexer.DecodeHyperyoloStore(storeAfter)
	if err != nil || fmt.Sprint(keys) != "[hyper_33333333 hyper_44444444 lastCleanup]" {
		t.Fatalf("store after clean: keys %v, %v", keys, err)
	}
	for k, v := range recs {
		if !bytes.Equal(v, origRecs[k]) {
			t.Errorf("value of %s changed", k)
		}
	}
	collabAfter, _ := os.ReadFile(collab)
	wantCollab := fmt.Sprintf(`{
  "sessions": [
    {
      "id": "3f2a1b0c-1111-4a2b-8c3d-000000000002",
      "name": "server",
      "tmuxSession": "mc-s1-a",
      "created": %q,
      "order": 0,
      "cwd": "/srv/app"
    }
  ],
  "lastModified": %q,
  "version": 2
}`, iso(now.Add(-10*day)), iso(now.Add(-9*day)))
	if string(collabAfter) != wantCollab {
		t.Errorf("collab file after clean:\n%s\nwant\n%s", collabAfter, wantCollab)
	}
	if got := tmuxNames(t); got != "mc-s1-a mc-s1-orphan work" {
		t.Errorf("tmux sessions after clean: %s", got)
	}
	for _, p := range []string{
		filepath.Join(archive, "hyperyolo", janitor.RecordsName),
		filepath.Join(archive, "collab", janitor.RecordsName),
		filepath.Join(archive, "mogzi", "_", mOld+".tar.gz"),
	} {
		if !fileExists(p) {
			t.Errorf("archive %s missing", p)
		}
	}
	js, _ := janitor.ReadJournal(filepath.Join(e.state, janitor.JournalName))
	var journal []string
	for _, j := range js {
		journal = append(journal, j.Action+" "+j.ID)
	}
	for _, w := range []string{"archive hyper_22222222", "archive hyper_11111111", "archive " + mOld, "remove-record 3f2a1b0c-1111-4a2b-8c3d-000000000001", "orphan mc-s1-orphan"} {
		if !strings.Contains(strings.Join(journal, "\n")+"\n", w+"\n") {
			t.Errorf("journal lacks %q: %v", w, journal)
		}
	}
	after := "[collab:3f2a1b0c-1111-4a2b-8c3d-000000000002 hyperyolo:hyper_33333333 hyperyolo:hyper_44444444 mogzi:" + mYoung + " mogzi:" + mCorrupt + "]"
	if got := fmt.Sprint(e.listAll()); got != after {
		t.Errorf("list --all after clean = %s\nwant %s", got, after)
	}
	if _, errs, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check after clean = %d: %s", code, errs)
	}

	// Restore: the Mogzi session byte for byte (content, modes, mtimes), the
	// HyperYOLO record with its value.
	out, errs, code = e.cli("restore", "--all", mOld)
	if code != 0 || !strings.HasPrefix(out, "restored mogzi session "+mOld) {
		t.Fatalf("restore %s = %d: %s%s", mOld, code, out, errs)
	}
	if d := changed(oldState, treeState(t, oldDir)); len(d) > 0 {
		t.Errorf("restored Mogzi session differs: %v", d)
	}
	out, errs, code = e.cli("restore", "--all", "hyper_11111111")
	if code != 0 || !strings.HasPrefix(out, "restored hyperyolo record hyper_11111111 to "+tildePath(store)) {
		t.Fatalf("restore hyper_11111111 = %d: %s%s", code, out, errs)
	}
	data, _ := os.ReadFile(store)
	recs, _, _ = indexer.DecodeHyperyoloStore(data)
	if !bytes.Equal(recs["hyper_11111111"], origRecs["hyper_11111111"]) {
		t.Errorf("restored record = %s, want %s", recs["hyper_11111111"], origRecs["hyper_11111111"])
	}
	// Restored sessions count as active: the next clean keeps them.
	out, _, code = e.cli("clean")
	if code != 0 || !strings.Contains(out, "retired 0 (archived 0, deleted 0)") {
		t.Errorf("clean after restore = %d:\n%s", code, out)
	}
	// `delete` removes just one record, under the store's lock protocol.
	if _, errs, code := e.cli("delete", "--all", "hyper_33333333"); code != 0 {
		t.Fatalf("delete hyper_33333333 = %d: %s", code, errs)
	}
	data, _ = os.ReadFile(store)
	recs, keys, _ = indexer.DecodeHyperyoloStore(data)
	if fmt.Sprint(keys) != "[hyper_44444444 lastCleanup hyper_11111111]" || !bytes.Equal(recs["hyper_44444444"], origRecs["hyper_44444444"]) {
		t.Errorf("store after delete: %v", keys)
	}
	os.Mkdir(store+".lock", 0o700)
	if _, errs, code := e.cli("delete", "--all", "hyper_44444444", "--force"); code != 1 || !strings.Contains(errs, "store busy") || !strings.Contains(errs, "hint:") {
		t.Errorf("delete with a busy store = %d: %s", code, errs)
	}
}

// TestDaemonReconcilesStoresOnSchedule: the daemon's scheduled passes retire a
// stale HyperYOLO record and remove a dead collab terminal record on their
// own, reporting the orphan tmux session; the catalog follows.
func TestDaemonReconcilesStoresOnSchedule(t *testing.T) {
	privateTmux(t, "mc-s1-a", "mc-s1-orphan")
	e := newEnv(t)
	store := filepath.Join(e.home, "hy", "sessions.json")
	projects := filepath.Join(e.home, "projects")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"settle":"20ms","max_settle":"200ms",
	 "janitor":{"run_at_start":false,"schedule":"@every 1s"},
	 "sources":[{"name":"hyperyolo","layout":"hyperyolo","root":%q},
	            {"name":"collab","layout":"collab-terminals","root":%q}]}`, e.state, e.archiveDir(), store, projects)
	now := time.Now()
	os.MkdirAll(projects, 0o700)
	writeHyStore(t, store, "hyper_aaaaaaaa", fmt.Sprintf(`{"backend":"claude","nativeId":"x","createdAt":%q}`, iso(now.Add(-time.Hour*24*2))))
	d := e.startDaemon()

	// Both appear while the daemon runs: the scheduled passes act on their own.
	writeHyStore(t, store,
		"hyper_aaaaaaaa", fmt.Sprintf(`{"backend":"claude","nativeId":"x","createdAt":%q}`, iso(now.Add(-time.Hour*24*2))),
		"hyper_bbbbbbbb", fmt.Sprintf(`{"backend":"codex","nativeId":"y","createdAt":%q}`, iso(now.Add(-time.Hour*24*45))))
	collab := filepath.Join(projects, "app", ".collab", "s1", indexer.CollabFileName)
	os.MkdirAll(filepath.Dir(collab), 0o755)
	created := iso(now.Add(-5 * 24 * time.Hour))
	os.WriteFile(collab, []byte(fmt.Sprintf(`{"sessions":[{"id":"t-dead","name":"a","tmuxSession":"mc-s1-dead","created":%q,"order":0},{"id":"t-live","name":"b","tmuxSession":"mc-s1-a","created":%q,"order":1}],"lastModified":%q}`, created, created, created)), 0o644)

	waitFor(t, 30*time.Second, "the stale HyperYOLO record to leave the store", func() bool {
		data, _ := os.ReadFile(store)
		return !bytes.Contains(data, []byte("hyper_bbbbbbbb")) && bytes.Contains(data, []byte("hyper_aaaaaaaa"))
	})
	waitFor(t, 30*time.Second, "the dead terminal record to leave its file", func() bool {
		data, _ := os.ReadFile(collab)
		return !bytes.Contains(data, []byte("t-dead")) && bytes.Contains(data, []byte(`"order": 0`))
	})
	waitFor(t, 30*time.Second, "the orphan in the journal", func() bool {
		js, _ := janitor.ReadJournal(filepath.Join(e.state, janitor.JournalName))
		for _, j := range js {
			if j.Action == janitor.KindOrphan && j.ID == "mc-s1-orphan" {
				return true
			}
		}
		return false
	})
	waitFor(t, 30*time.Second, "the catalogs to follow", func() bool {
		es, err := indexer.ReadCatalogs(e.state, nil, nil)
		if err != nil {
			return false
		}
		var ids []string
		for _, en := range es {
			ids = append(ids, en.ID)
		}
		sort.Strings(ids)
		return fmt.Sprint(ids) == "[hyper_aaaaaaaa t-live]"
	})
	if got := tmuxNames(t); got != "mc-s1-a mc-s1-orphan" {
		t.Errorf("tmux sessions = %s", got)
	}
	// The status file is written after the pass that journaled the orphan: wait
	// for it rather than read it once (it lagged on a loaded machine).
	waitFor(t, 30*time.Second, "the orphan warning in the status file", func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && strings.Contains(strings.Join(st.Warnings, "\n"), "mc-s1-orphan")
	})
	if code := d.stop(); code != 0 {
		t.Errorf("stop = %d; stderr:\n%s", code, d.stderr)
	}
	if n := strings.Count(d.stderr.String(), `msg="orphan tmux session"`); n != 1 {
		t.Errorf("orphan logged %d times over the passes, want once:\n%s", n, d.stderr)
	}
}
