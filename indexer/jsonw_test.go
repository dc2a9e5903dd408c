package indexer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hand-written renderers must agree byte for byte with encoding/json, which
// Wave's and Claude's readers were written against.

// The agents' native index schemas, as encoding/json renders them: the oracles
// the hand-written renderers are held to.

// waveIndex is Wave's own sessions-index.json schema.
type waveIndex struct {
	Sessions    map[string]waveIndexEntry `json:"sessions"`
	LastUpdated string                    `json:"lastUpdated"`
}

type waveIndexEntry struct {
	SessionType       string `json:"sessionType"`
	Workdir           string `json:"workdir"`
	CreatedAt         string `json:"createdAt"`
	LastActiveAt      string `json:"lastActiveAt"`
	LatestTotalTokens int64  `json:"latestTotalTokens"`
	FirstMessage      string `json:"firstMessage"`
	RootSessionID     string `json:"rootSessionId"`
	ParentSessionID   string `json:"parentSessionId,omitempty"`
}

// claudeIndex is Claude Code's sessions-index.json, schema version 1.
type claudeIndex struct {
	Version      int                `json:"version"`
	OriginalPath string             `json:"originalPath"`
	Entries      []claudeIndexEntry `json:"entries"`
}

type claudeIndexEntry struct {
	SessionID    string `json:"sessionId"`
	FullPath     string `json:"fullPath"`
	FileMtime    int64  `json:"fileMtime"` // epoch milliseconds
	FirstPrompt  string `json:"firstPrompt"`
	Summary      string `json:"summary,omitempty"`
	MessageCount int    `json:"messageCount"`
	Created      string `json:"created"`
	Modified     string `json:"modified"`
	GitBranch    string `json:"gitBranch"`
	ProjectPath  string `json:"projectPath"`
	IsSidechain  bool   `json:"isSidechain"`
}

func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// waveNativeReference is how the Wave native index was rendered before it was
// written by hand: encoding/json over the schema types.
func waveNativeReference(sessions []*Session) []byte {
	idx := waveIndex{Sessions: map[string]waveIndexEntry{}}
	for _, s := range sessions {
		var acc waveAcc
		if a, ok := s.acc.(*waveAcc); ok {
			acc = *a
		}
		idx.Sessions[s.ID] = waveIndexEntry{
			SessionType:       s.Type,
			Workdir:           s.Project,
			CreatedAt:         s.CreatedAt,
			LastActiveAt:      s.LastActiveAt,
			LatestTotalTokens: acc.Tokens,
			FirstMessage:      s.FirstPrompt,
			RootSessionID:     firstNonEmpty(acc.RootSession, s.ID),
			ParentSessionID:   acc.ParentSession,
		}
		if s.LastActiveAt > idx.LastUpdated {
			idx.LastUpdated = s.LastActiveAt
		}
	}
	b, err := marshalIndent(idx)
	if err != nil {
		panic(err)
	}
	return b
}

// awkwardStrings are the strings whose JSON encoding is easy to get wrong.
var awkwardStrings = []string{
	"", "plain", `quote " and \ backslash`, "tab\tnew\nline\r", "\x00\x01\x1f\x7f",
	"<html> & 'amp'", "héllo wörld ✓ 日本", "line\u2028sep\u2029para", "bad \xff\xfe utf8",
	"\b\f", "emoji 😀", strings.Repeat("x", 300),
}

func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return awkwardStrings[r.IntN(len(awkwardStrings))]
	}
	var b strings.Builder
	for range r.IntN(24) {
		switch r.IntN(6) {
		case 0:
			b.WriteByte(byte(r.IntN(0x20)))
		case 1:
			b.WriteByte(byte(0x80 + r.IntN(0x80)))
		case 2:
			b.WriteRune(rune(r.IntN(0x3000)))
		default:
			b.WriteByte(byte('a' + r.IntN(26)))
		}
	}
	return b.String()
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := append([]string(nil), awkwardStrings...)
	for range 5000 {
		cases = append(cases, randomString(r))
	}
	for _, s := range cases {
		sameAsEncodingJSON(t, appendJSONString(nil, s), s)
	}
}

// sameAsEncodingJSON fails the test unless got is what encoding/json (without HTML
// escaping) makes of v.
func sameAsEncodingJSON(t *testing.T, got []byte, v any) {
	t.Helper()
	want, err := marshalNoEscape(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("hand-written encoding differs from encoding/json for %#v\n got: %s\nwant: %s", v, got, want)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range awkwardStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameAsEncodingJSON(t, appendJSONString(nil, s), s)
	})
}

func randomWaveSessions(r *rand.Rand, n int) []*Session {
	ss := make([]*Session, n)
	for i := range ss {
		s := &Session{
			ID:           fmt.Sprintf("%08x", r.IntN(n*2+1)), // duplicates on purpose
			Type:         []string{TypeMain, TypeSubagent}[r.IntN(2)],
			Project:      randomString(r),
			CreatedAt:    randomString(r),
			LastActiveAt: fmt.Sprintf("2026-11-%02dT10:00:00Z", 1+r.IntN(28)),
			FirstPrompt:  randomString(r),
		}
		if r.IntN(4) > 0 {
			s.acc = &waveAcc{Tokens: r.Int64N(1 << 40), RootSession: []string{"", randomString(r)}[r.IntN(2)], ParentSession: []string{"", randomString(r)}[r.IntN(2)]}
		}
		ss[i] = s
	}
	SortSessions(ss)
	return ss
}

func TestWaveNativeIndexMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 5, 40, 200} {
		for range 20 {
			ss := randomWaveSessions(r, n)
			got, err := waveLayout{}.NativeIndex(nil, "/root", "dir", ss)
			if err != nil {
				t.Fatal(err)
			}
			if want := waveNativeReference(ss); !bytes.Equal(got, want) {
				t.Fatalf("%d sessions: hand-rendered index differs from encoding/json\n got: %s\nwant: %s", n, got, want)
			}
		}
	}
}

// claudeNativeReference is how Claude's native index was rendered before it was
// written by hand.
func claudeNativeReference(dir string, sessions []*Session) []byte {
	idx := claudeIndex{Version: 1, Entries: []claudeIndexEntry{}}
	for _, s := range sessions {
		if s.Type != TypeMain || s.Hidden {
			continue
		}
		var mtime int64
		if s.Tail != nil {
			// Node: new Date(Math.round(sec*1e3 + nsec/1e6)).getTime()
			t := time.Unix(0, s.Tail.Mtime)
			mtime = int64(math.Round(float64(t.Unix())*1e3 + float64(t.Nanosecond())/1e6))
		}
		idx.Entries = append(idx.Entries, claudeIndexEntry{
			SessionID: s.ID, FullPath: s.File, FileMtime: mtime, FirstPrompt: s.FirstPrompt,
			Summary: s.Title, MessageCount: s.MessageCount, Created: s.CreatedAt,
			Modified: s.LastActiveAt, GitBranch: s.GitBranch, ProjectPath: s.Project,
		})
	}
	idx.OriginalPath = claudeOriginalPath(dir, sessions)
	b, err := marshalIndent(idx)
	if err != nil {
		panic(err)
	}
	return b
}

func TestClaudeNativeIndexMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 5, 40, 200} {
		for range 20 {
			ss := randomWaveSessions(r, n)
			for _, s := range ss {
				s.File = "/p/" + randomString(r) + ".jsonl"
				s.Title = []string{"", randomString(r)}[r.IntN(2)]
				s.GitBranch = randomString(r)
				s.MessageCount = r.IntN(1000)
				s.Hidden = r.IntN(4) == 0
				if r.IntN(3) > 0 {
					s.Tail = &Tail{Mtime: r.Int64N(1 << 62)}
				}
			}
			dir := "-p-" + randomString(r)
			if len(ss) > 0 && r.IntN(2) == 0 {
				dir = claudeSanitize(ss[0].Project)
			}
			got, err := claudeLayout{}.NativeIndex(nil, "/root", dir, ss)
			if err != nil {
				t.Fatal(err)
			}
			if want := claudeNativeReference(dir, ss); !bytes.Equal(got, want) {
				t.Fatalf("%d sessions: hand-rendered index differs from encoding/json\n got: %s\nwant: %s", n, got, want)
			}
		}
	}
}

func TestAppendSessionMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	states := []string{"", "{}", `{"lines":3,"workdir":"/a b","firstMessage":"hi \"there\"","firstSeen":true}`,
		`{"lines":3,"x":[1,2,{"y":"a b"}]}`, `{"n":null}`}
	for i := range 3000 {
		s := randomWaveSessions(r, 1)[0]
		s.File, s.Title, s.GitBranch, s.ParentID = randomString(r), randomString(r), randomString(r), randomString(r)
		s.Provider, s.Model = randomString(r), randomString(r)
		s.MessageCount, s.SizeBytes, s.SkippedLines = r.IntN(1<<20), r.Int64N(1<<50), r.IntN(3)
		s.Invalid, s.Corrupt, s.Hidden = r.IntN(5) == 0, r.IntN(5) == 0, r.IntN(5) == 0
		if i%7 > 0 {
			s.Tail = &Tail{Dev: r.Uint64(), Ino: r.Uint64(), Offset: r.Int64N(1 << 40), Mtime: r.Int64(), Size: r.Int64N(1 << 40),
				LongLine: r.IntN(4) == 0, Fp: randomString(r), Dep: randomString(r), OwnProject: randomString(r),
				State: []byte(states[r.IntN(len(states))])}
		}
		sameAsEncodingJSON(t, appendSession(nil, s), s)
	}
}

// A hand-edited catalog may space out a tail; reading it compacts the state, so
// the hand-written encoder and encoding/json still agree on it.
func TestTailStateIsCompactedWhenRead(t *testing.T) {
	var tail Tail
	if err := tail.UnmarshalJSON([]byte(`{ "dev": 1, "ino": 2, "offset": 3, "mtime": 4, "size": 5,
		"lines" : 3 , "x" : [1, 2, {"y": "a b"}] }`)); err != nil {
		t.Fatal(err)
	}
	if got, want := string(tail.State), `{"lines":3,"x":[1,2,{"y":"a b"}]}`; got != want {
		t.Fatalf("state = %s, want %s", got, want)
	}
	s := &Session{ID: "x", File: "/f", Tail: &tail}
	sameAsEncodingJSON(t, appendSession(nil, s), s)
}

// FuzzAppendSession decodes arbitrary catalogs (seeded with the golden ones) and
// checks that every session they hold renders as encoding/json renders it.
func FuzzAppendSession(f *testing.F) {
	goldens, _ := filepath.Glob("testdata/*/*/catalog-*.json")
	for _, g := range goldens {
		data, _ := os.ReadFile(g)
		f.Add(data)
	}
	f.Add([]byte(`{"version":1,"generator":"sessionwatch","sessions":[{"id":"a","file":"f","tail":{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5, "x" : [1, {"y":"<&>"}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCatalog(data)
		if err != nil {
			return
		}
		for _, s := range c.Sessions {
			want, err := marshalNoEscape(s)
			if err != nil {
				continue // encoding/json refuses it: Encode reports the error
			}
			if got := appendSession(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("session from %q:\n got: %s\nwant: %s", data, got, want)
			}
		}
	})
}
