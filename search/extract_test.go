package search

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

func show(ms []Message) string {
	var parts []string
	for _, m := range ms {
		s := fmt.Sprintf("%s@%d/%d:%s", m.Role, m.Offset, m.Part, m.Text)
		if m.Session != "" {
			s = m.Session + "|" + s
		}
		if m.Time != 0 {
			s += fmt.Sprintf("(%d)", m.Time)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ; ")
}

const ts = `"2026-01-02T03:04:05.678Z"`

var lineCases = []struct {
	name, layout, line string
	want, wantTools    string
}{
	{"wave user", "wave", `{"timestamp":` + ts + `,"id":"1","role":"user","blocks":[{"type":"text","content":"caf\u00e9 line\nbreak"}]}`,
		"user@7/0:café line\nbreak(1767323045678)", ""},
	{"wave tool", "wave", `{"timestamp":` + ts + `,"role":"assistant","blocks":[{"type":"text","content":"Let me look"},{"type":"reasoning","content":"hidden"},{"type":"tool","name":"read","parameters":"{\"file_path\":\"/a/b.go\"}","result":"package main","stage":"end"}]}`,
		"assistant@7/0:Let me look(1767323045678)", "assistant@7/0:Let me look(1767323045678) ; tool@7/1:read\n{\"file_path\":\"/a/b.go\"}\npackage main(1767323045678)"},
	{"wave header", "wave", `{"type":"metadata","workdir":"/w","createdAt":` + ts + `}`, "", ""},
	{"wave meta", "wave", `{"timestamp":` + ts + `,"role":"user","isMeta":true,"blocks":[{"type":"text","content":"x"}]}`, "", ""},
	{"claude string", "claude", `{"type":"user","message":{"role":"user","content":"fix the \"auth\" bug"},"timestamp":` + ts + `}`,
		`user@7/0:fix the "auth" bug(1767323045678)`, ""},
	{"claude blocks", "claude", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret"},{"type":"text","text":"Done."},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls -la"}}]},"timestamp":` + ts + `}`,
		"assistant@7/0:Done.(1767323045678)", "assistant@7/0:Done.(1767323045678) ; tool@7/1:Bash\nls -la(1767323045678)"},
	{"claude tool result", "claude", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"out put"}]}]},"timestamp":` + ts + `}`,
		"", "tool@7/1:out put(1767323045678)"},
	{"claude summary", "claude", `{"type":"summary","summary":"not a message"}`, "", ""},
	{"codex user", "codex", `{"timestamp":` + ts + `,"type":"event_msg","payload":{"type":"user_message","message":"hello codex","images":[]}}`,
		"user@7/0:hello codex(1767323045678)", ""},
	{"codex agent", "codex", `{"timestamp":` + ts + `,"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}`,
		"assistant@7/0:hi(1767323045678)", ""},
	{"codex duplicate response item", "codex", `{"timestamp":` + ts + `,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello codex"}]}}`, "", ""},
	{"codex call", "codex", `{"timestamp":` + ts + `,"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c"}}`,
		"", "tool@7/1:shell\n{\"command\":[\"ls\"]}(1767323045678)"},
	{"gemini parts", "gemini", `{"id":"m1","timestamp":` + ts + `,"type":"user","content":[{"text":"first"},{"text":"second"}]}`,
		"user@7/0:first\nsecond(1767323045678)", ""},
	{"gemini reply", "gemini", `{"id":"m2","timestamp":` + ts + `,"type":"gemini","content":"answer","toolCalls":[{"id":"x","name":"read_file","args":{"absolute_path":"/p"},"result":[{"functionResponse":{"response":{"output":"data"}}}]}]}`,
		"assistant@7/0:answer(1767323045678)", "assistant@7/0:answer(1767323045678) ; tool@7/1:read_file\n/p\ndata(1767323045678)"},
	{"gemini info", "gemini", `{"id":"m3","timestamp":` + ts + `,"type":"info","content":"compressing"}`, "", ""},
	{"gemini header", "gemini", `{"sessionId":"s","projectHash":"h","startTime":` + ts + `}`, "", ""},
	{"llxprt human", "llxprt", `{"v":1,"seq":2,"ts":` + ts + `,"type":"content","payload":{"content":{"speaker":"human","blocks":[{"type":"text","text":"hi llxprt"}]}}}`,
		"user@7/0:hi llxprt(1767323045678)", ""},
	{"llxprt tool", "llxprt", `{"v":1,"seq":3,"ts":` + ts + `,"type":"content","payload":{"content":{"speaker":"tool","blocks":[{"type":"tool_response","callId":"c","toolName":"read_file","result":{"output":"xyz"}}]}}}`,
		"", "tool@7/1:read_file\nxyz(1767323045678)"},
	{"not json", "wave", `{"timestamp":`, "", ""},
	{"collab has no text", "collab-terminals", `{"sessions":[]}`, "", ""},
}

func TestExtractLine(t *testing.T) {
	for _, tt := range lineCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(ExtractLine(nil, tt.layout, 7, []byte(tt.line), false)); got != tt.want {
				t.Errorf("ExtractLine(%s, tools off) = %q, want %q", tt.layout, got, tt.want)
			}
			wantTools := tt.wantTools
			if wantTools == "" {
				wantTools = tt.want
			}
			if got := show(ExtractLine(nil, tt.layout, 7, []byte(tt.line), true)); got != wantTools {
				t.Errorf("ExtractLine(%s, tools on) = %q, want %q", tt.layout, got, wantTools)
			}
		})
	}
}

func TestExtractDocument(t *testing.T) {
	mogzi := `{"id":"m-1","name":"n","createdAt":"2026-01-01T00:00:00Z","lastModifiedAt":` + ts + `,"history":[` +
		`{"role":"user","content":"bonjour \u00e0 tous","functionCalls":[],"functionResults":[]},` +
		`{"role":"assistant","content":"salut","functionCalls":[{"callId":"c","name":"ls","arguments":"{}"}]},` +
		`{"role":"tool","content":"ignored","functionResults":[{"callId":"c","result":"files"}]}]}`
	if got, want := show(ExtractDocument("mogzi", []byte(mogzi), false)), "m-1|user@0/0:bonjour à tous(1767323045678) ; m-1|assistant@1/0:salut(1767323045678)"; got != want {
		t.Errorf("mogzi = %q, want %q", got, want)
	}
	if got, want := show(ExtractDocument("mogzi", []byte(mogzi), true)), "m-1|user@0/0:bonjour à tous(1767323045678) ; m-1|assistant@1/0:salut(1767323045678) ; m-1|tool@1/1:ls\n{}(1767323045678) ; m-1|tool@2/1:files(1767323045678)"; got != want {
		t.Errorf("mogzi tools = %q, want %q", got, want)
	}
	hy := `{"hyper_0000000b":{"backend":"codex","nativeId":"n","createdAt":"2026-01-01T00:00:00Z","lastPrompt":"deploy it"},"hyper_0000000a":{"backend":"claude","createdAt":"2026-01-01T00:00:00Z","lastSeenAt":` + ts + `,"lastPrompt":"run tests"},"hyper_0000000c":{"backend":"claude","createdAt":"x"}}`
	if got, want := show(ExtractDocument("hyperyolo", []byte(hy), false)), "hyper_0000000a|user@0/0:run tests(1767323045678) ; hyper_0000000b|user@0/0:deploy it(1767225600000)"; got != want {
		t.Errorf("hyperyolo = %q, want %q", got, want)
	}
	if got := ExtractDocument("mogzi", []byte(`{"id":`), true); got != nil {
		t.Errorf("broken mogzi document gave %q", show(got))
	}
}

// fuzzLine is the property every line extractor keeps: no panic, texts are not
// blank, part and role agree, and tools only add the tool part.
func fuzzLine(f *testing.F, layout string) {
	for _, c := range lineCases {
		if c.layout == layout {
			f.Add([]byte(c.line))
		}
	}
	for _, c := range membersCases {
		if c.layout == layout {
			f.Add([]byte(c.line))
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))
	// Parts that decode otherwise than they read: escapes, CJK across parts, a
	// word split by an escaped letter, bytes that are not UTF-8.
	esc := `"\u6771\u4eac x\u0041y \ud83d\ude00 x\ud835\udc00y \ud840\udc00\ud840\udc01 \"q\"\n\\t caf\u00e9 ` + "\xff" + ` 東京"`
	f.Add([]byte(`{"timestamp":` + ts + `,"id":"1","role":"user","blocks":[{"type":"text","content":` + esc + `},{"type":"text","content":"京都"},{"type":"tool","name":` + esc + `,"result":["a",{"b":` + esc + `}]}]}`))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":[` + esc + `,{"type":"text","text":` + esc + `},{"type":"tool_result","content":[{"type":"text","text":` + esc + `}]}]},"timestamp":` + ts + `}`))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":` + esc + `},"timestamp":` + ts + `}`))
	f.Add([]byte(`{"timestamp":` + ts + `,"type":"event_msg","payload":{"type":"user_message","message":` + esc + `}}`))
	f.Add([]byte(`{"id":"m1","timestamp":` + ts + `,"type":"user","content":[` + esc + `,{"text":` + esc + `},"东"]}`))
	f.Add([]byte(`{"v":1,"ts":` + ts + `,"type":"content","payload":{"content":{"speaker":"ai","blocks":[{"type":"code","code":` + esc + `},{"type":"text","text":"\u0301x"}]}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		off := ExtractLine(nil, layout, 0, line, false)
		on := ExtractLine(nil, layout, 0, line, true)
		for _, m := range off {
			if m.Part != PartText || m.Role == RoleTool || strings.TrimSpace(m.Text) == "" {
				t.Fatalf("%s: bad message %+v", layout, m)
			}
		}
		var texts []Message
		for _, m := range on {
			if (m.Part == PartTool) != (m.Role == RoleTool) || strings.TrimSpace(m.Text) == "" {
				t.Fatalf("%s: bad message %+v", layout, m)
			}
			if m.Part == PartText {
				texts = append(texts, m)
			}
		}
		if show(texts) != show(off) {
			t.Fatalf("%s: tools changed the text messages: %q vs %q", layout, show(texts), show(off))
		}
		for _, tools := range []bool{false, true} {
			msgs := off
			if tools {
				msgs = on
			}
			want := tokenizedDocs(msgs)
			if got := preparedDocs(layout, line, tools); got != want {
				t.Fatalf("%s tools=%v: prepared docs\n%s\nwant (ExtractLine, then appendTerms)\n%s", layout, tools, got, want)
			}
			// Handed the line's members (the nested objects taken from the
			// scan's records), the read worker prepares the same docs.
			var m indexer.Members
			m.Scan(line)
			if got := preparedDocsOf(layout, line, &m, tools); got != want {
				t.Fatalf("%s tools=%v: prepared docs from the line's members\n%s\nwant (ExtractLine, then appendTerms)\n%s", layout, tools, got, want)
			}
			checkMembersVariants(t, layout, busyLine, line, tools)
		}
	})
}

// preparedDocs shows the docs a read worker prepares of line (its text parts
// tokenized where they are in the line): each doc's fields and its distinct
// terms with their counts, in order of first occurrence.
func preparedDocs(layout string, line []byte, tools bool) string {
	return preparedDocsOf(layout, line, nil, tools)
}

// preparedDocsOf is preparedDocs of the line's members m (nil: none).
func preparedDocsOf(layout string, line []byte, m *indexer.Members, tools bool) string {
	p := &preparedLines{x: newLineExtractor(layout, tools)}
	p.x.prep = p
	p.line(7, line, m)
	var b strings.Builder
	at := 0
	for _, d := range p.docs {
		fmt.Fprintf(&b, "%+v n=%d:", d.rec, d.n)
		for ; at < d.pairsEnd; at++ {
			fmt.Fprintf(&b, " %q×%d", p.dict.name(p.pairs[at].id), p.pairs[at].tf)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tokenizedDocs is preparedDocs of the messages ExtractLine gives, their decoded
// texts tokenized by appendTerms.
func tokenizedDocs(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		terms, n := appendTerms(nil, m.Text)
		if n == 0 {
			continue
		}
		var order []string
		tf := map[string]int{}
		for t := terms; len(t) > 0; t = t[1+int(t[0]):] {
			w := string(t[1 : 1+int(t[0])])
			if tf[w] == 0 {
				order = append(order, w)
			}
			tf[w]++
		}
		sec := m.Time / 1000
		if sec < 0 || sec > 1<<32-1 {
			sec = 0
		}
		rec := docRec{Part: m.Part, Role: roleCode(m.Role), Offset: 7, Time: uint32(sec), Len: uint16(min(n, 1<<16-1))}
		fmt.Fprintf(&b, "%+v n=%d:", rec, n)
		for _, w := range order {
			fmt.Fprintf(&b, " %q×%d", w, tf[w])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func FuzzExtractWave(f *testing.F)   { fuzzLine(f, "wave") }
func FuzzExtractClaude(f *testing.F) { fuzzLine(f, "claude") }
func FuzzExtractCodex(f *testing.F)  { fuzzLine(f, "codex") }
func FuzzExtractGemini(f *testing.F) { fuzzLine(f, "gemini") }
func FuzzExtractLlxprt(f *testing.F) { fuzzLine(f, "llxprt") }

func FuzzExtractDocument(f *testing.F) {
	f.Add("mogzi", []byte(`{"id":"x","history":[{"role":"user","content":"a"},{"role":"assistant","content":"b","functionCalls":[{"name":"n"}]}]}`))
	f.Add("hyperyolo", []byte(`{"hyper_00000001":{"lastPrompt":"p","createdAt":"2026-01-01T00:00:00Z"}}`))
	f.Add("mogzi", []byte(`{"history":[1,"x",{"role":7}]}`))
	f.Fuzz(func(t *testing.T, layout string, data []byte) {
		for _, m := range ExtractDocument(layout, data, true) {
			if strings.TrimSpace(m.Text) == "" || (m.Part == PartTool) != (m.Role == RoleTool) {
				t.Fatalf("%s: bad message %+v", layout, m)
			}
		}
	})
}
