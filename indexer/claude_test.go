package indexer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// checkStoreGoldens indexes testdata/<layout>/<name>/store and compares every catalog
// (catalog-<key>.json) and native index (native-<dir>.json) with its golden file;
// a golden file nothing was produced for is an error too.
func checkStoreGoldens(t *testing.T, layout, name string) (root, state string) {
	t.Helper()
	caseDir := filepath.Join("testdata", layout, name)
	root = filepath.Join(t.TempDir(), "store")
	state = t.TempDir()
	copyTree(t, filepath.Join(caseDir, "store"), root)
	ix := newLayoutIndexer(t, layout, root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	cats, _ := filepath.Glob(filepath.Join(state, "index", layout, "*", CatalogName))
	for _, p := range cats {
		data, err := readCatalogInline(p)
		if err != nil {
			t.Fatal(err)
		}
		got["catalog-"+filepath.Base(filepath.Dir(p))+".json"] = normalizeCatalog(t, data, root)
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != CatalogName {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		got["native-"+strings.ReplaceAll(rel, string(filepath.Separator), "_")+".json"] = bytes.ReplaceAll(data, []byte(root), []byte("$ROOT"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range got {
		names = append(names, n)
		checkGolden(t, filepath.Join(caseDir, n), got[n])
	}
	sort.Strings(names)
	if !*update {
		for _, pat := range []string{"catalog-*.json", "native-*.json"} {
			old, _ := filepath.Glob(filepath.Join(caseDir, pat))
			for _, p := range old {
				if got[filepath.Base(p)] == nil {
					t.Errorf("golden %s has no counterpart (produced %v)", p, names)
				}
			}
		}
	}
	return root, state
}

const (
	claudeS1  = "5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69"
	claudeS3  = "9c2b7e4f-1a3d-4f6b-8e5c-3d2c1b0a9f8e"
	claudeDir = "-home-u-proj"
)

// claudeConv renders a conversation line the way Claude Code writes it.
func claudeConv(typ, ts, content string, extra string) string {
	msg := fmt.Sprintf(`{"role":%q,"content":%s}`, typ, content)
	if typ == "assistant" {
		msg = fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-5-20251101","content":%s,"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":9}}`, content)
	}
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/u/proj","sessionId":%q,"version":"2.1.90","gitBranch":"main","type":%q,"message":%s%s,"uuid":"u","timestamp":%q}`, claudeS1, typ, msg, extra, ts)
}

// foldClaude folds lines into a fresh claude accumulator and summarizes it.
func foldClaude(t *testing.T, unit string, lines ...string) (*Session, int) {
	t.Helper()
	return foldLines(t, claudeLayout{}.NewAccumulator(unit), unit, lines...)
}

func TestClaudeSummary(t *testing.T) {
	main := claudeDir + "/" + claudeS1 + ".jsonl"
	user := claudeConv("user", "2026-03-01T10:00:01Z", `"  fix\n the   bug "`, "")
	asst := claudeConv("assistant", "2026-03-01T10:00:09.5Z", `[{"type":"text","text":"done"}]`, "")
	meta := claudeConv("user", "2026-03-01T10:00:00Z", `"Caveat: local commands"`, `"isMeta":true`)
	cmd := claudeConv("user", "2026-03-01T10:00:00.1Z", `"<command-name>/clear</command-name>"`, "")
	toolRes := claudeConv("user", "2026-03-01T10:00:02Z", `[{"tool_use_id":"t1","type":"tool_result","content":"ok"},{"type":"text","text":"and more"}]`, "")
	compact := claudeConv("user", "2026-03-01T10:00:03Z", `"This session is being continued"`, `"isCompactSummary":true`)
	boundary := `{"parentUuid":null,"isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","level":"info","compactMetadata":{"trigger":"manual","preTokens":9},"uuid":"b","timestamp":"2026-03-01T10:00:02.5Z"}`
	blocks := claudeConv("user", "2026-03-01T10:00:04Z", `[{"type":"image","source":{}},{"type":"text","text":"look at"},{"type":"text","text":"this\tpicture"}]`, "")
	ide := claudeConv("user", "2026-03-01T10:00:00.5Z", `[{"type":"text","text":"  <ide_selection>x</ide_selection>"},{"type":"text","text":"explain"}]`, "")
	snapshot := `{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2026-02-01T00:00:00Z"},"isSnapshotUpdate":false}`
	queue := `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-03-01T10:05:00Z","sessionId":"x","content":"later"}`
	side := `{"parentUuid":null,"isSidechain":true,"userType":"external","cwd":"/w/agent","sessionId":"` + claudeS3 + `","agentId":"abc","gitBranch":"","type":"user","message":{"role":"user","content":"Warmup"},"uuid":"w","timestamp":"2026-03-02T00:00:00Z"}`
	type want struct {
		id, typ, parent, created, last, prompt, title, branch, model, own string
		msgs, bad                                                         int
		hidden                                                            bool
	}
	tests := []struct {
		name  string
		unit  string
		lines []string
		want  want
	}{
		{"prompt after meta and command", main, []string{snapshot, meta, cmd, user, asst},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:09.500Z", "fix  the   bug", "", "main", "claude-opus-4-5-20251101", "/home/u/proj", 3, 0, false}},
		{"tool results and compact summaries are not prompts", main, []string{toolRes, boundary, compact, blocks},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:02.000Z", "2026-03-01T10:00:04.000Z", "look at", "", "main", "", "/home/u/proj", 3, 0, false}},
		{"IDE context blocks are skipped, not the message", main, []string{ide},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.500Z", "2026-03-01T10:00:00.500Z", "explain", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"metadata only", main, []string{snapshot, `{"type":"summary","summary":"Old work","leafUuid":"l"}`},
			want{claudeS1, TypeMain, "", mtimeTS, mtimeTS, claudeNoPrompt, "Old work", "", "", "", 0, 0, true}},
		{"empty file", main, nil,
			want{claudeS1, TypeMain, "", mtimeTS, mtimeTS, claudeNoPrompt, "", "", "", "", 0, 0, true}},
		{"custom title beats ai title beats summary", main, []string{
			`{"type":"custom-title","customTitle":"first","sessionId":"s"}`,
			`{"type":"summary","summary":"sum","leafUuid":"l"}`,
			`{"type":"ai-title","aiTitle":"ai","sessionId":"s"}`,
			`{"type":"custom-title","customTitle":"mine","sessionId":"s"}`,
			`{"type":"ai-title","aiTitle":"ai2","sessionId":"s"}`},
			want{claudeS1, TypeMain, "", mtimeTS, mtimeTS, claudeNoPrompt, "mine", "", "", "", 0, 0, true}},
		{"ai title beats summary", main, []string{`{"type":"ai-title","aiTitle":"ai","sessionId":"s"}`, `{"type":"summary","summary":"sum","leafUuid":"l"}`, `{"type":"task-summary","summary":"task","timestamp":"2026-03-01T00:00:00Z"}`},
			want{claudeS1, TypeMain, "", "2026-03-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z", claudeNoPrompt, "ai", "", "", "", 0, 0, true}},
		{"metadata timestamps count, branch keeps last non-empty", main, []string{user, strings.Replace(asst, `"gitBranch":"main"`, `"gitBranch":"feat"`, 1), strings.Replace(user, `"gitBranch":"main"`, `"gitBranch":""`, 1), queue},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-01T10:05:00.000Z", "fix  the   bug", "", "feat", "claude-opus-4-5-20251101", "/home/u/proj", 3, 0, false}},
		{"synthetic model is not a model", main, []string{asst, strings.Replace(asst, "claude-opus-4-5-20251101", "<synthetic>", 1)},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:09.500Z", "2026-03-01T10:00:09.500Z", claudeNoPrompt, "", "main", "claude-opus-4-5-20251101", "/home/u/proj", 2, 0, true}},
		{"sidechain first line makes a subagent", claudeDir + "/b4d6f8a0-2c4e-4a6c-8e0a-4c6e8a0c2e4f.jsonl", []string{side, user},
			want{"b4d6f8a0-2c4e-4a6c-8e0a-4c6e8a0c2e4f", TypeSubagent, claudeS3, "2026-03-02T00:00:00.000Z", "2026-03-01T10:00:01.000Z", "Warmup", "", "main", "", "/w/agent", 2, 0, false}},
		{"sidechain later does not", main, []string{user, side},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-02T00:00:00.000Z", "fix  the   bug", "", "main", "", "/home/u/proj", 2, 0, false}},
		{"nested subagent: parent from the directory", claudeDir + "/" + claudeS1 + "/subagents/agent-a1b2.jsonl", []string{side},
			want{"a1b2", TypeSubagent, claudeS1, "2026-03-02T00:00:00.000Z", "2026-03-02T00:00:00.000Z", "Warmup", "", "", "", "/w/agent", 1, 0, false}},
		{"workflow subagent", claudeDir + "/" + claudeS1 + "/subagents/workflows/r1/agent-w9.jsonl", []string{side},
			want{"w9", TypeSubagent, claudeS1, "2026-03-02T00:00:00.000Z", "2026-03-02T00:00:00.000Z", "Warmup", "", "", "", "/w/agent", 1, 0, false}},
		{"legacy subagent: parent from sessionId", claudeDir + "/agent-6f1e.jsonl", []string{side},
			want{"6f1e", TypeSubagent, claudeS3, "2026-03-02T00:00:00.000Z", "2026-03-02T00:00:00.000Z", "Warmup", "", "", "", "/w/agent", 1, 0, false}},
		{"bad lines skipped, odd types tolerated", main, []string{`{not json`, `[1]`, `"str"`, `{"type":"user","timestamp":5,"isMeta":"yes","message":"plain string","cwd":7}`, `{"type":"assistant","message":{"model":["x"],"content":{}}}`, `{"type":"user","message":{"content":[1,"x",{"type":7},{"type":"text","text":"ok then"}]}}`},
			want{claudeS1, TypeMain, "", mtimeTS, mtimeTS, "ok then", "", "", "", "", 3, 3, false}},
		{"unparseable timestamp ignored", main, []string{strings.Replace(user, "2026-03-01T10:00:01Z", "yesterday", 1)},
			want{claudeS1, TypeMain, "", mtimeTS, mtimeTS, "fix  the   bug", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"long prompt cut", main, []string{claudeConv("user", "2026-03-01T10:00:01Z", fmt.Sprintf("%q", strings.Repeat("x", 250)), "")},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-01T10:00:01.000Z", strings.Repeat("x", 200) + "…", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"whitespace-only prompt skipped", main, []string{claudeConv("user", "2026-03-01T10:00:01Z", `" \n "`, ""), user},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-01T10:00:01.000Z", "fix  the   bug", "", "main", "", "/home/u/proj", 2, 0, false}},
		{"interrupted marker is not a prompt", main, []string{claudeConv("user", "2026-03-01T10:00:00Z", `"[Request interrupted by user]"`, ""), claudeConv("user", "2026-03-01T10:00:00.2Z", `[{"type":"text","text":"[Request interrupted by user for tool use]"}]`, ""), user},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:01.000Z", "fix  the   bug", "", "main", "", "/home/u/proj", 3, 0, false}},
		{"slash command only shows the command", main, []string{claudeConv("user", "2026-03-01T10:00:00Z", `"<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>"`, ""), claudeConv("user", "2026-03-01T10:00:01Z", `"<local-command-stdout>done</local-command-stdout>"`, "")},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:01.000Z", "/init", "", "main", "", "/home/u/proj", 2, 0, false}},
		{"a later prompt beats the command", main, []string{cmd, user},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.100Z", "2026-03-01T10:00:01.000Z", "fix  the   bug", "", "main", "", "/home/u/proj", 2, 0, false}},
		{"bash input", main, []string{claudeConv("user", "2026-03-01T10:00:00Z", `"<bash-input>git status </bash-input>"`, "")},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z", "! git status", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"image only", main, []string{claudeConv("user", "2026-03-01T10:00:00Z", `[{"type":"image","source":{"type":"base64","data":"AA"}}]`, "")},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z", "Image", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"last-prompt titles before summary", main, []string{user, `{"type":"summary","summary":"sum","leafUuid":"l"}`, `{"type":"last-prompt","lastPrompt":"latest ask","sessionId":"s"}`},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-01T10:00:01.000Z", "fix  the   bug", "latest ask", "main", "", "/home/u/proj", 1, 0, false}},
		{"cut counts UTF-16 units", main, []string{claudeConv("user", "2026-03-01T10:00:01Z", fmt.Sprintf("%q", strings.Repeat("\U0001F680", 150)), "")},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-01T10:00:01.000Z", strings.Repeat("\U0001F680", 100) + "…", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"cut then trim then ellipsis", main, []string{claudeConv("user", "2026-03-01T10:00:01Z", fmt.Sprintf("%q", strings.Repeat("a", 199)+"  bcd"), "")},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:01.000Z", "2026-03-01T10:00:01.000Z", strings.Repeat("a", 199) + "…", "", "main", "", "/home/u/proj", 1, 0, false}},
		{"snapshots only are hidden", main, []string{snapshot, snapshot},
			want{claudeS1, TypeMain, "", mtimeTS, mtimeTS, claudeNoPrompt, "", "", "", "", 0, 0, true}},
		{"meta only is hidden", main, []string{meta},
			want{claudeS1, TypeMain, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z", claudeNoPrompt, "", "main", "", "/home/u/proj", 0, 0, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, bad := foldClaude(t, tt.unit, tt.lines...)
			got := want{s.ID, s.Type, s.ParentID, s.CreatedAt, s.LastActiveAt, s.FirstPrompt, s.Title, s.GitBranch, s.Model, s.Tail.OwnProject, s.MessageCount, bad, s.Hidden}
			if got != tt.want {
				t.Errorf("summary = %+v\n want %+v", got, tt.want)
			}
		})
	}
}

func TestClaudeAccumulatorStaysSmall(t *testing.T) {
	// A main transcript does not store its own session id, nor anything per line.
	acc := claudeLayout{}.NewAccumulator(claudeDir + "/" + claudeS1 + ".jsonl")
	for i := 0; i < 50; i++ {
		acc.Line([]byte(claudeConv("user", "2026-03-01T10:00:01Z", `"hello"`, "")))
	}
	st, _ := marshalNoEscape(acc)
	if strings.Contains(string(st), claudeS1) || len(st) > 300 {
		t.Errorf("state = %s, want small and without the session's own id", st)
	}
}

func TestClaudeClassify(t *testing.T) {
	tests := []struct {
		rel  string
		kind UnitKind
	}{
		{claudeDir + "/" + claudeS1 + ".jsonl", UnitLines},
		{claudeDir + "/" + strings.ToUpper(claudeS1) + ".jsonl", UnitLines},
		{claudeDir + "/agent-a1b2c3.jsonl", UnitLines},
		{claudeDir + "/" + claudeS1 + "/subagents/agent-a1b2c3.jsonl", UnitLines},
		{claudeDir + "/" + claudeS1 + "/subagents/workflows/run-1/agent-a1b2c3.jsonl", UnitLines},
		{claudeS1 + ".jsonl", UnitNone},
		{claudeDir + "/" + claudeS1 + ".cast", UnitNone},
		{claudeDir + "/" + claudeS1 + ".jsonl.bak", UnitNone},
		{claudeDir + "/notes.jsonl", UnitNone},
		{claudeDir + "/agent-.jsonl", UnitNone},
		{claudeDir + "/sessions-index.json", UnitNone},
		{claudeDir + "/" + claudeS1 + "/subagents/agent-a1b2c3.meta.json", UnitNone},
		{claudeDir + "/" + claudeS1 + "/subagents/workflows/run-1/journal.jsonl", UnitNone},
		{claudeDir + "/" + claudeS1 + "/subagents/workflows/agent-a1.jsonl", UnitNone},
		{claudeDir + "/" + claudeS1 + "/tool-results/agent-a1.jsonl", UnitNone},
		{claudeDir + "/" + claudeS1 + "/remote-agents/remote-agent-t1.meta.json", UnitNone},
		{claudeDir + "/not-a-uuid/subagents/agent-a1.jsonl", UnitNone},
		{claudeDir + "/" + claudeS1 + "/" + claudeS1 + ".jsonl", UnitNone},
		{claudeDir + "//" + claudeS1 + ".jsonl", UnitNone},
	}
	for _, tt := range tests {
		unit, got := claudeLayout{}.Classify(tt.rel)
		if got != tt.kind || (got == UnitLines && unit != tt.rel) {
			t.Errorf("Classify(%q) = %q, %v, want %v", tt.rel, unit, got, tt.kind)
		}
	}
	if got := (claudeLayout{}).ProjectDir(claudeDir + "/" + claudeS1 + "/subagents/agent-a.jsonl"); got != claudeDir {
		t.Errorf("ProjectDir = %q, want %q", got, claudeDir)
	}
}

func TestClaudeSkipDir(t *testing.T) {
	tests := []struct {
		rel  string
		skip bool
	}{
		{claudeDir, false},
		{claudeDir + "/" + claudeS1, false},
		{claudeDir + "/memory", true},
		{claudeDir + "/" + claudeS1 + "/subagents", false},
		{claudeDir + "/" + claudeS1 + "/tool-results", true},
		{claudeDir + "/" + claudeS1 + "/remote-agents", true},
		{claudeDir + "/" + claudeS1 + "/subagents/workflows", false},
		{claudeDir + "/" + claudeS1 + "/subagents/other", true},
		{claudeDir + "/" + claudeS1 + "/subagents/workflows/run-1", false},
		{claudeDir + "/" + claudeS1 + "/subagents/workflows/run-1/deeper", true},
	}
	for _, tt := range tests {
		if got := (claudeLayout{}).SkipDir(tt.rel); got != tt.skip {
			t.Errorf("SkipDir(%q) = %v, want %v", tt.rel, got, tt.skip)
		}
	}
}

// claudeLongPath is 280 characters; Claude (Node) names its directory with this
// 200-character prefix and the djb2 hash "fg60ex" (computed with node).
var claudeLongPath = "/" + strings.Join(func() []string {
	var parts []string
	for i := 0; i < 10; i++ {
		parts = append(parts, fmt.Sprintf("very-long-directory-name-%02d", i))
	}
	return parts
}(), "/")

const claudeLongPrefix = "-very-long-directory-name-00-very-long-directory-name-01-very-long-directory-name-02-very-long-directory-name-03-very-long-directory-name-04-very-long-directory-name-05-very-long-directory-name-06-ver"

func TestSanitizeClaudePath(t *testing.T) {
	// Expected values were produced by Claude Code's sanitizePath run under node.
	tests := []struct{ in, want string }{
		{"/Users/foo/my-project", "-Users-foo-my-project"},
		{"/a/b_c.d", "-a-b-c-d"},
		{`C:\Users\x\proj`, "C--Users-x-proj"},
		{"/tmp/é", "-tmp--"},
		{"/x/😀", "-x---"},
		{"", ""},
		{claudeLongPath, claudeLongPrefix + "-fg60ex"},
		{"/home/u/😀" + strings.Repeat("a", 300), "-home-u---" + strings.Repeat("a", 190) + "-kdnmzm"},
		{"/p/" + strings.Repeat("é", 250), "-p" + strings.Repeat("-", 198) + "-rcogge"},
	}
	for _, tt := range tests {
		if got := SanitizeClaudePath(tt.in); got != tt.want {
			t.Errorf("SanitizeClaudePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClaudeProjectDir(t *testing.T) {
	root := t.TempDir()
	bunHashed := claudeLongPrefix + "-1x2y3z" // the CLI's hash differs from the SDK's
	for _, d := range []string{"-home-u-proj", "-home-u-proj-foo", bunHashed, "-srv-a-b"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
	}
	os.WriteFile(filepath.Join(root, "-home-u-file"), nil, 0o600)
	tests := []struct {
		cwd, want string
		ok        bool
	}{
		{"/home/u/proj", "-home-u-proj", true},
		{"/home/u/proj/foo", "-home-u-proj-foo", true},
		{"/srv/a.b", "-srv-a-b", true},
		{"/home/u/pro", "", false},  // a short name never matches by prefix
		{"/home/u/file", "", false}, // not a directory
		{claudeLongPath, bunHashed, true},
		{claudeLongPath[:len(claudeLongPath)-1] + "X", bunHashed, true}, // differs after 200 chars
		{"/other" + claudeLongPath, "", false},
	}
	for _, tt := range tests {
		got, ok := ClaudeProjectDir(root, tt.cwd)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ClaudeProjectDir(root, %q) = %q, %v, want %q, %v", tt.cwd, got, ok, tt.want, tt.ok)
		}
	}
	// The exact (SDK-hashed) name wins over a prefix match.
	exact := SanitizeClaudePath(claudeLongPath)
	os.MkdirAll(filepath.Join(root, exact), 0o700)
	if got, _ := ClaudeProjectDir(root, claudeLongPath); got != exact {
		t.Errorf("ClaudeProjectDir(long) = %q, want exact %q", got, exact)
	}
	if got, ok := ClaudeProjectDir(filepath.Join(root, "missing"), claudeLongPath); ok {
		t.Errorf("ClaudeProjectDir(missing root) = %q, true", got)
	}
}

func TestClaudeDirProject(t *testing.T) {
	root := t.TempDir()
	write := func(dir, content string) {
		os.MkdirAll(filepath.Join(root, dir), 0o700)
		if content != "" {
			os.WriteFile(filepath.Join(root, dir, CatalogName), []byte(content), 0o600)
		}
	}
	write("-srv-legacy", `{"version":1,"entries":[],"originalPath":"/srv/legacy"}`)
	write("-srv-entry", `{"version":1,"entries":[{"sessionId":"x","projectPath":"/elsewhere"},{"sessionId":"y","projectPath":"/srv/entry"}]}`)
	write("-srv-wrong", `{"version":1,"entries":[],"originalPath":"/srv/right"}`)
	write("-srv-garbage", `{"version":1,`)
	write("-srv-none", "")
	write(claudeLongPrefix+"-1x2y3z", `{"version":1,"originalPath":"`+claudeLongPath+`"}`)
	write("-srv-typed", `{"version":1,"originalPath":7,"entries":[{"projectPath":"/srv/typed"}]}`)
	tests := []struct{ dir, want string }{
		{"-srv-legacy", "/srv/legacy"},
		{"-srv-entry", "/srv/entry"},
		{"-srv-wrong", ""}, // names a path that is not this directory's
		{"-srv-garbage", ""},
		{"-srv-none", ""},
		{"-srv-missing", ""},
		{claudeLongPrefix + "-1x2y3z", claudeLongPath},
		{"-srv-typed", "/srv/typed"},
	}
	for _, tt := range tests {
		if got := (claudeLayout{}).DirProject(root, tt.dir); got != tt.want {
			t.Errorf("DirProject(%q) = %q, want %q", tt.dir, got, tt.want)
		}
	}
}

func TestClaudeLiveSessions(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, "projects")
	reg := filepath.Join(home, "sessions")
	os.MkdirAll(root, 0o700)
	if got, err := (claudeLayout{}).LiveSessions(root); err != nil || len(got) != 0 {
		t.Fatalf("LiveSessions without registry = %v, %v, want empty", got, err)
	}
	os.MkdirAll(reg, 0o700)
	files := map[string]string{
		"123.json":  `{"pid":123,"sessionId":"aaa","cwd":"/w","startedAt":1772700000000,"kind":"interactive","entrypoint":"cli"}`,
		"456.json":  `{"pid":456,"sessionId":`,
		"789.json":  `{"pid":789,"cwd":"/w"}`,
		"999.json":  `{"sessionId":"bbb","startedAt":1}`, // pid from the file name
		"x.json":    `{"sessionId":"ccc"}`,               // no pid at all
		"200.json":  `{"pid":200,"sessionId":"ddd","startedAt":10}`,
		"201.json":  `{"pid":201,"sessionId":"ddd","startedAt":20}`, // started later: wins
		"202.json":  `{"pid":202,"sessionId":"ddd","startedAt":5}`,
		"notes.txt": `{"pid":1,"sessionId":"eee"}`,
		"300.json":  `[1,2]`,
		"301.json":  `{"pid":"301","sessionId":"fff"}`, // a string pid: the file name is used
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(reg, name), []byte(content), 0o600)
	}
	os.Mkdir(filepath.Join(reg, "dir.json"), 0o700)
	got, err := (claudeLayout{}).LiveSessions(root + "/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"aaa": 123, "bbb": 999, "ddd": 201, "fff": 301}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("LiveSessions = %v, want %v", got, want)
	}
}

func TestClaudeNativeIndex(t *testing.T) {
	sub := &Session{ID: "a1", Type: TypeSubagent, File: "/r/d/agent-a1.jsonl", Project: "/w", Tail: &Tail{Mtime: 5e6}}
	data, err := claudeLayout{}.NativeIndex(nil, "/r", "d", []*Session{sub})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"version\": 1,\n  \"originalPath\": \"/w\",\n  \"entries\": []\n}\n"; string(data) != want {
		t.Errorf("subagents only:\n%s\nwant\n%s", data, want)
	}
	m1 := &Session{ID: "m1", Type: TypeMain, File: "/r/-w/m1.jsonl", Project: "/w", FirstPrompt: "a <b> & c", CreatedAt: "c1", LastActiveAt: "l1", MessageCount: 2, Tail: &Tail{Mtime: 1772712000123456789}}
	m2 := &Session{ID: "m2", Type: TypeMain, File: "/r/-w/m0.jsonl", Project: "/x", Title: "T", GitBranch: "dev", Tail: &Tail{Mtime: 1}}
	data, _ = claudeLayout{}.NativeIndex(nil, "/r", "-w", []*Session{m1, sub, m2})
	want := `{
  "version": 1,
  "originalPath": "/w",
  "entries": [
    {
      "sessionId": "m1",
      "fullPath": "/r/-w/m1.jsonl",
      "fileMtime": 1772712000123,
      "firstPrompt": "a <b> & c",
      "messageCount": 2,
      "created": "c1",
      "modified": "l1",
      "gitBranch": "",
      "projectPath": "/w",
      "isSidechain": false
    },
    {
      "sessionId": "m2",
      "fullPath": "/r/-w/m0.jsonl",
      "fileMtime": 0,
      "firstPrompt": "",
      "summary": "T",
      "messageCount": 0,
      "created": "",
      "modified": "",
      "gitBranch": "dev",
      "projectPath": "/x",
      "isSidechain": false
    }
  ]
}
`
	if string(data) != want {
		t.Errorf("NativeIndex:\n%s", lineDiff(string(data), want))
	}
}

func TestClaudeGolden(t *testing.T) {
	root, state := checkStoreGoldens(t, "claude", "basic")
	// Transcripts under tool-results/ are never read, and files that are not sessions
	// stay untouched.
	ix := newLayoutIndexer(t, "claude", root, state, false)
	ix.Load()
	for _, s := range ix.Sessions() {
		if strings.Contains(s.File, "tool-results") || strings.HasSuffix(s.File, "notes.jsonl") || strings.HasSuffix(s.File, "journal.jsonl") {
			t.Errorf("indexed a file that is no session: %s", s.File)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "-home-u-scratch", "memory", "MEMORY.md")); err != nil {
		t.Errorf("memory file: %v", err)
	}
	assertLayoutConverged(t, "claude", root, state)
}

func TestClaudeIncremental(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, claudeDir)
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(dir, claudeS1+".jsonl")
	ix := newLayoutIndexer(t, "claude", root, state, false)
	ix.Reconcile()

	steps := []struct {
		line            string
		msgs            int
		prompt, last    string
		title, sessType string
	}{
		{`{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2026-03-01T09:00:00Z"},"isSnapshotUpdate":false}`, 0, claudeNoPrompt, mtimeNow, "", TypeMain},
		{claudeConv("user", "2026-03-01T10:00:00Z", `"<command-name>/init</command-name>"`, ""), 1, "/init", "2026-03-01T10:00:00.000Z", "", TypeMain},
		{claudeConv("user", "2026-03-01T10:00:01Z", `"write the docs"`, ""), 2, "write the docs", "2026-03-01T10:00:01.000Z", "", TypeMain},
		{"{corrupt", 2, "write the docs", "2026-03-01T10:00:01.000Z", "", TypeMain},
		{claudeConv("assistant", "2026-03-01T10:00:05Z", `[{"type":"text","text":"ok"}]`, ""), 3, "write the docs", "2026-03-01T10:00:05.000Z", "", TypeMain},
		{`{"type":"ai-title","aiTitle":"Docs","sessionId":"` + claudeS1 + `"}`, 3, "write the docs", "2026-03-01T10:00:05.000Z", "Docs", TypeMain},
		{claudeConv("user", "2026-03-01T10:01:00Z", `"more"`, ""), 4, "write the docs", "2026-03-01T10:01:00.000Z", "Docs", TypeMain},
	}
	for i, st := range steps {
		// Half a line first: nothing changes until its newline arrives.
		half := len(st.line) / 2
		appendFile(t, file, st.line[:half])
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if s := ix.Sessions()[0]; s.MessageCount != steps[i-1].msgs || s.SkippedLines > 1 {
				t.Errorf("step %d: partial line changed the session: %+v", i, s)
			}
		}
		appendFile(t, file, st.line[half:]+"\n")
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		project := "/home/u/proj"
		if i == 0 {
			project = "" // no line has named a cwd yet
		}
		c := layoutCatalog(t, state, "claude", project)
		if len(c.Sessions) != 1 {
			t.Fatalf("step %d: %d sessions", i, len(c.Sessions))
		}
		s := c.Sessions[0]
		last := st.last
		if last == mtimeNow {
			last = s.CreatedAt // no timestamp yet: both are the file's mtime
		}
		if s.MessageCount != st.msgs || s.FirstPrompt != st.prompt || s.LastActiveAt != last || s.Title != st.title || s.Type != st.sessType {
			t.Errorf("step %d: got msgs %d prompt %q last %s title %q type %s, want %d %q %s %q %s", i, s.MessageCount, s.FirstPrompt, s.LastActiveAt, s.Title, s.Type, st.msgs, st.prompt, last, st.title, st.sessType)
		}
		if s.Tail.Offset != s.SizeBytes {
			t.Errorf("step %d: offset %d, size %d", i, s.Tail.Offset, s.SizeBytes)
		}
		assertLayoutConverged(t, "claude", root, state)
	}
	if n := ix.Sessions()[0].SkippedLines; n != 1 {
		t.Errorf("skipped lines = %d, want 1", n)
	}
	// A sub-agent appears in a new session directory: the watcher reports the dir.
	subDir := filepath.Join(dir, claudeS1, "subagents")
	os.MkdirAll(subDir, 0o700)
	appendFile(t, filepath.Join(subDir, "agent-a1.jsonl"), strings.Replace(claudeConv("user", "2026-03-01T10:00:02Z", `"find docs"`, `"agentId":"a1"`), `"isSidechain":false`, `"isSidechain":true`, 1)+"\n")
	if err := ix.Update([]string{filepath.Join(dir, claudeS1)}); err != nil {
		t.Fatal(err)
	}
	c := layoutCatalog(t, state, "claude", "/home/u/proj")
	if len(c.Sessions) != 2 || c.Sessions[1].ID != "a1" || c.Sessions[1].ParentID != claudeS1 || c.Sessions[1].Type != TypeSubagent {
		t.Fatalf("after sub-agent: %+v", c.Sessions)
	}
	native, _ := os.ReadFile(filepath.Join(dir, CatalogName))
	if strings.Contains(string(native), `"a1"`) || !strings.Contains(string(native), `"messageCount": 4`) {
		t.Errorf("native index:\n%s", native)
	}
	assertLayoutConverged(t, "claude", root, state)

	// Restart: unchanged files cost no reads; an append costs only its bytes.
	restartIdle(t, "claude", root, state)
	line := `{"type":"custom-title","customTitle":"Docs v2","sessionId":"` + claudeS1 + `"}` + "\n"
	appendFile(t, file, line)
	ix3 := newLayoutIndexer(t, "claude", root, state, false)
	ix3.Load()
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix3.Stats().BytesRead, int64(len(line)+2*fpWindow+headWindow); got != want {
		t.Errorf("restart after append read %d bytes, want %d", got, want)
	}
	for _, s := range ix3.Sessions() {
		if s.ID == claudeS1 && (s.Title != "Docs v2" || s.MessageCount != 4 || s.FirstPrompt != "write the docs") {
			t.Errorf("after restart: %+v", s)
		}
	}
	assertLayoutConverged(t, "claude", root, state)
}

// mtimeNow marks an expected time that is the file's mtime.
const mtimeNow = "mtime"

// FuzzClaudeLine feeds arbitrary lines to the claude accumulator: it must never
// panic, a rejected line must leave the state unchanged, and the state must survive
// a JSON round trip.
func FuzzClaudeLine(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/claude/*/store/*/*.jsonl")
	more, _ := filepath.Glob("testdata/claude/*/store/*/*/subagents/*.jsonl")
	for _, p := range append(seeds, more...) {
		data, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(data), "\n") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"text","text":7}]}}`))
	f.Add([]byte(`{"type":"user","message":{"content":"\u0000<x"},"isSidechain":true}`))
	f.Add([]byte(`{"message":null,"timestamp":null,"cwd":null}`))
	units := []string{claudeDir + "/" + claudeS1 + ".jsonl", claudeDir + "/agent-x.jsonl", claudeDir + "/" + claudeS1 + "/subagents/agent-y.jsonl"}
	f.Add([]byte("{\"type\":\"user\",\"gitBranch\":\"b\xff\",\"message\":{\"content\":\"\xfe\"}}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, unit := range units {
			acc := claudeLayout{}.NewAccumulator(unit).(*claudeAcc)
			acc.Line([]byte(claudeConv("user", "2026-01-01T00:00:00Z", `"<local-command-stdout>x</local-command-stdout>"`, "")))
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
			back := claudeLayout{}.NewAccumulator(unit).(*claudeAcc)
			if err := jsonUnmarshal(st, back); err != nil {
				t.Fatalf("state round trip: %v", err)
			}
			a1, a2 := *acc, *back
			a1.parsed, a1.u, a2.parsed, a2.u = false, claudeUnit{}, false, claudeUnit{} // caches
			if a1 != a2 {
				t.Fatalf("state round trip: %+v != %+v", a2, a1)
			}
			s1, s2 := &Session{Tail: &Tail{}}, &Session{Tail: &Tail{}}
			facts := FileFacts{Unit: unit, Mtime: ParseTime(mtimeTS)}
			acc.Summarize(s1, facts)
			back.Summarize(s2, facts)
			if s1.Tail.OwnProject != s2.Tail.OwnProject || s1.ID != s2.ID || s1.FirstPrompt != s2.FirstPrompt || s1.Title != s2.Title || s1.LastActiveAt != s2.LastActiveAt {
				t.Fatalf("restored state summarizes differently: %+v vs %+v", s1, s2)
			}
		}
	})
}

func TestClaudeInvalidUTF8(t *testing.T) {
	// Raw invalid bytes in a string decode as U+FFFD, as encoding/json does.
	s, bad := foldClaude(t, claudeDir+"/"+claudeS1+".jsonl", "{\"type\":\"user\",\"cwd\":\"/w/\xff\",\"message\":{\"content\":\"hi \xfe\"}}")
	if bad != 0 || s.Tail.OwnProject != "/w/\uFFFD" || s.FirstPrompt != "hi \uFFFD" {
		t.Errorf("cwd %q prompt %q bad %d", s.Tail.OwnProject, s.FirstPrompt, bad)
	}
}

func TestClaudeCompanions(t *testing.T) {
	l := claudeLayout{}
	main := &Session{Type: TypeMain, File: "/r/p/" + claudeCompanionID + ".jsonl"}
	got := l.Companions(main)
	want := []string{"/r/p/" + claudeCompanionID, "/r/p/" + claudeCompanionID + ".cast"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Companions(main) = %v, want %v", got, want)
	}
	if got := l.Companions(&Session{Type: TypeSubagent, File: "/r/p/x/subagents/agent-a.jsonl"}); got != nil {
		t.Errorf("Companions(subagent) = %v, want none", got)
	}
}

const claudeCompanionID = "5f0c2b1a-9d3e-4c7b-8a6f-1e2d3c4b5a69"

func TestNodeMtimeMs(t *testing.T) {
	tests := []struct {
		name string
		ns   int64
		want int64
	}{
		{"whole ms", 1_767_225_600_123_000_000, 1_767_225_600_123},
		{"below half truncates", 1_767_225_600_123_400_000, 1_767_225_600_123},
		{"float64 sum as Node computes it", 1_767_225_600_123_499_999, 1_767_225_600_124},
		{"half rounds up", 1_767_225_600_123_500_000, 1_767_225_600_124},
		{"above half rounds up", 1_767_225_600_123_999_700, 1_767_225_600_124},
		{"epoch", 0, 0},
	}
	for _, tt := range tests {
		if got := NodeMtimeMs(tt.ns); got != tt.want {
			t.Errorf("%s: NodeMtimeMs(%d) = %d, want %d", tt.name, tt.ns, got, tt.want)
		}
	}
}
