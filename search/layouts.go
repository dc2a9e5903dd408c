package search

import (
	"github.com/sessionwatch/sessionwatch/indexer"
)

// Each line extractor validates the line (indexer.ObjectFields), picks the members
// that hold conversation text, adds them to x.text (and tool text, only when
// x.tools is set, to x.tool) and calls x.emit once with the line's role and time.

// waveLine: {"timestamp","role","blocks":[{type:text|compact,content}, {type:tool,
// name,parameters,result}, {type:bang,command,output}…]}; the metadata header and
// isMeta messages hold no conversation.
func waveLine(line []byte, m *indexer.Members, x *lineExtractor) error {
	var typ, role, ts string
	var blocks []byte
	meta := false
	err := m.ObjectFields(line, func(k, v []byte) {
		switch string(k) {
		case "type":
			typ = jword(v)
		case "role":
			role = jword(v)
		case "timestamp":
			ts = jstr(v)
		case "blocks":
			blocks = v
		case "isMeta":
			meta = indexer.JSONTrue(v)
		}
	})
	if err != nil || typ == "metadata" || meta {
		return err
	}
	r := chatRole(role)
	if r == "" {
		return nil
	}
	waveBlocks.collect(blocks, x)
	x.emit(r, parseMillis(ts))
	return nil
}

// claudeLine: {"type":"user"|"assistant","timestamp","message":{"role","content":
// string | [{type:text,text}, {type:tool_use,name,input}, {type:tool_result,content}]}}.
func claudeLine(line []byte, m *indexer.Members, x *lineExtractor) error {
	var typ, ts string
	var message []byte
	meta := false
	err := m.ObjectFields(line, func(k, v []byte) {
		switch string(k) {
		case "type":
			typ = jword(v)
		case "timestamp":
			ts = jstr(v)
		case "message":
			message = v
		case "isMeta":
			meta = indexer.JSONTrue(v)
		}
	})
	if err != nil || meta || (typ != "user" && typ != "assistant") {
		return err
	}
	var content []byte
	fieldsOf(m, message, func(k, v []byte) {
		if string(k) == "content" {
			content = v
		}
	})
	content = indexer.TrimJSONSpace(content)
	if len(content) > 0 && content[0] == '"' {
		x.text.addJSON(content)
	}
	claudeBlocks.collect(content, x)
	x.emit(typ, parseMillis(ts))
	return nil
}

// codexLine: {"timestamp","type","payload"}: event_msg user_message and
// agent_message carry the conversation (the response_item messages repeat it and
// are not indexed twice); response_item function_call / function_call_output /
// custom_tool_call(_output) are tool text.
func codexLine(line []byte, m *indexer.Members, x *lineExtractor) error {
	typ, ts, payload, err := envelope(line, m, "timestamp")
	if err != nil || (typ != "event_msg" && typ != "response_item") {
		return err
	}
	var ptyp string
	var message []byte
	var parts [][]byte
	fieldsOf(m, payload, func(k, v []byte) {
		switch string(k) {
		case "type":
			ptyp = jword(v)
		case "message":
			message = v
		case "name", "arguments", "output", "input":
			if x.tools {
				parts = append(parts, v)
			}
		}
	})
	switch {
	case typ == "event_msg" && ptyp == "user_message":
		x.text.addJSON(message)
		x.emit(RoleUser, parseMillis(ts))
	case typ == "event_msg" && ptyp == "agent_message":
		x.text.addJSON(message)
		x.emit(RoleAssistant, parseMillis(ts))
	case typ == "response_item" && x.tools && (ptyp == "function_call" || ptyp == "function_call_output" ||
		ptyp == "custom_tool_call" || ptyp == "custom_tool_call_output"):
		for _, p := range parts {
			walkStrings(p, &x.tool)
		}
		x.emit(RoleAssistant, parseMillis(ts))
	}
	return nil
}

// geminiLine: message records {"id","timestamp","type":"user"|"gemini","content":
// string | [parts], "toolCalls":[{name,args,result}]}; headers, $set and
// $rewindTo lines hold no new text.
func geminiLine(line []byte, m *indexer.Members, x *lineExtractor) error {
	var typ, ts string
	var content, calls []byte
	hasID := false
	err := m.ObjectFields(line, func(k, v []byte) {
		switch string(k) {
		case "type":
			typ = jword(v)
		case "timestamp":
			ts = jstr(v)
		case "content":
			content = v
		case "toolCalls":
			calls = v
		case "id":
			hasID = true
		}
	})
	if err != nil || !hasID {
		return err
	}
	r := chatRole(typ)
	if r == "" {
		return nil
	}
	textContent(m, content, &x.text)
	if x.tools {
		eachElemOf(m, calls, func(c []byte) {
			fieldsOf(m, c, func(k, v []byte) {
				switch string(k) {
				case "name", "args", "result":
					walkStrings(v, &x.tool)
				}
			})
		})
	}
	x.emit(r, parseMillis(ts))
	return nil
}

// llxprtLine: {"ts","type":"content","payload":{"content":{"speaker":"human"|"ai"|
// "tool","blocks":[{type:text,text}, {type:code,code}, {type:tool_call,name,
// parameters}, {type:tool_response,toolName,result}]}}}.
func llxprtLine(line []byte, m *indexer.Members, x *lineExtractor) error {
	typ, ts, payload, err := envelope(line, m, "ts")
	if err != nil || typ != "content" {
		return err
	}
	var speaker string
	var blocks []byte
	fieldsOf(m, payload, func(k, v []byte) {
		if string(k) == "content" {
			fieldsOf(m, v, func(k, v []byte) {
				switch string(k) {
				case "speaker":
					speaker = jword(v)
				case "blocks":
					blocks = v
				}
			})
		}
	})
	r := chatRole(speaker)
	if r == "" && speaker != "tool" {
		return nil
	}
	eachElemOf(m, blocks, func(b []byte) {
		var btyp string
		var txt []byte
		var parts [][]byte
		fieldsOf(m, b, func(k, v []byte) {
			switch string(k) {
			case "type":
				btyp = jword(v)
			case "text", "code":
				txt = v
			case "name", "toolName", "parameters", "result":
				if x.tools {
					parts = append(parts, v)
				}
			}
		})
		switch btyp {
		case "text", "code":
			if r != "" {
				x.text.addJSON(txt)
			}
		case "tool_call", "tool_response":
			if x.tools {
				for _, p := range parts {
					walkStrings(p, &x.tool)
				}
			}
		}
	})
	if r == "" {
		r = RoleAssistant // a tool speaker's content is only tool text
	}
	x.emit(r, parseMillis(ts))
	return nil
}

// envelope reads the {"type", <timeKey>, "payload"} wrapper Codex and llxprt put
// around every line.
func envelope(line []byte, m *indexer.Members, timeKey string) (typ, ts string, payload []byte, err error) {
	err = m.ObjectFields(line, func(k, v []byte) {
		switch string(k) {
		case "type":
			typ = jword(v)
		case timeKey:
			ts = jstr(v)
		case "payload":
			payload = v
		}
	})
	return typ, ts, payload, err
}

// blockShape is how a layout's content blocks hold text: which block types are
// message text (read from textKey) and which are tool calls or results (their
// toolKeys fields walked for strings).
type blockShape struct {
	textKey              string
	toolKeys             map[string]bool
	textTypes, toolTypes map[string]bool
}

var (
	waveBlocks = blockShape{textKey: "content",
		toolKeys:  set("name", "parameters", "result", "command", "output"),
		textTypes: set("text", "compact"), toolTypes: set("tool", "bang")}
	claudeBlocks = blockShape{textKey: "text",
		toolKeys:  set("name", "input", "content"),
		textTypes: set("text"), toolTypes: set("tool_use", "tool_result")}
)

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// collect adds the text of every block of the array blocks to x.text, and with
// tools the strings of tool blocks to x.tool.
func (bs blockShape) collect(blocks []byte, x *lineExtractor) {
	tools, m := x.tools, x.m
	eachElemOf(m, blocks, func(b []byte) {
		var btyp string
		var txt []byte
		var parts [][]byte
		fieldsOf(m, b, func(k, v []byte) {
			switch key := string(k); {
			case key == "type":
				btyp = jword(v)
			case key == bs.textKey:
				txt = v
			}
			if tools && bs.toolKeys[string(k)] { // tool text is gathered only with tools
				parts = append(parts, v)
			}
		})
		switch {
		case bs.textTypes[btyp]:
			x.text.addJSON(txt)
		case bs.toolTypes[btyp] && tools:
			for _, p := range parts {
				walkStrings(p, &x.tool)
			}
		}
	})
}
