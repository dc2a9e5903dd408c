package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// LedgerVersion is the version of the ledger's files.
const LedgerVersion = 2

// ---- unit records (and the first version's shards, read to migrate) ----

type wireShard struct {
	Version int        `json:"version"`
	Units   []wireUnit `json:"units"`
	Retired []wireUnit `json:"retired"`
}

type wireUnit struct {
	Source  string      `json:"source"`
	Unit    string      `json:"unit"`
	Layout  string      `json:"layout"`
	Path    string      `json:"path"`
	Dev     uint64      `json:"dev,omitempty"`
	Ino     uint64      `json:"ino,omitempty"`
	Offset  int64       `json:"offset,omitempty"`
	Fp      string      `json:"fp,omitempty"`
	Session string      `json:"session,omitempty"`
	Type    string      `json:"type,omitempty"`
	Project string      `json:"project,omitempty"`
	State   *ParseState `json:"state,omitempty"`
	Seen    *[4]int64   `json:"seen,omitempty"`
	Retired string      `json:"retired,omitempty"`
	Window  [][]any     `json:"window,omitempty"`  // [id, origReq, req, sidechain, q, model, in, out, cw, cr]
	Buckets [][]any     `json:"buckets,omitempty"` // [q, model, in, out, cw, cr]
}

func tokArr(t Tokens) [4]int64 { return [4]int64{t.Input, t.Output, t.CacheWrite, t.CacheRead} }

// toWire is r's record, with b its body (r's own, or read back from disk).
func toWire(r *unitRec, b *unitBody) wireUnit {
	w := wireUnit{Source: r.source(), Unit: r.Unit, Layout: b.Layout, Path: r.path(), Dev: r.dev(), Ino: r.Ino, Offset: r.Off,
		Fp: r.Fp(), Session: r.session(), Type: r.typ(), Project: r.project(), Retired: b.Retired}
	if b.St != (ParseState{}) {
		st := b.St
		w.State = &st
	}
	if b.Seen != nil {
		s := tokArr(*b.Seen)
		w.Seen = &s
	}
	acc := b.acc
	for _, e := range acc.Win {
		w.Window = append(w.Window, []any{strconv.FormatUint(e.ID, 16), strconv.FormatUint(e.OrigReq, 16), strconv.FormatUint(e.Req, 16),
			e.Side, e.Q, e.Model, e.T.Input, e.T.Output, e.T.CacheWrite, e.T.CacheRead})
	}
	for _, b := range acc.Buckets {
		w.Buckets = append(w.Buckets, []any{b.Q, b.Model, b.T.Input, b.T.Output, b.T.CacheWrite, b.T.CacheRead})
	}
	return w
}

func encodeShard(live, retired []*unitRec) ([]byte, error) { // the first version, for tests of the migration
	sort.Slice(live, func(i, j int) bool { return less(live[i], live[j]) })
	sort.SliceStable(retired, func(i, j int) bool { return less(retired[i], retired[j]) })
	s := wireShard{Version: 1, Units: []wireUnit{}, Retired: []wireUnit{}}
	for _, r := range live {
		s.Units = append(s.Units, toWire(r, r.unitBody))
	}
	for _, r := range retired {
		s.Retired = append(s.Retired, toWire(r, r.unitBody))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encode usage ledger: %w", err)
	}
	return b.Bytes(), nil
}

func less(a, b *unitRec) bool {
	if a.source() != b.source() {
		return a.source() < b.source()
	}
	return a.Unit < b.Unit
}

func decodeShard(data []byte, intern func(string) string) (live, retired []*unitRec, err error) {
	var s wireShard
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&s); err != nil {
		return nil, nil, err
	}
	if s.Version != 1 {
		return nil, nil, fmt.Errorf("version %d, want 1", s.Version)
	}
	conv := func(ws []wireUnit) ([]*unitRec, error) {
		var out []*unitRec
		for i, w := range ws {
			r, err := fromWire(w, intern)
			if err != nil {
				return nil, fmt.Errorf("unit %d (%s): %w", i, w.Unit, err)
			}
			out = append(out, r)
		}
		return out, nil
	}
	if live, err = conv(s.Units); err != nil {
		return nil, nil, err
	}
	if retired, err = conv(s.Retired); err != nil {
		return nil, nil, err
	}
	return live, retired, nil
}

func fromWire(w wireUnit, intern func(string) string) (*unitRec, error) {
	r := &unitRec{Unit: w.Unit, Ino: w.Ino, Off: w.Offset,
		unitBody: &unitBody{Layout: intern(w.Layout), Retired: w.Retired}}
	r.setSource(intern(w.Source))
	r.setDev(w.Dev)
	r.setSession(w.Session)
	r.setFiling(intern(w.Type), intern(w.Project))
	r.setFp(w.Fp)
	r.setPath(w.Path)
	if w.State != nil {
		r.St = *w.State
	}
	if w.Seen != nil {
		r.Seen = &Tokens{w.Seen[0], w.Seen[1], w.Seen[2], w.Seen[3]}
	}
	for _, a := range w.Window {
		if len(a) != 10 {
			return nil, fmt.Errorf("window entry of %d fields, want 10", len(a))
		}
		var e winEntry
		var err error
		if e.ID, err = hexField(a[0]); err != nil {
			return nil, err
		}
		if e.OrigReq, err = hexField(a[1]); err != nil {
			return nil, err
		}
		if e.Req, err = hexField(a[2]); err != nil {
			return nil, err
		}
		side, ok := a[3].(bool)
		if !ok {
			return nil, fmt.Errorf("window sidechain: not a boolean")
		}
		e.Side = side
		if e.Q, e.Model, e.T, err = qModelTokens(a[4:], intern); err != nil {
			return nil, err
		}
		r.acc.Win = append(r.acc.Win, e)
	}
	for _, a := range w.Buckets {
		var b Bucket
		var err error
		if b.Q, b.Model, b.T, err = qModelTokens(a, intern); err != nil {
			return nil, err
		}
		r.acc.Buckets = append(r.acc.Buckets, b)
	}
	return r, nil
}

func hexField(v any) (uint64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("id: not a string")
	}
	return strconv.ParseUint(s, 16, 64)
}

func qModelTokens(a []any, intern func(string) string) (q int32, model string, t Tokens, err error) {
	if len(a) != 6 {
		return 0, "", t, fmt.Errorf("bucket of %d fields, want 6", len(a))
	}
	var n [5]int64
	for i, j := range []int{0, 2, 3, 4, 5} {
		num, ok := a[j].(json.Number)
		if !ok {
			return 0, "", t, fmt.Errorf("bucket field %d: not a number", j)
		}
		if n[i], err = num.Int64(); err != nil {
			return 0, "", t, fmt.Errorf("bucket field %d: %w", j, err)
		}
	}
	m, ok := a[1].(string)
	if !ok {
		return 0, "", t, fmt.Errorf("bucket model: not a string")
	}
	return int32(n[0]), intern(m), Tokens{n[1], n[2], n[3], n[4]}, nil
}
