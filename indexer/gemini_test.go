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

// catalogGoldensForLayout compares every catalog of the source (normalized) with
// <dir>/catalog-<key>.json and fails on goldens that no catalog produced.
func catalogGoldensForLayout(t *testing.T, source, state, root, dir string) {
	t.Helper()
	cats, err := filepath.Glob(filepath.Join(state, "index", source, "*", CatalogName))
	if err != nil || len(cats) == 0 {
		t.Fatalf("no catalogs written (%v)", err)
	}
	want := map[string]bool{}
	for _, c := range cats {
		key := filepath.Base(filepath.Dir(c))
		data, err := readCatalogInline(c)
		if err != nil {
			t.Fatal(err)
		}
		name := "catalog-" + key + ".json"
		want[name] = true
		checkGolden(t, filepath.Join(dir, name), normalizeCatalog(t, data, root))
	}
	old, _ := filepath.Glob(filepath.Join(dir, "catalog-*.json"))
	for _, o := range old {
		if !want[filepath.Base(o)] {
			if *update {
				os.Remove(o)
			} else {
				t.Errorf("golden %s matches no catalog", o)
			}
		}
	}
}

// catalogSessions reads every catalog of a source into one list, newest first.
func catalogSessions(t *testing.T, state, source string) []Entry {
	t.Helper()
	es, err := ReadCatalogs(state, []string{source}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

const (
	gemSID  = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	gemUnit = "webapp/chats/session-2026-03-01T10-00-1a2b3c4d.jsonl"
)

func gemHeader(extra string) string {
	return `{"sessionId":"` + gemSID + `","projectHash":"90fd","startTime":"2026-03-01T10:00:00Z","lastUpdated":"2026-03-01T10:00:00Z"` + extra + `}`
}

func gemUser(id, ts, text string) string {
	return fmt.Sprintf(`{"id":%q,"timestamp":%q,"type":"user","content":[{"text":%q}]}`, id, ts, text)
}

func gemReply(id, ts, model string) string {
	return fmt.Sprintf(`{"id":%q,"timestamp":%q,"type":"gemini","content":"ok","model":%q}`, id, ts, model)
}

func gemSet(kv string) string { return `{"$set":{` + kv + `}}` }

func gemRewind(id string) string { return `{"$rewindTo":"` + id + `"}` }

// foldGemini folds lines into a fresh accumulator and summarizes it.
func foldGemini(t *testing.T, unit string, lines ...string) (*Session, *geminiAcc, int) {
	t.Helper()
	acc := geminiLayout{}.NewAccumulator("").(*geminiAcc)
	s, bad := foldLines(t, acc, unit, lines...)
	return s, acc, bad
}

func TestGeminiSummary(t *testing.T) {
	h := gemHeader("")
	u1 := gemUser("u1", "2026-03-01T10:00:01Z", "  Add a dark-mode\n toggle ")
	g1 := gemReply("g1", "2026-03-01T10:00:05Z", "gemini-2.5-pro")
	u2 := gemUser("u2", "2026-03-01T10:01:00Z", "second ask")
	g2 := gemReply("g2", "2026-03-01T10:01:05Z", "gemini-2.5-flash")
	set := gemSet(`"lastUpdated":"2026-03-01T10:02:00.5Z"`)
	type want struct {
		Session
		bad int
	}
	main := func(count int, prompt, created, last string) Session {
		return Session{ID: gemSID, Type: TypeMain, CreatedAt: created, LastActiveAt: last, FirstPrompt: prompt, MessageCount: count}
	}
	tests := []struct {
		name  string
		unit  string
		lines []string
		want  want
		model string
		title string
	}{
		{"header and messages", gemUnit, []string{h, u1, g1, u2, g2, set},
			want{main(4, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:02:00.500Z"), 0}, "gemini-2.5-flash", ""},
		{"header lastUpdated without $set", gemUnit, []string{h, u1},
			want{main(1, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"no lastUpdated: last message timestamp", gemUnit, []string{`{"sessionId":"` + gemSID + `","projectHash":"x"}`, u1, g1},
			want{main(2, "Add a dark-mode toggle", "2026-03-01T10:00:01.000Z", "2026-03-01T10:00:05.000Z"), 0}, "gemini-2.5-pro", ""},
		{"no header: file name and mtime", gemUnit, nil,
			want{Session{ID: "session-2026-03-01T10-00-1a2b3c4d", Type: TypeMain, CreatedAt: mtimeTS, LastActiveAt: mtimeTS}, 0}, "", ""},
		{"replace keeps position and count", gemUnit, []string{h, u1, g1, u2, gemReply("g1", "2026-03-01T10:00:06Z", "gemini-2.5-pro")},
			want{main(3, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"replace the first prompt", gemUnit, []string{h, u1, g1, u2, gemUser("u1", "2026-03-01T10:00:01Z", "fixed typo")},
			want{main(3, "fixed typo", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"first prompt replaced by a command: the next one", gemUnit, []string{h, u1, g1, u2, gemUser("u1", "2026-03-01T10:00:01Z", "/compress")},
			want{main(3, "second ask", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"command replaced by a prompt becomes first", gemUnit, []string{h, gemUser("c", "2026-03-01T10:00:01Z", "/help"), u2, gemUser("c", "2026-03-01T10:00:01Z", "real ask")},
			want{main(2, "real ask", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"rewind drops the message and what follows", gemUnit, []string{h, u1, g1, u2, g2, gemRewind("u2"), set},
			want{main(2, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:02:00.500Z"), 0}, "gemini-2.5-flash", ""},
		{"rewind past the first prompt", gemUnit, []string{h, gemUser("c", "2026-03-01T10:00:00Z", "/model"), u1, g1, gemRewind("u1")},
			want{main(1, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"rewind to an unknown id empties the history", gemUnit, []string{h, u1, g1, gemRewind("nope")},
			want{main(0, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"rewound id comes back at the end", gemUnit, []string{h, u1, g1, u2, gemRewind("g1"), gemUser("g1", "2026-03-01T10:03:00Z", "again")},
			want{main(2, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"$set summary, then null clears it", gemUnit, []string{h, u1, gemSet(`"summary":"Dark mode"`), gemSet(`"summary":null`)},
			want{main(1, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"$set summary is the title", gemUnit, []string{h, u1, gemSet(`"summary":"Dark mode","lastUpdated":"2026-03-01T11:00:00Z"`)},
			want{main(1, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T11:00:00.000Z"), 0}, "", "Dark mode"},
		{"unparseable lastUpdated is ignored", gemUnit, []string{h, set, gemSet(`"lastUpdated":"soon"`), gemSet(`"lastUpdated":7`)},
			want{main(0, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:02:00.500Z"), 0}, "", ""},
		{"$set.messages replaces the history; later lines apply on top", gemUnit, []string{h, u1, g1, u2,
			gemSet(`"messages":[` + gemUser("s", "2026-03-01T10:05:00Z", "<state_snapshot>x</state_snapshot>") + `,` + gemUser("u2", "2026-03-01T10:01:00Z", "second ask") + `]`),
			gemReply("g3", "2026-03-01T10:06:00Z", "gemini-2.5-pro"), gemUser("u2", "2026-03-01T10:01:00Z", "second ask, edited")},
			want{main(3, "second ask, edited", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-pro", ""},
		{"$set.messages empty clears; null is ignored", gemUnit, []string{h, u1, gemSet(`"messages":null`), gemSet(`"messages":[]`)},
			want{main(0, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"ignored user content", gemUnit, []string{h,
			gemUser("a", "2026-03-01T10:00:01Z", "  /model"), gemUser("b", "2026-03-01T10:00:02Z", "?"),
			gemUser("c", "2026-03-01T10:00:03Z", "<session_context>\ncwd\n</session_context>"), gemUser("d", "2026-03-01T10:00:04Z", "<hook_context>x</hook_context>"),
			gemUser("e", "2026-03-01T10:00:05Z", " \n "), gemUser("f", "2026-03-01T10:00:06Z", "Fix the /usr path")},
			want{main(6, "Fix the /usr path", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"only user messages are prompts", gemUnit, []string{h, `{"id":"i","type":"info","content":"Model set"}`, `{"id":"g","type":"gemini","content":[{"text":"hi"}]}`, `{"id":"x","content":"no type"}`},
			want{main(3, "", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"content forms", gemUnit, []string{h, `{"id":"a","type":"user","content":[{"inlineData":{"mimeType":"image/png"}}]}`,
			`{"id":"b","type":"user","content":["Look ",{"text":"at"},{"functionCall":{}}," this"]}`},
			want{main(2, "Look at this", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"content as a single part", gemUnit, []string{h, `{"id":"a","type":"user","content":{"text":"single part"}}`},
			want{main(1, "single part", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", ""},
		{"kind subagent at the top", gemUnit, []string{gemHeader(`,"kind":"subagent"`)},
			want{Session{ID: gemSID, Type: TypeSubagent, CreatedAt: "2026-03-01T10:00:00.000Z", LastActiveAt: "2026-03-01T10:00:00.000Z"}, 0}, "", ""},
		{"subagent dir", "webapp/chats/" + gemSID + "/sub-1.jsonl", []string{`{"sessionId":"sub-1","projectHash":"x","startTime":"2026-03-01T10:00:00Z","kind":"subagent"}`},
			want{Session{ID: "sub-1", Type: TypeSubagent, ParentID: gemSID, CreatedAt: "2026-03-01T10:00:00.000Z", LastActiveAt: mtimeTS}, 0}, "", ""},
		{"later partial metadata merges", gemUnit, []string{u1, gemHeader(`,"summary":"Late"`)},
			want{main(1, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "", "Late"},
		{"a rewound model stays the last one used", gemUnit, []string{h, u1, g1, g2, gemRewind("g2")},
			want{main(2, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 0}, "gemini-2.5-flash", ""},
		{"bad lines rejected, unknown objects ignored", gemUnit, []string{h, `{not json`, `[1]`, `null`, `{"foo":1}`, `{"id":5}`, `{"$set":"x"}`, `{"$rewindTo":3}`, u1},
			want{main(1, "Add a dark-mode toggle", "2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"), 3}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, bad := foldGemini(t, tt.unit, tt.lines...)
			got := Session{ID: s.ID, Type: s.Type, ParentID: s.ParentID, CreatedAt: s.CreatedAt, LastActiveAt: s.LastActiveAt, FirstPrompt: s.FirstPrompt, MessageCount: s.MessageCount}
			if got != tt.want.Session {
				t.Errorf("summary = %+v, want %+v", got, tt.want.Session)
			}
			if s.Model != tt.model || s.Title != tt.title {
				t.Errorf("model, title = %q, %q, want %q, %q", s.Model, s.Title, tt.model, tt.title)
			}
			if bad != tt.want.bad {
				t.Errorf("rejected lines = %d, want %d", bad, tt.want.bad)
			}
			if s.Tail.OwnProject != "" {
				t.Errorf("own project = %q, want none (Gemini chats carry no cwd)", s.Tail.OwnProject)
			}
		})
	}
}

// TestGeminiStateBound checks that the persisted state keeps per message only its
// id, and prompt text only for eligible user messages, cut like a first prompt.
func TestGeminiStateBound(t *testing.T) {
	long := strings.Repeat("word ", 1000)
	lines := []string{gemHeader("")}
	for i := range 50 {
		lines = append(lines, gemUser(fmt.Sprintf("u%d", i), "2026-03-01T10:00:00Z", long), fmt.Sprintf(`{"id":"g%d","type":"gemini","content":%q}`, i, long))
	}
	_, acc, _ := foldGemini(t, gemUnit, lines...)
	st, err := marshalNoEscape(acc)
	if err != nil {
		t.Fatal(err)
	}
	if limit := 100*8 + 50*(MaxPromptChars+16) + 400; len(st) > limit {
		t.Errorf("state is %d bytes, want at most %d:\n%s", len(st), limit, st)
	}
	if len(acc.IDs) != 100 || len(acc.Prompts) != 50 {
		t.Errorf("state holds %d ids and %d prompts, want 100 and 50", len(acc.IDs), len(acc.Prompts))
	}
}

func TestGeminiClassify(t *testing.T) {
	tests := []struct {
		rel  string
		kind UnitKind
	}{
		{"webapp/chats/session-2026-03-01T10-00-1a2b3c4d.jsonl", UnitLines},
		{"webapp/chats/session-2026-03-01T10-00-1a2b3c4d.json", UnitDocument},
		{"90fda2fdc75125cb57549b4b0c5b3c95ac3c4eb596541daaee7aeb8c96dd4aec/chats/session-2025-12-20T17-45-7b8c9d0e.json", UnitDocument},
		{"webapp/chats/" + gemSID + "/9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a.jsonl", UnitLines},
		{"webapp/chats/" + gemSID + "/9f8e7d6c.json", UnitNone},
		{"webapp/chats/" + gemSID + "/x/y.jsonl", UnitNone},
		{"webapp/chats/bad id/y.jsonl", UnitNone},
		{"webapp/chats/session-2026-03-01T10-00-1a2b3c4d.jsonl.tmp-4821", UnitNone},
		{"webapp/chats/session-2026-03-01T10-00-1a2b3c4d.jsonl.unreadable-1772359200000", UnitNone},
		{"webapp/chats/session-.jsonl", UnitNone},
		{"webapp/chats/notes.jsonl", UnitNone},
		{"webapp/chats/sessions-index.json", UnitNone},
		{"webapp/logs/session-1a2b3c4d.jsonl", UnitNone},
		{"webapp/session-2026-03-01T10-00-1a2b3c4d.jsonl", UnitNone},
		{"chats/session-2026-03-01T10-00-1a2b3c4d.jsonl", UnitNone},
		{"webapp/.project_root", UnitNone},
		{"bin/rg", UnitNone},
	}
	for _, tt := range tests {
		unit, got := (geminiLayout{}).Classify(tt.rel)
		if got != tt.kind || (got != UnitNone && unit != tt.rel) {
			t.Errorf("Classify(%q) = %q, %v, want %v", tt.rel, unit, got, tt.kind)
		}
	}
}

func TestGeminiSkipDir(t *testing.T) {
	tests := []struct {
		rel  string
		skip bool
	}{
		{"webapp", false},
		{"90fda2fdc75125cb57549b4b0c5b3c95ac3c4eb596541daaee7aeb8c96dd4aec", false},
		{"webapp/chats", false},
		{"webapp/chats/" + gemSID, false},
		{"webapp/chats/" + gemSID + "/deeper", true},
		{"webapp/chats/not an id", true},
		{"webapp/logs", true},
		{"webapp/tool-outputs", true},
		{"webapp/tool-outputs/session-x", true},
		{"webapp/plans", true},
		{"webapp/" + gemSID, true},
	}
	for _, tt := range tests {
		if got := (geminiLayout{}).SkipDir(tt.rel); got != tt.skip {
			t.Errorf("SkipDir(%q) = %v, want %v", tt.rel, got, tt.skip)
		}
	}
	if got := (geminiLayout{}).ProjectDir(gemUnit); got != "webapp" {
		t.Errorf("ProjectDir(%q) = %q, want webapp", gemUnit, got)
	}
}

func TestGeminiRelated(t *testing.T) {
	tests := []struct {
		unit string
		want []string
	}{
		{gemUnit, []string{strings.TrimSuffix(gemUnit, "l")}},
		{strings.TrimSuffix(gemUnit, "l"), nil},
		{"webapp/chats/" + gemSID + "/sub.jsonl", nil},
	}
	for _, tt := range tests {
		if got := (geminiLayout{}).Related(tt.unit); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("Related(%q) = %q, want %q", tt.unit, got, tt.want)
		}
	}
}

func TestGeminiDirProject(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tmp")
	write := func(rel, s string) {
		t.Helper()
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("projects.json", `{"projects":{"/home/u/webapp":"webapp","/home/u/Old Repo":"old-repo","/z/dup":"dup","/a/dup":"dup","/home/u/bad":7}}`)
	write("tmp/webapp/.project_root", "/elsewhere\n")
	write("tmp/scratch/.project_root", "  /home/u/scratch\n")
	write("tmp/empty/.project_root", " \n")
	write("tmp/bad/.project_root", "/home/u/bad-from-marker")
	os.MkdirAll(filepath.Join(root, "linked"), 0o700)
	os.Symlink(filepath.Join(base, "tmp/scratch/.project_root"), filepath.Join(root, "linked", ".project_root"))
	tests := []struct{ dir, want string }{
		{"webapp", "/home/u/webapp"}, // the registry wins over the marker
		{sha256Hex("/home/u/Old Repo"), "/home/u/Old Repo"},
		{"scratch", "/home/u/scratch"},
		{"dup", "/a/dup"},
		{"bad", "/home/u/bad-from-marker"},
		{"empty", ""},
		{"linked", ""}, // a symlinked marker is not followed
		{"nowhere", ""},
	}
	for _, tt := range tests {
		if got := (geminiLayout{}).DirProject(root, tt.dir); got != tt.want {
			t.Errorf("DirProject(%q) = %q, want %q", tt.dir, got, tt.want)
		}
	}
	// A broken registry falls back to the marker.
	write("projects.json", `{"projects":`)
	if got := (geminiLayout{}).DirProject(root, "webapp"); got != "/elsewhere" {
		t.Errorf("DirProject(webapp) with a broken projects.json = %q, want /elsewhere", got)
	}
}

func TestGeminiParseDocument(t *testing.T) {
	dir := t.TempDir()
	unit := "p/chats/session-2026-02-10T08-00-9c8d7e6f.json"
	path := filepath.Join(dir, "session-2026-02-10T08-00-9c8d7e6f.json")
	facts := FileFacts{Unit: unit, Path: path, Mtime: ParseTime(mtimeTS)}
	doc := `{"sessionId":"9c8d","projectHash":"x","startTime":"2026-02-10T08:00:05Z","lastUpdated":"2026-02-10T08:02:30Z","summary":"Regex",` +
		`"messages":[` + gemUser("a", "2026-02-10T08:00:06Z", "/help") + `,` + gemUser("b", "2026-02-10T08:00:07Z", "Explain ^a+$") + `,` + gemReply("c", "2026-02-10T08:00:09Z", "gemini-2.5-pro") + `]}`
	tests := []struct {
		name string
		data string
		want Session
	}{
		{"legacy document", doc, Session{ID: "9c8d", Type: TypeMain, Title: "Regex", FirstPrompt: "Explain ^a+$", CreatedAt: "2026-02-10T08:00:05.000Z", LastActiveAt: "2026-02-10T08:02:30.000Z", MessageCount: 3, Model: "gemini-2.5-pro"}},
		{"no messages", `{"sessionId":"9c8d","kind":"subagent"}`, Session{ID: "9c8d", Type: TypeSubagent, CreatedAt: mtimeTS, LastActiveAt: mtimeTS}},
		{"truncated", doc[:len(doc)/2], Session{ID: "session-2026-02-10T08-00-9c8d7e6f", Type: TypeMain, CreatedAt: mtimeTS, LastActiveAt: mtimeTS, Corrupt: true}},
		{"no session id", `{"messages":[]}`, Session{ID: "session-2026-02-10T08-00-9c8d7e6f", Type: TypeMain, CreatedAt: mtimeTS, LastActiveAt: mtimeTS, Corrupt: true}},
		{"empty file", ``, Session{ID: "session-2026-02-10T08-00-9c8d7e6f", Type: TypeMain, CreatedAt: mtimeTS, LastActiveAt: mtimeTS, Corrupt: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := (geminiLayout{}).ParseDocument(facts, []byte(tt.data))
			if err != nil || len(ss) != 1 {
				t.Fatalf("ParseDocument = %d sessions, %v; want 1", len(ss), err)
			}
			if *ss[0] != tt.want {
				t.Errorf("session = %+v, want %+v", *ss[0], tt.want)
			}
		})
	}
	// Beside its .jsonl, a legacy document is not a session of its own.
	if err := os.WriteFile(path+"l", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ss, err := (geminiLayout{}).ParseDocument(facts, []byte(doc)); err != nil || len(ss) != 0 {
		t.Errorf("ParseDocument beside a .jsonl = %d sessions, %v; want none", len(ss), err)
	}
}

// setupGemini copies a testdata store to <tmp>/gemini/tmp with projects.json beside it.
func setupGemini(t *testing.T, fixture string) (root, state string) {
	t.Helper()
	base := filepath.Join(t.TempDir(), "gemini")
	root = filepath.Join(base, "tmp")
	copyTree(t, filepath.Join(fixture, "store"), root)
	if data, err := os.ReadFile(filepath.Join(fixture, "projects.json")); err == nil {
		if err := os.WriteFile(filepath.Join(base, "projects.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root, t.TempDir()
}

func TestGeminiGolden(t *testing.T) {
	fixture := "testdata/gemini/basic"
	root, state := setupGemini(t, fixture)
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	catalogGoldensForLayout(t, "gemini", state, root, fixture)
	// Gemini has no native index: nothing is written into the store.
	if found, _ := filepath.Glob(filepath.Join(root, "*", CatalogName)); len(found) > 0 {
		t.Errorf("native index written into the store: %v", found)
	}
	assertLayoutConverged(t, "gemini", root, state)

	// A restart with nothing changed writes nothing and reads only the legacy .json
	// shadowed by a .jsonl, once: the walk finds it (a unit without sessions is not
	// in the catalog, so not restored); its unchanged .jsonl costs only a stat and so
	// does not trigger a re-read of its related .json.
	shadowed, err := os.Stat(filepath.Join(root, "scratch/chats/session-2026-02-11T12-30-0f1e2d3c.json"))
	if err != nil {
		t.Fatal(err)
	}
	ix2 := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := ix2.Stats(); st.BytesRead != shadowed.Size() || st.CatalogWrites != 0 {
		t.Errorf("restart read %d bytes and wrote %d catalogs, want %d and 0", st.BytesRead, st.CatalogWrites, shadowed.Size())
	}
}

// gemLines is a Gemini chat written line by line, with what the catalog should say
// after each line.
var gemLines = []struct {
	line         string
	count        int
	prompt, last string
}{
	{gemHeader(""), 0, "", "2026-03-01T10:00:00.000Z"},
	{gemUser("ctx", "2026-03-01T10:00:00.5Z", "<session_context>cwd</session_context>"), 1, "", "2026-03-01T10:00:00.000Z"},
	{gemUser("u1", "2026-03-01T10:00:01Z", "Add a toggle"), 2, "Add a toggle", "2026-03-01T10:00:00.000Z"},
	{gemSet(`"lastUpdated":"2026-03-01T10:00:01Z"`), 2, "Add a toggle", "2026-03-01T10:00:01.000Z"},
	{gemReply("g1", "2026-03-01T10:00:05Z", "gemini-2.5-pro"), 3, "Add a toggle", "2026-03-01T10:00:01.000Z"},
	{gemReply("g1", "2026-03-01T10:00:05Z", "gemini-2.5-pro"), 3, "Add a toggle", "2026-03-01T10:00:01.000Z"},
	{gemSet(`"lastUpdated":"2026-03-01T10:00:05Z"`), 3, "Add a toggle", "2026-03-01T10:00:05.000Z"},
	{gemUser("u2", "2026-03-01T10:01:00Z", "Use a switch"), 4, "Add a toggle", "2026-03-01T10:00:05.000Z"},
	{gemReply("g2", "2026-03-01T10:01:05Z", "gemini-2.5-flash"), 5, "Add a toggle", "2026-03-01T10:00:05.000Z"},
	{gemSet(`"lastUpdated":"2026-03-01T10:01:05Z"`), 5, "Add a toggle", "2026-03-01T10:01:05.000Z"},
	{gemUser("u1", "2026-03-01T10:00:01Z", "Add a dark-mode toggle"), 5, "Add a dark-mode toggle", "2026-03-01T10:01:05.000Z"},
	{gemRewind("u2"), 3, "Add a dark-mode toggle", "2026-03-01T10:01:05.000Z"},
	{gemSet(`"lastUpdated":"2026-03-01T10:02:00Z","summary":"Toggle"`), 3, "Add a dark-mode toggle", "2026-03-01T10:02:00.000Z"},
	{gemRewind("u1"), 1, "", "2026-03-01T10:02:00.000Z"},
	{gemUser("u3", "2026-03-01T10:03:00Z", "Start over"), 2, "Start over", "2026-03-01T10:02:00.000Z"},
}

func TestGeminiIncremental(t *testing.T) {
	base := t.TempDir()
	root, state := filepath.Join(base, "tmp"), t.TempDir()
	os.MkdirAll(filepath.Join(root, "p", "chats"), 0o700)
	os.WriteFile(filepath.Join(base, "projects.json"), []byte(`{"projects":{"/w/p":"p"}}`), 0o600)
	file := filepath.Join(root, "p", "chats", "session-2026-03-01T10-00-1a2b3c4d.jsonl")
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for i, step := range gemLines {
		// Half a line first: nothing of it may show.
		appendFile(t, file, step.line[:len(step.line)/2])
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		appendFile(t, file, step.line[len(step.line)/2:]+"\n")
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		es := catalogSessions(t, state, "gemini")
		if len(es) != 1 {
			t.Fatalf("line %d: %d sessions, want 1", i+1, len(es))
		}
		s := es[0]
		if s.MessageCount != step.count || s.FirstPrompt != step.prompt || s.LastActiveAt != step.last || s.Project != "/w/p" {
			t.Errorf("line %d: count %d prompt %q last %s project %q, want %d %q %s /w/p", i+1, s.MessageCount, s.FirstPrompt, s.LastActiveAt, s.Project, step.count, step.prompt, step.last)
		}
		assertLayoutConverged(t, "gemini", root, state)
	}

	// Restart: unchanged files cost a stat; an append is read alone.
	ix2 := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := ix2.Stats().BytesRead; got != 0 {
		t.Errorf("restart re-read %d bytes of an unchanged chat, want 0", got)
	}
	line := gemRewind("u3") + "\n"
	appendFile(t, file, line)
	ix3 := newLayoutIndexer(t, "gemini", root, state, false)
	ix3.Load()
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix3.Stats().BytesRead, int64(len(line)+2*fpWindow+headWindow); got != want {
		t.Errorf("restart after append read %d bytes, want %d", got, want)
	}
	if s := ix3.Sessions()[0]; s.MessageCount != 1 || s.FirstPrompt != "" || s.Title != "Toggle" {
		t.Errorf("after a late rewind: count %d prompt %q title %q, want 1, empty, Toggle", s.MessageCount, s.FirstPrompt, s.Title)
	}
	assertLayoutConverged(t, "gemini", root, state)
}

// TestGeminiLegacySibling follows a legacy .json through its migration: listed alone,
// hidden while its .jsonl exists, listed again when the .jsonl goes.
func TestGeminiLegacySibling(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	chats := filepath.Join(root, "p", "chats")
	os.MkdirAll(chats, 0o700)
	js := filepath.Join(chats, "session-2026-02-11T12-30-0f1e2d3c.json")
	doc := `{"sessionId":"0f1e","projectHash":"x","startTime":"2026-02-11T12:30:02Z","lastUpdated":"2026-02-11T12:30:30Z","messages":[` + gemUser("a", "2026-02-11T12:30:10Z", "legacy ask") + `]}`
	os.WriteFile(js, []byte(doc), 0o600)
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	check := func(when, wantFile, wantPrompt string) {
		t.Helper()
		ss := ix.Sessions()
		var files []string
		for _, s := range ss {
			files = append(files, filepath.Base(s.File)+":"+s.FirstPrompt)
		}
		sort.Strings(files)
		if want := wantFile + ":" + wantPrompt; strings.Join(files, ",") != want {
			t.Errorf("%s: sessions %v, want [%s]", when, files, want)
		}
		if es := catalogSessions(t, state, "gemini"); len(es) != 1 || es[0].ID != "0f1e" {
			t.Errorf("%s: catalog holds %d sessions, want one 0f1e", when, len(es))
		}
		assertLayoutConverged(t, "gemini", root, state)
	}
	check("legacy alone", filepath.Base(js), "legacy ask")

	jl := js + "l"
	appendFile(t, jl, `{"sessionId":"0f1e","projectHash":"x","startTime":"2026-02-11T12:30:02Z","lastUpdated":"2026-02-11T12:30:30Z"}`+"\n"+gemUser("a", "2026-02-11T12:30:10Z", "legacy ask")+"\n")
	if err := ix.Update([]string{jl}); err != nil {
		t.Fatal(err)
	}
	check("migrated", filepath.Base(jl), "legacy ask")

	appendFile(t, jl, gemUser("a", "2026-02-11T12:30:10Z", "edited ask")+"\n")
	if err := ix.Update([]string{jl}); err != nil {
		t.Fatal(err)
	}
	check("resumed", filepath.Base(jl), "edited ask")

	os.Remove(jl)
	if err := ix.Update([]string{jl}); err != nil {
		t.Fatal(err)
	}
	check("jsonl deleted", filepath.Base(js), "legacy ask")

	// The .jsonl appearing while unwatched is found by a reconcile.
	appendFile(t, jl, `{"sessionId":"0f1e","projectHash":"x"}`+"\n")
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	check("jsonl back, reconciled", filepath.Base(jl), "")
}

// gemFuzzBase is the state every FuzzGeminiLine input is folded into.
var gemFuzzBase = []string{gemHeader(`,"summary":"s"`), gemUser("u1", "2026-03-01T10:00:01Z", "first"), gemReply("g1", "2026-03-01T10:00:02Z", "m"), gemUser("u2", "2026-03-01T10:00:03Z", "second")}

func seedLinesFrom(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(pattern)
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		for _, l := range bytes.Split(data, []byte("\n")) {
			f.Add(l)
		}
	}
}

// FuzzGeminiLine feeds arbitrary lines to the Gemini accumulator: it must never
// panic, a rejected line must leave the state unchanged, and the state must survive
// a JSON round trip (including its id index, rebuilt after decoding).
func FuzzGeminiLine(f *testing.F) {
	seedLinesFrom(f, "testdata/gemini/*/store/*/chats/*.jsonl")
	seedLinesFrom(f, "testdata/gemini/*/store/*/chats/*/*.jsonl")
	for _, l := range gemLines {
		f.Add([]byte(l.line))
	}
	f.Add([]byte(`{"$set":{"messages":[{"id":"u1"},{"id":"u1","type":"user","content":"x"},7,null]}}`))
	f.Add([]byte(`{"$rewindTo":"g1","id":"x"}`))
	f.Add([]byte(`{"sessionId":null,"projectHash":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		acc := geminiLayout{}.NewAccumulator("").(*geminiAcc)
		for _, l := range gemFuzzBase {
			if err := acc.Line([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := marshalNoEscape(acc)
		if err := acc.Line(line); err != nil {
			if after, _ := marshalNoEscape(acc); !bytes.Equal(before, after) {
				t.Fatalf("rejected line changed state: %s -> %s", before, after)
			}
		}
		st, err := marshalNoEscape(acc)
		if err != nil {
			t.Fatal(err)
		}
		back := geminiLayout{}.NewAccumulator("").(*geminiAcc)
		if err := jsonUnmarshal(st, back); err != nil {
			t.Fatalf("state does not decode: %v\n%s", err, st)
		}
		// The decoded state must behave like the original on further lines.
		for _, l := range []string{gemUser("u1", "2026-03-01T10:00:09Z", "again"), gemRewind("g1"), gemUser("n", "2026-03-01T10:00:10Z", "new")} {
			acc.Line([]byte(l))
			back.Line([]byte(l))
			a, _ := marshalNoEscape(acc)
			b, _ := marshalNoEscape(back)
			if !bytes.Equal(a, b) {
				t.Fatalf("after %s: round-tripped state diverged:\n%s\n%s", l, a, b)
			}
		}
		s := &Session{Tail: &Tail{}}
		acc.Summarize(s, FileFacts{Unit: gemUnit})
		if s.ID == "" || s.MessageCount != len(acc.IDs) {
			t.Fatalf("summary %+v", s)
		}
	})
}

// FuzzGeminiDocument feeds arbitrary legacy documents to ParseDocument: it must
// never panic or fail, and must yield exactly one session with an id.
func FuzzGeminiDocument(f *testing.F) {
	paths, _ := filepath.Glob("testdata/gemini/*/store/*/chats/*.json")
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Add([]byte(`{"sessionId":"x","messages":[{"id":"a","type":"user","content":[["nested"]]}]}`))
	f.Add([]byte(`{"sessionId":"x","messages":{"id":"a"}}`))
	path := filepath.Join(f.TempDir(), "session-2026-01-01T00-00-abcdefgh.json")
	facts := FileFacts{Unit: "p/chats/session-2026-01-01T00-00-abcdefgh.json", Path: path, Mtime: ParseTime(mtimeTS)}
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := (geminiLayout{}).ParseDocument(facts, data)
		if err != nil || len(ss) != 1 || ss[0].ID == "" || ss[0].CreatedAt == "" || ss[0].LastActiveAt == "" {
			t.Fatalf("ParseDocument = %v, %v", ss, err)
		}
		if _, err := marshalNoEscape(ss[0]); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGeminiLegacySiblingMissedDelete: a .jsonl deleted without an event (watcher
// overflow) must bring its legacy .json back at the next reconcile.
func TestGeminiLegacySiblingMissedDelete(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	chats := filepath.Join(root, "p", "chats")
	os.MkdirAll(chats, 0o700)
	js := filepath.Join(chats, "session-2026-02-11T12-30-0f1e2d3c.json")
	os.WriteFile(js, []byte(`{"sessionId":"0f1e","projectHash":"x","messages":[]}`), 0o600)
	os.WriteFile(js+"l", []byte(`{"sessionId":"0f1e","projectHash":"x"}`+"\n"), 0o600)
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	os.Remove(js + "l")
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if ss := ix.Sessions(); len(ss) != 1 || filepath.Base(ss[0].File) != filepath.Base(js) {
		t.Fatalf("after the .jsonl vanished unseen, sessions = %v; want the legacy .json listed again", ss)
	}
	assertLayoutConverged(t, "gemini", root, state)
}
