package gen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// tsLayout is how the generated files write times: RFC 3339, UTC, milliseconds.
const tsLayout = "2006-01-02T15:04:05.000Z"

func stamp(t time.Time) string { return t.UTC().Format(tsLayout) }

// kind is the role a message line plays in the conversation. Lines cycle through
// prompt → tool call → tool result → reply, as an agent turn does.
type kind int

const (
	kindPrompt     kind = iota // the user's prompt
	kindToolCall               // the assistant calls a tool
	kindToolResult             // the tool's output, fed back
	kindReply                  // the assistant's answer, with token usage
)

func kindOf(k int) kind { return kind(k % 4) }

// msg is one message line being generated.
type msg struct {
	k     int        // line number within the session (0 = first message)
	ts    time.Time  // its timestamp
	size  int        // target size of the line in bytes
	rng   *rand.Rand // deterministic per (session, k)
	kind  kind
	text  string // the main text (prompt, reply or tool output) before padding
	shown string // a prompt's text as written (set by the layout)
}

// id is a per-line identifier derived from the line's rng.
func (m *msg) id(prefix string, n int) string { return prefix + hexID(m.rng, n) }

func (m *msg) tool() (name, file string) {
	tools := []string{"Read", "Bash", "Edit", "Grep", "Write"}
	name = tools[m.rng.IntN(len(tools))]
	file = fmt.Sprintf("%s/%s.go", pick(m.rng, pkgWords), pick(m.rng, fileWords))
	return name, file
}

// makeText writes the message's base text.
func (m *msg) makeText() string {
	r := m.rng
	switch m.kind {
	case kindPrompt:
		t := promptTemplates[r.IntN(len(promptTemplates))]
		return fmt.Sprintf(t, pick(r, pkgWords), pick(r, fileWords))
	case kindToolResult:
		var b strings.Builder
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&b, "%d\tfunc %s%s(ctx context.Context) error {\n", 10+i, strings.ToUpper(pick(r, fileWords)[:1]), pick(r, fileWords)[1:])
		}
		return b.String()
	default:
		return replyOpeners[r.IntN(len(replyOpeners))] + " " + pick(r, pkgWords) + "."
	}
}

// fit builds a line by calling build with the message text padded so that the line
// is about m.size bytes long. plain restricts the padding to words and spaces (for
// prompts, whose text the summary shows).
func (m *msg) fit(plain bool, build func(text string) []byte) []byte {
	line := build(m.text)
	if need := m.size - len(line); need > 1 {
		pad := filler(m.rng, need-1, plain)
		line = build(m.text + " " + pad)
	}
	return line
}

// filler is n bytes (before JSON escaping) of prose and code.
func filler(r *rand.Rand, n int, plain bool) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		if b.Len() > 0 {
			if !plain && r.IntN(12) == 0 {
				b.WriteString("\n")
			} else {
				b.WriteByte(' ')
			}
		}
		switch w := r.IntN(20); {
		case !plain && w == 0:
			b.WriteString(`"quoted"`)
		case !plain && w == 1:
			b.WriteString("if err != nil {")
		default:
			b.WriteString(proseWords[r.IntN(len(proseWords))])
		}
	}
	s := b.String()
	if len(s) > n {
		s = strings.TrimRight(s[:n], " \n")
	}
	return s
}

func pick(r *rand.Rand, words []string) string { return words[r.IntN(len(words))] }

// promptOf is what a summary shows of a prompt: SPEC §3 cuts at 200 characters
// plus "…" (generated prompts are single-spaced ASCII, so no collapsing is needed).
func promptOf(text string) string {
	if len(text) > 200 {
		return text[:200] + "…"
	}
	return text
}

// claudePromptOf is a generated (ASCII, single-line) prompt as Claude Code's SDK
// shows it: cut to 200 characters, trimmed, then "…".
func claudePromptOf(text string) string {
	if len(text) > 200 {
		return strings.TrimRight(text[:200], " ") + "…"
	}
	return text
}

// marshal encodes v without HTML escaping (as the agents' JSON.stringify does)
// and appends a newline.
func marshal(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only generator-built values are marshalled
	}
	return []byte(b.String())
}

var projectWords = []string{
	"webapp", "billing", "api-gateway", "ml_pipeline", "dotfiles", "infra", "mobile",
	"search", "auth-service", "docs", "cli", "data-lake", "frontend", "payments",
}

var pkgWords = []string{
	"auth", "cache", "config", "db", "handlers", "http", "jobs", "metrics", "models",
	"parser", "queue", "router", "session", "storage", "ui", "util", "worker",
}

var fileWords = []string{
	"client", "server", "export", "import", "login", "token", "retry", "limit", "index",
	"render", "schema", "migrate", "stream", "upload", "notify", "report",
}

var promptTemplates = []string{
	"Fix the flaky test in the %s package, it fails about one run in ten (%s).",
	"Add rate limiting to the %s endpoint and cover it with tests for %s.",
	"Why does the CSV export in %s drop unicode rows? Start from %s.",
	"Refactor %s so that %s no longer needs the global config.",
	"Write tests for the %s cache, especially the %s path.",
	"Review the diff in %s and tell me what could break in %s.",
	"The build is slow, profile %s and speed up %s.",
}

var replyOpeners = []string{
	"I found the cause of the failure in",
	"Here is the change, the tests pass now in",
	"Done: I updated the handler and added a regression test in",
	"The race comes from a shared map in",
	"I could not reproduce it locally; I added logging to",
}

var proseWords = strings.Fields(`the a to of and in is that for it this with on be as
are was by not or at from an but which we can if will all has have more one their
function return value error context request response handler test cache index file line
session token update retry timeout buffer channel goroutine mutex lock slice map struct
interface package import module build deploy config flag parse encode decode stream
read write close open sync append offset size bytes count total result output input`)
