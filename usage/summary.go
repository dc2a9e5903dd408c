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
	"strings"
)

// SummaryName is the file the CLI reads: the usage of every unit added up per
// quarter hour, source, project and model, and per session (docs/usage.md).
const SummaryName = "summary.tsv"

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

// Summary is what the summary file holds (or the part of it asked for).
type Summary struct {
	Sessions []SessionRow
	Rows     []Row // sorted by Q
}

// Want says which part of the summary a reader needs; the rest is not parsed.
type Want struct {
	From       int32  // B rows from this quarter hour on (0: every row)
	NoRows     bool   // no B rows
	NoSessions bool   // no S rows
	Session    string // only this session's S rows ("": every session)
}

type summaryHeader struct {
	Version   int    `json:"version"`
	Generator string `json:"generator"`
	Sessions  int64  `json:"sessions"` // bytes of the S section after the header line
	Rows      int64  `json:"rows"`     // bytes of the B section after it
}

func (k rowKey) less(o rowKey) bool {
	if k.q != o.q {
		return k.q < o.q
	}
	if k.src != o.src {
		return k.src < o.src
	}
	if k.proj != o.proj {
		return k.proj < o.proj
	}
	return k.model < o.model
}

type sessKey struct{ sid, src, proj, typ, model string }

func sessKeyOf(r *SessionRow) sessKey {
	return sessKey{r.Session, r.Source, r.Project, r.Type, r.Model}
}

func (k sessKey) less(o sessKey) bool {
	if k.sid != o.sid {
		return k.sid < o.sid
	}
	if k.src != o.src {
		return k.src < o.src
	}
	if k.proj != o.proj {
		return k.proj < o.proj
	}
	if k.typ != o.typ {
		return k.typ < o.typ
	}
	return k.model < o.model
}

// groupRows adds up the units filed under session g, one row per model.
func (l *Ledger) groupRows(g groupKey) []SessionRow {
	var out []SessionRow
	for _, r := range l.members[g] {
		acc, err := l.peekAcc(r) // read only: an idle unit's account stays on disk
		if err != nil && l.err == nil {
			l.err = err
		}
		for _, b := range acc.Buckets {
			i := sort.Search(len(out), func(i int) bool { return out[i].Model >= b.Model })
			if i == len(out) || out[i].Model != b.Model {
				out = append(out, SessionRow{})
				copy(out[i+1:], out[i:])
				out[i] = SessionRow{Source: g.src, Project: g.proj, Session: g.sid, Type: g.typ, Model: b.Model, First: b.Q, Last: b.Q}
			}
			s := &out[i]
			s.First, s.Last = min(s.First, b.Q), max(s.Last, b.Q)
			s.T.Add(b.T)
		}
	}
	// A model whose buckets add up to nothing (a count taken back) has no row.
	return slicesDeleteZero(out)
}

func slicesDeleteZero(rs []SessionRow) []SessionRow {
	out := rs[:0]
	for _, r := range rs {
		if !r.T.IsZero() {
			out = append(out, r)
		}
	}
	return out
}

// settleGroups ends a write of the sessions that changed: with emit set, it
// returns their S rows that differ from what the summary holds (a row of zeros
// for a model a session no longer has).
func (l *Ledger) settleGroups(emit bool) []SessionRow {
	var changed []SessionRow
	for g := range l.dirtyGroups {
		if !emit {
			break
		}
		now, before := l.groupRows(g), l.before[g]
		for _, r := range now {
			i := sort.Search(len(before), func(i int) bool { return before[i].Model >= r.Model })
			if i == len(before) || before[i] != r {
				changed = append(changed, r)
			}
		}
		for _, r := range before {
			i := sort.Search(len(now), func(i int) bool { return now[i].Model >= r.Model })
			if i == len(now) || now[i].Model != r.Model {
				r.T, r.First, r.Last = Tokens{}, 0, 0
				changed = append(changed, r)
			}
		}
	}
	l.dirtyGroups, l.before = map[groupKey]bool{}, map[groupKey][]SessionRow{}
	return changed
}

// allSessionRows adds up the S rows of every session from its units' accounts
// (idle ones read from disk: for a summary that cannot be trusted, at Open).
func (l *Ledger) allSessionRows() []SessionRow {
	var ss []SessionRow
	for g := range l.members {
		ss = append(ss, l.groupRows(g)...)
	}
	return ss
}

// ---- writing ----

// appendField appends s as a TSV field: backslash, tab, newline and carriage
// return are escaped.
func appendField(b []byte, s string) []byte {
	b = append(b, '\t')
	if !strings.ContainsAny(s, "\\\t\n\r") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendInts(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		b = append(b, '\t')
		b = strconv.AppendInt(b, v, 10)
	}
	return b
}

func appendSession(b []byte, r *SessionRow) []byte {
	b = append(b, 'S')
	for _, s := range []string{r.Session, r.Source, r.Project, r.Type, r.Model} {
		b = appendField(b, s)
	}
	b = appendInts(b, int64(r.First), int64(r.Last), r.T.Input, r.T.Output, r.T.CacheWrite, r.T.CacheRead)
	return append(b, '\n')
}

func appendRow(b []byte, k rowKey, t Tokens) []byte {
	b = append(b, 'B')
	b = appendInts(b, int64(k.q))
	b = appendField(b, k.src)
	b = appendField(b, k.proj)
	b = appendField(b, k.model)
	b = appendInts(b, t.Input, t.Output, t.CacheWrite, t.CacheRead)
	return append(b, '\n')
}

// renderSummary is the summary's base, added up from the units' accounts.
func (l *Ledger) renderSummary() []byte { return l.renderWith(l.allSessionRows()) }

// renderWith is the summary's base with the S rows given: every S row sorted by
// session, then every B row sorted by quarter hour.
func (l *Ledger) renderWith(rows []SessionRow) []byte {
	ss := make([]*SessionRow, len(rows))
	for i := range rows {
		ss[i] = &rows[i]
	}
	sort.Slice(ss, func(i, j int) bool { return sessKeyOf(ss[i]).less(sessKeyOf(ss[j])) })
	var sb []byte
	for _, r := range ss {
		sb = appendSession(sb, r)
	}
	rks := make([]rowKey, 0, len(l.rows))
	for k := range l.rows {
		rks = append(rks, k)
	}
	sort.Slice(rks, func(i, j int) bool { return rks[i].less(rks[j]) })
	var bb []byte
	for _, k := range rks {
		bb = appendRow(bb, k, l.rows[k])
	}
	h, _ := json.Marshal(summaryHeader{Version: LedgerVersion, Generator: "sessionwatch", Sessions: int64(len(sb)), Rows: int64(len(bb))})
	out := make([]byte, 0, len(h)+1+len(sb)+len(bb))
	out = append(append(out, h...), '\n')
	return append(append(out, sb...), bb...)
}

// writeSummary appends the S rows of the sessions that changed and the B rows
// that changed (their new values) as one batch, or rewrites the summary whole
// when it is due.
func (l *Ledger) writeSummary() error {
	f := &l.summaryFile
	if f.compact || f.base == 0 {
		// No summary to go on from: add it up from the units.
		l.settleGroups(false)
		if err := f.rewrite(l.renderSummary()); err != nil {
			return err
		}
		l.dirtyRows = map[rowKey]bool{}
		return nil
	}
	changed := l.settleGroups(true)
	if len(changed) == 0 && len(l.dirtyRows) == 0 {
		return nil
	}
	var b []byte
	for i := range changed {
		b = appendSession(b, &changed[i])
	}
	rks := make([]rowKey, 0, len(l.dirtyRows))
	for k := range l.dirtyRows {
		rks = append(rks, k)
	}
	sort.Slice(rks, func(i, j int) bool { return rks[i].less(rks[j]) })
	for _, k := range rks {
		b = appendRow(b, k, l.rows[k])
	}
	b = append(b, 'C', '\n')
	// Not fsynced: the summary is derived from the units file (fsynced first), and
	// a summary that lost its last batches in a power cut is not what the units add
	// up to, which Open checks and repairs by rewriting it. One fsync per flush.
	if _, err := f.appendBatch(b, false); err != nil {
		return err
	}
	l.dirtyRows = map[rowKey]bool{}
	if f.due(summaryRatio, summaryMin) {
		return l.compactSummary()
	}
	return nil
}

// compactSummary folds the summary's batches into a new base. Its S rows come
// from the summary itself (it holds them current), not from the accounts, which
// idle units keep on disk.
func (l *Ledger) compactSummary() error {
	f := &l.summaryFile
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("read usage summary: %w", err)
	}
	s, p, err := parseSummary(data, Want{NoRows: true})
	if err != nil || !p.clean {
		f.compact = true
		return l.writeSummary()
	}
	return f.rewrite(l.renderWith(s.Sessions))
}

// summaryMatches reports whether the summary file holds what the totals are, with
// no torn batch after its last commit line.
func (l *Ledger) summaryMatches() bool {
	data, err := os.ReadFile(l.summaryFile.path)
	if err != nil {
		return false
	}
	s, p, err := parseSummary(data, Want{})
	if err != nil || !p.clean {
		return false
	}
	l.summaryFile.base, l.summaryFile.tail = p.base, int64(len(data))-p.base
	return l.sameAsSummary(s)
}

// sameAsSummary compares the totals with a summary read whole.
func (l *Ledger) sameAsSummary(s *Summary) bool {
	if len(s.Rows) != len(l.rows) {
		return false
	}
	for _, r := range s.Rows {
		if l.rows[rowKey{r.Q, r.Source, r.Project, r.Model}] != r.T {
			return false
		}
	}
	all := l.allSessionRows()
	if len(all) != len(s.Sessions) {
		return false
	}
	want := make(map[sessKey]SessionRow, len(all))
	for _, r := range all {
		want[sessKeyOf(&r)] = r
	}
	for _, r := range s.Sessions {
		if want[sessKeyOf(&r)] != r {
			return false
		}
	}
	return true
}

// ---- reading ----

// ReadSummary reads what w asks of the ledger's summary in stateDir (an empty
// summary if there is none yet).
func ReadSummary(stateDir string, w Want) (*Summary, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, DirName, SummaryName))
	if errors.Is(err, fs.ErrNotExist) {
		return &Summary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read usage summary: %w", err)
	}
	return ParseSummary(data, w)
}

// ParseSummary reads what w asks of a summary file.
func ParseSummary(data []byte, w Want) (*Summary, error) {
	s, _, err := parseSummary(data, w)
	return s, err
}

type parsed struct {
	base  int64 // bytes of the base
	clean bool  // nothing after the last commit line
}

type summaryReader struct {
	strs map[string]string
	f    [12][]byte
}

func (p *summaryReader) str(b []byte) string {
	if bytes.IndexByte(b, '\\') >= 0 {
		var u []byte
		for i := 0; i < len(b); i++ {
			if b[i] == '\\' && i+1 < len(b) {
				i++
				switch b[i] {
				case 't':
					u = append(u, '\t')
				case 'n':
					u = append(u, '\n')
				case 'r':
					u = append(u, '\r')
				default:
					u = append(u, b[i])
				}
				continue
			}
			u = append(u, b[i])
		}
		b = u
	}
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	p.strs[s] = s
	return s
}

// split cuts a row (after its tag) into n tab-led fields.
func (p *summaryReader) split(row []byte, n int) bool {
	for i := 0; i < n; i++ {
		if len(row) == 0 || row[0] != '\t' {
			return false
		}
		row = row[1:]
		end := bytes.IndexByte(row, '\t')
		if i == n-1 {
			end = len(row)
		} else if end < 0 {
			return false
		}
		p.f[i], row = row[:end], row[end:]
	}
	return len(row) == 0
}

func num(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *summaryReader) nums(from int, out []int64) bool {
	for i := range out {
		v, ok := num(p.f[from+i])
		if !ok {
			return false
		}
		out[i] = v
	}
	return true
}

func (p *summaryReader) session(row []byte) (SessionRow, bool) {
	var r SessionRow
	var n [6]int64
	if len(row) == 0 || row[0] != 'S' || !p.split(row[1:], 11) || !p.nums(5, n[:]) {
		return r, false
	}
	r.Session, r.Source, r.Project, r.Type, r.Model = p.str(p.f[0]), p.str(p.f[1]), p.str(p.f[2]), p.str(p.f[3]), p.str(p.f[4])
	r.First, r.Last, r.T = int32(n[0]), int32(n[1]), Tokens{n[2], n[3], n[4], n[5]}
	return r, true
}

func (p *summaryReader) row(line []byte) (Row, bool) {
	var r Row
	var q [1]int64
	var n [4]int64
	if len(line) == 0 || line[0] != 'B' || !p.split(line[1:], 8) || !p.nums(0, q[:]) || !p.nums(4, n[:]) {
		return r, false
	}
	r.Q, r.Source, r.Project, r.Model = int32(q[0]), p.str(p.f[1]), p.str(p.f[2]), p.str(p.f[3])
	r.T = Tokens{n[0], n[1], n[2], n[3]}
	return r, true
}

// rowQ is the quarter hour of a B row, parsed no further.
func rowQ(line []byte) (int32, bool) {
	if len(line) < 3 || line[0] != 'B' || line[1] != '\t' {
		return 0, false
	}
	end := bytes.IndexByte(line[2:], '\t')
	if end < 0 {
		return 0, false
	}
	q, ok := num(line[2 : 2+end])
	return int32(q), ok
}

// sessPrefix is how the S rows of a session start.
func sessPrefix(sid string) []byte { return append(appendField([]byte("S"), sid), '\t') }

// rowBefore reports whether a well-formed B row is of a quarter hour before from.
func rowBefore(line []byte, from int32) bool {
	q, ok := rowQ(line)
	return ok && q < from
}

// lineAt is the line that starts at or after offset i of sec (sec ends with '\n').
func lineStart(sec []byte, i int) int {
	if i == 0 {
		return 0
	}
	j := bytes.IndexByte(sec[i-1:], '\n')
	if j < 0 {
		return len(sec)
	}
	return i + j
}

func parseSummary(data []byte, w Want) (*Summary, parsed, error) {
	var p parsed
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, p, fmt.Errorf("usage summary: no header line")
	}
	var h summaryHeader
	if err := json.Unmarshal(data[:nl], &h); err != nil {
		return nil, p, fmt.Errorf("usage summary: line 1: %w", err)
	}
	if h.Version != LedgerVersion {
		return nil, p, fmt.Errorf("usage summary: version %d, want %d (run 'sessionwatch reindex')", h.Version, LedgerVersion)
	}
	start := int64(nl + 1)
	if h.Sessions < 0 || h.Rows < 0 || start+h.Sessions+h.Rows > int64(len(data)) {
		return nil, p, fmt.Errorf("usage summary: line 1: sections beyond the end of the file")
	}
	ssec := data[start : start+h.Sessions]
	bsec := data[start+h.Sessions : start+h.Sessions+h.Rows]
	tail := data[start+h.Sessions+h.Rows:]
	p.base = start + h.Sessions + h.Rows
	rd := &summaryReader{strs: map[string]string{}}
	lineNo := func(rest []byte) int { return 1 + bytes.Count(data[:len(data)-len(rest)], []byte{'\n'}) }

	// The batches appended after the base replace rows of the base by key.
	tailS := map[sessKey]SessionRow{}
	tailB := map[rowKey]Tokens{}
	var pendS []SessionRow
	var pendB []Row
	p.clean = true
	for rest := tail; len(rest) > 0; {
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			p.clean = false // a torn batch: left out
			break
		}
		line := rest[:end]
		switch {
		case len(line) == 1 && line[0] == 'C':
			for _, r := range pendS {
				tailS[sessKeyOf(&r)] = r
			}
			for _, r := range pendB {
				tailB[rowKey{r.Q, r.Source, r.Project, r.Model}] = r.T
			}
			pendS, pendB = pendS[:0], pendB[:0]
		case len(line) > 0 && line[0] == 'S' && (w.NoSessions || w.Session != "" && !bytes.HasPrefix(line, sessPrefix(w.Session))):
			// Not asked for: skipped unparsed.
		case len(line) > 0 && line[0] == 'B' && (w.NoRows || w.From != 0 && rowBefore(line, w.From)):
		case len(line) > 0 && line[0] == 'S':
			r, ok := rd.session(line)
			if !ok {
				return nil, p, fmt.Errorf("usage summary: line %d: malformed session row", lineNo(rest))
			}
			pendS = append(pendS, r)
		case len(line) > 0 && line[0] == 'B':
			r, ok := rd.row(line)
			if !ok {
				return nil, p, fmt.Errorf("usage summary: line %d: malformed row", lineNo(rest))
			}
			pendB = append(pendB, r)
		default:
			return nil, p, fmt.Errorf("usage summary: line %d: unknown row", lineNo(rest))
		}
		rest = rest[end+1:]
	}
	if len(pendS)+len(pendB) > 0 {
		p.clean = false
	}

	s := &Summary{}
	if !w.NoSessions {
		sec := ssec
		if w.Session != "" {
			// The S rows are sorted by session: find the first of this one.
			key := appendField(nil, w.Session)[1:]
			lo, hi := 0, len(sec)
			for hi-lo > 256 {
				mid := lineStart(sec, (lo+hi)/2)
				if mid >= hi {
					break
				}
				e := bytes.IndexByte(sec[mid:], '\n')
				f := sec[mid+2 : mid+e]
				if t := bytes.IndexByte(f, '\t'); t >= 0 {
					f = f[:t]
				}
				if bytes.Compare(f, key) < 0 {
					lo = mid + e + 1
				} else {
					hi = mid
				}
			}
			sec = sec[lo:]
		}
		for rest := sec; len(rest) > 0; {
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				return nil, p, fmt.Errorf("usage summary: line %d: not terminated", lineNo(rest))
			}
			if w.Session != "" {
				key := appendField(nil, w.Session)[1:]
				f := rest[min(2, end):end]
				if t := bytes.IndexByte(f, '\t'); t >= 0 {
					f = f[:t]
				}
				if c := bytes.Compare(f, key); c > 0 {
					break
				} else if c < 0 {
					rest = rest[end+1:]
					continue
				}
			}
			r, ok := rd.session(rest[:end])
			if !ok {
				return nil, p, fmt.Errorf("usage summary: line %d: malformed session row", lineNo(rest))
			}
			if _, replaced := tailS[sessKeyOf(&r)]; !replaced {
				s.Sessions = append(s.Sessions, r)
			}
			rest = rest[end+1:]
		}
		for _, r := range tailS {
			if !r.T.IsZero() && (w.Session == "" || r.Session == w.Session) {
				s.Sessions = append(s.Sessions, r)
			}
		}
	}
	if !w.NoRows {
		sec := bsec
		if w.From != 0 {
			// The B rows are sorted by quarter hour: start at the first from w.From.
			lo, hi := 0, len(sec)
			for hi-lo > 256 {
				mid := lineStart(sec, (lo+hi)/2)
				if mid >= hi {
					break
				}
				e := bytes.IndexByte(sec[mid:], '\n')
				q, ok := rowQ(sec[mid : mid+e])
				if !ok {
					return nil, p, fmt.Errorf("usage summary: line %d: malformed row", lineNo(sec[mid:]))
				}
				if q < w.From {
					lo = mid + e + 1
				} else {
					hi = mid
				}
			}
			sec = sec[lo:]
		}
		s.Rows = make([]Row, 0, bytes.Count(sec, []byte{'\n'})+len(tailB))
		for rest := sec; len(rest) > 0; {
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				return nil, p, fmt.Errorf("usage summary: line %d: not terminated", lineNo(rest))
			}
			r, ok := rd.row(rest[:end])
			if !ok {
				return nil, p, fmt.Errorf("usage summary: line %d: malformed row", lineNo(rest))
			}
			rest = rest[end+1:]
			if r.Q < w.From {
				continue
			}
			if _, replaced := tailB[rowKey{r.Q, r.Source, r.Project, r.Model}]; !replaced {
				s.Rows = append(s.Rows, r)
			}
		}
		// The batches' rows, sorted, merged into the base's (sorted by quarter hour).
		var extra []Row
		for k, t := range tailB {
			if !t.IsZero() && k.q >= w.From {
				extra = append(extra, Row{k.q, k.src, k.proj, k.model, t})
			}
		}
		if len(extra) > 0 {
			less := func(a, b *Row) bool {
				return rowKey{a.Q, a.Source, a.Project, a.Model}.less(rowKey{b.Q, b.Source, b.Project, b.Model})
			}
			sort.Slice(extra, func(i, j int) bool { return less(&extra[i], &extra[j]) })
			base := s.Rows
			merged := make([]Row, 0, len(base)+len(extra))
			i, j := 0, 0
			for i < len(base) || j < len(extra) {
				if j == len(extra) || i < len(base) && less(&base[i], &extra[j]) {
					merged = append(merged, base[i])
					i++
				} else {
					merged = append(merged, extra[j])
					j++
				}
			}
			s.Rows = merged
		}
		if len(s.Rows) == 0 {
			s.Rows = nil
		}
	}
	return s, p, nil
}
