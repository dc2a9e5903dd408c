package usage

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// appendKeyFast appends k's line (appendKey's) as encoding/json writes the
// wireKey of its records, without reflection: a cold build writes every unit
// once per source and once more at its end, and the encoder's reflection was
// most of that. ok is false when a string is not plain printable ASCII without
// quotes or backslashes (escaping is left to encoding/json: appendKey's slow
// path); b is then as given.
func (l *Ledger) appendKeyFast(b []byte, k ukey) (_ []byte, ok bool, err error) {
	start := len(b)
	b = append(b, `{"k":[`...)
	if b, ok = appendPlain(b, k.source); !ok {
		return b[:start], false, nil
	}
	b = append(b, ',')
	if b, ok = appendPlain(b, k.unit); !ok {
		return b[:start], false, nil
	}
	b = append(b, ']')
	if r := l.units.get(k.source, k.unit); r != nil {
		body, err := l.peekBody(r)
		if err != nil {
			return b[:start], false, err
		}
		b = append(b, `,"live":`...)
		if b, ok = appendWireUnit(b, r, body); !ok {
			return b[:start], false, nil
		}
	}
	if rs := l.retired[k]; len(rs) > 0 {
		b = append(b, `,"retired":[`...)
		for i, r := range rs {
			body, err := l.peekBody(r)
			if err != nil {
				return b[:start], false, err
			}
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendWireUnit(b, r, body); !ok {
				return b[:start], false, nil
			}
		}
		b = append(b, ']')
	}
	return append(b, '}', '\n'), true, nil
}

// appendWireUnit appends toWire(r, body) as encoding/json writes a wireUnit
// (its fields in order, omitempty as tagged).
func appendWireUnit(b []byte, r *unitRec, body *unitBody) ([]byte, bool) {
	ok := true
	str := func(name, s string, omit bool) {
		if !ok || (omit && s == "") {
			return
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b, ok = appendPlain(b, s)
	}
	num := func(name string, v int64) {
		if v == 0 {
			return
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, `{"source":`...)
	b, ok = appendPlain(b, r.source())
	str("unit", r.Unit, false)
	str("layout", body.Layout, false)
	str("path", r.path(), false)
	if dev := r.dev(); dev != 0 {
		b = append(b, `,"dev":`...)
		b = strconv.AppendUint(b, dev, 10)
	}
	if r.Ino != 0 {
		b = append(b, `,"ino":`...)
		b = strconv.AppendUint(b, r.Ino, 10)
	}
	num("offset", r.Off)
	str("fp", r.Fp(), true)
	str("session", r.session(), true)
	str("type", r.typ(), true)
	str("project", r.project(), true)
	if !ok {
		return b, false
	}
	if body.St != (ParseState{}) {
		// A small struct of extract.go's: encoding/json's own bytes.
		var sb bytes.Buffer
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		if enc.Encode(body.St) != nil {
			return b, false
		}
		b = append(b, `,"state":`...)
		b = append(b, bytes.TrimSuffix(sb.Bytes(), []byte("\n"))...)
	}
	if s := body.Seen; s != nil {
		b = append(b, `,"seen":`...)
		b = appendIntArray(b, s.Input, s.Output, s.CacheWrite, s.CacheRead)
	}
	str("retired", body.Retired, true)
	if !ok {
		return b, false
	}
	if win := body.acc.Win; len(win) > 0 {
		b = append(b, `,"window":[`...)
		for i, e := range win {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[', '"')
			b = strconv.AppendUint(b, e.ID, 16)
			b = append(b, '"', ',', '"')
			b = strconv.AppendUint(b, e.OrigReq, 16)
			b = append(b, '"', ',', '"')
			b = strconv.AppendUint(b, e.Req, 16)
			b = append(b, '"', ',')
			b = strconv.AppendBool(b, e.Side)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(e.Q), 10)
			b = append(b, ',')
			if b, ok = appendPlain(b, e.Model); !ok {
				return b, false
			}
			b = appendCommaInts(b, e.T.Input, e.T.Output, e.T.CacheWrite, e.T.CacheRead)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	if bs := body.acc.Buckets; len(bs) > 0 {
		b = append(b, `,"buckets":[`...)
		for i, x := range bs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(x.Q), 10)
			b = append(b, ',')
			if b, ok = appendPlain(b, x.Model); !ok {
				return b, false
			}
			b = appendCommaInts(b, x.T.Input, x.T.Output, x.T.CacheWrite, x.T.CacheRead)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// appendIntArray appends [v0,v1,…].
func appendIntArray(b []byte, vs ...int64) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, ']')
}

// appendCommaInts appends ,v0,v1,….
func appendCommaInts(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		b = append(b, ',')
		b = strconv.AppendInt(b, v, 10)
	}
	return b
}

// appendPlain appends s quoted if encoding/json would write it as it is:
// printable ASCII without a quote or a backslash (ok false otherwise).
func appendPlain(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
