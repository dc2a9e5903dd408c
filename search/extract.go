package search

import (
	"sort"
	"strings"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// Roles of an indexed message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // tool inputs and outputs (config search.tool_output)
)

// Parts of a line: one line gives at most one text message and one tool message.
const (
	PartText = 0
	PartTool = 1
)

// Message is the searchable text one line (or one entry of a document) holds.
type Message struct {
	Session string // document units: the session it belongs to; "" for line units
	Offset  int64  // line units: the line's byte offset; documents: the entry's ordinal
	Part    uint8  // PartText or PartTool
	Role    string
	Time    int64 // Unix milliseconds, 0 when the line has none
	Text    string
}

// lineExtractors are the layouts whose transcripts are JSON lines.
var lineExtractors = map[string]func(line []byte, m *indexer.Members, x *lineExtractor) error{
	"wave":   waveLine,
	"claude": claudeLine,
	"codex":  codexLine,
	"gemini": geminiLine,
	"llxprt": llxprtLine,
}

// Indexes reports whether the layout has text the search index holds.
func Indexes(layout string) bool {
	_, ok := lineExtractors[layout]
	return ok || layout == "mogzi" || layout == "hyperyolo"
}

// ExtractLine appends the messages of one transcript line at offset off to dst:
// the text of its user or assistant content (part 0) and, with tools, its tool
// inputs and outputs (part 1). A line that is not a JSON object, or holds no text,
// adds nothing.
func ExtractLine(dst []Message, layout string, off int64, line []byte, tools bool) []Message {
	x := newLineExtractor(layout, tools)
	return x.extract(dst, off, line, nil)
}

// lineExtractor is ExtractLine for one layout, line after line. Each layout's
// function validates the line (indexer.ObjectFields), gathers the JSON strings
// that make up its text (and, with tools, its tool text) in text and tool, and
// calls emit once with the line's role and time.
type lineExtractor struct {
	fn         func(line []byte, m *indexer.Members, x *lineExtractor) error
	tools      bool
	text, tool textParts
	dst        []Message
	off        int64
	m          *indexer.Members // the line's, as the read worker scanned it (nil: none)
	// prep, if set, takes each message's parts instead of dst taking a decoded
	// Message (a read worker's; see preparedLines).
	prep *preparedLines
}

func newLineExtractor(layout string, tools bool) *lineExtractor {
	return &lineExtractor{fn: lineExtractors[layout], tools: tools}
}

// extract appends the messages of the line at off to dst (ExtractLine); m, if
// not nil, is the line's members (indexer.Members.ObjectFields).
func (x *lineExtractor) extract(dst []Message, off int64, line []byte, m *indexer.Members) []Message {
	if x.fn == nil {
		return dst
	}
	x.dst, x.off, x.m = dst, off, m
	x.text.reset()
	x.tool.reset()
	x.fn(line, m, x)
	dst = x.dst
	x.dst, x.m = nil, nil
	return dst
}

// emit ends the line's message: its text and tool text, gathered so far.
func (x *lineExtractor) emit(role string, ms int64) {
	if x.prep != nil {
		x.prep.message(x.off, PartText, role, ms, &x.text)
		if x.tools {
			x.prep.message(x.off, PartTool, RoleTool, ms, &x.tool)
		}
	} else {
		if text := x.text.String(); strings.TrimSpace(text) != "" {
			x.dst = append(x.dst, Message{Offset: x.off, Part: PartText, Role: role, Time: ms, Text: text})
		}
		if tool := x.tool.String(); x.tools && strings.TrimSpace(tool) != "" {
			x.dst = append(x.dst, Message{Offset: x.off, Part: PartTool, Role: RoleTool, Time: ms, Text: tool})
		}
	}
	x.text.reset()
	x.tool.reset()
}

// textParts is a message's text before it is decoded: the JSON strings (raw,
// quotes included) whose values make up its lines, in order. A read worker
// tokenizes them where they are in the line (appendTermsJSON), without decoding
// them into a string first.
type textParts struct{ raw [][]byte }

func (t *textParts) reset() {
	clear(t.raw) // they point into the line
	t.raw = t.raw[:0]
}

// addJSON adds the JSON string raw as the text's next line (nothing if raw is
// not a string: it decodes to "").
func (t *textParts) addJSON(raw []byte) {
	raw = indexer.TrimJSONSpace(raw)
	if len(raw) <= 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return // not a string, or the empty one
	}
	t.raw = append(t.raw, raw)
}

// String is the text: the parts decoded, the non-empty ones joined by newlines.
func (t *textParts) String() string {
	switch len(t.raw) {
	case 0:
		return ""
	case 1:
		return jstr(t.raw[0])
	}
	var b strings.Builder
	for _, raw := range t.raw {
		if s := jstr(raw); s != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// ExtractDocument returns the messages of a document unit (Mogzi's session.json,
// HyperYOLO's sessions.json), each naming its session.
func ExtractDocument(layout string, data []byte, tools bool) []Message {
	var out []Message
	add := func(sess string, ord int64, role string, ms int64, text, tool string) {
		if strings.TrimSpace(text) != "" {
			out = append(out, Message{Session: sess, Offset: ord, Part: PartText, Role: role, Time: ms, Text: text})
		}
		if tools && strings.TrimSpace(tool) != "" {
			out = append(out, Message{Session: sess, Offset: ord, Part: PartTool, Role: RoleTool, Time: ms, Text: tool})
		}
	}
	switch layout {
	case "mogzi":
		var id, modified string
		var history []byte
		if indexer.ObjectFields(data, func(k, v []byte) {
			switch string(k) {
			case "id":
				id, _ = indexer.JSONString(v)
			case "lastModifiedAt":
				modified, _ = indexer.JSONString(v)
			case "history":
				history = v
			}
		}) != nil {
			return nil
		}
		ms := parseMillis(modified)
		var ord int64
		eachElem(history, func(h []byte) {
			var role, text string
			var tool textParts
			fields(h, func(k, v []byte) {
				switch string(k) {
				case "role":
					role, _ = indexer.JSONString(v)
				case "content":
					text, _ = indexer.JSONString(v)
				case "functionCalls", "functionResults":
					if tools {
						walkStrings(v, &tool)
					}
				}
			})
			if r := chatRole(role); r != "" {
				add(strings.TrimSpace(id), ord, r, ms, text, tool.String())
			} else {
				add(strings.TrimSpace(id), ord, RoleAssistant, ms, "", tool.String()) // a tool turn
			}
			ord++
		})
	case "hyperyolo":
		type rec struct {
			key, prompt string
			ms          int64
		}
		var recs []rec
		indexer.ObjectFields(data, func(k, v []byte) {
			r := rec{key: string(k)}
			var created, seen string
			indexer.ObjectFields(v, func(k, v []byte) {
				switch string(k) {
				case "lastPrompt":
					r.prompt, _ = indexer.JSONString(v)
				case "createdAt":
					created, _ = indexer.JSONString(v)
				case "lastSeenAt":
					seen, _ = indexer.JSONString(v)
				}
			})
			r.ms = parseMillis(seen)
			if r.ms == 0 {
				r.ms = parseMillis(created)
			}
			recs = append(recs, r)
		})
		sort.Slice(recs, func(i, j int) bool { return recs[i].key < recs[j].key })
		for _, r := range recs {
			add(r.key, 0, RoleUser, r.ms, r.prompt, "")
		}
	}
	return out
}

func chatRole(r string) string {
	switch strings.ToLower(r) {
	case "user", "human":
		return RoleUser
	case "assistant", "ai", "model", "gemini":
		return RoleAssistant
	}
	return ""
}

// parseMillis parses an RFC 3339 time to Unix milliseconds; 0 if it does not
// parse. A time in indexer.TimeLayout (most) is read without time.Parse.
func parseMillis(s string) int64 {
	if s == "" {
		return 0
	}
	t, ok := indexer.ParseRFC3339(s)
	if !ok {
		return 0
	}
	return t.UnixMilli()
}

// jstr decodes a JSON string value ("" for anything else).
func jstr(v []byte) string { return unquote(v) }

// words are the values of the type and role members the extractors compare:
// jword gives them without a copy of the line's bytes.
var words = func() map[string]string {
	m := map[string]string{}
	for _, w := range []string{"user", "assistant", "human", "ai", "model", "gemini", "tool", "system",
		"metadata", "text", "compact", "bang", "code", "tool_use", "tool_result", "tool_call", "tool_response",
		"event_msg", "response_item", "user_message", "agent_message", "message", "reasoning", "function_call",
		"function_call_output", "custom_tool_call", "custom_tool_call_output", "content", "thinking", "info", "error"} {
		m[w] = w
	}
	return m
}()

// jword is jstr for a member compared with a few words: those come from words.
func jword(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if w, ok := words[string(v[1:len(v)-1])]; ok {
			return w
		}
	}
	return jstr(v)
}

// idKeys are members of tool blocks that hold identifiers, not text.
var idKeys = map[string]bool{"type": true, "id": true, "callId": true, "call_id": true, "tool_use_id": true, "signature": true}

// walkStrings appends every string value (not the keys) of a JSON value to b, one
// per line: how tool inputs and outputs of any shape are indexed.
func walkStrings(v []byte, b *textParts) {
	v = indexer.TrimJSONSpace(v)
	if len(v) == 0 {
		return
	}
	switch v[0] {
	case '"':
		b.addJSON(v)
	case '{':
		fields(v, func(k, val []byte) {
			if !idKeys[string(k)] {
				walkStrings(val, b)
			}
		})
	case '[':
		eachElem(v, func(e []byte) { walkStrings(e, b) })
	}
}

// textContent is the text of a content value: a string, or an array of strings and
// {"text": …} parts joined by newlines. m is the line's members (nil: none).
func textContent(m *indexer.Members, v []byte, b *textParts) {
	v = indexer.TrimJSONSpace(v)
	if len(v) == 0 {
		return
	}
	switch v[0] {
	case '"':
		b.addJSON(v)
	case '[':
		eachElemOf(m, v, func(e []byte) {
			e = indexer.TrimJSONSpace(e)
			if len(e) > 0 && e[0] == '"' {
				b.addJSON(e)
				return
			}
			fieldsOf(m, e, func(k, val []byte) {
				if string(k) == "text" {
					b.addJSON(val)
				}
			})
		})
	case '{':
		fieldsOf(m, v, func(k, val []byte) {
			if string(k) == "text" {
				b.addJSON(val)
			}
		})
	}
}

// eachElem calls fn with each element of a JSON array. The array comes from a line
// that was already validated as a whole; anything else (not an array, truncated)
// stops the walk quietly.
func eachElem(arr []byte, fn func(elem []byte)) { eachElemOf(nil, arr, fn) }
