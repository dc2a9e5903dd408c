package janitor

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oldJournal is what versions before every line carried an actionId wrote
// around an intent: one-line actions and the pass line without one, and an
// archive and a delete closed by their completion and rollback lines (the
// encoding the journal has had since intents exist: the fields in
// JournalEntry's order, compact).
const oldJournal = `{"time":"2026-01-01T00:00:00.000Z","action":"remove-lock","source":"wave","id":"x1","file":"/r/p/x1.lock","bytes":40,"reason":"stale lock"}
{"time":"2026-01-01T00:00:00.001Z","action":"archive","actionId":"0a0a0a0a-0000-4000-8000-000000000001","phase":"intent","source":"wave","id":"x1","file":"/r/p/x1.jsonl","bytes":9,"reason":"retention","paths":["/r/p/x1.jsonl"],"staged":["/r/p/.sw-x1"],"archiveDir":"/a/wave/p"}
{"time":"2026-01-01T00:00:00.002Z","action":"archive","actionId":"0a0a0a0a-0000-4000-8000-000000000001","source":"wave","id":"x1","file":"/r/p/x1.jsonl","bytes":9,"reason":"retention","archive":"/a/wave/p/x1.jsonl.gz"}
{"time":"2026-01-01T00:00:00.003Z","action":"delete","actionId":"0b0b0b0b-0000-4000-8000-000000000002","phase":"intent","source":"wave","id":"x2","file":"/r/p/x2.jsonl","bytes":9,"reason":"retention","paths":["/r/p/x2.jsonl"],"staged":["/r/p/.sw-x2"]}
{"time":"2026-01-01T00:00:00.004Z","action":"delete","actionId":"0b0b0b0b-0000-4000-8000-000000000002","phase":"rollback","source":"wave","id":"x2","file":"/r/p/x2.jsonl","bytes":0,"reason":"modified during the pass"}
{"time":"2026-01-01T00:00:00.005Z","action":"skip-in-use","source":"wave","id":"x2","file":"/r/p/x2.jsonl","bytes":9,"reason":"modified during the pass"}
{"time":"2026-01-01T00:00:00.006Z","action":"warn","source":"wave","id":"","file":"/r/p","bytes":99,"reason":"project over warn_size \"action\":\"archive\" \"phase\":\"intent\""}
{"time":"2026-01-01T00:00:00.007Z","action":"rmdir","source":"wave","id":"","file":"/r/q","bytes":0,"reason":"empty project directory"}
{"time":"2026-01-01T00:00:00.008Z","action":"pass","source":"","id":"","file":"","bytes":9,"reason":"retired 1 (archived 1, deleted 0), skipped in use 1","retired":1,"archived":1,"deleted":0,"skippedInUse":1,"errors":0}
`

// TestRecoverIntentInAnOldJournal: a retirement killed with the session staged
// leaves its intent in a journal that older versions wrote (one-line actions
// without an actionId, actions closed long ago), and the intent line itself
// may come as CRLF, with its fields in another order and spaced, with the
// filter's markers inside its strings, or after a torn or an overlong line.
// Recovery must find it every time and put the session back: a skipped intent
// leaves the session staged, out of the store and in no archive.
func TestRecoverIntentInAnOldJournal(t *testing.T) {
	reorder := func(line []byte) []byte {
		var m map[string]any // marshalled with its keys sorted: another order
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(m)
		return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(`":`), []byte(`": `)), []byte(`,"`), []byte(`, "`))
	}
	for _, tc := range []struct {
		name   string
		before string
		line   func([]byte) []byte
		eol    string
	}{
		{name: "as-written", eol: "\n"},
		{name: "crlf", eol: "\r\n"},
		{name: "no-final-newline", eol: ""},
		{name: "reordered-spaced", line: reorder, eol: "\n"},
		{name: "markers-in-strings", line: func(b []byte) []byte {
			var e JournalEntry
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			e.Reason = `"action":"rmdir" "phase" "actionId"` + "\r"
			out, _ := json.Marshal(e)
			return out
		}, eol: "\n"},
		{name: "after-torn-line", before: `{"time":"2026-01-01T00:00:01.000Z","action":"archive","actionId":"0c0c0c0c-0000-4000-8000-0000` + "\n", eol: "\n"},
		{name: "after-long-line", before: `{"time":"2026-01-01T00:00:01.000Z","action":"warn","reason":"` + strings.Repeat("x", 17<<20) + `"}` + "\n", eol: "\n"},
		{name: "after-long-junk", before: strings.Repeat("\x00", 17<<20) + "\n", eol: "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
			const id = "eeeeeeee-0000-4000-8000-000000000001"
			path := f.session("/w/old", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			f.index()
			crashHook = func(s string) bool { return s == "staged" }
			f.janitor().RunOnce(context.Background(), Overrides{})
			crashHook = nil
			if exists(path) {
				t.Fatalf("the crash left the session in place: the test staged nothing")
			}
			jpath := filepath.Join(f.state, JournalName)
			data, err := os.ReadFile(jpath)
			if err != nil {
				t.Fatal(err)
			}
			var intent []byte
			for _, l := range bytes.Split(data, []byte("\n")) {
				if bytes.Contains(l, []byte(`"phase":"intent"`)) {
					intent = l
				}
			}
			if intent == nil {
				t.Fatalf("no intent journaled:\n%s", data)
			}
			if tc.line != nil {
				intent = tc.line(intent)
			}
			old := strings.ReplaceAll(oldJournal, "\n", tc.eol)
			if tc.eol == "" {
				old = oldJournal
			}
			journal := old + tc.before + string(intent) + tc.eol
			if err := os.WriteFile(jpath, []byte(journal), 0o600); err != nil {
				t.Fatal(err)
			}

			f.index()
			rec, err := f.janitor().Recover(context.Background())
			if err != nil || len(rec.Errors) > 0 || rec.RolledBack != 1 || rec.Finished != 0 {
				t.Fatalf("Recover = %+v, %v; want the one open intent rolled back", rec, err)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, orig) {
				t.Fatalf("session not back in the store after recovery (%v)", err)
			}
			noTemps(t, f.root, f.archive)
			if open, err := openIntents(jpath); len(open) != 0 || err != nil {
				t.Errorf("after recovery the journal leaves %d intents open (%v): %+v", len(open), err, open)
			}
		})
	}
}

// FuzzEachJournalLine: recovery's line reader yields exactly the non-empty
// lines of at most max bytes (CR LF or LF stripped), in order, whatever the
// input, and reads to the end past every longer line.
func FuzzEachJournalLine(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), 2)
	f.Add([]byte(strings.Repeat("x", 70<<10)+"\n{\"phase\":\"intent\"}\n"), 64)
	f.Add([]byte("\r\n\r\r\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		var want [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			l = bytes.TrimSuffix(l, []byte("\r"))
			if len(l) > 0 && len(l) <= max {
				want = append(want, l)
			}
		}
		var got [][]byte
		if err := eachJournalLine(bytes.NewReader(data), max, func(l []byte) { got = append(got, bytes.Clone(l)) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d lines %q, want %d %q", len(got), got, len(want), want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}
