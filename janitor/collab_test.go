package janitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// privateTmux points tmux at a private server (TMUX_TMPDIR in a short temp
// dir, TMUX unset), killed when the test ends, and returns a function running
// tmux commands against it. It skips the test when tmux is not installed.
func privateTmux(t *testing.T) func(args ...string) {
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
	return func(args ...string) {
		t.Helper()
		if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
	}
}

// tmuxSessions lists the private server's sessions, sorted.
func tmuxSessions(t *testing.T) []string {
	t.Helper()
	out, _ := exec.Command("tmux", "list-sessions", "-F", "#{session_name}").Output()
	names := strings.Fields(string(out))
	sort.Strings(names)
	return names
}

// collabFixture is a collab-terminals source over <dir>/projects.
func collabFixture(t *testing.T, janitorJSON, sourceExtra string) (*fixture, string) {
	t.Helper()
	f := storeFixture(t, janitorJSON, `{"name":"collab","layout":"collab-terminals","root":"%[1]s/projects"`+sourceExtra+`}`)
	return f, filepath.Join(f.dir, "projects")
}

func writeFile(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		os.Chtimes(path, mtime, mtime)
	}
}

// terminalFile renders a terminal-sessions.json holding one record per tmux name.
func terminalFile(created string, tmux ...string) string {
	var recs []string
	for i, n := range tmux {
		recs = append(recs, fmt.Sprintf(`{"id":"00000000-0000-4000-8000-%012d","name":"T%d","tmuxSession":%q,"created":%q,"order":%d}`, i+1, i, n, created, i))
	}
	return `{"sessions":[` + strings.Join(recs, ",") + `],"lastModified":"2026-01-01T00:00:00.000Z"}`
}

// journalActions lists the journal's "action id" entries of the given kinds.
func journalActions(t *testing.T, state string, kinds ...string) []string {
	t.Helper()
	js, err := ReadJournal(filepath.Join(state, JournalName))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range js {
		for _, k := range kinds {
			if e.Action == k {
				out = append(out, e.Action+" "+e.ID)
			}
		}
	}
	return out
}

// TestCollabReconcile runs the reconcile against a real tmux server: records
// whose tmux session is gone leave their file (archived to records.jsonl), the
// others keep their values with order renumbered 0..n-1; unknown fields stay;
// live mc-<session>-* sessions no record names are reported, never killed
// without kill_orphans; a file with every session live is not touched.
func TestCollabReconcile(t *testing.T) {
	tmux := privateTmux(t)
	for _, s := range []string{"mc-s1-a", "mc-s1-b", "mc-s1-orphan", "mc-s2-x", "mc-s3-orphan", "mc-nosuch-1", "work"} {
		tmux("new-session", "-d", "-s", s)
	}
	liveBefore := tmuxSessions(t)
	f, root := collabFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	s1 := filepath.Join(root, "webapp", ".collab", "sessions", "s1", indexer.CollabFileName)
	s2 := filepath.Join(root, "api", ".collab", "s2", indexer.CollabFileName) // the old place
	s3 := filepath.Join(root, "empty", ".collab", "sessions", "s3", indexer.CollabFileName)
	orig, err := os.ReadFile("testdata/collab/terminal-sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	old := storeNow.Add(-48 * time.Hour)
	writeFile(t, s1, string(orig), old)
	writeFile(t, s2, terminalFile("2026-11-01T00:00:00.000Z", "mc-s2-x"), old)
	writeFile(t, s3, `{"sessions":[]}`, old) // no record: not in the catalog
	s2Before := hashTree(t, filepath.Dir(s2))
	f.index()
	j := f.pinned()

	// Dry run: reported, nothing changed.
	rep, err := j.RunOnce(context.Background(), Overrides{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Actions, KindRemoveRecord); fmt.Sprint(got) != "[3f2a1b0c-1111-4a2b-8c3d-000000000001 3f2a1b0c-1111-4a2b-8c3d-000000000003]" || rep.RecordsRemoved != 2 {
		t.Fatalf("dry run would remove %v; actions %+v", got, rep.Actions)
	}
	if now, _ := os.ReadFile(s1); !bytes.Equal(now, orig) || exists(f.archive) || exists(filepath.Join(f.state, JournalName)) {
		t.Fatalf("dry run changed something")
	}

	rep, err = j.RunOnce(context.Background(), Overrides{})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	if got := ids(rep.Actions, KindRemoveRecord); fmt.Sprint(got) != "[3f2a1b0c-1111-4a2b-8c3d-000000000001 3f2a1b0c-1111-4a2b-8c3d-000000000003]" {
		t.Errorf("removed %v", got)
	}
	if got := ids(rep.Actions, KindSkipInUse); fmt.Sprint(got) != "[3f2a1b0c-1111-4a2b-8c3d-000000000006]" {
		t.Errorf("kept within active_grace: %v", got)
	}
	if got := ids(rep.Actions, KindOrphan); fmt.Sprint(got) != "[mc-s1-orphan mc-s3-orphan]" || rep.Orphans != 2 || rep.OrphansKilled != 0 {
		t.Errorf("orphans %v (report %d/%d)", got, rep.Orphans, rep.OrphansKilled)
	}
	if len(rep.Warnings) != 2 || !strings.Contains(rep.Warnings[0].Message, "mc-s1-orphan") || !strings.Contains(rep.Warnings[0].Hint, "kill_orphans") {
		t.Errorf("warnings = %+v", rep.Warnings)
	}
	if rep.Archived != 0 || rep.Retired != 0 {
		t.Errorf("terminal records counted as retired sessions: %+v", rep)
	}

	// The rewritten file: golden; the kept records' values unchanged but order.
	after, _ := os.ReadFile(s1)
	golden(t, "testdata/collab/want-terminal-sessions.json", after)
	var was, is struct {
		Sessions     []map[string]json.RawMessage `json:"sessions"`
		LastModified json.RawMessage              `json:"lastModified"`
		Version      json.RawMessage              `json:"version"`
		Layout       json.RawMessage              `json:"layout"`
	}
	json.Unmarshal(orig, &was)
	if err := json.Unmarshal(after, &is); err != nil {
		t.Fatal(err)
	}
	if string(is.LastModified) != string(was.LastModified) || string(is.Version) != "2" || compact(t, is.Layout) != compact(t, was.Layout) {
		t.Errorf("top-level fields changed: %s %s %s", is.LastModified, is.Version, is.Layout)
	}
	keptIdx := []int{1, 3, 4, 5}
	if len(is.Sessions) != len(keptIdx) {
		t.Fatalf("%d records kept, want %d", len(is.Sessions), len(keptIdx))
	}
	for n, i := range keptIdx {
		for k, v := range was.Sessions[i] {
			want := compact(t, v)
			if k == "order" {
				want = fmt.Sprint(n)
			}
			if compact(t, is.Sessions[n][k]) != want {
				t.Errorf("record %d field %s = %s, want %s", n, k, is.Sessions[n][k], want)
			}
		}
		if len(is.Sessions[n]) != len(was.Sessions[i]) {
			t.Errorf("record %d has fields %v, want those of %v", n, is.Sessions[n], was.Sessions[i])
		}
	}
	if fi, _ := os.Stat(s1); fi.Mode().Perm() != 0o644 {
		t.Errorf("file mode = %v, want 0644 kept", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(s1), "*")); len(left) != 1 {
		t.Errorf("files beside the rewritten one: %v", left)
	}
	if hashTree(t, filepath.Dir(s2)) != s2Before {
		t.Errorf("a file with every tmux session alive was touched")
	}

	// records.jsonl keeps every removed record verbatim.
	lines := readRecordLines(t, filepath.Join(f.archive, "collab", RecordsName))
	if len(lines) != 2 {
		t.Fatalf("records.jsonl: %d lines", len(lines))
	}
	for n, i := range []int{0, 2} {
		var raws []json.RawMessage
		var top struct{ Sessions *[]json.RawMessage }
		top.Sessions = &raws
		json.Unmarshal(orig, &top)
		l := lines[n]
		if l.Layout != "collab-terminals" || l.File != s1 || !strings.HasPrefix(l.Reason, "tmux session mc-s1-") || string(l.Record) != compact(t, raws[i]) {
			t.Errorf("records.jsonl line %d = %+v", n, l)
		}
	}

	// Journal, tmux and catalog.
	if got := journalActions(t, f.state, KindRemoveRecord, KindOrphan); fmt.Sprint(got) != "[remove-record 3f2a1b0c-1111-4a2b-8c3d-000000000001 remove-record 3f2a1b0c-1111-4a2b-8c3d-000000000003 orphan mc-s1-orphan orphan mc-s3-orphan]" {
		t.Errorf("journal = %v", got)
	}
	if got := tmuxSessions(t); fmt.Sprint(got) != fmt.Sprint(liveBefore) {
		t.Errorf("tmux sessions after = %v, want %v untouched", got, liveBefore)
	}
	var listed []string
	for _, s := range f.group.Indexer("collab").Sessions() {
		listed = append(listed, s.ID)
	}
	sort.Strings(listed)
	if fmt.Sprint(listed) != "[00000000-0000-4000-8000-000000000001 3f2a1b0c-1111-4a2b-8c3d-000000000002 3f2a1b0c-1111-4a2b-8c3d-000000000004 3f2a1b0c-1111-4a2b-8c3d-000000000005 3f2a1b0c-1111-4a2b-8c3d-000000000006]" {
		t.Errorf("catalog after = %v", listed)
	}

	// The next pass: nothing to remove; the orphans are still reported, but
	// journaled and logged once.
	rep, _ = j.RunOnce(context.Background(), Overrides{})
	if rep.RecordsRemoved != 0 || rep.Orphans != 2 {
		t.Errorf("second pass = %+v", rep)
	}
	if got := journalActions(t, f.state, KindRemoveRecord, KindOrphan); len(got) != 4 {
		t.Errorf("second pass journaled again: %v", got)
	}
	if n := strings.Count(f.logs.String(), "orphan tmux session"); n != 2 {
		t.Errorf("orphans logged %d times, want 2 (once each):\n%s", n, f.logs)
	}
	// --invalid-only has nothing to do with tmux.
	tmux("kill-session", "-t", "=mc-s1-b")
	if rep, _ := j.RunOnce(context.Background(), Overrides{InvalidOnly: true}); rep.RecordsRemoved != 0 || rep.Orphans != 0 {
		t.Errorf("--invalid-only reconciled: %+v", rep.Actions)
	}
}

// TestCollabKillOrphans: with kill_orphans an orphan is killed, unless it was
// created within active_grace; records' sessions and other sessions live on.
func TestCollabKillOrphans(t *testing.T) {
	tmux := privateTmux(t)
	for _, s := range []string{"mc-s1-a", "mc-s1-orphan", "mc-other-1", "work"} {
		tmux("new-session", "-d", "-s", s)
	}
	f, root := collabFixture(t, `{"run_at_start":false,"schedule":"off"}`, `,"kill_orphans":true`)
	writeFile(t, filepath.Join(root, "p", ".collab", "sessions", "s1", indexer.CollabFileName), terminalFile("2020-01-01T00:00:00.000Z", "mc-s1-a"), time.Time{})
	f.index()

	// Just created: within the default active_grace, reported but not killed.
	rep, err := f.janitor().RunOnce(context.Background(), Overrides{})
	if err != nil || rep.Orphans != 1 || rep.OrphansKilled != 0 || !strings.Contains(rep.Actions[0].Reason, "within active_grace") {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	if got := fmt.Sprint(tmuxSessions(t)); got != "[mc-other-1 mc-s1-a mc-s1-orphan work]" {
		t.Errorf("tmux sessions = %s", got)
	}
	// Dry run with the grace off: would kill, does not.
	f.cfg.Janitor.ActiveGrace = config.DurationOff
	rep, _ = f.janitor().RunOnce(context.Background(), Overrides{DryRun: true})
	if got := fmt.Sprint(tmuxSessions(t)); rep.OrphansKilled != 1 || got != "[mc-other-1 mc-s1-a mc-s1-orphan work]" {
		t.Errorf("dry run: killed %d, sessions %s", rep.OrphansKilled, got)
	}
	rep, _ = f.janitor().RunOnce(context.Background(), Overrides{})
	if got := fmt.Sprint(tmuxSessions(t)); rep.OrphansKilled != 1 || got != "[mc-other-1 mc-s1-a work]" {
		t.Errorf("kill_orphans: killed %d, sessions %s; actions %+v", rep.OrphansKilled, got, rep.Actions)
	}
	if got := journalActions(t, f.state, KindKillOrphan); !strings.Contains(fmt.Sprint(got), "kill-orphan mc-s1-orphan") {
		t.Errorf("journal = %v", got)
	}
}

// TestCollabNoServer: when tmux says no server runs — no socket at all, or a
// socket nobody listens on — every terminal has gone with it.
func TestCollabNoServer(t *testing.T) {
	privateTmux(t)
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale socket %v", stale), func(t *testing.T) {
			if stale {
				sock := filepath.Join(os.Getenv("TMUX_TMPDIR"), fmt.Sprintf("tmux-%d", os.Getuid()), "default")
				os.MkdirAll(filepath.Dir(sock), 0o700)
				l, err := net.Listen("unix", sock)
				if err != nil {
					t.Fatal(err)
				}
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				l.Close()
				t.Cleanup(func() { os.Remove(sock) })
				out, _ := exec.Command("tmux", "list-sessions").CombinedOutput()
				if !strings.HasPrefix(string(out), "no server running on ") {
					t.Fatalf("tmux with a dead socket says %q", out)
				}
			}
			f, root := collabFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
			file := filepath.Join(root, "p", ".collab", "sessions", "s1", indexer.CollabFileName)
			writeFile(t, file, terminalFile("2020-01-01T00:00:00.000Z", "mc-s1-a", "mc-s1-b"), time.Time{})
			f.index()
			rep, err := f.janitor().RunOnce(context.Background(), Overrides{})
			if err != nil || rep.RecordsRemoved != 2 || len(rep.Errors) > 0 {
				t.Fatalf("pass = %+v, %v", rep, err)
			}
			data, _ := os.ReadFile(file)
			if string(data) != "{\n  \"sessions\": [],\n  \"lastModified\": \"2026-01-01T00:00:00.000Z\"\n}" {
				t.Errorf("file after = %s", data)
			}
		})
	}
}

// TestCollabTmuxUnavailable: tmux missing from PATH, or failing for any other
// reason than "no server", skips the reconcile with one log line; nothing is
// touched. The binary is injectable.
func TestCollabTmuxUnavailable(t *testing.T) {
	bin := t.TempDir()
	fake := func(name, stderr string) string {
		p := filepath.Join(bin, name)
		os.WriteFile(p, []byte("#!/bin/sh\necho '"+stderr+"' >&2\nexit 1\n"), 0o755)
		return p
	}
	tests := []struct {
		name    string
		tmux    Tmux
		path    string // PATH for the test ("" = unchanged)
		removed int
		skipped string
	}{
		{"not installed", Tmux{}, bin, 0, "tmux reconcile skipped: tmux is not installed (not found in PATH)"},
		{"version mismatch", Tmux{Path: fake("mismatch", "protocol version mismatch (client 8, server 7)")}, "", 0,
			"tmux reconcile skipped: tmux list-sessions: exit status 1: protocol version mismatch (client 8, server 7)"},
		{"permission denied", Tmux{Path: fake("denied", "error connecting to /tmp/tmux-1000/default (Permission denied)")}, "", 0,
			"tmux reconcile skipped: tmux list-sessions: exit status 1: error connecting to /tmp/tmux-1000/default (Permission denied)"},
		{"no server (injected)", Tmux{Path: fake("noserver", "no server running on /tmp/tmux-1000/default")}, "", 1, ""},
		{"binary gone", Tmux{Path: filepath.Join(bin, "nope")}, "", 0, "tmux reconcile skipped: tmux not found in PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path != "" {
				t.Setenv("PATH", tt.path)
			}
			f, root := collabFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
			file := filepath.Join(root, "p", ".collab", "s1", indexer.CollabFileName)
			content := terminalFile("2020-01-01T00:00:00.000Z", "mc-s1-a")
			writeFile(t, file, content, time.Time{})
			f.index()
			j := f.janitor()
			j.opt.Tmux = tt.tmux
			for pass := 0; pass < 2; pass++ {
				rep, err := j.RunOnce(context.Background(), Overrides{})
				if want := tt.removed * (1 - pass); err != nil || len(rep.Errors) > 0 || rep.RecordsRemoved != want {
					t.Fatalf("pass %d = %+v, %v", pass, rep, err)
				}
				if tt.skipped != "" && (len(rep.Actions) != 1 || rep.Actions[0].Kind != KindSkip || !strings.HasPrefix(rep.Actions[0].Reason, tt.skipped)) {
					t.Errorf("pass %d actions = %+v, want one skip %q", pass, rep.Actions, tt.skipped)
				}
				if tt.removed == 0 { // untouched
					if data, _ := os.ReadFile(file); string(data) != content {
						t.Errorf("file changed: %s", data)
					}
				}
			}
			if n := strings.Count(f.logs.String(), "tmux reconcile skipped"); tt.skipped != "" && n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, f.logs)
			}
		})
	}
}

// TestCollabKeepsWhatItCannotRead: a file that does not parse is left alone,
// and the tmux sessions its collab session could own are no orphans.
func TestCollabKeepsWhatItCannotRead(t *testing.T) {
	tmux := privateTmux(t)
	tmux("new-session", "-d", "-s", "mc-s1-x")
	f, root := collabFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	file := filepath.Join(root, "p", ".collab", "sessions", "s1", indexer.CollabFileName)
	writeFile(t, file, terminalFile("2020-01-01T00:00:00.000Z", "mc-s1-dead"), time.Time{})
	f.index()
	writeFile(t, file, `{"sessions":[{"id":"half-writ`, time.Time{}) // the tool writes in place
	rep, err := f.janitor().RunOnce(context.Background(), Overrides{})
	if err != nil || rep.RecordsRemoved != 0 || rep.Orphans != 0 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	if data, _ := os.ReadFile(file); string(data) != `{"sessions":[{"id":"half-writ` {
		t.Errorf("unparseable file rewritten: %s", data)
	}
	if got := fmt.Sprint(tmuxSessions(t)); got != "[mc-s1-x]" {
		t.Errorf("tmux sessions = %s", got)
	}
}

func TestRenumber(t *testing.T) {
	data := []byte(`{"sessions":[{"id":"a","order":7},{"id":"b","order":"x"},{"id":"c","order":2},{"id":"d"},{"id":"e","order":2,"order":2}],"z":"\u00e9"}`)
	doc, err := indexer.DecodeCollabFile(data)
	if err != nil {
		t.Fatal(err)
	}
	renumber(doc.Sessions)
	var got []string
	for _, r := range doc.Sessions {
		got = append(got, fmt.Sprintf("%s=%d", r.ID, r.Order))
	}
	// d has no order (0): first; then c and e (2) in file order, a (7), and b
	// whose order is not a number last.
	if fmt.Sprint(got) != "[a=3 b=4 c=1 d=0 e=2]" {
		t.Errorf("renumber = %v", got)
	}
	raws, err := collabRawRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := encodeCollab(data, raws, doc.Sessions)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	json.Compact(&b, out)
	want := `{"sessions":[{"id":"a","order":3},{"id":"b","order":4},{"id":"c","order":1},{"id":"d","order":0},{"id":"e","order":2,"order":2}],"z":"\u00e9"}`
	if b.String() != want {
		t.Errorf("encodeCollab =\n%s\nwant\n%s", b.String(), want)
	}
}

// FuzzEncodeCollab: whatever terminal-sessions.json the codec accepts, the
// rewrite keeps every record's fields and values (order renumbered) and every
// top-level field.
func FuzzEncodeCollab(f *testing.F) {
	seed, _ := os.ReadFile("testdata/collab/terminal-sessions.json")
	f.Add(seed)
	f.Add([]byte(`{"sessions":[{"id":"a","order":"x","k\u00e9":"\u2028"},{"id":"b"}],"lastModified":1,"sessions":[{"id":"c","order":9}]}`))
	f.Add([]byte(`{"sessions":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := indexer.DecodeCollabFile(data)
		if err != nil {
			return
		}
		raws, err := collabRawRecords(data)
		if err != nil || len(raws) != len(doc.Sessions) {
			return
		}
		renumber(doc.Sessions)
		out, err := encodeCollab(data, raws, doc.Sessions)
		if err != nil {
			if bytes.Contains(data, []byte(`"sessions"`)) {
				t.Fatalf("encodeCollab(%q): %v", data, err)
			}
			return
		}
		again, err := indexer.DecodeCollabFile(out)
		if err != nil {
			t.Fatalf("rewrite of %q does not decode: %v\n%s", data, err, out)
		}
		if len(again.Sessions) != len(doc.Sessions) {
			t.Fatalf("rewrite of %q has %d records, want %d", data, len(again.Sessions), len(doc.Sessions))
		}
		var was, is []map[string]any
		top := func(b []byte, into *[]map[string]any) map[string]json.RawMessage {
			var m map[string]json.RawMessage
			json.Unmarshal(b, &m)
			json.Unmarshal(m["sessions"], into)
			delete(m, "sessions")
			return m
		}
		wasTop, isTop := top(data, &was), top(out, &is)
		for i := range was {
			if fmt.Sprint(is[i]["order"]) != fmt.Sprint(i) && fmt.Sprint(is[i]["order"]) != fmt.Sprint(doc.Sessions[i].Order) {
				t.Fatalf("record %d order = %v", i, is[i]["order"])
			}
			delete(was[i], "order")
			delete(is[i], "order")
			if fmt.Sprint(was[i]) != fmt.Sprint(is[i]) {
				t.Fatalf("record %d = %v, want %v", i, is[i], was[i])
			}
		}
		for k, v := range wasTop {
			if compact(t, isTop[k]) != compact(t, v) {
				t.Fatalf("top-level %s = %s, want %s", k, isTop[k], v)
			}
		}
	})
}
