package indexer

import (
	"encoding/json"
	"fmt"
	"testing"
)

// llxprtLineMaps is llxprtAcc.line as it was when the members were read into
// maps (jsObjectOf): the oracle of the fold that reads them without one.
func llxprtLineMaps(a *llxprtAcc, line []byte, m *Members) error {
	rec, err := jsObjectOf(line, m)
	if err != nil {
		return err
	}
	var l llxprtLine
	for _, f := range []struct {
		key string
		dst *string
	}{{"type", &l.Type}, {"ts", &l.TS}} {
		if raw, ok := rec[f.key]; ok && !jsNull(raw) {
			s, ok := jsString(raw)
			if !ok {
				return fmt.Errorf("envelope %s is not a string", f.key)
			}
			*f.dst = s
		}
	}
	l.Payload = rec["payload"]
	var p map[string]json.RawMessage
	switch l.Type {
	case "session_start", "content", "provider_switch", "session_named", "session_metadata":
		var err error
		if p, err = jsObjectOf(l.Payload, m); err != nil {
			return fmt.Errorf("%s payload: %w", l.Type, err)
		}
	}
	if ts := NormTime(l.TS); ts != "" {
		if a.FirstTS == "" {
			a.FirstTS = ts
		}
		a.LastTS = ts
	}
	switch l.Type {
	case "session_start":
		if a.Started {
			return nil // only the first one describes the session
		}
		a.Started = true
		a.SessionID = jsStr(p["sessionId"])
		a.Cwd = jsStr(p["cwd"])
		if a.Cwd == "" {
			// Recordings before cwd was added: the first workspace dir is the root.
			var dirs []json.RawMessage
			if json.Unmarshal(p["workspaceDirs"], &dirs) == nil && len(dirs) > 0 {
				a.Cwd = jsStr(dirs[0])
			}
		}
		a.Provider = jsStr(p["provider"])
		a.Model = jsStr(p["model"])
		a.Start = NormTime(jsStr(p["startTime"]))
	case "content":
		a.Contents++
		if a.Prompt == "" {
			a.Prompt = llxprtHumanText(p["content"], m)
		}
	case "provider_switch":
		if s, ok := jsString(p["provider"]); ok {
			a.Provider = s
		}
		if s, ok := jsString(p["model"]); ok {
			a.Model = s
		}
	case "session_named":
		a.setTitle(p["name"])
	case "session_metadata":
		a.setTitle(p["title"])
	}
	return nil
}

// FuzzLlxprtLineNoMaps: the fold gives the state and the error (its text too)
// the map-based fold gave, from a line's scan and from its text, a line after
// another.
func FuzzLlxprtLineNoMaps(f *testing.F) {
	seedLinesFrom(f, "testdata/llxprt/*/store/*/chats/*.jsonl")
	for _, s := range []string{
		`{"type":"session_start","payload":{"workspaceDirs":[7,"/x"]}}`,
		`{"type":"session_start","payload":{"sessionId":"a","sessionId":"b","cwd":null,"workspaceDirs":["/w"],"provider":"p","model":"m","startTime":"2026-01-01T00:00:00Z"}}`,
		`{"type":"content","payload":{"content":{"speaker":"human","blocks":[{"type":"text","text":"hi"}]}}}`,
		`{"type":"content","payload":{"content":{"speaker":"human","blocks":[{"type":"text","text":null},"x"]}}}`,
		`{"type":"session_named","payload":{"name":null},"ts":"2026-01-01T00:00:00+02:00"}`,
		`{"type":"session_metadata","payload":{"title":"t","title":7}}`,
		`{"type":"provider_switch","payload":{"provider":"q","model":null}}`,
		`{"type":"content","payload":[1]}`, `{"type":"content","payload":null}`, `{"type":"content"}`, `{"type":"content","payload":"x"}`,
		`{"type":7}`, `{"type":null,"ts":3}`, `{"ts":"2026-01-01T00:00:00Z","type":"x","type":"session_named","payload":{"name":"n"}}`,
		`{"type":"session_named","payload":{"name":"n"},"payload":{"x":1}}`, `{"type":"content","payload":{"content":1}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var m Members
		m.Scan(line)
		for _, mm := range []*Members{nil, &m} {
			got, want := &llxprtAcc{}, &llxprtAcc{}
			for i := 0; i < 2; i++ { // twice: a second session_start, a prompt already set
				errGot, errWant := got.line(line, mm), llxprtLineMaps(want, line, mm)
				if fmt.Sprint(errGot) != fmt.Sprint(errWant) || *got != *want {
					g, _ := json.Marshal(got)
					w, _ := json.Marshal(want)
					t.Fatalf("line %q (members %v): %v %s, want %v %s", line, mm != nil, errGot, g, errWant, w)
				}
			}
		}
	})
}
