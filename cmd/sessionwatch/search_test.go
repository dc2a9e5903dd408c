package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

const (
	searchID1 = "aaaaaaaa-1111-4111-8111-111111111111"
	searchID2 = "bbbbbbbb-2222-4222-8222-222222222222"
)

func TestSearchCommand(t *testing.T) {
	e := newEnv(t)
	ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	p1 := filepath.Join(e.project("/work/alpha"), searchID1+".jsonl")
	appendTo(t, p1, header("/work/alpha")+jsonMessage(ts, "the flaky parser test fails \x1b]0;pwned\x07 again")+
		message(ts.Add(time.Minute), "unrelated words here"))
	p2 := filepath.Join(e.project("/work/beta"), searchID2+".jsonl")
	appendTo(t, p2, header("/work/beta")+message(ts, "parser rewrite in café"))

	// No daemon: the CLI brings the index up to date itself.
	out, errb, code := e.cli("search", "--all", "parser")
	if code != 0 {
		t.Fatalf("search exit %d: %s", code, errb)
	}
	if !strings.Contains(out, "aaaaaaaa") || !strings.Contains(out, "bbbbbbbb") {
		t.Errorf("search parser:\n%s\nwant both sessions", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") || !strings.Contains(out, `\x1b]0;pwned\x07`) {
		t.Errorf("transcript control characters reached the output unescaped:\n%q", out)
	}

	out, _, _ = e.cli("search", "--all", "--json", `"flaky parser"`, "-cafe")
	var rows []searchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	if len(rows) != 1 || rows[0].ID != searchID1 || rows[0].Project != "/work/alpha" || len(rows[0].Matches) != 1 {
		t.Fatalf("search --json phrase = %+v, want session 1 with one match", rows)
	}
	m := rows[0].Matches[0]
	if m.Role != "user" || m.Time != "2026-03-01T10:00:00.000Z" || !strings.Contains(m.Snippet, "\x1b]0;pwned") || m.Offset <= 0 {
		t.Errorf("match = %+v, want the user message at 10:00 with its exact text", m)
	}

	if _, _, code := e.cli("search", "nothingmatchesthis"); code != 0 {
		t.Errorf("search with no hit exit %d, want 0", code)
	}

	// An appended line is found by the next search.
	appendTo(t, p2, message(ts.Add(time.Hour), "zanzibar appears"))
	out, _, _ = e.cli("search", "--all", "zanzibar")
	if !strings.Contains(out, "bbbbbbbb") || strings.Contains(out, "aaaaaaaa") {
		t.Errorf("after an append, search zanzibar:\n%s", out)
	}

	// show --messages prints the conversation, --grep only the matches.
	out, errb, code = e.cli("show", "--all", searchID1, "--messages")
	if code != 0 || !strings.Contains(out, "unrelated words here") || !strings.Contains(out, "user  ") || strings.Contains(out, "\x1b") {
		t.Errorf("show --messages exit %d:\n%s%s", code, out, errb)
	}
	out, _, code = e.cli("show", "--all", searchID1, "--messages", "--grep", "flaky")
	if code != 0 || !strings.Contains(out, "flaky") || !strings.Contains(out, "*") {
		t.Errorf("show --grep flaky:\n%s", out)
	}
	if _, _, code := e.cli("show", "--all", searchID1, "--messages", "--grep", "absent"); code != 1 {
		t.Errorf("show --grep with no match exit %d, want 1", code)
	}
	// --grep alone implies --messages; --json and --archived, which the
	// conversation cannot honour, are usage errors rather than ignored.
	if out, _, code := e.cli("show", "--all", searchID1, "--grep", "flaky"); code != 0 || !strings.Contains(out, "flaky") {
		t.Errorf("show --grep without --messages exit %d:\n%s", code, out)
	}
	for _, args := range [][]string{{"--messages", "--json"}, {"--grep", "flaky", "--json"}, {"--messages", "--archived"}} {
		out, errb, code := e.cli(append([]string{"show", "--all", searchID1}, args...)...)
		if code != 2 || out != "" || !strings.HasPrefix(errb, "sessionwatch: show: --messages ") {
			t.Errorf("show %q = %d, stdout %q, stderr %q; want exit 2 and nothing on stdout", args, code, out, errb)
		}
	}

	// The search index equals a rebuild.
	out, errb, code = e.cli("reindex", "--check")
	if code != 0 {
		t.Errorf("reindex --check exit %d:\n%s%s", code, out, errb)
	}
	// Deleting the session removes it from the results at once.
	os.Remove(p1)
	out, _, _ = e.cli("search", "--all", "flaky")
	if strings.Contains(out, "aaaaaaaa") {
		t.Errorf("a deleted session is still found:\n%s", out)
	}
	if _, errb, code := e.cli("search", "-x"); code != 2 || !strings.Contains(errb, "no word") {
		t.Errorf("search -x exit %d (%s), want a usage error", code, errb)
	}
}

// TestHighlightEscapes: snippets reach the terminal only through termSafe, in
// and around the highlighted words alike.
func TestHighlightEscapes(t *testing.T) {
	tests := []struct {
		in    string
		spans [][2]int
		color bool
		want  string
	}{
		{"plain café 東京", nil, false, "plain café 東京"},
		{"a\x1b[31mred flaky", [][2]int{{10, 15}}, true, `a\x1b[31mred ` + "\x1b[1;33mflaky\x1b[0m"},
		{"x\u202eflaky\u009b", [][2]int{{4, 9}}, false, `x\u202eflaky\u009b`},
		{"bad\xffutf8", nil, false, `bad\xffutf8`},
	}
	for _, tt := range tests {
		if got := highlight(tt.in, tt.spans, tt.color); got != tt.want {
			t.Errorf("highlight(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// jsonMessage is message with the text escaped as JSON (control characters too).
func jsonMessage(ts time.Time, text string) string {
	b, _ := json.Marshal(text)
	return `{"timestamp":"` + ts.UTC().Format(time.RFC3339Nano) + `","id":"m","role":"user","blocks":[{"type":"text","content":` + string(b) + `}]}` + "\n"
}

// TestArchiveKeeperSeesArchivesMadeBeforeTheMerge: the daemon's answer to the
// search index's "is this removed session archived?" is read again when the
// merge asking was planned after the cached list; within the minute it is kept
// otherwise. (A list cached for a minute made a merge drop the messages of a
// session archived and removed just after it was read.)
func TestArchiveKeeperSeesArchivesMadeBeforeTheMerge(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "sessions.json")
	keep := archiveKeeper(dir)
	first := time.Now()
	if keep("hyperyolo", file, first) {
		t.Fatal("kept with no archive")
	}
	line, _ := json.Marshal(map[string]any{"v": 1, "source": "hyperyolo", "layout": "hyperyolo", "id": "hyper_0a1b2c3d",
		"file": file, "retiredAt": "2026-11-22T12:00:00.000Z", "reason": "test", "record": map[string]any{"backend": "claude"}})
	if err := os.MkdirAll(filepath.Join(dir, "hyperyolo"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hyperyolo", "records.jsonl"), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if keep("hyperyolo", file, first) {
		t.Error("a merge planned before the archive was made re-read the list (the cache is not used)")
	}
	if !keep("hyperyolo", file, time.Now()) {
		t.Error("a merge planned after the archive was made does not see it")
	}
}

// TestArchivesStamp: the stamp the keeper compares before reading every
// archive's header again changes with an archive made or removed in a
// project's directory, a new project directory and records.jsonl growing, and
// only then.
func TestArchivesStamp(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "claude", "-w-p")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	last := archivesStamp(dir)
	step := func(what string, change func()) {
		t.Helper()
		change()
		now := archivesStamp(dir)
		if now == last {
			t.Errorf("%s: the stamp did not change", what)
		}
		if again := archivesStamp(dir); again != now {
			t.Errorf("%s: the stamp changed with nothing done", what)
		}
		last = now
	}
	step("an archive made", func() { os.WriteFile(filepath.Join(proj, "a.jsonl.gz"), []byte("x"), 0o600) })
	step("another project", func() { os.MkdirAll(filepath.Join(dir, "claude", "-w-q"), 0o700) })
	step("records.jsonl made", func() { os.WriteFile(filepath.Join(dir, "claude", "records.jsonl"), []byte("{}\n"), 0o600) })
	step("records.jsonl grown", func() {
		f, _ := os.OpenFile(filepath.Join(dir, "claude", "records.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("{}\n")
		f.Close()
	})
	step("an archive restored (removed)", func() { os.Remove(filepath.Join(proj, "a.jsonl.gz")) })
}

// TestSearchReindexMergesOnce: reindex is a cold build of the search index: the
// segments its sources commit (one per source here) are merged at its end into
// one, which finds every source's messages and equals a rebuild. (Built the
// ordinary way, two segments are too few to merge.)
func TestSearchReindexMergesOnce(t *testing.T) {
	e := newEnv(t)
	root2 := filepath.Join(e.home, ".wave2", "projects")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"wave","layout":"wave","root":%q},{"name":"wave2","layout":"wave","root":%q}]}`,
		e.state, filepath.Join(e.home, "archive"), e.root, root2)
	ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	appendTo(t, filepath.Join(e.project("/work/alpha"), searchID1+".jsonl"), header("/work/alpha")+message(ts, "quokka in the first source"))
	d2 := filepath.Join(root2, "-work-beta")
	if err := os.MkdirAll(d2, 0o700); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(d2, searchID2+".jsonl"), header("/work/beta")+message(ts, "quokka in the second source"))
	if out, errb, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex exit %d:\n%s%s", code, out, errb)
	}
	segs, _ := filepath.Glob(filepath.Join(e.state, "search", "seg-*"))
	if len(segs) != 1 {
		t.Errorf("after reindex: %d segment files %v, want 1", len(segs), segs)
	}
	if parts, _ := filepath.Glob(filepath.Join(e.state, "search", "*.part")); len(parts) > 0 {
		t.Errorf("merge parts left: %v", parts)
	}
	out, errb, code := e.cli("search", "--all", "quokka")
	if code != 0 || !strings.Contains(out, "aaaaaaaa") || !strings.Contains(out, "bbbbbbbb") {
		t.Errorf("search quokka exit %d:\n%s%s\nwant both sources' sessions", code, out, errb)
	}
	if out, errb, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check exit %d:\n%s%s", code, out, errb)
	}
}

// TestSearchFlagsNarrow: each of search's filters narrows the hits as its
// flag says: --source, --since and --until (dates and durations), --role,
// --limit (0: all), and the current project without --all.
func TestSearchFlagsNarrow(t *testing.T) {
	e := newEnv(t)
	root2 := filepath.Join(e.home, ".wave2", "projects")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"wave","layout":"wave","root":%q},{"name":"wave2","layout":"wave","root":%q}]}`,
		e.state, filepath.Join(e.home, "archive"), e.root, root2)
	work := filepath.Join(e.home, "work")
	os.MkdirAll(work, 0o700)
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 10, 0, 0, 0, time.UTC) }
	const idA, idB, idC = "a1a1a1a1-0000-4000-8000-000000000001", "b2b2b2b2-0000-4000-8000-000000000002", "c3c3c3c3-0000-4000-8000-000000000003"
	assistant := func(ts time.Time, text string) string {
		return `{"timestamp":"` + ts.Format(time.RFC3339Nano) + `","id":"r","role":"assistant","blocks":[{"type":"text","content":"` + text + `"}]}` + "\n"
	}
	// A: this project, January, a user message and an assistant's reply.
	appendTo(t, filepath.Join(e.project(work), idA+".jsonl"), header(work)+message(day(1, 10), "quokka alpha")+assistant(day(1, 10).Add(time.Minute), "the quokka answers"))
	// C: another project, February.
	appendTo(t, filepath.Join(e.project("/elsewhere"), idC+".jsonl"), header("/elsewhere")+message(day(2, 10), "quokka gamma"))
	// B: the second source, this project, recent.
	recent := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	d2 := filepath.Join(root2, indexer.EncodeProject(work))
	os.MkdirAll(d2, 0o700)
	appendTo(t, filepath.Join(d2, idB+".jsonl"), header(work)+message(recent, "quokka beta"))
	if out, errb, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex exit %d:\n%s%s", code, out, errb)
	}
	t.Chdir(work)
	ids := func(args ...string) string {
		t.Helper()
		out, errb, code := e.cli(append([]string{"search", "--json"}, args...)...)
		var rows []searchRow
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
			t.Fatalf("search %v = %d\n%s%s", args, code, out, errb)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.ID[:2])
			for _, m := range r.Matches {
				if slices.Contains(args, "--role") && m.Role != args[slices.Index(args, "--role")+1] {
					t.Errorf("search %v: match of role %q", args, m.Role)
				}
			}
		}
		slices.Sort(got)
		return strings.Join(got, " ")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quokka", "--all"}, "a1 b2 c3"},
		{[]string{"quokka"}, "a1 b2"},
		{[]string{"quokka", "--all", "--source", "wave2"}, "b2"},
		{[]string{"quokka", "--all", "--source", "wave"}, "a1 c3"},
		{[]string{"quokka", "--all", "--since", "2026-02-01"}, "b2 c3"},
		{[]string{"quokka", "--all", "--since", "7d"}, "b2"},
		{[]string{"quokka", "--all", "--until", "2026-01-31"}, "a1"},
		{[]string{"quokka", "--all", "--since", "2026-02-01", "--until", "2026-02-28"}, "c3"},
		{[]string{"quokka", "--all", "--role", "assistant"}, "a1"},
		{[]string{"answers", "--all", "--role", "user"}, ""},
		{[]string{"quokka", "--all", "--limit", "2"}, "2 rows"},
		{[]string{"quokka", "--all", "--limit", "0"}, "a1 b2 c3"},
	} {
		got := ids(c.args...)
		if strings.HasSuffix(c.want, " rows") {
			if n := len(strings.Fields(got)); fmt.Sprint(n, " rows") != c.want {
				t.Errorf("search %v = %q, want %s", c.args, got, c.want)
			}
			continue
		}
		if got != c.want {
			t.Errorf("search %v = %q, want %q", c.args, got, c.want)
		}
	}
	for _, bad := range [][]string{{"quokka", "--role", "robot"}, {"quokka", "--since", "someday"}, {"quokka", "--limit", "-1"}, {"quokka", "--source", "nope"}} {
		if _, errb, code := e.cli(append([]string{"search"}, bad...)...); code != 2 || !strings.HasPrefix(errb, "sessionwatch: ") {
			t.Errorf("search %v = %d %q, want a usage error (2)", bad, code, errb)
		}
	}
}
