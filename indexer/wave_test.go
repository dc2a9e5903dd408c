package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEncodeResolved(t *testing.T) {
	long := "/" + strings.Repeat("abcdefghij/", 25)
	longEnc := EncodeResolved(long)
	tests := []struct {
		name, in, want string
	}{
		{"plain", "/home/u/proj", "home-u-proj"},
		{"spaces collapse", "/home/u/my  \t proj", "home-u-my_proj"},
		{"windows drive", `C:\Users\x\proj`, "Users-x-proj"},
		{"lower drive forward slashes", "d:/work/a", "work-a"},
		{"case kept", "/Home/U/Proj", "Home-U-Proj"},
		{"dashes and underscores kept", "/a-b/c_d", "a-b-c_d"},
		{"no leading slash", "rel/dir", "rel-dir"},
		{"long", long, longEnc},
	}
	for _, tt := range tests {
		if got := EncodeResolved(tt.in); got != tt.want {
			t.Errorf("%s: EncodeResolved(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
	if n := len([]rune(longEnc)); n != MaxEncodedLen {
		t.Errorf("EncodeResolved(long) has %d chars, want %d", n, MaxEncodedLen)
	}
	if !waveHashedRE().MatchString(longEnc) || longEnc[:191] != EncodeResolved("/" + strings.Repeat("abcdefghij/", 25))[:191] {
		t.Errorf("EncodeResolved(long) = %q, want 191 chars + -hash8", longEnc)
	}
	if EncodeResolved(long) == EncodeResolved(long+"x/") {
		t.Errorf("long paths differing after 191 chars encode alike")
	}
}

func TestEncodeProjectResolvesSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real proj")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	resolved, _ := filepath.EvalSymlinks(real)
	if got, want := EncodeProject(link), EncodeResolved(resolved); got != want {
		t.Errorf("EncodeProject(%q) = %q, want %q", link, got, want)
	}
	missing := filepath.Join(dir, "missing", "x")
	if got, want := EncodeProject(missing), EncodeResolved(missing); got != want {
		t.Errorf("EncodeProject(%q) = %q, want %q", missing, got, want)
	}
}

func TestDecodeWaveDir(t *testing.T) {
	existing := map[string]bool{"/home": true, "/home/u": true, "/home/u/my-app": true, "/home/u/my app2": true, "/srv": true, "/srv/a_b": true}
	exists := func(p string) bool { return existing[p] }
	tests := []struct{ in, want string }{
		{"home-u-my-app", "/home/u/my-app"},
		{"home-u-my_app2", "/home/u/my app2"},
		{"srv-a_b", "/srv/a_b"},
		{"nowhere-x_y", "/nowhere/x y"},
	}
	for _, tt := range tests {
		if got := DecodeWaveDir(tt.in, exists); got != tt.want {
			t.Errorf("DecodeWaveDir(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPrompt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  hello \n\t world  ", "hello world"},
		{"", ""},
		{strings.Repeat("é", 200), strings.Repeat("é", 200)},
		{strings.Repeat("é", 201), strings.Repeat("é", 200) + "…"},
		{strings.Repeat("a", 200) + "   b", strings.Repeat("a", 200) + "…"},
		{"bad\xffbyte", "badbyte"},
	}
	for _, tt := range tests {
		if got := Prompt(tt.in); got != tt.want {
			t.Errorf("Prompt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

const (
	waveID  = "0b5c3a4e-1111-4222-8333-944455556666"
	mtimeTS = "2026-01-02T03:04:05.000Z"
)

// foldWave folds lines into a fresh wave accumulator and summarizes it.
func foldWave(t *testing.T, unit string, lines ...string) (*Session, *waveAcc, int) {
	t.Helper()
	acc := &waveAcc{}
	s, bad := foldLines(t, acc, unit, lines...)
	return s, acc, bad
}

func TestWaveSummary(t *testing.T) {
	header := `{"type":"metadata","workdir":"/home/u/proj","createdAt":"2026-03-01T10:00:00Z","gitBranch":"main"}`
	user := `{"timestamp":"2026-03-01T10:00:01.5Z","id":"m1","role":"user","blocks":[{"type":"text","content":"  fix\n the   bug "}]}`
	meta := `{"timestamp":"2026-03-01T10:00:00.9Z","id":"m0","role":"user","isMeta":true,"blocks":[{"type":"text","content":"meta text"}]}`
	asst := `{"timestamp":"2026-03-01T10:00:09Z","id":"m2","role":"assistant","blocks":[{"type":"tool","name":"x","parameters":{"a":1}},{"type":"text","content":"done"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"model":"glm-5"}}`
	asst2 := `{"timestamp":"2026-03-01T10:01:00Z","id":"m3","role":"assistant","blocks":[{"type":"text","content":"more"}]}`
	compact := `{"timestamp":"2026-03-01T10:00:02Z","id":"c","role":"assistant","blocks":[{"type":"compact","content":"summary of before"}]}`
	tests := []struct {
		name  string
		unit  string
		lines []string
		want  Session
		own   string
		tok   int64
		bad   int
	}{
		{"header and messages", "d/" + waveID + ".jsonl", []string{header, meta, user, asst, asst2},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:00.000Z", LastActiveAt: "2026-03-01T10:01:00.000Z", FirstPrompt: "fix the bug", MessageCount: 3, GitBranch: "main", Model: "glm-5"}, "/home/u/proj", 15, 0},
		{"no header", "d/" + waveID + ".jsonl", []string{user, asst},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:01.500Z", LastActiveAt: "2026-03-01T10:00:09.000Z", FirstPrompt: "fix the bug", MessageCount: 2, Model: "glm-5"}, "", 15, 0},
		{"empty file uses mtime", "d/" + waveID + ".jsonl", nil,
			Session{ID: waveID, Type: TypeMain, CreatedAt: mtimeTS, LastActiveAt: mtimeTS}, "", 0, 0},
		{"header only", "d/subagent-" + waveID + ".jsonl", []string{header},
			Session{ID: waveID, Type: TypeSubagent, CreatedAt: "2026-03-01T10:00:00.000Z", LastActiveAt: mtimeTS, GitBranch: "main"}, "/home/u/proj", 0, 0},
		{"meta first then compact", "d/" + waveID + ".jsonl", []string{meta, compact},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:00.900Z", LastActiveAt: "2026-03-01T10:00:02.000Z", FirstPrompt: "summary of before", MessageCount: 1}, "", 0, 0},
		{"later metadata line is ignored", "d/" + waveID + ".jsonl", []string{user, header},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:01.500Z", LastActiveAt: "2026-03-01T10:00:01.500Z", FirstPrompt: "fix the bug", MessageCount: 1}, "", 0, 0},
		{"first message without text", "d/" + waveID + ".jsonl", []string{`{"timestamp":"2026-03-01T10:00:00Z","id":"a","role":"user","blocks":[{"type":"image","imageUrls":["x"]}]}`, user},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:00.000Z", LastActiveAt: "2026-03-01T10:00:01.500Z", MessageCount: 2}, "", 0, 0},
		{"bad lines skipped", "d/" + waveID + ".jsonl", []string{`{not json`, `[1,2]`, `{"a":1}{}`, user},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:01.500Z", LastActiveAt: "2026-03-01T10:00:01.500Z", FirstPrompt: "fix the bug", MessageCount: 1}, "", 0, 3},
		{"mistyped fields are ignored, not the line", "d/" + waveID + ".jsonl", []string{`{"timestamp":5,"isMeta":"yes","usage":{"total_tokens":"many"},"blocks":{"type":"text"}}`, user},
			Session{ID: waveID, Type: TypeMain, CreatedAt: "2026-03-01T10:00:01.500Z", LastActiveAt: "2026-03-01T10:00:01.500Z", MessageCount: 2}, "", 0, 0},
		{"unparseable timestamp ignored", "d/" + waveID + ".jsonl", []string{`{"timestamp":"yesterday","id":"a","role":"user","blocks":[]}`},
			Session{ID: waveID, Type: TypeMain, CreatedAt: mtimeTS, LastActiveAt: mtimeTS, MessageCount: 1}, "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, acc, bad := foldWave(t, tt.unit, tt.lines...)
			got := Session{ID: s.ID, Type: s.Type, CreatedAt: s.CreatedAt, LastActiveAt: s.LastActiveAt, FirstPrompt: s.FirstPrompt, MessageCount: s.MessageCount, GitBranch: s.GitBranch, Model: s.Model}
			if got != tt.want {
				t.Errorf("summary = %+v, want %+v", got, tt.want)
			}
			if s.Tail.OwnProject != tt.own {
				t.Errorf("own project = %q, want %q", s.Tail.OwnProject, tt.own)
			}
			if acc.Tokens != tt.tok {
				t.Errorf("tokens = %d, want %d", acc.Tokens, tt.tok)
			}
			if bad != tt.bad {
				t.Errorf("bad lines = %d, want %d", bad, tt.bad)
			}
		})
	}
}

func TestWaveClassify(t *testing.T) {
	tests := []struct {
		rel  string
		kind UnitKind
	}{
		{"proj/" + waveID + ".jsonl", UnitLines},
		{"proj/subagent-" + waveID + ".jsonl", UnitLines},
		{waveID + ".jsonl", UnitNone},
		{"proj/memory/" + waveID + ".jsonl", UnitNone},
		{"proj/notes.jsonl", UnitNone},
		{"proj/" + waveID + ".jsonl.bak", UnitNone},
		{"proj/sessions-index.json", UnitNone},
	}
	for _, tt := range tests {
		if _, got := (waveLayout{}).Classify(tt.rel); got != tt.kind {
			t.Errorf("Classify(%q) = %v, want %v", tt.rel, got, tt.kind)
		}
	}
	_ = time.Now
}

// FuzzWaveLine feeds arbitrary lines to the wave accumulator: it must never panic,
// a rejected line must leave the state unchanged, and the state must survive a
// JSON round trip.
func FuzzWaveLine(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/wave/*/store/*/*.jsonl")
	for _, p := range seeds {
		data, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(data), "\n") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte(`{"type":"metadata","workdir":"/x","createdAt":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"timestamp":"2026-01-01T00:00:00Z","blocks":[{"type":"text","content":7}]}`))
	f.Add([]byte(`{"usage":null,"blocks":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		acc := &waveAcc{}
		acc.Line([]byte(`{"timestamp":"2026-01-01T00:00:00Z","role":"user","blocks":[]}`))
		before, _ := marshalNoEscape(acc)
		if err := acc.Line(line); err != nil {
			after, _ := marshalNoEscape(acc)
			if string(before) != string(after) {
				t.Fatalf("rejected line changed state: %s -> %s", before, after)
			}
		}
		st, err := marshalNoEscape(acc)
		if err != nil {
			t.Fatal(err)
		}
		var back waveAcc
		if err := jsonUnmarshal(st, &back); err != nil || back != *acc {
			t.Fatalf("state round trip: %v %+v != %+v", err, back, *acc)
		}
	})
}
