package search

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// busyLine is a line of every layout's shape with objects at many offsets: a
// read worker's Members scans it, then the next line in the same buffer.
var busyLine = []byte(`{"type":"user","timestamp":` + ts + `,"ts":` + ts + `,"id":"b","role":"user","isMeta":false,` +
	`"message":{"role":"user","content":[{"type":"text","text":"STALE one"},{"type":"tool_use","name":"STALE","input":{"a":{"b":{}}}},{}]},` +
	`"payload":{"type":"user_message","message":"STALE two","content":{"speaker":"human","blocks":[{"type":"text","text":"STALE three"},{}]}},` +
	`"blocks":[{"type":"text","content":"STALE four"},{"x":{}},{"y":[{},{}]}],"content":[{"text":"STALE five"},{}],` +
	`"toolCalls":[{"name":"STALE","args":{},"result":[{}]}],"pad":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]}`)

// checkMembersVariants: the docs a read worker prepares of line from its
// members (the nested objects taken from the scan's records) are those of
// ExtractLine (which walks the bytes again) when the Members were reused from
// the line prev scanned in the same buffer before, as a read worker's are;
// for the line cut short (its records then partial); and for the line's
// whitespace laid out otherwise (indented, compacted), whose docs are then the
// line's own.
func checkMembersVariants(t *testing.T, layout string, prev, line []byte, tools bool) {
	t.Helper()
	var m indexer.Members
	check := func(what string, l []byte) string {
		t.Helper()
		m.Scan(l)
		want := tokenizedDocs(ExtractLine(nil, layout, 0, l, tools))
		if got := preparedDocsOf(layout, l, &m, tools); got != want {
			t.Fatalf("%s tools=%v, %s %q: prepared docs from the members\n%s\nwant (ExtractLine, then appendTerms)\n%s",
				layout, tools, what, l, got, want)
		}
		return want
	}
	buf := make([]byte, 0, len(prev)+len(line))
	check("the line before", append(buf, prev...))
	l := append(buf[:0], line...) // over the line before's bytes and records
	base := check("after the line before", l)
	for _, k := range []int{len(line) / 2, len(line) - 1} {
		if k > 0 {
			check("cut", l[:k])
		}
	}
	check("again", l)
	valid := indexer.ObjectFields(line, func(_, _ []byte) {}) == nil
	var ind, com bytes.Buffer // (no indent per level: a deep line would grow by its depth squared)
	for _, v := range []struct {
		what string
		ok   bool
		b    *bytes.Buffer
	}{{"indented", json.Indent(&ind, line, " \t\r", "") == nil, &ind}, {"compacted", json.Compact(&com, line) == nil, &com}} {
		if !v.ok {
			continue
		}
		got := check(v.what, v.b.Bytes())
		if valid && indexer.ObjectFields(v.b.Bytes(), func(_, _ []byte) {}) == nil && got != base {
			t.Fatalf("%s tools=%v: the line %s gives\n%s\nthe line %q\n%s", layout, tools, v.what, got, line, base)
		}
	}
}

// membersCases are lines whose nested objects a scan's records could give
// otherwise than a walk of their bytes: duplicate keys (the last one read
// wins), escaped and non-ASCII keys, objects and brackets inside strings,
// empty objects and arrays, whitespace everywhere JSON allows it, blocks
// nested deep in tool input, and lines that are not valid at their end.
var membersCases = []struct{ layout, line string }{
	{"claude", `{"type":"user","message":{"content":[{"type":"text","text":"first"}]},"message":{"role":"user","content":[{"type":"text","text":"second"},{"type":"text","text":"third","text":"fourth"}]},"timestamp":` + ts + `}`},
	{"claude", `{"type":"user","message":{"role":"user","con\u0074ent":[{"typ\u0065":"text","te\u0078t":"escaped keys"},{"type":"text","t\u00e9xt":"not text"}]}}`},
	{"claude", `{"type":"assistant","message":{"content":"[{\"type\":\"text\",\"text\":\"inside a string\"}]"}}`},
	{"claude", `{"type":"assistant","message":{"content":[{"type":"text","text":"{\"a\":[{}]}"},"[{}]",{},[],[{"type":"text","text":"in an array in an array"}],{"type":"tool_use","name":"n","input":[[[{"x":[{"y":"deep \"q\" \\"}]}]]]}]}}`},
	{"claude", " \t{ \"type\" : \"user\" ,\r\"message\" :\n{ \"content\" : [ { \"type\" : \"text\" , \"text\" : \"spaced out\" } , { } ] } }\t "},
	{"claude", `{"type":"user","message":{"content":[{"type":"text","text":"valid block"},{"type":"text","text":"then the line breaks"}]},"x":}`},
	{"claude", `{"type":"user","message":{"content":[{"type":"text","text":"valid message"}]},"message":{"content":[{"type":"text"`},
	{"claude", `{"type":"user","message":{"content":[{"type":"text","text":"ok"}]}}{"type":"user","message":{"content":[{"type":"text","text":"second object"}]}}`},
	{"claude", `{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"result"},{"type":"image","source":{"data":"}]"}}]}]}}`},
	{"codex", `{"timestamp":` + ts + `,"type":"event_msg","payload":{"type":"agent_message","message":"one"},"payload":{"type":"user_message","message":"two","type":"agent_message"}}`},
	{"codex", `{"type":"response_item","payload":{"type":"function_call","name":"sh","arguments":{"cmd":[{"a":"b"},{}],"x":{"y":"z"}},"output":[{"k":"v"}]}}`},
	{"gemini", `{"id":"1","type":"user","content":[{"text":"a"},{"text":"b","text":"c"},"d",{"nottext":"e"},{"text":{"text":"f"}}],"toolCalls":[{"name":"n","args":{"a":[{"b":"c"}]},"result":[{"r":"s"}]},{},{"name":"m"}]}`},
	{"gemini", `{"id":"1","type":"gemini","content":{"text":"an object","text":"twice"}}`},
	{"gemini", `{"id":"1","type":"user","content":[ {"text" : "spaced"} , {"text":"x"} ,{}]  }`},
	{"llxprt", `{"type":"content","payload":{"content":{"speaker":"ai","blocks":[{"type":"text","text":"one"},{"type":"code","code":"two"}]},"content":{"speaker":"human","blocks":[{"type":"text","text":"three"}]}}}`},
	{"llxprt", `{"type":"content","payload":{"content":{"speaker":"tool","blocks":[{"type":"tool_call","name":"n","parameters":{"p":[{"q":"r"}]}},{"type":"tool_response","toolName":"t","result":{"o":{"p":"q"}}}]}}}`},
	{"wave", `{"role":"user","blocks":[{"type":"text","content":"a"},{"type":"tool","name":"n","parameters":{"p":{}},"result":[{"r":"s"}]},{"type":"bang","command":"ls","output":"o"},{"type":"compact","content":"c","content":"d"}]}`},
	{"wave", `{"role":"assistant","blocks":[{"type":"text","content":"x"}],"blocks":[{"type":"text","content":"y"},{"type":"text"}]}`},
}

// TestMembersVariants: the cases above and the extractors' own, each after
// every other line of its layout in the same buffer (the Members reused), cut
// short and laid out otherwise, prepared from the members, are ExtractLine's.
func TestMembersVariants(t *testing.T) {
	byLayout := map[string][][]byte{}
	for _, c := range membersCases {
		byLayout[c.layout] = append(byLayout[c.layout], []byte(c.line))
	}
	for _, c := range lineCases {
		byLayout[c.layout] = append(byLayout[c.layout], []byte(c.line))
	}
	for layout, lines := range byLayout {
		for _, line := range lines {
			for _, prev := range append(lines, busyLine) {
				for _, tools := range []bool{false, true} {
					checkMembersVariants(t, layout, prev, line, tools)
				}
			}
		}
	}
	// The checks compare something: these lines have text in the docs.
	for _, c := range membersCases[:2] {
		if docs := tokenizedDocs(ExtractLine(nil, c.layout, 0, []byte(c.line), true)); !strings.Contains(docs, "×") {
			t.Fatalf("%s: no terms in %q", c.line, docs)
		}
	}
}

// TestMembersReusedShifted: a line whose content blocks start where the line
// before had blocks of other lengths, read from Members that scanned that line
// first in the same buffer, is read from its own records: the blocks' bounds
// and members are its own, not the line before's.
func TestMembersReusedShifted(t *testing.T) {
	a := `{"type":"user","message":{"content":[{"type":"text","text":"aaaa"},{"type":"text","text":"bbbb"},{"type":"text","text":"gggg"}]}}`
	b := `{"type":"user","message":{"content":[{"type":"text","text":"aaaa","x":{}},{"type":"text","text":"cccc"},{"z":{"type":"text","text":"hhhh"}}]}}`
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		checkMembersVariants(t, "claude", []byte(pair[0]), []byte(pair[1]), false)
	}
	if docs := tokenizedDocs(ExtractLine(nil, "claude", 0, []byte(b), false)); !strings.Contains(docs, `"cccc"`) || strings.Contains(docs, "bbbb") || strings.Contains(docs, "hhhh") {
		t.Fatalf("%s gives %s", b, docs)
	}
}

// TestMembersVariantsDeep: a content block whose tool input is nested as deep
// as a line may be (and one level past it: the line is then not valid).
func TestMembersVariantsDeep(t *testing.T) {
	for _, c := range []struct {
		depth int // of the input's arrays and objects; the line adds 4
		valid bool
	}{{100, true}, {9996, true}, {9998, false}} {
		inner := strings.Repeat(`[{"k":`, c.depth/2) + `"deep words"` + strings.Repeat(`}]`, c.depth/2)
		line := []byte(`{"type":"user","message":{"content":[{"type":"text","text":"top"},{"type":"tool_use","name":"n","input":` + inner + `}]}}`)
		if valid := indexer.ObjectFields(line, func(_, _ []byte) {}) == nil; valid != c.valid {
			t.Fatalf("depth %d: valid %v, want %v", c.depth, valid, c.valid)
		}
		// Tools off: the block is still crossed (from the records, or its
		// bytes walked), not walked for strings level by level (walkStrings
		// crosses each level's value again: depth times the line's bytes).
		checkMembersVariants(t, "claude", busyLine, line, false)
	}
}

// genLine writes a random valid line of a layout's shape (its top-level keys
// top, its "type" one of topTypes): most keys of each object of the shape
// present, in any order, sometimes twice, with other keys among them; values
// mostly of the kind the extractors look for, sometimes anything; blocks in
// arrays in objects, escaped keys, strings with escapes, CJK and brackets,
// whitespace anywhere JSON allows it.
func genLine(r *rand.Rand, top, topTypes []string) []byte {
	others := []string{"id", "x", "te\\u0078t", "con\\u0074ent", "t\\u00e9xt", "images", "stage"}
	types := []string{"text", "tool_use", "tool_result", "tool", "user_message", "agent_message", "function_call",
		"custom_tool_call_output", "code", "tool_call", "tool_response", "compact", "bang", "thinking", "x"}
	words := []string{"hello world", `line\nbreak`, `a\"q\" b\\c\/d`, `x\u0041y \u6771\u4eac`, "東京 abc", "é\u0301",
		`[{\"a\":{}}]`, "}]{[", `word\\u0041`, `tab\tend\b\f\r`, "", "Ab12345 xyzzyxyzzy " + strings.Repeat("q", 70)}
	var b []byte
	ws := func() {
		if r.IntN(3) == 0 {
			b = append(b, []string{" ", "\t", "\r\n ", "  "}[r.IntN(4)]...)
		}
	}
	pick := func(pool ...string) string { return pool[r.IntN(len(pool))] }
	str := func(pool []string) { b = append(append(append(b, '"'), pick(pool...)...), '"') }
	list := func(n int, elem func()) {
		b = append(b, '[')
		ws()
		for i := range n {
			if i > 0 {
				b = append(b, ',')
				ws()
			}
			elem()
			ws()
		}
		b = append(b, ']')
	}
	var value func(key string, depth int)
	// object writes an object of most of the keys must and maybe others.
	object := func(depth int, must ...string) {
		var ks []string
		for _, k := range must {
			if r.IntN(8) != 0 {
				ks = append(ks, k)
			}
		}
		for range r.IntN(3) {
			ks = append(ks, pick(others...))
		}
		if len(ks) > 0 && r.IntN(6) == 0 {
			ks = append(ks, ks[r.IntN(len(ks))]) // a key twice
		}
		r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		b = append(b, '{')
		ws()
		for i, k := range ks {
			if i > 0 {
				b = append(b, ',')
				ws()
			}
			b = append(append(append(b, '"'), k...), '"')
			ws()
			b = append(b, ':')
			ws()
			value(k, depth+1)
			ws()
		}
		b = append(b, '}')
	}
	block := func(depth int) {
		object(depth, "type", pick("text", "content", "code"),
			pick("name", "input", "result", "args", "parameters", "toolName", "command", "output", "content"))
	}
	blocks := func(depth int) { list(r.IntN(4), func() { block(depth + 1) }) }
	value = func(key string, depth int) {
		if depth > 7 || r.IntN(10) == 0 { // anything
			switch r.IntN(4) {
			case 0:
				b = append(b, pick("0", "-1.5e3", "true", "false", "null", "{}", "[]")...)
			case 1:
				str(types)
			default:
				str(words)
			}
			return
		}
		switch key {
		case "type":
			if depth == 1 {
				str(topTypes)
			} else {
				str(types)
			}
		case "role", "speaker":
			str([]string{"user", "assistant", "human", "ai", "user", "assistant", "human", "ai", "tool", "x"})
		case "message":
			if depth == 1 {
				object(depth, "role", "content")
			} else {
				str(words)
			}
		case "payload":
			object(depth, "type", "message", "content", "name", "arguments", "output")
		case "content":
			if depth == 2 && r.IntN(2) == 0 { // a payload's, as llxprt's
				object(depth, "speaker", "blocks")
				return
			}
			switch r.IntN(5) {
			case 0:
				str(words)
			case 1:
				object(depth, "speaker", "blocks")
			case 2:
				object(depth, "text")
			default:
				list(r.IntN(4), func() {
					if r.IntN(4) == 0 {
						str(words)
					} else {
						block(depth + 1)
					}
				})
			}
		case "blocks", "toolCalls":
			blocks(depth)
		case "input", "args", "result", "parameters", "arguments", "output":
			switch r.IntN(3) {
			case 0:
				str(words)
			case 1:
				object(depth, pick(others...), "text", "output")
			default:
				blocks(depth)
			}
		case "id":
			b = append(b, `"1"`...)
		default:
			str(words)
		}
	}
	ws()
	object(0, top...)
	ws()
	return b
}

// TestMembersRandomLines: random valid lines, each prepared from the Members
// that scanned the line before it in the same buffer, laid out otherwise and
// cut short, give ExtractLine's docs; enough of them have text for the check
// to mean something.
func TestMembersRandomLines(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	n := 1000
	if testing.Short() {
		n = 300
	}
	for _, l := range []struct {
		layout     string
		top, types []string
	}{{"claude", []string{"type", "message", "timestamp", "isMeta"}, []string{"user", "assistant"}},
		{"codex", []string{"type", "payload", "timestamp"}, []string{"event_msg", "response_item"}},
		{"gemini", []string{"id", "type", "content", "toolCalls", "timestamp"}, []string{"user", "gemini"}},
		{"llxprt", []string{"type", "payload", "ts"}, []string{"content"}},
		{"wave", []string{"role", "blocks", "timestamp", "type"}, []string{"x", "metadata"}}} {
		layout := l.layout
		prev, withText := busyLine, 0
		for range n {
			line := genLine(r, l.top, l.types)
			if err := indexer.ObjectFields(line, func(_, _ []byte) {}); err != nil {
				t.Fatalf("generated %q: %v", line, err)
			}
			for _, tools := range []bool{false, true} {
				checkMembersVariants(t, layout, prev, line, tools)
			}
			if len(ExtractLine(nil, layout, 0, line, true)) > 0 {
				withText++
			}
			prev = line
		}
		if withText < n/100 {
			t.Errorf("%s: only %d of %d random lines have text", layout, withText, n)
		}
		t.Logf("%s: %d of %d random lines have text", layout, withText, n)
	}
}
