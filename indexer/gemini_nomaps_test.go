package indexer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The Gemini fold as it was when a record's members were read into maps
// (jsObjectOf) and a user message's whole text was rendered: the oracle of the
// fold that reads them without a map and renders a long text's start.

func geminiLineMaps(a *geminiAcc, line []byte, m *Members) error {
	rec, err := jsObjectOf(line, m)
	if err != nil {
		return err
	}
	geminiFoldMaps(a, rec, m)
	return nil
}

func geminiFoldMaps(a *geminiAcc, rec map[string]json.RawMessage, m *Members) {
	if id, ok := jsString(rec["$rewindTo"]); ok {
		a.rewind(id)
		return
	}
	if id, ok := jsString(rec["id"]); ok {
		geminiMessageMaps(a, id, rec, m)
		return
	}
	if set, err := jsObjectOf(rec["$set"], m); err == nil {
		geminiMetaMaps(a, set)
		return
	}
	_, sid := jsString(rec["sessionId"])
	_, ph := jsString(rec["projectHash"])
	if sid && ph {
		geminiMetaMaps(a, rec)
	}
}

func geminiMessageMaps(a *geminiAcc, id string, rec map[string]json.RawMessage, m *Members) {
	if ts := NormTime(jsStr(rec["timestamp"])); ts != "" {
		if a.FirstTS == "" {
			a.FirstTS = ts
		}
		a.LastTS = ts
	}
	typ := jsStr(rec["type"])
	if m := jsStr(rec["model"]); typ == "gemini" && m != "" {
		a.Model = m
	}
	p := ""
	if typ == "user" {
		p = geminiPromptWhole(rec["content"], m)
	}
	i, ok := a.lookup(id)
	if !ok {
		i = len(a.IDs)
		a.IDs = append(a.IDs, id)
		a.index[id] = i
	}
	if (a.Res == 0 || i+1 < a.Res) && geminiResumableMaps(typ, rec, m) {
		a.Res = i + 1
	}
	if p != "" {
		if a.Prompts == nil {
			a.Prompts = map[int]string{}
		}
		a.Prompts[i] = p
	} else {
		delete(a.Prompts, i)
	}
}

func geminiMetaMaps(a *geminiAcc, m map[string]json.RawMessage) {
	setStr := func(key string, dst *string, norm func(string) string) {
		raw, ok := m[key]
		if !ok {
			return
		}
		if jsNull(raw) {
			*dst = ""
			return
		}
		if s, ok := jsString(raw); ok {
			if norm != nil {
				if s = norm(s); s == "" {
					return
				}
			}
			*dst = s
		}
	}
	setStr("sessionId", &a.SessionID, nil)
	setStr("kind", &a.Kind, nil)
	setStr("summary", &a.Summary, nil)
	setStr("startTime", &a.Start, NormTime)
	setStr("lastUpdated", &a.Updated, NormTime)
	if raw, ok := m["messages"]; ok {
		var msgs []json.RawMessage
		if json.Unmarshal(raw, &msgs) == nil && msgs != nil {
			a.IDs, a.Prompts, a.index, a.Res = nil, nil, nil, 0
			for _, mr := range msgs {
				rec, err := jsObject(mr)
				if err != nil {
					continue
				}
				if id, ok := jsString(rec["id"]); ok {
					geminiMessageMaps(a, id, rec, nil)
				}
			}
		}
	}
}

func geminiResumableMaps(typ string, rec map[string]json.RawMessage, m *Members) bool {
	switch typ {
	case "user":
		text := geminiVerboseText(rec["content"], m)
		if text == "" {
			return false
		}
		for _, p := range geminiUserIgnored {
			if strings.HasPrefix(text, p) {
				return false
			}
		}
		return true
	case "gemini":
		return geminiVerboseText(rec["content"], m) != "" || jsNonEmptyArray(rec["toolCalls"]) || jsNonEmptyArray(rec["thoughts"])
	}
	return false
}

// geminiNoMapsSeeds are Gemini lines of every kind the fold tells apart.
var geminiNoMapsSeeds = []string{
	`{"sessionId":"s","projectHash":"h","startTime":"2026-06-14T01:50:00.302Z","lastUpdated":"2026-06-14T01:50:00.302Z","kind":"main"}`,
	`{"id":"u1","timestamp":"2026-06-14T01:50:00.302Z","type":"user","content":[{"text":"Refactor the config"}]}`,
	`{"id":"u1","timestamp":"2026-06-14T01:50:00Z","type":"user","content":"/help me","id":"u2"}`,
	`{"id":"g1","timestamp":"2026-06-14T01:50:20.302Z","type":"gemini","content":"","thoughts":[{"subject":"s"}],"model":"gemini-2.5-pro","toolCalls":[]}`,
	`{"id":"g2","type":"gemini","content":"","toolCalls":[{"id":"x"}],"model":"a","model":"b"}`,
	`{"$set":{"lastUpdated":"2026-06-14T01:50:00.302Z","summary":"sum","kind":null}}`,
	`{"$set":{"messages":[{"id":"m1","type":"user","content":"hello"},{"id":7},"x",{"id":"m2","type":"gemini","content":"hi"}]}}`,
	`{"$set":[1],"sessionId":"s","projectHash":"h","summary":"x"}`,
	`{"$rewindTo":"u1"}`, `{"$rewindTo":"nope"}`, `{"$rewindTo":7,"id":"u9","type":"user","content":"again"}`,
	`{"sessionId":"s","projectHash":7,"summary":"no"}`, `{"sessionId":"a","sessionId":"b","projectHash":"h"}`,
	`{"id":"u3","type":"user","content":[{"text":"?"},{"functionCall":{}}]}`, `{"id":"u4","type":"info","content":"x"}`,
	`{"id":"u5","type":"user","content":{"text":"` + strings.Repeat("word ", 900) + `"}}`,
	`{"id":"u6","type":"user","content":[{"text":"` + strings.Repeat(" ", 1500) + `<state_snapshot>` + strings.Repeat("w ", 900) + `"}]}`,
	`[]`, `{`, `{"id":"x","content":[}`, `{}`,
}

// FuzzGeminiLineNoMaps: a line folded after the seeds gives the state and the
// error (its text too) the map-based fold gives, from its scan and its text.
func FuzzGeminiLineNoMaps(f *testing.F) {
	for _, s := range geminiNoMapsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var m Members
		m.Scan(line)
		for _, mm := range []*Members{nil, &m} {
			got, want := &geminiAcc{V: geminiAccVersion}, &geminiAcc{V: geminiAccVersion}
			for _, s := range geminiNoMapsSeeds[:8] {
				got.line([]byte(s), nil)
				geminiLineMaps(want, []byte(s), nil)
			}
			for i := 0; i < 2; i++ {
				errGot, errWant := got.line(line, mm), geminiLineMaps(want, line, mm)
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if fmt.Sprint(errGot) != fmt.Sprint(errWant) || string(g) != string(w) {
					t.Fatalf("line %.300q (members %v): %v %s, want %v %s", line, mm != nil, errGot, g, errWant, w)
				}
			}
		}
	})
}

// TestGeminiDocumentNoMaps: a legacy document folds as the map-based fold folded it.
func TestGeminiDocumentNoMaps(t *testing.T) {
	for _, doc := range []string{
		`{"sessionId":"s","projectHash":"h","startTime":"2026-06-14T01:50:00Z","messages":[{"id":"a","type":"user","content":"hi there"},{"id":"b","type":"gemini","content":"ok","model":"m"}]}`,
		`{"sessionId":"s","messages":null,"summary":"x","summary":null}`, `{"sessionId":7}`, `[]`,
	} {
		got, ok := parseGeminiDocument([]byte(doc))
		var want *geminiAcc
		rec, err := jsObject([]byte(doc))
		if _, sid := jsString(rec["sessionId"]); err == nil && sid {
			want = &geminiAcc{V: geminiAccVersion}
			geminiMetaMaps(want, rec)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if ok != (want != nil) || string(g) != string(w) {
			t.Errorf("document %s: %v %s, want %s", doc, ok, g, w)
		}
	}
}
