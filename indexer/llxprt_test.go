package indexer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	llxSID  = "6d1f0c2a-9b8e-4f7a-8c3d-2e1f0a9b8c7d"
	llxUnit = "8a28/chats/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl"
)

var llxSeq int

// llxEv renders one llxprt event envelope.
func llxEv(ts, typ, payload string) string {
	llxSeq++
	return fmt.Sprintf(`{"v":1,"seq":%d,"ts":%q,"type":%q,"payload":%s}`, llxSeq, ts, typ, payload)
}

func llxStart(extra string) string {
	return llxEv("2026-03-03T14:05:09.120Z", "session_start", `{"sessionId":"`+llxSID+`","projectHash":"8a28","workspaceDirs":["/home/u/api"],"provider":"anthropic","model":"claude-sonnet-4-5","startTime":"2026-03-03T14:05:09.118Z"`+extra+`}`)
}

func llxContent(ts, speaker string, blocks ...string) string {
	return llxEv(ts, "content", `{"content":{"speaker":"`+speaker+`","blocks":[`+strings.Join(blocks, ",")+`]}}`)
}

func llxText(s string) string { return fmt.Sprintf(`{"type":"text","text":%q}`, s) }

func foldLlxprt(t *testing.T, lines ...string) (*Session, *llxprtAcc, int) {
	t.Helper()
	acc := &llxprtAcc{}
	s, bad := foldLines(t, acc, llxUnit, lines...)
	return s, acc, bad
}

func TestLlxprtSummary(t *testing.T) {
	start := llxStart(`,"cwd":"/home/u/api"`)
	human := llxContent("2026-03-03T14:05:20.5Z", "human", llxText("Add rate limiting to the  /login\nendpoint"))
	ai := llxContent("2026-03-03T14:05:31Z", "ai", llxText("Looking."), `{"type":"tool_call","id":"c1","name":"read_file","parameters":{}}`)
	tool := llxContent("2026-03-03T14:05:32Z", "tool", `{"type":"tool_response","callId":"c1","toolName":"read_file","result":{}}`)
	type sum struct {
		ID, Created, Last, Prompt, Title, Provider, Model, Own string
		Count, Bad                                             int
	}
	tests := []struct {
		name  string
		lines []string
		want  sum
	}{
		{"start and content", []string{start, human, ai, tool},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:05:32.000Z", "Add rate limiting to the /login endpoint", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 3, 0}},
		{"provider_switch", []string{start, human, llxEv("2026-03-03T14:07:00Z", "provider_switch", `{"provider":"openai","model":"gpt-5"}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:07:00.000Z", "Add rate limiting to the /login endpoint", "", "openai", "gpt-5", "/home/u/api", 1, 0}},
		{"provider_switch with model only", []string{start, llxEv("2026-03-03T14:07:00Z", "provider_switch", `{"model":"claude-opus-4-1"}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:07:00.000Z", "", "", "anthropic", "claude-opus-4-1", "/home/u/api", 0, 0}},
		{"session_named then session_metadata", []string{start, llxEv("2026-03-03T14:08:00Z", "session_named", `{"name":"Rate limiting"}`), llxEv("2026-03-03T14:09:00Z", "session_metadata", `{"title":"Login rate limiting"}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:09:00.000Z", "", "Login rate limiting", "anthropic", "claude-sonnet-4-5", "/home/u/api", 0, 0}},
		{"null title clears, absent keeps", []string{start, llxEv("2026-03-03T14:08:00Z", "session_named", `{"name":"Latency"}`), llxEv("2026-03-03T14:09:00Z", "session_metadata", `{}`), llxEv("2026-03-03T14:09:30Z", "session_metadata", `{"title":null}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:09:30.000Z", "", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 0, 0}},
		{"named after metadata wins", []string{start, llxEv("2026-03-03T14:08:00Z", "session_metadata", `{"title":"A"}`), llxEv("2026-03-03T14:09:00Z", "session_named", `{"name":"B"}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:09:00.000Z", "", "B", "anthropic", "claude-sonnet-4-5", "/home/u/api", 0, 0}},
		{"non-human first content", []string{start, ai, llxContent("2026-03-03T14:06:00Z", "human", `{"type":"media","mimeType":"image/png","data":"x"}`), llxContent("2026-03-03T14:06:10Z", "human", llxText("Why is p99 "), `{"type":"code","code":"x"}`, llxText("up?")), human},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:05:20.500Z", "Why is p99 up?", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 4, 0}},
		{"no cwd: first workspace dir", []string{llxStart("")},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:05:09.120Z", "", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 0, 0}},
		{"unknown and unhandled types are silent", []string{start, llxEv("2026-03-03T14:06:00Z", "directories_changed", `{"directories":[]}`), llxEv("2026-03-03T14:07:00Z", "future_thing", `7`), llxEv("2026-03-03T14:07:30Z", "rewind", `{"itemsRemoved":1}`), llxEv("2026-03-03T14:08:00Z", "compressed", `{"summary":{"speaker":"human","blocks":[]},"itemsCompressed":4}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:08:00.000Z", "", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 0, 0}},
		{"corrupt lines are rejected", []string{start, `{"v":1,"seq":2,"type":"content","payload":{"content":{"speaker":"hu`, `{"type":5}`, `{"type":"content","payload":"x"}`, `{"type":"session_start"}`, `{"type":"content","ts":7,"payload":{}}`, human},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:05:20.500Z", "Add rate limiting to the /login endpoint", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 1, 5}},
		{"no session_start", []string{human},
			sum{"session-2026-03-03T14-05-09-6d1f0c2a-9b8", "2026-03-03T14:05:20.500Z", "2026-03-03T14:05:20.500Z", "Add rate limiting to the /login endpoint", "", "", "", "", 1, 0}},
		{"empty file", nil,
			sum{"session-2026-03-03T14-05-09-6d1f0c2a-9b8", mtimeTS, mtimeTS, "", "", "", "", "", 0, 0}},
		{"second session_start ignored", []string{start, strings.Replace(llxStart(`,"cwd":"/other"`), llxSID, "other-id", 1)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:05:09.120Z", "", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 0, 0}},
		{"unparseable ts ignored", []string{start, llxEv("yesterday", "content", `{"content":{"speaker":"ai","blocks":[]}}`)},
			sum{llxSID, "2026-03-03T14:05:09.118Z", "2026-03-03T14:05:09.120Z", "", "", "anthropic", "claude-sonnet-4-5", "/home/u/api", 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, bad := foldLlxprt(t, tt.lines...)
			got := sum{s.ID, s.CreatedAt, s.LastActiveAt, s.FirstPrompt, s.Title, s.Provider, s.Model, s.Tail.OwnProject, s.MessageCount, bad}
			if got != tt.want {
				t.Errorf("summary = %+v, want %+v", got, tt.want)
			}
			if s.Type != TypeMain {
				t.Errorf("type = %q, want main", s.Type)
			}
		})
	}
}

func TestLlxprtClassify(t *testing.T) {
	h := "8a28130a8b3616126348f5e624b8cd3102949df11a91e9aa0ff13c2b3734e244"
	tests := []struct {
		rel  string
		kind UnitKind
	}{
		{h + "/chats/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl", UnitLines},
		{h + "/chats/session-2026-02-13T10-00-00-6d1f0c2a.jsonl", UnitLines},
		{h + "/chats/archive/session-2026-01-02T10-00-00-bbbbbbbbbbbb.jsonl", UnitNone},
		{h + "/chats/archive/session-2026-01-01T10-00-00-aaaaaaaaaaaa.jsonl.gz", UnitNone},
		{h + "/chats/" + llxSID + ".lock", UnitNone},
		{h + "/chats/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl.lock", UnitNone},
		{h + "/chats/session-2026-03-03T14-05-09-6d1f0c2a-9b8.json", UnitNone},
		{h + "/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl", UnitNone},
		{"chats/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl", UnitNone},
		{h + "/logs/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl", UnitNone},
	}
	for _, tt := range tests {
		unit, got := (llxprtLayout{}).Classify(tt.rel)
		if got != tt.kind || (got != UnitNone && unit != tt.rel) {
			t.Errorf("Classify(%q) = %q, %v, want %v", tt.rel, unit, got, tt.kind)
		}
	}
	skips := []struct {
		rel  string
		skip bool
	}{
		{h, false},
		{h + "/chats", false},
		{h + "/chats/archive", true},
		{h + "/logs", true},
		{h + "/checkpoints", true},
	}
	for _, tt := range skips {
		if got := (llxprtLayout{}).SkipDir(tt.rel); got != tt.skip {
			t.Errorf("SkipDir(%q) = %v, want %v", tt.rel, got, tt.skip)
		}
	}
	if got := (llxprtLayout{}).ProjectDir(h + "/chats/session-x.jsonl"); got != h {
		t.Errorf("ProjectDir = %q, want %q", got, h)
	}
}

func TestLlxprtLockFiles(t *testing.T) {
	file := "/s/h/chats/session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl"
	tests := []struct {
		id   string
		want []string
	}{
		{llxSID, []string{"/s/h/chats/" + llxSID + ".lock", file + ".lock"}},
		{"../../etc/passwd", []string{file + ".lock"}},
		{"", []string{file + ".lock"}},
		{strings.Repeat("a", 257), []string{file + ".lock"}},
	}
	for _, tt := range tests {
		got := (llxprtLayout{}).LockFiles(&Session{ID: tt.id, File: file})
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("LockFiles(id %q) = %q, want %q", tt.id, got, tt.want)
		}
	}
	if got := (llxprtLayout{}).LockFiles(&Session{ID: llxSID}); got != nil {
		t.Errorf("LockFiles without a file = %q, want none", got)
	}
}

func TestReadLock(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ts := time.Date(2026, 3, 3, 14, 5, 9, 100e6, time.UTC)
	tests := []struct {
		name, content string
		want          Lock
		err           bool
	}{
		{"valid", `{"pid":48213,"timestamp":"2026-03-03T14:05:09.100Z","sessionId":"` + llxSID + `","ownerToken":"tok"}`, Lock{PID: 48213, Timestamp: ts, SessionID: llxSID, OwnerToken: "tok"}, false},
		{"pid as string", `{"pid":"48213","timestamp":"2026-03-03T14:05:09.100Z"}`, Lock{Timestamp: ts}, false},
		{"fractional pid", `{"pid":1.5}`, Lock{}, false},
		{"negative pid", `{"pid":-4}`, Lock{}, false},
		{"huge pid", `{"pid":1e300}`, Lock{}, false},
		{"bad timestamp", `{"pid":7,"timestamp":"yesterday"}`, Lock{PID: 7}, false},
		{"corrupt", `{"pid":7,"timest`, Lock{}, true},
		{"array", `[1]`, Lock{}, true},
		{"empty", ``, Lock{}, true},
	}
	for _, tt := range tests {
		l, err := ReadLock(write(tt.name+".lock", tt.content))
		if (err != nil) != tt.err || !l.Timestamp.Equal(tt.want.Timestamp) || l.PID != tt.want.PID || l.SessionID != tt.want.SessionID || l.OwnerToken != tt.want.OwnerToken {
			t.Errorf("ReadLock(%s) = %+v, %v; want %+v, error %v", tt.name, l, err, tt.want, tt.err)
		}
	}
	if _, err := ReadLock(filepath.Join(dir, "missing.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadLock(missing) error = %v, want not exist", err)
	}
	target := write("target", `{"pid":7}`)
	os.Symlink(target, filepath.Join(dir, "link.lock"))
	if _, err := ReadLock(filepath.Join(dir, "link.lock")); err == nil {
		t.Errorf("ReadLock followed a symlink")
	}
	if _, err := ReadLock(write("big.lock", `{"pid":7,"x":"`+strings.Repeat("x", maxLockBytes)+`"}`)); err == nil {
		t.Errorf("ReadLock read an oversized lock")
	}
}

func TestLockHeld(t *testing.T) {
	now := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
	stale := 48 * time.Hour
	alive := func(pid int) bool { return pid == 100 }
	unreadable := errors.New("unreadable")
	tests := []struct {
		name    string
		lock    Lock
		readErr error
		mtime   time.Time
		want    bool
	}{
		{"dead pid", Lock{PID: 200, Timestamp: now.Add(-time.Minute)}, nil, now, false},
		{"alive and fresh", Lock{PID: 100, Timestamp: now.Add(-time.Hour)}, nil, now.Add(-72 * time.Hour), true},
		{"alive and 49h old", Lock{PID: 100, Timestamp: now.Add(-49 * time.Hour)}, nil, now, false},
		{"alive and exactly 48h", Lock{PID: 100, Timestamp: now.Add(-48 * time.Hour)}, nil, now, true},
		{"alive, future timestamp", Lock{PID: 100, Timestamp: now.Add(time.Hour)}, nil, now, true},
		{"alive, no timestamp, fresh mtime", Lock{PID: 100}, nil, now.Add(-time.Hour), true},
		{"alive, no timestamp, old mtime", Lock{PID: 100}, nil, now.Add(-49 * time.Hour), false},
		{"unreadable, fresh mtime", Lock{}, unreadable, now.Add(-time.Hour), true},
		{"unreadable, old mtime", Lock{}, unreadable, now.Add(-49 * time.Hour), false},
		{"pid 0, fresh mtime", Lock{PID: 0, Timestamp: now}, nil, now.Add(-time.Minute), true},
		{"pid 0, old mtime", Lock{PID: 0, Timestamp: now}, nil, now.Add(-50 * time.Hour), false},
	}
	for _, tt := range tests {
		if got := LockHeld(tt.lock, tt.readErr, tt.mtime, now, stale, alive); got != tt.want {
			t.Errorf("%s: LockHeld(%+v, %v, %s) = %v, want %v", tt.name, tt.lock, tt.readErr, tt.mtime.Format(time.RFC3339), got, tt.want)
		}
	}
	// LockHeld never asks about a pid it does not trust.
	LockHeld(Lock{PID: -1}, nil, now, now, stale, func(pid int) bool { t.Errorf("alive(%d) called", pid); return true })
}

func TestLlxprtGolden(t *testing.T) {
	fixture := "testdata/llxprt/basic"
	root := filepath.Join(t.TempDir(), "tmp")
	state := t.TempDir()
	copyTree(t, filepath.Join(fixture, "store"), root)
	ix := newLayoutIndexer(t, "llxprt", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	catalogGoldensForLayout(t, "llxprt", state, root, fixture)
	assertLayoutConverged(t, "llxprt", root, state)
	// The partial last line is not consumed: its bytes are still ahead of the offset.
	for _, s := range ix.Sessions() {
		if s.ID == "0b9a8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d" && s.Tail.Offset >= s.SizeBytes {
			t.Errorf("offset %d reaches the end (%d bytes) despite a partial last line", s.Tail.Offset, s.SizeBytes)
		}
	}
	restartIdle(t, "llxprt", root, state)
}

func TestLlxprtIncremental(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	chats := filepath.Join(root, "8a28", "chats")
	os.MkdirAll(chats, 0o700)
	file := filepath.Join(chats, "session-2026-03-03T14-05-09-6d1f0c2a-9b8.jsonl")
	steps := []struct {
		line          string
		count         int
		prompt, title string
		model         string
	}{
		{llxStart(`,"cwd":"/home/u/api"`), 0, "", "", "claude-sonnet-4-5"},
		{llxContent("2026-03-03T14:05:10Z", "ai", llxText("Hello")), 1, "", "", "claude-sonnet-4-5"},
		{`{"v":1,"seq":3,"ts":"2026-03-03T14:05:11Z","type":"content","payload":{"content":`, 1, "", "", "claude-sonnet-4-5"},
		{llxContent("2026-03-03T14:05:12Z", "human", llxText("Add  rate limiting")), 2, "Add rate limiting", "", "claude-sonnet-4-5"},
		{llxEv("2026-03-03T14:06:00Z", "session_named", `{"name":"Rate limits"}`), 2, "Add rate limiting", "Rate limits", "claude-sonnet-4-5"},
		{llxEv("2026-03-03T14:07:00Z", "provider_switch", `{"provider":"openai","model":"gpt-5"}`), 2, "Add rate limiting", "Rate limits", "gpt-5"},
		{llxEv("2026-03-03T14:07:30Z", "mystery", `{}`), 2, "Add rate limiting", "Rate limits", "gpt-5"},
		{llxContent("2026-03-03T14:08:00Z", "human", llxText("Now tests")), 3, "Add rate limiting", "Rate limits", "gpt-5"},
		{llxEv("2026-03-03T14:09:00Z", "session_metadata", `{"title":null}`), 3, "Add rate limiting", "", "gpt-5"},
	}
	ix := newLayoutIndexer(t, "llxprt", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for i, step := range steps {
		appendFile(t, file, step.line[:len(step.line)/2])
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		appendFile(t, file, step.line[len(step.line)/2:]+"\n")
		if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		es := catalogSessions(t, state, "llxprt")
		if len(es) != 1 {
			t.Fatalf("line %d: %d sessions, want 1", i+1, len(es))
		}
		s := es[0]
		if s.MessageCount != step.count || s.FirstPrompt != step.prompt || s.Title != step.title || s.Model != step.model || s.Project != "/home/u/api" {
			t.Errorf("line %d: count %d prompt %q title %q model %q project %q, want %d %q %q %q /home/u/api", i+1, s.MessageCount, s.FirstPrompt, s.Title, s.Model, s.Project, step.count, step.prompt, step.title, step.model)
		}
		if wantSkipped := map[bool]int{true: 1, false: 0}[i >= 2]; s.SkippedLines != wantSkipped {
			t.Errorf("line %d: skipped %d, want %d", i+1, s.SkippedLines, wantSkipped)
		}
		assertLayoutConverged(t, "llxprt", root, state)
	}
	restartIdle(t, "llxprt", root, state)
	line := llxEv("2026-03-03T14:10:00Z", "session_named", `{"name":"Final"}`) + "\n"
	appendFile(t, file, line)
	ix3 := newLayoutIndexer(t, "llxprt", root, state, false)
	ix3.Load()
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix3.Stats().BytesRead, int64(len(line)+2*fpWindow+headWindow); got != want {
		t.Errorf("restart after append read %d bytes, want %d", got, want)
	}
	if s := ix3.Sessions()[0]; s.Title != "Final" || s.LastActiveAt != "2026-03-03T14:10:00.000Z" || s.SkippedLines != 1 {
		t.Errorf("after restart: title %q last %s skipped %d, want Final 2026-03-03T14:10:00.000Z 1", s.Title, s.LastActiveAt, s.SkippedLines)
	}
	assertLayoutConverged(t, "llxprt", root, state)
}

// FuzzLlxprtLine feeds arbitrary lines to the llxprt accumulator: it must never
// panic, a rejected line must leave the state unchanged, and the state must survive
// a JSON round trip.
func FuzzLlxprtLine(f *testing.F) {
	seedLinesFrom(f, "testdata/llxprt/*/store/*/chats/*.jsonl")
	f.Add([]byte(`{"type":"session_start","payload":{"workspaceDirs":[7,"/x"]}}`))
	f.Add([]byte(`{"type":"content","payload":{"content":{"speaker":"human","blocks":[{"type":"text","text":null},"x"]}}}`))
	f.Add([]byte(`{"type":"session_named","payload":{"name":null},"ts":"2026-01-01T00:00:00+02:00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		acc := &llxprtAcc{}
		acc.Line([]byte(llxStart(`,"cwd":"/x"`)))
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
		var back llxprtAcc
		if err := jsonUnmarshal(st, &back); err != nil || back != *acc {
			t.Fatalf("state round trip: %v %+v != %+v", err, back, *acc)
		}
	})
}
