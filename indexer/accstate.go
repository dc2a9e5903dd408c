package indexer

import (
	"slices"
	"strconv"
)

// A unit's accumulator state is stored in its catalog tail as the JSON
// encoding/json renders (marshalNoEscape). A full pass renders it for every unit
// it reads; the line layouts' accumulators render it themselves (appendState),
// byte for byte the same, without reflection or an encoder per unit.

// stateAppender is an Accumulator that renders its own stored state.
type stateAppender interface {
	// appendState appends the state exactly as marshalNoEscape renders it.
	appendState(b []byte) []byte
}

// accState is marshalNoEscape(acc), without reflection for a stateAppender.
func accState(acc Accumulator) ([]byte, error) {
	a, ok := acc.(stateAppender)
	if !ok {
		return marshalNoEscape(acc)
	}
	var buf [512]byte
	b := a.appendState(buf[:0])
	return append(make([]byte, 0, len(b)), b...), nil
}

// compactObject appends the members of one compact JSON object, as
// encoding/json renders a struct's fields: the omitempty ones left out when
// empty.
type compactObject struct {
	b []byte
	n int
}

func (o *compactObject) key(k string) {
	if o.n == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...) // plain ASCII keys: nothing to escape
	o.b = append(o.b, '"', ':')
}

// str appends a string member (omitempty).
func (o *compactObject) str(k, v string) {
	if v != "" {
		o.key(k)
		o.b = appendJSONString(o.b, v)
	}
}

// bool appends a true member (omitempty).
func (o *compactObject) bool(k string, v bool) {
	if v {
		o.key(k)
		o.b = append(o.b, "true"...)
	}
}

// int appends a nonzero member (omitempty).
func (o *compactObject) int(k string, v int64) {
	if v != 0 {
		o.intAlways(k, v)
	}
}

// intAlways appends a number member that has no omitempty.
func (o *compactObject) intAlways(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// end closes the object ("{}" when it has no members).
func (o *compactObject) end() []byte {
	if o.n == 0 {
		o.b = append(o.b, '{')
	}
	return append(o.b, '}')
}

func (a *claudeAcc) appendState(b []byte) []byte {
	o := compactObject{b: b}
	o.intAlways("v", int64(a.V))
	o.bool("seen", a.Seen)
	o.bool("sidechain", a.Sidechain)
	o.bool("conv", a.Conv)
	o.str("sessionId", a.SessionID)
	o.str("cwd", a.Cwd)
	o.str("firstTs", a.FirstTS)
	o.str("lastTs", a.LastTS)
	o.int("messages", int64(a.Messages))
	o.str("firstPrompt", a.FirstPrompt)
	o.str("command", a.Command)
	o.str("media", a.Media)
	o.str("customTitle", a.CustomTitle)
	o.str("aiTitle", a.AITitle)
	o.str("lastPrompt", a.LastPrompt)
	o.str("summary", a.Summary)
	o.str("gitBranch", a.GitBranch)
	o.str("model", a.Model)
	return o.end()
}

func (a *codexAcc) appendState(b []byte) []byte {
	o := compactObject{b: b}
	o.bool("meta", a.Meta)
	o.str("sessionId", a.SessionID)
	o.str("cwd", a.Cwd)
	o.str("provider", a.Provider)
	o.str("gitBranch", a.GitBranch)
	o.bool("subagent", a.Subagent)
	o.str("parentId", a.Parent)
	o.str("created", a.Created)
	o.str("lastTs", a.LastTS)
	o.int("messages", int64(a.Messages))
	o.str("firstPrompt", a.FirstPrompt)
	o.str("model", a.Model)
	return o.end()
}

func (a *geminiAcc) appendState(b []byte) []byte {
	o := compactObject{b: b}
	o.intAlways("v", int64(a.V))
	o.str("sessionId", a.SessionID)
	o.str("kind", a.Kind)
	o.str("startTime", a.Start)
	o.str("lastUpdated", a.Updated)
	o.str("summary", a.Summary)
	o.str("firstTs", a.FirstTS)
	o.str("lastTs", a.LastTS)
	o.str("model", a.Model)
	if len(a.IDs) > 0 {
		o.key("ids")
		for i, id := range a.IDs {
			if i == 0 {
				o.b = append(o.b, '[')
			} else {
				o.b = append(o.b, ',')
			}
			o.b = appendJSONString(o.b, id)
		}
		o.b = append(o.b, ']')
	}
	if len(a.Prompts) > 0 {
		// encoding/json writes a map's keys in the order of their text.
		type kv struct {
			k string
			v string
		}
		var arr [8]kv
		kvs := arr[:0]
		for k, v := range a.Prompts {
			kvs = append(kvs, kv{strconv.Itoa(k), v})
		}
		slices.SortFunc(kvs, func(x, y kv) int {
			if x.k < y.k {
				return -1
			}
			if x.k > y.k {
				return 1
			}
			return 0
		})
		o.key("prompts")
		for i, e := range kvs {
			if i == 0 {
				o.b = append(o.b, '{')
			} else {
				o.b = append(o.b, ',')
			}
			o.b = append(o.b, '"')
			o.b = append(o.b, e.k...)
			o.b = append(o.b, '"', ':')
			o.b = appendJSONString(o.b, e.v)
		}
		o.b = append(o.b, '}')
	}
	o.int("res", int64(a.Res))
	return o.end()
}

func (a *llxprtAcc) appendState(b []byte) []byte {
	o := compactObject{b: b}
	o.bool("started", a.Started)
	o.str("sessionId", a.SessionID)
	o.str("cwd", a.Cwd)
	o.str("provider", a.Provider)
	o.str("model", a.Model)
	o.str("startTime", a.Start)
	o.str("firstTs", a.FirstTS)
	o.str("lastTs", a.LastTS)
	o.int("contents", int64(a.Contents))
	o.str("firstPrompt", a.Prompt)
	o.str("title", a.Title)
	return o.end()
}

func (a *waveAcc) appendState(b []byte) []byte {
	o := compactObject{b: b}
	o.int("lines", int64(a.Lines))
	o.str("workdir", a.Workdir)
	o.str("headerCreatedAt", a.HeaderCreated)
	o.str("gitBranch", a.GitBranch)
	o.str("rootSessionId", a.RootSession)
	o.str("parentSessionId", a.ParentSession)
	o.str("firstTs", a.FirstTS)
	o.str("lastTs", a.LastTS)
	o.int("messages", int64(a.Messages))
	o.int("tokens", a.Tokens)
	o.str("model", a.Model)
	o.str("firstMessage", a.FirstMessage)
	o.bool("firstSeen", a.FirstSeen)
	return o.end()
}
