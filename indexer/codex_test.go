package indexer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	codexID   = "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"
	codexUnit = "2026/03/01/rollout-2026-03-01T10-00-00-" + codexID + ".jsonl"
)

// codexMeta renders a session_meta line with the given source (raw JSON) and extra
// payload fields.
func codexMeta(ts, id, cwd, source, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"timestamp":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.98.0","source":%s,"model_provider":"openai","git":{"commit_hash":"4f2a","branch":"main"}%s}}`, ts, id, ts, cwd, source, extra)
}

func codexEvent(ts, typ, message string) string {
	return fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":%q,"message":%q}}`, ts, typ, message)
}

func codexTurn(ts, model string) string {
	return fmt.Sprintf(`{"timestamp":%q,"type":"turn_context","payload":{"cwd":"/w","approval_policy":"on-request","model":%q,"effort":"medium"}}`, ts, model)
}

// foldCodex folds lines into a fresh codex accumulator and summarizes it.
func foldCodex(t *testing.T, unit string, lines ...string) (*Session, int) {
	t.Helper()
	return foldLines(t, codexLayout{}.NewAccumulator(unit), unit, lines...)
}

func TestCodexSummary(t *testing.T) {
	meta := codexMeta("2026-03-01T09:00:00.25Z", codexID, "/home/u/proj", `"cli"`, "")
	user := codexEvent("2026-03-01T09:00:01Z", "user_message", "  add a\n  flag ")
	agent := codexEvent("2026-03-01T09:00:05Z", "agent_message", "done")
	turn1 := codexTurn("2026-03-01T09:00:00.5Z", "gpt-5-codex")
	turn2 := codexTurn("2026-03-01T09:10:00Z", "gpt-5.1-codex-max")
	compacted := `{"timestamp":"2026-03-01T09:20:00Z","type":"compacted","payload":{"message":"` + strings.Repeat("summary ", 1000) + `","replacement_history":[{"type":"message","role":"user","content":[]}]}}`
	type want struct {
		id, typ, parent, created, last, prompt, provider, model, branch, own string
		msgs, bad                                                            int
	}
	tests := []struct {
		name  string
		lines []string
		want  want
	}{
		// lastActiveAt is the last line's timestamp (in file order, not the newest).
		{"meta, turns and messages", []string{meta, turn1, user, agent, turn2, agent},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T09:00:05.000Z", "add a flag", "openai", "gpt-5.1-codex-max", "main", "/home/u/proj", 3, 0}},
		{"meta timestamp wins over line timestamps", []string{turn1, strings.Replace(meta, `"timestamp":"2026-03-01T09:00:00.25Z","cwd"`, `"timestamp":"2026-03-01T08:59:59Z","cwd"`, 1)},
			want{codexID, TypeMain, "", "2026-03-01T08:59:59.000Z", "2026-03-01T09:00:00.250Z", "", "openai", "gpt-5-codex", "main", "/home/u/proj", 0, 0}},
		{"no user message", []string{meta, turn1},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T09:00:00.500Z", "", "openai", "gpt-5-codex", "main", "/home/u/proj", 0, 0}},
		{"empty file", nil,
			want{codexID, TypeMain, "", mtimeTS, mtimeTS, "", "", "", "", "", 0, 0}},
		{"no meta: id from the file name, created from the first line", []string{user, agent},
			want{codexID, TypeMain, "", "2026-03-01T09:00:01.000Z", "2026-03-01T09:00:05.000Z", "add a flag", "", "", "", "", 2, 0}},
		{"only the first session_meta counts", []string{meta, codexMeta("2026-03-01T09:30:00Z", "0199ffff-0000-7000-8000-000000000000", "/else", `{"subagent":"review"}`, `"forked_from_id":"x"`)},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T09:30:00.000Z", "", "openai", "", "main", "/home/u/proj", 0, 0}},
		{"session_id accepted", []string{strings.Replace(meta, `"id":`, `"session_id":`, 1)},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T09:00:00.250Z", "", "openai", "", "main", "/home/u/proj", 0, 0}},
		{"meta id differs from the file name", []string{strings.Replace(meta, codexID, "0199eeee-0000-7000-8000-000000000000", 1)},
			want{"0199eeee-0000-7000-8000-000000000000", TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T09:00:00.250Z", "", "openai", "", "main", "/home/u/proj", 0, 0}},
		{"subagent by string", []string{codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `{"subagent":"review"}`, "")},
			want{codexID, TypeSubagent, "", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.000Z", "", "openai", "", "main", "/p", 0, 0}},
		{"subagent by thread_spawn", []string{codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `{"subagent":{"thread_spawn":{"parent_thread_id":"par","depth":1}}}`, "")},
			want{codexID, TypeSubagent, "par", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.000Z", "", "openai", "", "main", "/p", 0, 0}},
		{"forked_from_id names the parent", []string{codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `{"subagent":{"thread_spawn":{"parent_thread_id":"par","depth":1}}}`, `"forked_from_id":"fork"`)},
			want{codexID, TypeSubagent, "fork", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.000Z", "", "openai", "", "main", "/p", 0, 0}},
		{"a fork that is no subagent stays main", []string{codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `"cli"`, `"forked_from_id":"fork"`)},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.000Z", "", "openai", "", "main", "/p", 0, 0}},
		{"object source without subagent", []string{codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `{"custom":"atlas"}`, "")},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.000Z", "", "openai", "", "main", "/p", 0, 0}},
		{"null subagent", []string{codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `{"subagent":null}`, "")},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.000Z", "", "openai", "", "main", "/p", 0, 0}},
		{"instruction messages are no prompt", []string{
			`{"timestamp":"2026-03-01T09:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"<user_instructions>x</user_instructions>","kind":"user_instructions"}}`,
			`{"timestamp":"2026-03-01T09:00:02Z","type":"event_msg","payload":{"type":"user_message","message":"  ","kind":"plain"}}`,
			`{"timestamp":"2026-03-01T09:00:03Z","type":"event_msg","payload":{"type":"user_message","message":"real","kind":"plain"}}`},
			want{codexID, TypeMain, "", "2026-03-01T09:00:01.000Z", "2026-03-01T09:00:03.000Z", "real", "", "", "", "", 3, 0}},
		{"compacted lines are not kept", []string{meta, compacted},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T09:20:00.000Z", "", "openai", "", "main", "/home/u/proj", 0, 0}},
		{"unknown types count their time only", []string{meta, `{"timestamp":"2026-03-01T10:00:00Z","type":"world_state","payload":{"type":"user_message","message":"no"}}`, `{"type":"inter_agent_communication","payload":{}}`},
			want{codexID, TypeMain, "", "2026-03-01T09:00:00.250Z", "2026-03-01T10:00:00.000Z", "", "openai", "", "main", "/home/u/proj", 0, 0}},
		{"bad lines skipped, odd types tolerated", []string{`{"timestamp":`, `[1]`, `7`, `{"timestamp":5,"type":"session_meta","payload":{"id":9,"cwd":"/p","source":7,"git":"main"}}`, `{"type":"event_msg","payload":{"type":"user_message","message":{"text":"x"}}}`, `{"type":"turn_context","payload":"x"}`, `{"type":"event_msg","payload":{"type":"agent_message","message":null}}`},
			want{codexID, TypeMain, "", mtimeTS, mtimeTS, "", "", "", "", "/p", 2, 3}},
		{"long prompt cut", []string{codexEvent("2026-03-01T09:00:01Z", "user_message", strings.Repeat("ab ", 100))},
			want{codexID, TypeMain, "", "2026-03-01T09:00:01.000Z", "2026-03-01T09:00:01.000Z", strings.TrimSpace(strings.Repeat("ab ", 67)) + "…", "", "", "", "", 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, bad := foldCodex(t, codexUnit, tt.lines...)
			got := want{s.ID, s.Type, s.ParentID, s.CreatedAt, s.LastActiveAt, s.FirstPrompt, s.Provider, s.Model, s.GitBranch, s.Tail.OwnProject, s.MessageCount, bad}
			if got != tt.want {
				t.Errorf("summary = %+v\n want %+v", got, tt.want)
			}
		})
	}
}

func TestCodexAccumulatorStaysSmall(t *testing.T) {
	acc := codexLayout{}.NewAccumulator(codexUnit)
	acc.Line([]byte(codexMeta("2026-03-01T09:00:00Z", codexID, "/p", `"cli"`, "")))
	acc.Line([]byte(`{"timestamp":"2026-03-01T09:20:00Z","type":"compacted","payload":{"message":"` + strings.Repeat("x", 100000) + `"}}`))
	st, _ := marshalNoEscape(acc)
	if len(st) > 300 || strings.Contains(string(st), codexID) {
		t.Errorf("state = %s, want small and without the file's own id", st)
	}
}

func TestCodexClassify(t *testing.T) {
	tests := []struct {
		rel  string
		kind UnitKind
	}{
		{codexUnit, UnitLines},
		{"2025/09/14/rollout-2025-09-14T16-20-05-5973B6C0-94B8-487B-A530-2AEB6098AE0E.jsonl", UnitLines},
		{"2026/03/01/rollout-2026-03-01T10-00-00-" + codexID + ".json", UnitNone},
		{"2026/03/01/rollout-2026-03-01T10-00-" + codexID + ".jsonl", UnitNone},
		{"2026/03/01/rollout-" + codexID + ".jsonl", UnitNone},
		{"2026/03/01/notes.jsonl", UnitNone},
		{"2026/03/rollout-2026-03-01T10-00-00-" + codexID + ".jsonl", UnitNone},
		{"2026/03/01/x/rollout-2026-03-01T10-00-00-" + codexID + ".jsonl", UnitNone},
		{"26/03/01/rollout-2026-03-01T10-00-00-" + codexID + ".jsonl", UnitNone},
		{"rollout-2026-03-01T10-00-00-" + codexID + ".jsonl", UnitNone},
		{"2026/03/01/rollout-2026-03-01T10-00-00-" + codexID[:35] + "g.jsonl", UnitNone},
	}
	for _, tt := range tests {
		unit, got := codexLayout{}.Classify(tt.rel)
		if got != tt.kind || (got == UnitLines && unit != tt.rel) {
			t.Errorf("Classify(%q) = %q, %v, want %v", tt.rel, unit, got, tt.kind)
		}
	}
	if got := (codexLayout{}).ProjectDir(codexUnit); got != "" {
		t.Errorf("ProjectDir = %q, want \"\"", got)
	}
}

func TestCodexSkipDir(t *testing.T) {
	tests := []struct {
		rel  string
		skip bool
	}{
		{"2026", false},
		{"2026/03", false},
		{"2026/03/01", false},
		{"2026/03/01/extra", true},
		{"2026/03/01/a/b", true},
		{"archived", true},
		{"2026/3", true},
		{"2026/03/xx", true},
	}
	for _, tt := range tests {
		if got := (codexLayout{}).SkipDir(tt.rel); got != tt.skip {
			t.Errorf("SkipDir(%q) = %v, want %v", tt.rel, got, tt.skip)
		}
	}
}

func TestCodexGolden(t *testing.T) {
	root, state := checkStoreGoldens(t, "codex", "basic")
	if _, err := os.Stat(filepath.Join(root, CatalogName)); !os.IsNotExist(err) {
		t.Errorf("codex has no native index, found one (%v)", err)
	}
	assertLayoutConverged(t, "codex", root, state)
}

func TestCodexIncremental(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "2026", "03", "01")
	ix := newLayoutIndexer(t, "codex", root, state, false)
	ix.Reconcile()
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(root, filepath.FromSlash(codexUnit))
	// The watcher reports the new date directories; the file is created inside.
	appendFile(t, file, "")
	if err := ix.Update([]string{filepath.Join(root, "2026")}); err != nil {
		t.Fatal(err)
	}
	if n := len(ix.Sessions()); n != 1 {
		t.Fatalf("%d sessions after the file appeared, want 1", n)
	}
	steps := []struct {
		line          string
		msgs          int
		prompt, model string
		last          string
	}{
		{codexMeta("2026-03-01T09:00:00Z", codexID, "/home/u/proj", `"cli"`, ""), 0, "", "", "2026-03-01T09:00:00.000Z"},
		{codexTurn("2026-03-01T09:00:01Z", "gpt-5-codex"), 0, "", "gpt-5-codex", "2026-03-01T09:00:01.000Z"},
		{codexEvent("2026-03-01T09:00:02Z", "user_message", "fix it"), 1, "fix it", "gpt-5-codex", "2026-03-01T09:00:02.000Z"},
		{`{"timestamp":"2026-03-01T09:00:03Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}`, 1, "fix it", "gpt-5-codex", "2026-03-01T09:00:03.000Z"},
		{"not json", 1, "fix it", "gpt-5-codex", "2026-03-01T09:00:03.000Z"},
		{codexEvent("2026-03-01T09:00:04Z", "agent_message", "fixed"), 2, "fix it", "gpt-5-codex", "2026-03-01T09:00:04.000Z"},
		{codexTurn("2026-03-01T09:05:00Z", "gpt-5.1-codex-max"), 2, "fix it", "gpt-5.1-codex-max", "2026-03-01T09:05:00.000Z"},
	}
	for i, st := range steps {
		half := len(st.line) / 2
		appendFile(t, file, st.line[:half])
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		appendFile(t, file, st.line[half:]+"\n")
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		c := layoutCatalog(t, state, "codex", "/home/u/proj")
		if len(c.Sessions) != 1 {
			t.Fatalf("step %d: %d sessions", i, len(c.Sessions))
		}
		s := c.Sessions[0]
		if s.MessageCount != st.msgs || s.FirstPrompt != st.prompt || s.Model != st.model || s.LastActiveAt != st.last || s.ID != codexID {
			t.Errorf("step %d: got msgs %d prompt %q model %q last %s id %s", i, s.MessageCount, s.FirstPrompt, s.Model, s.LastActiveAt, s.ID)
		}
		assertLayoutConverged(t, "codex", root, state)
	}
	if _, err := os.Stat(filepath.Join(state, "index", "codex", ProjectKey(""))); !os.IsNotExist(err) {
		t.Errorf("catalog of the empty project left behind (%v)", err)
	}

	restartIdle(t, "codex", root, state)
	line := codexEvent("2026-03-01T09:06:00Z", "user_message", "thanks") + "\n"
	before, _ := os.Stat(file)
	appendFile(t, file, line)
	ix3 := newLayoutIndexer(t, "codex", root, state, false)
	ix3.Load()
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix3.Stats().BytesRead, int64(len(line)+2*fpWindow)+min(before.Size(), headWindow); got != want {
		t.Errorf("restart after append read %d bytes, want %d", got, want)
	}
	if s := ix3.Sessions()[0]; s.MessageCount != 3 || s.FirstPrompt != "fix it" || s.SkippedLines != 1 {
		t.Errorf("after restart: %+v", s)
	}
	assertLayoutConverged(t, "codex", root, state)
}

// FuzzCodexLine feeds arbitrary lines to the codex accumulator: it must never
// panic, a rejected line must leave the state unchanged, and the state must survive
// a JSON round trip.
func FuzzCodexLine(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/codex/*/store/*/*/*/*.jsonl")
	for _, p := range seeds {
		data, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(data), "\n") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte(`{"type":"session_meta","payload":{"source":{"subagent":{"thread_spawn":7}}}}`))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"user_message","message":"\ud800"}}`))
	f.Add([]byte(`{"type":"session_meta","payload":null}`))
	f.Add([]byte("{\"type\":\"session_meta\",\"payload\":{\"cwd\":\"/w/\xff\"}}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		acc := codexLayout{}.NewAccumulator(codexUnit).(*codexAcc)
		acc.Line([]byte(codexTurn("2026-01-01T00:00:00Z", "m")))
		before, _ := marshalNoEscape(acc)
		if err := acc.Line(line); err != nil {
			after, _ := marshalNoEscape(acc)
			if !bytes.Equal(before, after) {
				t.Fatalf("rejected line changed state: %s -> %s", before, after)
			}
		}
		st, err := marshalNoEscape(acc)
		if err != nil {
			t.Fatal(err)
		}
		back := codexLayout{}.NewAccumulator(codexUnit).(*codexAcc)
		if err := jsonUnmarshal(st, back); err != nil || *back != *acc {
			t.Fatalf("state round trip: %v %+v != %+v", err, *back, *acc)
		}
	})
}
