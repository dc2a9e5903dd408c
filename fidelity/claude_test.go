package fidelity

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// claudeTricky is a hand-made session: what real users' transcripts hold that a
// generated store does not.
type claudeTricky struct {
	id, name string
	lines    []string
	torn     string // a last line without its newline
}

func claudeTrickySessions(cwd string) []claudeTricky {
	n, k := 0, 0 // lines written, lines of this session
	conv := func(typ, parent, content, extra string) string {
		n++
		k++
		if parent == "root" {
			parent, k = "null", 1
		} else if parent == "null" {
			parent = fmt.Sprintf(`"u%d"`, k-1) // the chain Claude Code writes
		}
		ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second).Format(time.RFC3339Nano)
		msg := fmt.Sprintf(`{"role":"user","content":%s}`, content)
		if typ == "assistant" {
			msg = fmt.Sprintf(`{"role":"assistant","model":"claude-x","content":%s,"stop_reason":"end_turn"}`, content)
		}
		if extra != "" {
			extra = "," + extra
		}
		return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":%s,"uuid":"u%d","timestamp":%q,"cwd":%q,"sessionId":"s","gitBranch":"main"%s}`,
			parent, typ, msg, k, ts, cwd, extra)
	}
	ok := `[{"type":"text","text":"ok"}]`
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	id := func(c byte) string {
		s := strings.Repeat(string(c), 32)
		return s[:8] + "-" + s[8:12] + "-4" + s[13:16] + "-8" + s[17:20] + "-" + s[20:32]
	}
	return []claudeTricky{
		{id: id('1'), name: "ide context", lines: []string{conv("user", "root", `[{"type":"text","text":"<ide_opened_file>The user opened /x/main.go</ide_opened_file>"},{"type":"text","text":"Explain what main.go does"}]`, ""), conv("assistant", `"u1"`, ok, "")}},
		{id: id('2'), name: "interrupted", lines: []string{conv("user", "root", q("[Request interrupted by user]"), ""), conv("user", "null", q("[Request interrupted by user for tool use]"), ""), conv("user", "null", q("real prompt"), ""), conv("assistant", "null", ok, "")}},
		{id: id('3'), name: "slash command only", lines: []string{conv("user", "root", q("<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>"), ""), conv("user", "null", q("<local-command-stdout>done</local-command-stdout>"), "")}},
		{id: id('4'), name: "bash input", lines: []string{conv("user", "root", q("<bash-input>git status</bash-input>"), "")}},
		{id: id('5'), name: "image only", lines: []string{conv("user", "root", `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`, ""), conv("assistant", "null", ok, "")}},
		{id: id('6'), name: "snapshots only", lines: []string{`{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2026-01-01T00:00:00.000Z"},"isSnapshotUpdate":false}`}},
		{id: id('7'), name: "summary only", lines: []string{`{"type":"summary","summary":"A summary","leafUuid":"x"}`}},
		{id: id('8'), name: "last-prompt", lines: []string{conv("user", "root", q("first thing"), ""), conv("assistant", "null", ok, ""), `{"type":"last-prompt","lastPrompt":"the last thing","sessionId":"s"}`}},
		{id: id('9'), name: "150 rockets", lines: []string{conv("user", "root", q(strings.Repeat("🚀", 150)), "")}},
		{id: id('a'), name: "meta and command", lines: []string{conv("user", "root", q("hello"), ""), conv("user", "null", q("caveat"), `"isMeta":true`), conv("user", "null", q("<command-name>/model</command-name>"), ""), conv("assistant", "null", ok, ""), conv("user", "null", q("x"), "")}},
		{id: id('b'), name: "edited branch", lines: []string{conv("user", "root", q("hello"), ""), conv("assistant", `"u1"`, ok, ""), conv("user", `"u2"`, q("v1"), ""), conv("assistant", `"u3"`, ok, ""), conv("user", `"u2"`, q("v2 edited"), ""), conv("assistant", `"u5"`, ok, "")}},
		{id: id('c'), name: "cut then trim", lines: []string{conv("user", "root", q(strings.Repeat("a", 199)+"  bcd"), "")}},
		{id: id('d'), name: "unicode and whitespace runs", lines: []string{conv("user", "root", q("  Prüfe   die\tÄnderungen\nbitte — 日本語 ✓  "), ""), conv("assistant", "null", ok, "")}},
		{id: id('e'), name: "torn last line", lines: []string{conv("user", "root", q("keep going"), ""), conv("assistant", "null", ok, "")},
			torn: strings.Replace(conv("user", "null", q("half"), ""), `"gitBranch":"main"`, `"gitBranch":"torn-branch"`, 1)},
		{id: id('f'), name: "first line over 64 KiB", lines: []string{conv("user", "root", q("big "+strings.Repeat("x", 70<<10)), ""), conv("assistant", "null", ok, "")}},
	}
}

// claudeExpected lists, by "<session> <field>", where sessionwatch and the Agent SDK
// knowingly differ, and why (docs/fidelity.md).
func claudeExpected(ts []claudeTricky) map[string]string {
	byName := map[string]string{}
	for _, c := range ts {
		byName[c.name] = c.id
	}
	return map[string]string{
		byName["summary only"] + " listed":                "a summary and no conversation: the SDK lists it, Claude Code 2.1's picker and sessionwatch hide it (nothing to resume)",
		byName["summary only"] + " title":                 "hidden by sessionwatch (see listed)",
		byName["edited branch"] + " messageCount":         "the SDK counts the live branch only; sessionwatch counts every non-meta user and assistant line (no parentUuid chain kept)",
		byName["torn last line"] + " messageCount":        "the SDK counts a torn last line (no newline yet); sessionwatch indexes a line once its newline arrives",
		byName["first line over 64 KiB"] + " listed":      "the SDK reads the first 64 KiB only and hides a session whose first line is longer",
		byName["first line over 64 KiB"] + " firstPrompt": "hidden by the SDK (see listed)",
		byName["first line over 64 KiB"] + " title":       "hidden by the SDK (see listed)",
	}
}

// sdkSession is one row of the Agent SDK's listSessions, plus its message count.
type sdkSession struct {
	SessionID    string `json:"sessionId"`
	Summary      string `json:"summary"`
	LastModified int64  `json:"lastModified"`
	FirstPrompt  string `json:"firstPrompt"`
	CreatedAt    int64  `json:"createdAt"`
	MessageCount int    `json:"messageCount"`
}

type pickerRow struct {
	Dir          string `json:"dir"`
	SessionID    string `json:"sessionId"`
	FirstPrompt  string `json:"firstPrompt"`
	Summary      string `json:"summary"`
	MessageCount int    `json:"messageCount"`
}

type claudeReaders struct {
	CLIVersion string           `json:"cliVersion"`
	SDK        []sdkSession     `json:"sdk"`
	Picker     []pickerRow      `json:"picker"`
	Reparsed   []string         `json:"reparsed"`
	Mtimes     map[string]int64 `json:"mtimes"`
}

// TestClaudeAgainstRealReaders compares sessionwatch with @anthropic-ai/claude-agent-sdk's
// listSessions/getSessionMessages and with Claude Code 2.1.29's reading of the
// native sessions-index.json, on a generated store plus hand-made sessions.
func TestClaudeAgainstRealReaders(t *testing.T) {
	dir := readers(t)
	home := t.TempDir()
	root := filepath.Join(home, ".claude", "projects")
	st, err := gen.Plan(root, gen.Spec{Layout: "claude", Projects: 3, Sessions: 60, Lines: 8, LineSize: 400, Subagents: 0.1, Seed: 12, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(home, "code", "tricky")
	pdir := filepath.Join(root, indexer.SanitizeClaudePath(cwd))
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		t.Fatal(err)
	}
	tricky := claudeTrickySessions(cwd)
	for i, c := range tricky {
		data := strings.Join(c.lines, "\n") + "\n" + c.torn
		f := filepath.Join(pdir, c.id+".jsonl")
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		// mtime = the session's last timestamp, as when Claude Code wrote it last;
		// nanoseconds chosen so that Node's rounding and truncation differ.
		mt := lastTimestamp(t, c.lines).Add(999_700 * time.Nanosecond)
		os.Chtimes(f, mt, mt)
		_ = i
	}
	// Generated files get sub-millisecond mtimes too, half of them rounding up.
	for i, s := range st.Sessions {
		mt := s.LastTS.Add(time.Duration(i%2)*600*time.Microsecond + 123*time.Nanosecond)
		os.Chtimes(st.Path(s), mt, mt)
	}

	ours := swList(t, home, "claude", root)
	var got claudeReaders
	if err := json.Unmarshal(node(t, home, "claude-readers.mjs", dir), &got); err != nil {
		t.Fatal(err)
	}
	expected := claudeExpected(tricky)
	r := &report{t: t, name: "claude: sessionwatch vs @anthropic-ai/claude-agent-sdk listSessions + getSessionMessages"}
	sdkByID := map[string]sdkSession{}
	for _, s := range got.SDK {
		sdkByID[s.SessionID] = s
	}
	compared := 0
	for _, id := range sortedKeys(ours) {
		o := ours[id]
		if o.Type != indexer.TypeMain {
			continue
		}
		compared++
		s, listed := sdkByID[id]
		if !r.check(id, "listed", !o.Hidden, listed, expected) || !listed || o.Hidden {
			continue
		}
		fp := s.FirstPrompt
		if fp == "" {
			fp = firstNonEmpty(map[string]string{"Image": "Image", "Document": "Document"}[s.Summary], "No prompt")
		}
		r.check(id, "firstPrompt", o.FirstPrompt, fp, expected)
		r.check(id, "title", firstNonEmpty(o.Title, o.FirstPrompt), s.Summary, expected)
		r.check(id, "messageCount", o.MessageCount, s.MessageCount, expected)
		r.check(id, "createdAt", msOf(o.CreatedAt), s.CreatedAt, expected)
		// The SDK's lastModified is the file's mtime; ours is the last timestamp in
		// it (the mtime without one). Claude Code writes both at once: they agree
		// to the millisecond Node rounds to.
		if d := s.LastModified - msOf(o.LastActiveAt); d < 0 || d > 1 {
			r.check(id, "lastActiveAt", msOf(o.LastActiveAt), s.LastModified, expected)
		}
	}
	for _, s := range got.SDK {
		if _, ok := ours[s.SessionID]; !ok {
			r.fails++
			r.addf("FAIL  %s: listed by the SDK, unknown to sessionwatch", s.SessionID)
		}
	}
	// Order: both newest first.
	var sdkOrder, ourOrder []string
	for _, s := range got.SDK {
		if o, ok := ours[s.SessionID]; ok && !o.Hidden {
			sdkOrder = append(sdkOrder, s.SessionID)
		}
	}
	for _, o := range sortedByLastActive(ours) {
		if _, ok := sdkByID[o.ID]; ok && !o.Hidden && o.Type == indexer.TypeMain {
			ourOrder = append(ourOrder, o.ID)
		}
	}
	r.check("all", "order", strings.Join(ourOrder, ","), strings.Join(sdkOrder, ","), expected)
	r.done(compared)

	// Claude Code 2.1.29 reading our native indexes: every entry is fresh (no
	// session it lists is parsed again) and the picker shows what the SDK lists.
	pickerExpected := map[string]string{}
	for k, v := range expected {
		if strings.HasSuffix(k, " listed") {
			pickerExpected[strings.TrimSuffix(k, " listed")+" in picker"] = v
		}
	}
	p := &report{t: t, name: "claude: native sessions-index.json read by Claude Code " + got.CLIVersion + "'s picker code"}
	hiddenFile := map[string]bool{}
	for _, o := range ours {
		if o.Hidden {
			hiddenFile[o.File] = true
		}
	}
	for _, f := range got.Reparsed {
		if !hiddenFile[f] {
			p.fails++
			p.addf("FAIL  %s: taken as stale and parsed again (fileMtime behind Node's mtime %d)", f, got.Mtimes[f])
		}
	}
	pickerByID := map[string]pickerRow{}
	for _, row := range got.Picker {
		pickerByID[row.SessionID] = row
	}
	for _, id := range sortedKeys(sdkByID) {
		s := sdkByID[id]
		if o := ours[id]; o.Hidden {
			continue // an expected difference reported above
		}
		row, ok := pickerByID[id]
		if !p.check(id, "in picker", ok, true, nil) {
			continue
		}
		p.check(id, "picker title", firstNonEmpty(row.Summary, row.FirstPrompt), s.Summary, nil)
		p.check(id, "picker messageCount", row.MessageCount, ours[id].MessageCount, nil)
	}
	for _, row := range got.Picker {
		if _, ok := sdkByID[row.SessionID]; !ok {
			p.check(row.SessionID, "in picker", true, false, pickerExpected)
		}
	}
	p.done(len(got.Picker))
}

// lastTimestamp is the timestamp of the last line that has one.
func lastTimestamp(t *testing.T, lines []string) time.Time {
	t.Helper()
	for i := len(lines) - 1; i >= 0; i-- {
		var l struct {
			Timestamp time.Time `json:"timestamp"`
		}
		if json.Unmarshal([]byte(lines[i]), &l) == nil && !l.Timestamp.IsZero() {
			return l.Timestamp
		}
	}
	return time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// sortedByLastActive orders sessions as `list` does: newest first, then by id.
func sortedByLastActive(m map[string]listed) []listed {
	var out []listed
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].LastActiveAt > out[j-1].LastActiveAt; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
