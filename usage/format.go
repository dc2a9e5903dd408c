package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// LedgerVersion is the version of the ledger's files.
const LedgerVersion = 1

// SummaryName is the file the CLI reads: the usage of every unit added up per
// quarter hour, source, project and model, and per session (docs/usage.md).
const SummaryName = "summary.tsv"

// ---- unit shards ----

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

func toWire(r *unitRec) wireUnit {
	w := wireUnit{Source: r.Source, Unit: r.Unit, Layout: r.Layout, Path: r.Path, Dev: r.Dev, Ino: r.Ino, Offset: r.Off,
		Fp: r.Fp, Session: r.Session, Type: r.Type, Project: r.Project, Retired: r.Retired}
	if r.St != (ParseState{}) {
		st := r.St
		w.State = &st
	}
	if r.Seen != nil {
		s := tokArr(*r.Seen)
		w.Seen = &s
	}
	for _, e := range r.acc.Win {
		w.Window = append(w.Window, []any{strconv.FormatUint(e.ID, 16), strconv.FormatUint(e.OrigReq, 16), strconv.FormatUint(e.Req, 16),
			e.Side, e.Q, e.Model, e.T.Input, e.T.Output, e.T.CacheWrite, e.T.CacheRead})
	}
	for _, b := range r.acc.Buckets {
		w.Buckets = append(w.Buckets, []any{b.Q, b.Model, b.T.Input, b.T.Output, b.T.CacheWrite, b.T.CacheRead})
	}
	return w
}

func encodeShard(live, retired []*unitRec) ([]byte, error) {
	sort.Slice(live, func(i, j int) bool { return less(live[i], live[j]) })
	sort.SliceStable(retired, func(i, j int) bool { return less(retired[i], retired[j]) })
	s := wireShard{Version: LedgerVersion, Units: []wireUnit{}, Retired: []wireUnit{}}
	for _, r := range live {
		s.Units = append(s.Units, toWire(r))
	}
	for _, r := range retired {
		s.Retired = append(s.Retired, toWire(r))
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
	if a.Source != b.Source {
		return a.Source < b.Source
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
	if s.Version != LedgerVersion {
		return nil, nil, fmt.Errorf("version %d, want %d", s.Version, LedgerVersion)
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
	r := &unitRec{Source: w.Source, Unit: w.Unit, Layout: w.Layout, Path: w.Path, Dev: w.Dev, Ino: w.Ino, Off: w.Offset, Fp: w.Fp,
		Session: w.Session, Type: w.Type, Project: w.Project, Retired: w.Retired}
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

// ---- summary ----

// Row is the usage of one quarter hour, source, project and model.
type Row struct {
	Q       int32
	Source  string
	Project string
	Model   string
	T       Tokens
}

// SessionRow is the usage of one session with one model.
type SessionRow struct {
	Source, Project, Session, Type, Model string
	First, Last                           int32 // quarter hours of its first and last usage
	T                                     Tokens
}

// Summary is what the summary file holds.
type Summary struct {
	Sessions []SessionRow
	Rows     []Row // sorted by Q
}

type summaryHeader struct {
	Version   int      `json:"version"`
	Generator string   `json:"generator"`
	Strings   []string `json:"strings"`
}

// renderSummary adds up every unit (live and retired). The text depends only on
// the units, so a check can compare it byte for byte.
func (l *Ledger) renderSummary() ([]byte, error) {
	type rowKey struct {
		q                int32
		src, proj, model string
	}
	type sessKey struct{ src, proj, sid, typ, model string }
	rows := map[rowKey]Tokens{}
	sess := map[sessKey]*SessionRow{}
	add := func(r *unitRec) {
		sid := r.Session
		if sid == "" {
			sid = r.Unit
		}
		for _, b := range r.acc.Buckets {
			k := rowKey{b.Q, r.Source, r.Project, b.Model}
			t := rows[k]
			t.Add(b.T)
			rows[k] = t
			sk := sessKey{r.Source, r.Project, sid, r.Type, b.Model}
			s := sess[sk]
			if s == nil {
				s = &SessionRow{Source: r.Source, Project: r.Project, Session: sid, Type: r.Type, Model: b.Model, First: b.Q, Last: b.Q}
				sess[sk] = s
			}
			s.First, s.Last = min(s.First, b.Q), max(s.Last, b.Q)
			s.T.Add(b.T)
		}
	}
	for _, r := range l.units {
		add(r)
	}
	for _, rs := range l.retired {
		for _, r := range rs {
			add(r)
		}
	}
	strs := map[string]int{}
	for k := range rows {
		strs[k.src], strs[k.proj], strs[k.model] = 0, 0, 0
	}
	for k := range sess {
		strs[k.src], strs[k.proj], strs[k.sid], strs[k.typ], strs[k.model] = 0, 0, 0, 0, 0
	}
	table := make([]string, 0, len(strs))
	for s := range strs {
		table = append(table, s)
	}
	sort.Strings(table)
	for i, s := range table {
		strs[s] = i
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(summaryHeader{Version: LedgerVersion, Generator: "sessionwatch", Strings: table}); err != nil {
		return nil, fmt.Errorf("encode usage summary: %w", err)
	}
	sks := make([]sessKey, 0, len(sess))
	for k := range sess {
		sks = append(sks, k)
	}
	sort.Slice(sks, func(i, j int) bool {
		a, c := sks[i], sks[j]
		if a.src != c.src {
			return a.src < c.src
		}
		if a.sid != c.sid {
			return a.sid < c.sid
		}
		if a.proj != c.proj {
			return a.proj < c.proj
		}
		if a.typ != c.typ {
			return a.typ < c.typ
		}
		return a.model < c.model
	})
	buf := make([]byte, 0, 128)
	for _, k := range sks {
		s := sess[k]
		buf = append(buf[:0], 'S')
		for _, v := range []int64{int64(strs[k.src]), int64(strs[k.proj]), int64(strs[k.sid]), int64(strs[k.typ]), int64(strs[k.model]),
			int64(s.First), int64(s.Last), s.T.Input, s.T.Output, s.T.CacheWrite, s.T.CacheRead} {
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, v, 10)
		}
		buf = append(buf, '\n')
		b.Write(buf)
	}
	rks := make([]rowKey, 0, len(rows))
	for k := range rows {
		rks = append(rks, k)
	}
	sort.Slice(rks, func(i, j int) bool {
		a, c := rks[i], rks[j]
		if a.q != c.q {
			return a.q < c.q
		}
		if a.src != c.src {
			return a.src < c.src
		}
		if a.proj != c.proj {
			return a.proj < c.proj
		}
		return a.model < c.model
	})
	for _, k := range rks {
		t := rows[k]
		if t.IsZero() {
			continue
		}
		buf = append(buf[:0], 'B')
		for _, v := range []int64{int64(k.q), int64(strs[k.src]), int64(strs[k.proj]), int64(strs[k.model]), t.Input, t.Output, t.CacheWrite, t.CacheRead} {
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, v, 10)
		}
		buf = append(buf, '\n')
		b.Write(buf)
	}
	return b.Bytes(), nil
}

// ParseSummary reads a summary file. Rows before quarter from are skipped (0: all).
func ParseSummary(data []byte, from int32) (*Summary, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, fmt.Errorf("usage summary: no header line")
	}
	var h summaryHeader
	if err := json.Unmarshal(data[:nl], &h); err != nil {
		return nil, fmt.Errorf("usage summary: header: %w", err)
	}
	if h.Version != LedgerVersion {
		return nil, fmt.Errorf("usage summary: version %d, want %d", h.Version, LedgerVersion)
	}
	s := &Summary{}
	str := func(i int64) (string, error) {
		if i < 0 || i >= int64(len(h.Strings)) {
			return "", fmt.Errorf("string %d out of range", i)
		}
		return h.Strings[i], nil
	}
	var nums [11]int64
	line := 1
	for rest := data[nl+1:]; len(rest) > 0; line++ {
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			return nil, fmt.Errorf("usage summary: line %d: not terminated", line+1)
		}
		row := rest[:end]
		rest = rest[end+1:]
		n, err := parseInts(row[1:], nums[:])
		if err != nil {
			return nil, fmt.Errorf("usage summary: line %d: %w", line+1, err)
		}
		switch {
		case row[0] == 'S' && n == 11:
			var r SessionRow
			var errs [5]error
			r.Source, errs[0] = str(nums[0])
			r.Project, errs[1] = str(nums[1])
			r.Session, errs[2] = str(nums[2])
			r.Type, errs[3] = str(nums[3])
			r.Model, errs[4] = str(nums[4])
			for _, e := range errs {
				if e != nil {
					return nil, fmt.Errorf("usage summary: line %d: %w", line+1, e)
				}
			}
			r.First, r.Last = int32(nums[5]), int32(nums[6])
			r.T = Tokens{nums[7], nums[8], nums[9], nums[10]}
			s.Sessions = append(s.Sessions, r)
		case row[0] == 'B' && n == 8:
			if int32(nums[0]) < from {
				continue
			}
			var r Row
			var e1, e2, e3 error
			r.Q = int32(nums[0])
			r.Source, e1 = str(nums[1])
			r.Project, e2 = str(nums[2])
			r.Model, e3 = str(nums[3])
			if e1 != nil || e2 != nil || e3 != nil {
				return nil, fmt.Errorf("usage summary: line %d: bad string index", line+1)
			}
			r.T = Tokens{nums[4], nums[5], nums[6], nums[7]}
			s.Rows = append(s.Rows, r)
		default:
			return nil, fmt.Errorf("usage summary: line %d: unknown row", line+1)
		}
	}
	return s, nil
}

// parseInts reads tab-led decimal integers ("\t1\t-2…") into out; it returns how many.
func parseInts(b []byte, out []int64) (int, error) {
	n := 0
	for i := 0; i < len(b); {
		if b[i] != '\t' || n == len(out) {
			return n, fmt.Errorf("malformed row")
		}
		i++
		neg := false
		if i < len(b) && b[i] == '-' {
			neg = true
			i++
		}
		start := i
		var v int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			i++
		}
		if i == start {
			return n, fmt.Errorf("malformed number")
		}
		if neg {
			v = -v
		}
		out[n] = v
		n++
	}
	return n, nil
}

// ReadSummary reads the ledger's summary in stateDir (an empty one if there is
// none yet). Rows before quarter from are skipped.
func ReadSummary(stateDir string, from int32) (*Summary, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, DirName, SummaryName))
	if errors.Is(err, fs.ErrNotExist) {
		return &Summary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read usage summary: %w", err)
	}
	return ParseSummary(data, from)
}
