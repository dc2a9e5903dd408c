package fidelity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// geminiSession is one row of @google/gemini-cli's getSessionFiles, the list
// `gemini --list-sessions` prints (testdata/gemini-readers.mjs).
type geminiSession struct {
	ID               string `json:"id"`
	FileName         string `json:"fileName"`
	Index            int    `json:"index"`
	StartTime        string `json:"startTime"`
	LastUpdated      string `json:"lastUpdated"`
	MessageCount     int    `json:"messageCount"`
	DisplayName      string `json:"displayName"`
	FirstUserMessage string `json:"firstUserMessage"`
	Summary          string `json:"summary"`
}

type geminiReaders struct {
	Version string                     `json:"version"`
	Chunk   string                     `json:"chunk"`
	Dirs    map[string][]geminiSession `json:"dirs"`
}

// geminiCLIRow is one line of `gemini --list-sessions`.
type geminiCLIRow struct {
	n         int
	title, id string
}

// geminiTricky is a hand-made chat file: what real Gemini chats hold that a
// generated store does not.
type geminiTricky struct {
	id, name string
	file     string // name in chats/ (a subagent: <parentId>/<id>.jsonl)
	data     string
}

// geminiTrickySessions writes records as Gemini CLI 0.61 does: a header line,
// message lines (string id), {"$set":…} updates and {"$rewindTo":id}. Session k
// starts at t0+k·10min.
func geminiTrickySessions(project string, t0 time.Time) []geminiTricky {
	hash := sha256Hex(project)
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	type rec = map[string]any
	var out []geminiTricky
	add := func(name string, build func(at func(int) string, id string) []string) {
		k := len(out)
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", int64(0xc0de0000)+int64(k), k)
		start := t0.Add(time.Duration(k) * 10 * time.Minute)
		at := func(sec int) string {
			return start.Add(time.Duration(sec) * time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
		}
		lines := build(at, id)
		file := fmt.Sprintf("session-%s-%s.jsonl", start.UTC().Format("2006-01-02T15-04"), id[:8])
		out = append(out, geminiTricky{id: id, name: name, file: file, data: strings.Join(lines, "\n") + "\n"})
	}
	header := func(id, start string, extra rec) string {
		h := rec{"sessionId": id, "projectHash": hash, "startTime": start, "lastUpdated": start, "kind": "main"}
		for k, v := range extra {
			if v == nil {
				delete(h, k)
			} else {
				h[k] = v
			}
		}
		return js(h)
	}
	user := func(mid, ts string, content any) string {
		return js(rec{"id": mid, "timestamp": ts, "type": "user", "content": content})
	}
	text := func(s string) []any { return []any{rec{"text": s}} }
	model := func(mid, ts, s string) string {
		return js(rec{"id": mid, "timestamp": ts, "type": "gemini", "content": s, "model": "gemini-2.5-pro",
			"tokens": rec{"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 15}})
	}
	set := func(kv rec) string { return js(rec{"$set": kv}) }
	upd := func(ts string) string { return set(rec{"lastUpdated": ts}) }
	turn := func(at func(int) string, n int, prompt string) []string {
		return []string{user(fmt.Sprintf("u%d", n), at(20*n), text(prompt)), upd(at(20 * n)),
			model(fmt.Sprintf("m%d", n), at(20*n+10), "Done: "+prompt), upd(at(20*n + 10))}
	}
	cat := func(parts ...[]string) []string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}

	add("plain", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "Explain what main.go does"))
	})
	add("header only", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil)}
	})
	add("slash commands only", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), user("u1", at(1), text("/model")), user("u2", at(2), "/stats"),
			js(rec{"id": "i1", "timestamp": at(3), "type": "info", "content": "Model set"}), user("u3", at(4), text("?")), upd(at(4))}
	})
	add("rewound first prompt", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "first try at the parser"),
			[]string{js(rec{"$rewindTo": "u1"})}, turn(at, 2, "second try at the parser"))
	})
	add("model message rewritten in place", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), user("u1", at(1), text("Summarize the design doc")), upd(at(1)),
			model("m1", at(2), "The design"), model("m1", at(3), "The design doc proposes a queue."), upd(at(3))}
	})
	add("first prompt rewritten in place", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), user("u1", at(1), text("draft question")), user("u1", at(2), text("final question")),
			upd(at(2)), model("m1", at(3), "answer"), upd(at(3))}
	})
	add("$set summary and times", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "the login form drops the session"),
			[]string{set(rec{"summary": "Fix the login session bug"}), set(rec{"lastUpdated": at(300)})})
	})
	add("unicode summary", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "check the changes"),
			[]string{set(rec{"summary": "Änderungen prüfen — 日本語 ✓"})})
	})
	add("unicode prompt", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "  Prüfe   die\tÄnderungen\nbitte — 日本語 ✓  "))
	})
	add("header without startTime", func(at func(int) string, id string) []string {
		return cat([]string{header(id, "", rec{"startTime": nil, "lastUpdated": nil})}, turn(at, 1, "no start time here"))
	})
	add("long prompt", func(at func(int) string, id string) []string {
		long := strings.Repeat("Refactor the   storage layer\nso that ", 14) + "it is done."
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, long))
	})
	add("torn last line", func(at func(int) string, id string) []string {
		l := turn(at, 1, "keep going")
		return append(cat([]string{header(id, at(0), nil)}, l), model("m2", at(60), "half written")[:40])
	})
	add("complete last line without its newline", func(at func(int) string, id string) []string {
		l := cat([]string{header(id, at(0), nil)}, turn(at, 1, "almost done"))
		return append(l, model("m2", at(60), "the last words"))
	})
	out[len(out)-1].data = strings.TrimSuffix(out[len(out)-1].data, "\n")
	add("model message only", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), model("m1", at(1), "Resumed from a checkpoint."), upd(at(1))}
	})
	add("context before the prompt", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil), user("c1", at(1), text("<session_context>\nThis is the Gemini CLI.\n</session_context>")),
			user("e1", at(2), "   ")}, turn(at, 1, "What does the cache do?"))
	})
	add("string and multi-part content", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), user("u1", at(1), []any{rec{"text": "part one, "}, rec{"inlineData": rec{"mimeType": "image/png", "data": "AAAA"}}, rec{"text": "part two"}}),
			upd(at(1)), user("u2", at(2), "a string prompt"), model("m1", at(3), "ok"), upd(at(3))}
	})
	add("history replaced by $set messages", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "start the migration"), turn(at, 2, "go on"),
			[]string{set(rec{"messages": []any{
				rec{"id": "u1", "timestamp": at(20), "type": "user", "content": text("start the migration")},
				rec{"id": "m9", "timestamp": at(70), "type": "gemini", "content": "Migration done."}}}), upd(at(70))})
	})
	add("resumable prompt rewritten into a command", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), user("u1", at(1), text("hello")), user("u1", at(2), text("/clear")), upd(at(2))}
	})
	add("image-only prompt", func(at func(int) string, id string) []string {
		// No reply yet (the request failed): the image alone is what resumes.
		return []string{header(id, at(0), nil), user("u1", at(1), []any{rec{"inlineData": rec{"mimeType": "image/png", "data": "iVBORw0KGgo="}}}), upd(at(1))}
	})
	add("content as a single part object", func(at func(int) string, id string) []string {
		return []string{header(id, at(0), nil), user("u1", at(1), rec{"text": "a prompt written as one part"}), upd(at(1)),
			model("m1", at(2), "ok"), upd(at(2))}
	})
	add("compressed history", func(at func(int) string, id string) []string {
		// /compress rewrites the history ($set messages): a model-written
		// <state_snapshot> turn, the model's acknowledgement, the turns kept.
		return cat([]string{header(id, at(0), nil)}, turn(at, 1, "original question about the scheduler"), turn(at, 2, "and the retries?"),
			[]string{set(rec{"messages": []any{
				rec{"id": "s1", "timestamp": at(60), "type": "user", "content": text("<state_snapshot>\n<overall_goal>scheduler</overall_goal>\n</state_snapshot>")},
				rec{"id": "a1", "timestamp": at(60), "type": "gemini", "content": []any{rec{"text": "Got it. Thanks for the additional context!"}}},
				rec{"id": "u2", "timestamp": at(40), "type": "user", "content": text("and the retries?")},
				rec{"id": "m2", "timestamp": at(50), "type": "gemini", "content": "Done: and the retries?"}}}), upd(at(60))},
			turn(at, 4, "now the backoff"))
	})
	add("subagent kind in chats", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), map[string]any{"kind": "subagent"})}, turn(at, 1, "investigate the flaky test"))
	})
	add("old start, recent activity", func(at func(int) string, id string) []string {
		// Started first, updated last: Gemini numbers by start, `list` by activity.
		// It is also the chat `gemini --list-sessions` appends its memory
		// scratchpad to (the newest with more than one user message).
		l := cat(turn(at, 1, "long running refactor"), turn(at, 2, "continue the refactor"))
		return append([]string{header(id, at(-3*3600), nil)}, append(l, upd(at(4*3600)))...)
	})
	// A legacy single-document chat, and a pair migrated on resume: the .json
	// stays beside the .jsonl Gemini appends to from then on.
	add("legacy document", func(at func(int) string, id string) []string {
		doc, _ := json.MarshalIndent(rec{"sessionId": id, "projectHash": hash, "startTime": at(0), "lastUpdated": at(40),
			"messages": []any{rec{"id": "u1", "timestamp": at(20), "type": "user", "content": text("from the old format")},
				rec{"id": "m1", "timestamp": at(40), "type": "gemini", "content": "ok"}}}, "", "  ")
		return []string{string(doc)}
	})
	out[len(out)-1].file = strings.TrimSuffix(out[len(out)-1].file, "l")
	add("migrated document", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), rec{"lastUpdated": at(30)})}, turn(at, 1, "migrated chat"), turn(at, 2, "after the resume"))
	})
	mig := out[len(out)-1]
	doc, _ := json.MarshalIndent(rec{"sessionId": mig.id, "projectHash": hash, "startTime": t0.Add(time.Duration(len(out)-1) * 10 * time.Minute).UTC().Format(time.RFC3339Nano),
		"lastUpdated": "2020-01-01T00:00:00.000Z", "messages": []any{rec{"id": "u1", "type": "user", "content": "migrated chat"}}}, "", "  ")
	out = append(out, geminiTricky{id: mig.id, name: "migrated document (old .json)", file: strings.TrimSuffix(mig.file, "l"), data: string(doc)})
	// A subagent chat in chats/<parentId>/: Gemini's list never reads it.
	parent := out[0].id
	add("subagent in its parent's dir", func(at func(int) string, id string) []string {
		return cat([]string{header(id, at(0), map[string]any{"kind": "subagent"})}, turn(at, 1, "read the tests"))
	})
	out[len(out)-1].file = parent + "/" + out[len(out)-1].id + ".jsonl"
	return out
}

// geminiExpected lists, by "<session> <field>", where sessionwatch and Gemini CLI
// knowingly differ on the hand-made chats, and why (docs/fidelity.md).
func geminiExpected(ts []geminiTricky, tricky string) map[string]string {
	byName := map[string]string{}
	for _, c := range ts {
		byName[c.name] = c.id
	}
	return map[string]string{
		byName["rewound first prompt"] + " firstPrompt":                    "Gemini keeps the first prompt it read even after a $rewindTo removed it; sessionwatch shows the first prompt still in the history",
		byName["rewound first prompt"] + " displayName":                    "the first prompt (see firstPrompt)",
		byName["model message rewritten in place"] + " messageCount":       "Gemini counts a message rewritten in place (same id) once per record; sessionwatch counts it once",
		byName["first prompt rewritten in place"] + " messageCount":        "Gemini counts a message rewritten in place (same id) once per record; sessionwatch counts it once",
		byName["first prompt rewritten in place"] + " firstPrompt":         "Gemini keeps the prompt as first written; sessionwatch shows the message as it now is",
		byName["first prompt rewritten in place"] + " displayName":         "the first prompt (see firstPrompt)",
		byName["header without startTime"] + " createdAt":                  "Gemini dates a chat without startTime \"now\" (each listing anew); sessionwatch takes the first message's time",
		byName["complete last line without its newline"] + " messageCount": "Gemini parses a last line before its newline is written; sessionwatch indexes a line once its newline arrives",
		byName["model message only"] + " firstPrompt":                      "Gemini shows the placeholder \"Empty conversation\"; sessionwatch leaves it empty (list shows \"No prompt\")",
		byName["model message only"] + " displayName":                      "the first prompt (see firstPrompt)",
		byName["resumable prompt rewritten into a command"] + " listed":    "sessionwatch keeps a chat listed once it had resumable content, even if that message is later rewritten into a command (bounded state); Gemini re-derives it",
		byName["image-only prompt"] + " firstPrompt":                       "Gemini shows the placeholder \"Empty conversation\"; sessionwatch leaves it empty (list shows \"No prompt\")",
		byName["image-only prompt"] + " displayName":                       "the first prompt (see firstPrompt)",
		byName["content as a single part object"] + " firstPrompt":         "Gemini takes a first prompt only from string or list content and shows \"Empty conversation\"; sessionwatch reads a single part's text too",
		byName["content as a single part object"] + " displayName":         "the first prompt (see firstPrompt)",
		byName["compressed history"] + " firstPrompt":                      "Gemini keeps the first prompt it read before /compress rewrote the history; sessionwatch shows the first person's prompt still in it (the <state_snapshot> turn is the model's)",
		byName["compressed history"] + " displayName":                      "the first prompt (see firstPrompt)",
		tricky + " numbering":                                              "Gemini numbers sessions by start time, oldest first; sessionwatch lists (and `show N` counts) by last activity, newest first",
	}
}

// TestGeminiAgainstRealReader compares sessionwatch with @google/gemini-cli's
// `gemini --list-sessions`, run offline in each project's directory, on a
// generated store plus hand-made chats.
func TestGeminiAgainstRealReader(t *testing.T) {
	dir := readers(t)
	home := t.TempDir()
	gdir := filepath.Join(home, ".gemini")
	root := filepath.Join(gdir, "tmp")
	now := time.Now().UTC().Truncate(time.Second)
	st, err := gen.Plan(root, gen.Spec{Layout: "gemini", Projects: 4, Sessions: 40, Lines: 8, LineSize: 300, Subagents: 0.15, Seed: 12,
		Home: home, Start: now.Add(-50 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	projects := map[string]string{} // project path → slug
	for _, s := range st.Sessions {
		projects[s.Project] = strings.SplitN(s.Rel, "/", 2)[0]
	}
	tricky := filepath.Join(home, "code", "tricky-box")
	projects[tricky] = "tricky-box"
	sessions := geminiTrickySessions(tricky, now.Add(-8*time.Hour))
	chats := filepath.Join(root, "tricky-box", "chats")
	for _, c := range sessions {
		f := filepath.Join(chats, filepath.FromSlash(c.file))
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c.data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "tricky-box", ".project_root"), tricky)
	reg := struct {
		Projects map[string]string `json:"projects"`
	}{projects}
	data, _ := json.MarshalIndent(reg, "", "  ")
	writeFile(t, filepath.Join(gdir, "projects.json"), string(data))
	// No retention sweep (it would delete old chats), no update check.
	writeFile(t, filepath.Join(gdir, "settings.json"), `{"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"sessionRetention":{"enabled":false}},"privacy":{"usageStatisticsEnabled":false}}`)
	var paths []string
	for p := range projects {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)

	// The CLI, once per project. It may append a memory scratchpad to one chat
	// (see "old start, recent activity"), so both readers below read after it.
	before := dirNames(t, root)
	cli := map[string][]geminiCLIRow{}
	start := time.Now()
	for _, p := range paths {
		cli[p] = geminiCLI(t, dir, home, p)
	}
	cliTime := time.Since(start)
	if after := dirNames(t, root); after != before {
		t.Fatalf("gemini --list-sessions registered new project dirs: %s became %s (.project_root or projects.json do not name the project path)", before, after)
	}
	var chatDirs []string
	for _, p := range paths {
		chatDirs = append(chatDirs, filepath.Join(root, projects[p], "chats"))
	}
	var got geminiReaders
	if err := json.Unmarshal(node(t, home, "gemini-readers.mjs", append([]string{dir}, chatDirs...)...), &got); err != nil {
		t.Fatal(err)
	}
	ours := swList(t, home, "gemini", root)

	name := map[string]string{}
	for _, c := range sessions {
		if name[c.id] == "" {
			name[c.id] = c.name
		}
	}
	expected := geminiExpected(sessions, tricky)
	r := &report{t: t, name: fmt.Sprintf("gemini: sessionwatch vs @google/gemini-cli %s --list-sessions (%d projects, %d CLI runs in %s; rows via its getSessionFiles in %s)",
		got.Version, len(paths), len(paths), cliTime.Round(100*time.Millisecond), got.Chunk)}
	compared := 0
	tally := map[string]int{}
	for _, p := range paths {
		rows := got.Dirs[filepath.Join(root, projects[p], "chats")]
		// The harness must see what the CLI printed: same ids, order and titles.
		if want, have := cliLines(cli[p]), harnessLines(rows); want != have {
			r.fails++
			r.addf("FAIL  %s: getSessionFiles does not reproduce the CLI's list\n  cli:\n%s\n  harness:\n%s", p, want, have)
		}
		theirs := map[string]geminiSession{}
		for _, s := range rows {
			theirs[s.ID] = s
		}
		var mine []listed
		for _, id := range sortedKeys(ours) {
			if o := ours[id]; o.Project == p {
				mine = append(mine, o)
			}
		}
		for _, o := range mine {
			compared++
			id := o.ID
			s, listed := theirs[id]
			label := id
			if n := name[id]; n != "" {
				label = id + " (" + n + ")"
			}
			if !r.check(id, "listed", !o.Hidden && o.Type == indexer.TypeMain, listed, expected) || !listed {
				continue
			}
			r.checkText(label, id, "firstPrompt", o.FirstPrompt, s.FirstUserMessage, expected, tally)
			r.check(id, "title", o.Title, s.Summary, expected)
			r.checkText(label, id, "displayName", firstNonEmpty(o.Title, o.FirstPrompt), s.DisplayName, expected, tally)
			r.check(id, "messageCount", o.MessageCount, s.MessageCount, expected)
			r.check(id, "createdAt", msOf(o.CreatedAt), msOf(s.StartTime), expected)
			r.check(id, "lastActiveAt", msOf(o.LastActiveAt), msOf(s.LastUpdated), expected)
		}
		for _, s := range rows {
			if o, ok := ours[s.ID]; !ok || o.Project != p {
				r.fails++
				r.addf("FAIL  %s: listed by Gemini in %s, not by sessionwatch", s.ID, p)
			}
		}
		// Order: Gemini's numbering is by start time, oldest first. Our creation
		// times must give the same order (leaving out the sessions whose start is
		// knowingly different), and `list` order reversed is Gemini's numbering
		// unless a chat started earlier was active later.
		var theirOrder, byCreated, byActivity []string
		for _, s := range rows {
			if _, known := expected[s.ID+" createdAt"]; !known {
				theirOrder = append(theirOrder, s.ID)
			}
		}
		for _, o := range sortedByCreated(mine) {
			if _, ok := theirs[o.ID]; ok && !o.Hidden {
				if _, known := expected[o.ID+" createdAt"]; !known {
					byCreated = append(byCreated, o.ID)
				}
			}
		}
		for _, o := range sortedByLastActive(toMap(mine)) {
			if _, ok := theirs[o.ID]; ok && !o.Hidden {
				if _, known := expected[o.ID+" createdAt"]; !known {
					byActivity = append([]string{o.ID}, byActivity...)
				}
			}
		}
		r.check(p, "order", strings.Join(byCreated, ","), strings.Join(theirOrder, ","), expected)
		r.check(p, "numbering", strings.Join(byActivity, ","), strings.Join(theirOrder, ","), expected)
	}
	for _, k := range sortedKeys(tally) {
		r.addf("known in %d generated sessions, %s", tally[k], k)
	}
	var legend []string
	for _, c := range sessions {
		legend = append(legend, c.id[:8]+" "+c.name)
	}
	r.notes = append(r.notes, fmt.Sprintf("hand-made chats in %s: %s", tricky, strings.Join(legend, "; ")))
	r.done(compared)
}

// checkText compares a prompt or title. Besides the listed differences, two
// hold for every session (docs/fidelity.md): Gemini removes every character
// outside printable ASCII, and it keeps the whole prompt where sessionwatch cuts
// it at indexer.MaxPromptChars characters and appends "…". ours must equal
// theirs once those two rules are applied to it. Such differences in generated
// sessions (label == id) are counted in tally rather than listed one by one.
func (r *report) checkText(label, id, field, ours, theirs string, expected map[string]string, tally map[string]int) {
	if _, listed := expected[id+" "+field]; listed || ours == theirs {
		r.check(id, field, ours, theirs, expected)
		return
	}
	core, cut := strings.CutSuffix(ours, "…")
	cut = cut && utf8.RuneCountInString(core) == indexer.MaxPromptChars
	if !cut {
		core = ours
	}
	clean := geminiClean(core)
	var why []string
	if strings.ContainsFunc(core, func(r rune) bool { return r < 0x20 || r > 0x7E }) {
		why = append(why, "Gemini strips non-ASCII")
	}
	if cut {
		why = append(why, fmt.Sprintf("sessionwatch cuts at %d characters, Gemini keeps the whole prompt", indexer.MaxPromptChars))
	}
	if len(why) > 0 && (clean == theirs || cut && strings.HasPrefix(theirs, clean)) {
		if label == id {
			tally[field+": "+strings.Join(why, "; ")]++
			return
		}
		r.addf("known %s %s: ours %q, theirs %q — %s", label, field, short(ours), short(theirs), strings.Join(why, "; "))
		return
	}
	r.check(id, field, ours, theirs, expected)
}

// geminiClean is Gemini's cleanMessage: whitespace runs become one space, every
// character outside \x20-\x7E is removed, the ends are trimmed.
func geminiClean(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }), " ")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7E {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

func short(s string) string {
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	return string([]rune(s)[:60]) + fmt.Sprintf("…(%d bytes)", len(s))
}

var geminiRowRE = regexp.MustCompile(`^\s+(\d+)\. (.*) \(([^()]*)\) \[([A-Za-z0-9_-]+)\]$`)

// geminiCLI runs `gemini --list-sessions` offline in project and parses its list.
func geminiCLI(t *testing.T, readers, home, project string) []geminiCLIRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(readers, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	cmd := exec.CommandContext(ctx, "node", bin, "--list-sessions")
	cmd.Dir = project
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GEMINI_API_KEY=dummy", "NO_COLOR=1", "TERM=dumb", "CI=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gemini --list-sessions in %s: %v\n%s%s", project, err, stdout.Bytes(), stderr.Bytes())
	}
	var rows []geminiCLIRow
	want := -1
	for _, line := range strings.Split(stdout.String(), "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "Available sessions for this project (%d):", &want); err == nil {
			continue
		}
		if m := geminiRowRE.FindStringSubmatch(line); m != nil {
			var n int
			fmt.Sscan(m[1], &n)
			rows = append(rows, geminiCLIRow{n: n, title: m[2], id: m[4]})
		}
	}
	if want < 0 && !strings.Contains(stdout.String(), "No previous sessions found") || want >= 0 && want != len(rows) {
		t.Fatalf("gemini --list-sessions in %s: cannot read its output (%d rows parsed):\n%s%s", project, len(rows), stdout.Bytes(), stderr.Bytes())
	}
	return rows
}

func cliLines(rows []geminiCLIRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "    %d. %s [%s]\n", r.n, r.title, r.id)
	}
	return b.String()
}

// harnessLines prints getSessionFiles' rows as the CLI prints them: numbered
// from 1 by start time, the display name cut at 100 UTF-16 units (97 + "...").
func harnessLines(rows []geminiSession) string {
	var b strings.Builder
	for i, s := range rows {
		title := s.DisplayName
		if u := utf16.Encode([]rune(title)); len(u) > 100 {
			title = string(utf16.Decode(u[:97])) + "..."
		}
		fmt.Fprintf(&b, "    %d. %s [%s]\n", i+1, title, s.ID)
	}
	return b.String()
}

// sortedByCreated orders sessions by creation time, oldest first, then by id.
func sortedByCreated(in []listed) []listed {
	out := append([]listed(nil), in...)
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := msOf(out[i].CreatedAt), msOf(out[j].CreatedAt); a != b {
			return a < b
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func toMap(in []listed) map[string]listed {
	m := map[string]listed{}
	for _, o := range in {
		m[o.ID] = o
	}
	return m
}

// dirNames lists dir's subdirectories, for spotting a project Gemini registered anew.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return strings.Join(names, ",")
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
