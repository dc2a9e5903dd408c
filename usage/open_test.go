package usage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// openLedger is a ledger driven through the consumer calls, as the indexer drives
// it, over a store of real (empty) files: Open keeps a unit whose file is there.
type openLedger struct {
	t      *testing.T
	state  string
	store  string
	refs   []indexer.UnitRef
	offs   []int64
	rounds int
}

const openUnits = 36

func newOpenLedger(t *testing.T) *openLedger {
	o := &openLedger{t: t, state: t.TempDir(), store: t.TempDir()}
	for i := 0; i < openUnits; i++ {
		layout, unit := "claude", fmt.Sprintf("-w-p%d/%s.jsonl", i%4, sid(i))
		switch i % 6 {
		case 4:
			layout, unit = "codex", fmt.Sprintf("2026/03/01/rollout-%s.jsonl", sid(i))
		case 5:
			layout, unit = "mogzi", fmt.Sprintf("chats/%s/session.json", sid(i))
		}
		path := filepath.Join(o.store, layout, filepath.FromSlash(unit))
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		o.refs = append(o.refs, indexer.UnitRef{Source: layout, Layout: layout, Unit: unit, Path: path, Dev: 7, Ino: uint64(100 + i)})
	}
	o.offs = make([]int64, openUnits)
	l, err := Open(o.state)
	if err != nil {
		t.Fatal(err)
	}
	o.round(l)
	o.round(l)
	return o
}

// round hands every other unit (alternating) a few lines: new messages, a
// streamed copy of the unit's last message with a larger total (matched in the
// dedupe window), Codex totals that continue the last ones (the parser's state),
// a Mogzi total that grows; then it refiles, resets and removes a unit and syncs.
func (o *openLedger) round(l *Ledger) {
	o.t.Helper()
	r := o.rounds
	o.rounds++
	var sessions []indexer.SessionRef
	for i, u := range o.refs {
		if (i+r)%2 != 0 && r > 0 {
			continue
		}
		ts := func(k int) string {
			return time.Date(2026, 3, 1, 9+r, i%60, k, 0, time.UTC).Format(time.RFC3339)
		}
		var lines []string
		switch u.Layout {
		case "claude":
			if r > 0 {
				lines = append(lines, claudeLine(ts(0), fmt.Sprintf("m%d-%d", i, r-1), fmt.Sprintf("q%d-%d", i, r-1), "opus", 1, 9, 0, 100*r, ""))
			}
			lines = append(lines,
				claudeLine(ts(1), fmt.Sprintf("m%d-%d", i, r), fmt.Sprintf("q%d-%d", i, r), []string{"opus", "sonnet"}[(i+r)%2], 10+i, 2, 3, 4, ""),
				claudeLine(ts(2), fmt.Sprintf("n%d-%d", i, r), "", "sonnet", 1, 1, 1, 1, ""))
		case "codex":
			if r == 0 {
				lines = append(lines, `{"timestamp":"`+ts(0)+`","type":"turn_context","payload":{"cwd":"/p","model":"gpt-5-codex"}}`)
			}
			lines = append(lines, fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d,"total_tokens":1}}}}`,
				ts(1), 100*(r+1)+i, 10*(r+1), 5*(r+1)))
		case "mogzi":
			l.Document(u, []byte(fmt.Sprintf(`{"usageMetrics":{"inputTokens":%d,"outputTokens":%d,"lastUpdated":"%s"}}`, 50*(r+1), 7*(r+1), ts(0))),
				[]*indexer.Session{{Model: "gpt-4.1"}})
		}
		for _, line := range lines {
			l.Line(u, o.offs[i], []byte(line))
			o.offs[i] += int64(len(line)) + 1
		}
		if u.Layout != "mogzi" {
			fp := fmt.Sprintf("fp%d", o.offs[i])
			if i%2 == 0 {
				fp = fmt.Sprintf("%016x", o.offs[i]) // as the indexer's (kept as a number)
			}
			l.Done(u, o.offs[i], fp)
		}
		proj := fmt.Sprintf("/w/p%d", i%4)
		if i == 3 && r >= 3 {
			proj = "/w/moved" // refiled
		}
		id := sid(i)
		if i == 4 || i == 16 {
			id = sid(0) // one id in two sources: two sessions of the summary
		}
		sessions = append(sessions, indexer.SessionRef{UnitRef: u, ID: id, Type: "main", Project: proj})
	}
	switch r {
	case 2:
		l.Remove(o.refs[7]) // its file left the store: retired
		os.Remove(o.refs[7].Path)
	case 3:
		l.Reset(o.refs[8]) // rewritten in place: counted again from 0
		o.offs[8] = 0
	}
	if err := l.Sync(sessions); err != nil {
		o.t.Fatal(err)
	}
}

// copyDir copies the state dir's ledger into a new state dir.
func copyLedger(t *testing.T, state string) string {
	t.Helper()
	to := t.TempDir()
	os.MkdirAll(filepath.Join(to, DirName), 0o700)
	for _, name := range []string{UnitsName, SummaryName, UnitsIndexName} {
		data, err := os.ReadFile(filepath.Join(state, DirName, name))
		if errors.Is(err, fs.ErrNotExist) && name == UnitsIndexName {
			continue // a ledger of an older build
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, DirName, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func readLedgerFile(t *testing.T, state, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, DirName, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// resident counts the records whose account is in memory.
func (l *Ledger) residentCount() int {
	n := 0
	for r := range l.units.all() {
		if !r.evicted() {
			n++
		}
	}
	for _, rs := range l.retired {
		for _, r := range rs {
			if !r.evicted() {
				n++
			}
		}
	}
	return n
}

// TestOpenLazyEqualsEager: a ledger opened from its units' headers and the
// summary's totals (the stamp vouching for them) goes on exactly as one opened by
// reading every account and adding the totals up: after further appends, resets,
// removals and compactions both files are the same byte for byte, and so is
// every report.
func TestOpenLazyEqualsEager(t *testing.T) {
	defer func(a, b, c, d int64) { unitsRatio, unitsMin, summaryRatio, summaryMin = a, b, c, d }(unitsRatio, unitsMin, summaryRatio, summaryMin)
	unitsRatio, unitsMin, summaryRatio, summaryMin = 3, 0, 3, 0 // compactions on the way
	o := newOpenLedger(t)
	lazyState, eagerState := copyLedger(t, o.state), copyLedger(t, o.state)
	lazy, err := open(lazyState, true)
	if err != nil {
		t.Fatal(err)
	}
	eager, err := open(eagerState, false)
	if err != nil {
		t.Fatal(err)
	}
	if !lazy.trusted || eager.trusted {
		t.Fatalf("trusted: lazy %v, eager %v; want the stamp to vouch for the summary", lazy.trusted, eager.trusted)
	}
	if !lazy.fromIndex || eager.fromIndex {
		t.Errorf("read from the units' index: lazy %v, eager %v; want the lazy one only", lazy.fromIndex, eager.fromIndex)
	}
	if n := lazy.residentCount(); n != 0 || len(lazy.hot) != 0 {
		t.Errorf("a lazy Open read %d accounts (%d hot), want none", n, len(lazy.hot))
	}
	if !reflect.DeepEqual(totalsOf(lazy), totalsOf(eager)) {
		t.Errorf("totals: lazy %d rows, eager %d", lazy.rows.len(), eager.rows.len())
	}
	same := func(when string) {
		t.Helper()
		for _, name := range []string{UnitsName, SummaryName, UnitsIndexName} {
			a, b := readLedgerFile(t, lazyState, name), readLedgerFile(t, eagerState, name)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: %s differs: lazy %d bytes, eager %d\nlazy:\n%s\neager:\n%s", when, name, len(a), len(b), a, b)
			}
		}
		for _, w := range []Want{{}, {NoSessions: true}, {Session: sid(3)}, {From: Quarter(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC).UnixMilli())}} {
			a, err1 := ReadSummary(lazyState, w)
			b, err2 := ReadSummary(eagerState, w)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: report %+v differs (%v, %v)", when, w, err1, err2)
			}
		}
	}
	fixed := func() time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) }
	lazy.now, eager.now = fixed, fixed
	if s, err := ReadSummary(lazyState, Want{Session: sid(0)}); err != nil || !slices.ContainsFunc(s.Sessions, func(r SessionRow) bool { return r.Source == "codex" }) ||
		!slices.ContainsFunc(s.Sessions, func(r SessionRow) bool { return r.Source == "claude" }) {
		t.Fatalf("session %s is not filed under two sources (%v)", sid(0), err)
	}
	same("after Open")
	offs := append([]int64(nil), o.offs...)
	for r := 0; r < 4; r++ {
		o.round(lazy)
		o.rounds--
		lazyOffs := o.offs
		o.offs = append([]int64(nil), offs...)
		o.round(eager)
		offs = append([]int64(nil), o.offs...)
		if !reflect.DeepEqual(lazyOffs, o.offs) {
			t.Fatal("the rounds differ")
		}
		same(fmt.Sprintf("round %d", r))
	}
	if lazy.unitsFile.base == 0 || eager.unitsFile.tail == 0 && eager.summaryFile.tail == 0 {
		t.Log("no batch pending")
	}
	// Both sum up as a rebuild of the same accounts would.
	if d := compareSelf(t, lazyState); len(d) != 0 {
		t.Errorf("lazy ledger: %v", d)
	}
	// Reopened, the lazy one is trusted again and holds the same.
	again, err := open(lazyState, true)
	if err != nil {
		t.Fatal(err)
	}
	if !again.trusted || !reflect.DeepEqual(totalsOf(again), totalsOf(eager)) {
		t.Errorf("reopened: trusted %v, totals equal %v", again.trusted, reflect.DeepEqual(totalsOf(again), totalsOf(eager)))
	}
}

// totalsOf is the totals by row key.
func totalsOf(l *Ledger) map[rowKey]Tokens {
	m := map[rowKey]Tokens{}
	for id, t := range l.rows.all() {
		m[l.rowKeyOf(id)] = t
	}
	return m
}

// compareSelf is the summary checks of Compare on state (the units against
// themselves: the summary must be what they add up to).
func compareSelf(t *testing.T, state string) []string {
	t.Helper()
	rb := newLedger(filepath.Join(state, DirName))
	rb.dir = ""
	d, err := Compare(state, rb, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOpenDetectsCrashBetweenFiles: whatever a crash or a power cut leaves of the
// two files' last writes, a lazy Open trusts the summary only when it is the one
// the units file's stamp names, and otherwise adds the totals up from the units
// and rewrites it; the result is the ledger as the units file holds it.
func TestOpenDetectsCrashBetweenFiles(t *testing.T) {
	o := newOpenLedger(t)
	u0, s0 := readLedgerFile(t, o.state, UnitsName), readLedgerFile(t, o.state, SummaryName)
	l, err := Open(o.state)
	if err != nil {
		t.Fatal(err)
	}
	o.round(l)
	u1, s1 := readLedgerFile(t, o.state, UnitsName), readLedgerFile(t, o.state, SummaryName)
	if !bytes.HasPrefix(u1, u0) || !bytes.HasPrefix(s1, s0) || len(s1) == len(s0) {
		t.Fatal("the round appended no batch to each file")
	}
	want, err := ReadSummary(o.state, Want{})
	if err != nil {
		t.Fatal(err)
	}
	// u1 ends with the batch's commit line, then the stamp.
	body := strings.TrimSuffix(string(u1), "\n")
	noStamp := []byte(body[:strings.LastIndexByte(body, '\n')+1])
	if !strings.HasPrefix(string(u1[len(noStamp):]), `{"commit":true,"summary":[`) {
		t.Fatalf("the units file does not end with a stamp: %q", u1[len(noStamp):])
	}
	flipped := append([]byte(nil), s1...)
	i := bytes.LastIndexAny(flipped[:len(flipped)-3], "123456789")
	if flipped[i] == '9' {
		flipped[i] = '8'
	} else {
		flipped[i]++
	}
	cases := []struct {
		name           string
		units, summary []byte
		trusted        bool
	}{
		{"crash after the units batch", noStamp, s0, false},
		{"crash before the stamp", noStamp, s1, false},
		{"power cut: the summary's batch lost, the stamp kept", u1, s0, false},
		{"power cut: the summary's batch torn", u1, s1[:len(s1)-4], false},
		{"a summary of the same size, another byte", u1, flipped, false},
		{"a torn units batch after the stamp", append(append([]byte(nil), u1...), `{"k":["claude","x"],"li`...), s1, true},
		{"intact", u1, s1, true},
	}
	for _, c := range cases {
		state := t.TempDir()
		os.MkdirAll(filepath.Join(state, DirName), 0o700)
		os.WriteFile(filepath.Join(state, DirName, UnitsName), c.units, 0o600)
		os.WriteFile(filepath.Join(state, DirName, SummaryName), c.summary, 0o600)
		l, err := Open(state)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if l.trusted != c.trusted {
			t.Errorf("%s: Open trusted the summary: %v, want %v", c.name, l.trusted, c.trusted)
		}
		got, err := ReadSummary(state, Want{})
		if err != nil || !reflect.DeepEqual(sortedSummary(got), sortedSummary(want)) {
			t.Errorf("%s: after Open the summary is not what the units add up to (%v)", c.name, err)
		}
		if d := compareSelf(t, state); len(d) != 0 {
			t.Errorf("%s: %v", c.name, d)
		}
		if again, err := Open(state); err != nil || !again.trusted {
			t.Errorf("%s: a second Open does not trust the repaired summary (%v)", c.name, err)
		}
	}
}

// sortedSummary orders a summary's S and B rows (batches append them in another
// order than a rewritten base holds them).
func sortedSummary(s *Summary) *Summary {
	c := *s
	c.Sessions = append([]SessionRow(nil), s.Sessions...)
	sort.Slice(c.Sessions, func(i, j int) bool { return sessKeyOf(&c.Sessions[i]).less(sessKeyOf(&c.Sessions[j])) })
	c.Rows = append([]Row(nil), s.Rows...)
	sort.Slice(c.Rows, func(i, j int) bool {
		a, b := c.Rows[i], c.Rows[j]
		return rowKey{a.Q, a.Source, a.Project, a.Model}.less(rowKey{b.Q, b.Source, b.Project, b.Model})
	})
	return &c
}
