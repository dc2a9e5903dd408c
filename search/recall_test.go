package search

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var recallVocab = []string{"parser", "Parser", "café", "CAFÉ", "naïve", "東京都", "京都", "日本語を話す", "猫", "Привет", "straße",
	"ΣΟΦΟΣ", "zebra", "fix", "bug", "résumé", "e\u0301clair", "deploy", "42", "v2", "ÆON", "der", "und"}

// escapeSome rewrites some non-ASCII characters of a JSON line as \uXXXX
// escapes, so that words are split across escapes as agents write them.
func escapeSome(line []byte, rng *rand.Rand) []byte {
	var b strings.Builder
	for _, r := range string(line) {
		if r > 0x7f && r < 0x10000 && rng.IntN(2) == 0 {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return []byte(b.String())
}

type recallMsg struct {
	session string
	text    string
}

// TestRecallEqualsBruteForce builds an index of a generated corpus across the line
// layouts and checks, for every single-word and phrase query, that the sessions
// found are exactly those a brute-force scan of the messages' texts finds.
func TestRecallEqualsBruteForce(t *testing.T) {
	s := newStore(t)
	rng := rand.New(rand.NewPCG(7, 11))
	var corpus []recallMsg
	text := func() string {
		var ws []string
		for range 2 + rng.IntN(14) {
			w := recallVocab[rng.IntN(len(recallVocab))]
			switch rng.IntN(6) {
			case 0:
				w += "\n"
			case 1:
				w += ","
			case 2:
				w = "(" + w + ")"
			}
			ws = append(ws, w)
		}
		sep := " "
		if rng.IntN(4) == 0 {
			sep = "" // CJK and words run together
		}
		return strings.Join(ws, sep)
	}
	line := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(escapeSome(b, rng)) + "\n"
	}
	for i := range 90 {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		var b strings.Builder
		var name, layout, rel string
		switch i % 3 {
		case 0:
			layout, rel = "wave", "p/"+id+".jsonl"
			b.WriteString(line(map[string]any{"type": "metadata", "workdir": "/w/p", "createdAt": "2026-01-01T00:00:00Z"}))
			for k := range 1 + rng.IntN(5) {
				tx := text()
				role := []string{"user", "assistant"}[k%2]
				b.WriteString(line(map[string]any{"timestamp": "2026-01-01T00:00:01Z", "id": "x", "role": role, "blocks": []any{map[string]any{"type": "text", "content": tx}}}))
				corpus = append(corpus, recallMsg{id, tx})
			}
		case 1:
			layout, rel = "claude", "-w-p/"+id+".jsonl"
			for k := range 1 + rng.IntN(5) {
				tx := text()
				if k%2 == 0 {
					b.WriteString(line(map[string]any{"type": "user", "cwd": "/w/p", "sessionId": id, "timestamp": "2026-01-01T00:00:01Z", "message": map[string]any{"role": "user", "content": tx}}))
				} else {
					b.WriteString(line(map[string]any{"type": "assistant", "cwd": "/w/p", "sessionId": id, "timestamp": "2026-01-01T00:00:01Z",
						"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": tx}, map[string]any{"type": "tool_use", "name": "Bash", "input": map[string]any{"command": "zebra parser"}}}}}))
				}
				corpus = append(corpus, recallMsg{id, tx})
			}
		case 2:
			layout, rel = "codex", "2026/01/01/rollout-2026-01-01T00-00-00-"+id+".jsonl"
			b.WriteString(line(map[string]any{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": map[string]any{"id": id, "cwd": "/w/p", "timestamp": "2026-01-01T00:00:00Z"}}))
			for k := range 1 + rng.IntN(5) {
				tx := text()
				typ := []string{"user_message", "agent_message"}[k%2]
				b.WriteString(line(map[string]any{"timestamp": "2026-01-01T00:00:01Z", "type": "event_msg", "payload": map[string]any{"type": typ, "message": tx}}))
				corpus = append(corpus, recallMsg{id, tx})
			}
		}
		name = s.write(layout, rel, b.String())
		_ = name
	}
	x, _ := s.index(Options{SpillBytes: 4 << 10}) // several segments
	x.Close()

	queries := []string{}
	for _, w := range recallVocab {
		queries = append(queries, w, `"`+w+`"`)
	}
	queries = append(queries, `"parser café"`, `"fix bug"`, `"東京"`, `"京都 猫"`, "都", "を", "Σοφος", "cafe", "CAFE",
		"eclair", "aeon", "strasse", `"der und"`, "zebra", `"本語"`, "話す", "niet")
	for _, q := range queries {
		pq, err := ParseQuery(q)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", q, err)
		}
		want := map[string]bool{}
		for _, m := range corpus {
			if pq.Must[0].Matches(Normalize(m.text)) {
				want[m.session] = true
			}
		}
		got := map[string]bool{}
		for _, h := range s.search(q, Filter{}) {
			got[strings.TrimSuffix(filepath.Base(h.Path), ".jsonl")[max(0, len(strings.TrimSuffix(filepath.Base(h.Path), ".jsonl"))-36):]] = true
		}
		if (q == "parser" || q == "都" || q == `"東京"`) && len(want) < 10 {
			t.Fatalf("query %q: only %d sessions in the corpus hold it; the test would prove little", q, len(want))
		}
		if g, w := keys(got), keys(want); g != w {
			t.Errorf("query %q: index finds %s\nbrute force finds %s", q, g, w)
		}
	}
	if _, err := os.Stat(filepath.Join(s.state, DirName, ManifestName)); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return fmt.Sprintf("%d %v", len(out), out)
}
