package usage

import (
	"cmp"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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
	Rows     []Row    // sorted by Q
	Days     []DayRow // sorted by S (read for Want.Days, or with Want{} the whole summary)
	// FromDays: Rows were not read, as Days hold the days of Want.Days.
	FromDays bool
}

// Want says which part of the summary a reader needs; the rest is not parsed.
type Want struct {
	From       int32  // B rows from this quarter hour on (0: every row)
	NoRows     bool   // no B rows
	NoSessions bool   // no S rows
	Session    string // only this session's S rows ("": every session)
	// Days: the D rows instead of the B rows when they are days of this zone
	// (Summary.FromDays); the B rows otherwise.
	Days *time.Location
	// AllDays: the D rows as well as the B rows, of whatever zone (a writer
	// checking the rollup against its own totals).
	AllDays bool
}

// SummaryVersion is the version of the summary file (the units file's is
// LedgerVersion). Version 3 added the D section.
const SummaryVersion = 3

type summaryHeader struct {
	Version   int    `json:"version"`
	Generator string `json:"generator"`
	Days      int64  `json:"days"`     // bytes of the D section after the header line
	Sessions  int64  `json:"sessions"` // bytes of the S section after it
	Rows      int64  `json:"rows"`     // bytes of the B section after that
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
		// In the order of the field as written: the statusline's searches
		// compare escaped fields.
		return escapedLess(k.sid, o.sid)
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

// compareSessions is the three-way comparison of sessKey.less (for
// slices.SortFunc, whose swaps of rows of 120 bytes cost a fraction of
// sort.Slice's reflected ones).
func compareSessions(a, b *SessionRow) int {
	if a.Session != b.Session {
		if escapedLess(a.Session, b.Session) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	if c := strings.Compare(a.Project, b.Project); c != 0 {
		return c
	}
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Model, b.Model)
}

// escapedLess orders a and b as appendField writes them, without writing them:
// the escaped strings share the escaped common prefix, and then differ where a
// and b first do (it sorts the sessions of every summary write: scanning both
// for escapes at each comparison was most of that sort's cost).
func escapedLess(a, b string) bool {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) < len(b) // a prefix escapes to a prefix
	}
	return escapedByte(a[i]) < escapedByte(b[i])
}

// escapedByte orders a byte as appendField writes it: its first byte (a
// backslash for the escaped ones), then the letter after the backslash.
func escapedByte(c byte) uint16 {
	switch c {
	case '\\':
		return '\\'<<8 | '\\'
	case '\t':
		return '\\'<<8 | 't'
	case '\n':
		return '\\'<<8 | 'n'
	case '\r':
		return '\\'<<8 | 'r'
	}
	return uint16(c) << 8
}

// sortedRows is the keys of m in the summary's order (rowKey.less).
func sortedRows[V any](l *Ledger, m map[rowID]V) []rowID {
	ids := make([]rowID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	return l.sortRows(ids)
}

// sortRows sorts ids in the summary's order (rowKey.less).
func (l *Ledger) sortRows(ids []rowID) []rowID {
	// Each id once: any sort leaves them in the one order.
	slices.SortFunc(ids, func(a, b rowID) int {
		if a.q != b.q {
			return cmp.Compare(a.q, b.q)
		}
		x, y := &l.cols[a.c], &l.cols[b.c]
		if c := strings.Compare(x.src, y.src); c != 0 {
			return c
		}
		if c := strings.Compare(x.proj, y.proj); c != 0 {
			return c
		}
		return strings.Compare(x.model, y.model)
	})
	return ids
}

// groupRows adds up the units filed under session g, one row per model.
func (l *Ledger) groupRows(g groupKey) []SessionRow {
	var out []SessionRow
	add := func(r *unitRec) {
		body, err := l.peekBody(r) // read only: an idle unit's body stays on disk
		if err != nil && l.err == nil {
			l.err = err
		}
		if body == nil {
			return
		}
		for _, b := range body.acc.Buckets {
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
	for r := l.members.get("", g.sid); r != nil; r = r.next {
		if r.group() == g { // not the same id in another source, project or type
			add(r)
		}
	}
	l.coldMembers(g, add) // and those left in the index
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
	l.dirtyGroups, l.before = make(map[groupKey]bool, l.nextSize(len(l.dirtyGroups))), make(map[groupKey][]SessionRow, l.nextSize(len(l.before)))
	return changed
}

// allSessionRows adds up the S rows of every session from its units' accounts
// (idle ones read from disk: for a summary that cannot be trusted, at Open).
func (l *Ledger) allSessionRows() []SessionRow {
	if c := l.cold; c != nil {
		// Every record read from the index, then let back to it (not kept
		// in memory until the units file's next compaction).
		defer l.recool(c.base, c.crc)
	}
	l.warmAll()
	var ss []SessionRow
	for head := range l.members.all() {
		for r := head; r != nil; r = r.next {
			g := r.group()
			seen := false
			for x := head; x != r && !seen; x = x.next {
				seen = x.group() == g
			}
			if !seen {
				ss = append(ss, l.groupRows(g)...) // once per session
			}
		}
	}
	return ss
}

// ---- writing ----

// appendField appends s as a TSV field: backslash, tab, newline and carriage
// return are escaped.
func appendField(b []byte, s string) []byte {
	b = append(b, '\t')
	i := 0
	for i < len(s) && !mustEscape(s[i]) { // a third of strings.ContainsAny's time
		i++
	}
	if i == len(s) {
		return append(b, s...)
	}
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
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

// mustEscape reports whether appendField escapes c.
func mustEscape(c byte) bool {
	return c == '\\' || c <= '\r' && (c == '\t' || c == '\n' || c == '\r')
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

// renderWith is the summary's base with the S rows given: every D row sorted by
// day, every S row sorted by session, then every B row sorted by quarter hour.
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
	rks := l.sortRows(l.rows.ids())
	var bb []byte
	for _, id := range rks {
		bb = appendRow(bb, l.rowKeyOf(id), l.rows.get(id))
	}
	db := l.renderDays(nil)
	h, _ := json.Marshal(summaryHeader{Version: SummaryVersion, Generator: "sessionwatch", Days: int64(len(db)), Sessions: int64(len(sb)), Rows: int64(len(bb))})
	out := make([]byte, 0, len(h)+1+len(db)+len(sb)+len(bb))
	out = append(append(out, h...), '\n')
	return append(append(append(out, db...), sb...), bb...)
}

// writeSummary appends the S rows of the sessions that changed and the B rows
// that changed (their new values) as one batch, or rewrites the summary whole
// when it is due.
func (l *Ledger) writeSummary() error {
	f := &l.summaryFile
	if f.compact || f.base == 0 {
		// No summary to go on from: add it up from the units.
		l.settleGroups(false)
		err := f.rewrite(l.renderSummary())
		if err != nil && !errors.Is(err, errNotDurable) {
			return err
		}
		// In place, durable or not: the rows are in the file (a rewrite that is
		// not durable is done again at the next Sync, which fails until then).
		l.dirtyRows, l.dirtyDays = map[rowID]bool{}, map[rowID]bool{}
		return err
	}
	return l.appendSummaryBatch(l.summaryBatch())
}

// summaryBatch is the summary's batch of what changed (nil: nothing did), and
// forgets that it changed. It reads the records and the totals and writes
// only the sets of what changed (Ledger.syncSideBySide runs it beside the
// units file's append).
func (l *Ledger) summaryBatch() []byte {
	changed := l.settleGroups(true)
	if len(changed) == 0 && len(l.dirtyRows) == 0 && len(l.dirtyDays) == 0 {
		return nil
	}
	return append(l.appendChanged(nil, changed), 'C', '\n')
}

// appendSummaryBatch appends b (summaryBatch's), compacting the summary when
// that is due.
func (l *Ledger) appendSummaryBatch(b []byte) error {
	if b == nil {
		return nil
	}
	f := &l.summaryFile
	// Not fsynced: the summary is derived from the units file (fsynced first), and
	// a summary that lost its last batches in a power cut is not what the units add
	// up to, which Open checks and repairs by rewriting it. One fsync per flush.
	if _, err := f.appendBatch(b, false); err != nil {
		return err
	}
	if l.compactionDue(f, summaryRatio, summaryMin) {
		return l.compactSummary()
	}
	return nil
}

// appendChanged appends a batch's rows: the S rows given, then the B and D rows
// that changed, and forgets that they changed.
func (l *Ledger) appendChanged(b []byte, changed []SessionRow) []byte {
	// In the order of the base, so the file (and its stamp, stamp.go) depends
	// only on what changed, not on the order of a map.
	// Each key once (a row per session and model): any sort leaves them in
	// the one order.
	slices.SortFunc(changed, func(a, b SessionRow) int { return compareSessions(&a, &b) })
	for i := range changed {
		b = appendSession(b, &changed[i])
	}
	for _, id := range sortedRows(l, l.dirtyRows) {
		b = appendRow(b, l.rowKeyOf(id), l.rows.get(id))
	}
	for _, id := range sortedRows(l, l.dirtyDays) {
		r := l.dayRowOf(id, l.days[id])
		b = appendDay(b, &r)
	}
	l.dirtyRows, l.dirtyDays = make(map[rowID]bool, l.nextSize(len(l.dirtyRows))), make(map[rowID]bool, l.nextSize(len(l.dirtyDays)))
	return b
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
	l.summaryFile.crc = crc32.Checksum(data, castagnoli())
	return l.sameAsSummary(s, false)
}

// sameAsSummary compares the totals with a summary read whole: its D rows must
// be the days of the ledger's zone (a writer rewrites a summary of another
// zone's), or with anyZone set the days of some zone (daysAddUp).
func (l *Ledger) sameAsSummary(s *Summary, anyZone bool) bool {
	if len(s.Rows) != l.rows.len() {
		return false
	}
	for _, r := range s.Rows {
		id, ok := l.findRow(rowKey{r.Q, r.Source, r.Project, r.Model})
		if !ok || l.rows.get(id) != r.T {
			return false
		}
	}
	// The D rows: what the B rows add up to per day.
	if anyZone && !daysAddUp(s) || !anyZone && !l.sameDays(s) {
		return false
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
