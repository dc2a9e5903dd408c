package usage

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// coldModel drives two ledgers with the same calls: one opened as the daemon
// opens it (its idle records left in units.idx), one eager (every record in
// memory, as before the index held them).
type coldModel struct {
	t            *testing.T
	rng          *rand.Rand
	store        string
	cold, eager  *Ledger
	cs, es       string // their state dirs
	refs         []indexer.UnitRef
	offs         []int64
	gone         []bool // its file removed (the ledger told, or not)
	sess         []indexer.SessionRef
	nextIno, msg int
	// Both ledgers lazy, the eager one filing a new unit at its Reset (no
	// pending records, pending.go); a unit read with no record is reset
	// first, as the indexer does, and Claude messages are repeated.
	eagerFiling bool
	last        int // the unit of the last step
}

var coldModelNow = func() time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) }

func newColdModel(t *testing.T, seed int64) *coldModel {
	return newModel(t, seed, false)
}

func newModel(t *testing.T, seed int64, eagerFiling bool) *coldModel {
	m := &coldModel{t: t, rng: rand.New(rand.NewSource(seed)), store: t.TempDir(), cs: t.TempDir(), es: t.TempDir(), nextIno: 1000, eagerFiling: eagerFiling}
	long := strings.Repeat("é", 90) // 180 bytes a part: records longer than a peek
	ids := []string{sid(1), sid(2), "shared", strings.Repeat("s", 700)}
	for i := 0; i < 14; i++ {
		src, unit := "claude", fmt.Sprintf("-w-p%d/%s.jsonl", i%3, sid(i))
		switch {
		case i%5 == 4:
			src, unit = "codex", fmt.Sprintf("2026/03/01/rollout-%s.jsonl", sid(i))
		case i%4 == 3:
			unit = fmt.Sprintf("-w-%s/%s/%s/%s.jsonl", long, long, long, sid(i))
		case i == 2:
			src = "codex" // the same unit name in two sources
			unit = fmt.Sprintf("-w-p%d/%s.jsonl", 1, sid(1))
		case i == 5 || i == 10:
			src, unit = "mogzi", fmt.Sprintf("chats/%s/session.json", sid(i))
		}
		path := filepath.Join(m.store, src, filepath.FromSlash(unit))
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		u := indexer.UnitRef{Source: src, Layout: src, Unit: unit, Path: path, Dev: 7, Ino: uint64(100 + i)}
		m.refs = append(m.refs, u)
		id := sid(i)
		if i%3 == 0 {
			id = ids[i%len(ids)]
		}
		m.sess = append(m.sess, indexer.SessionRef{UnitRef: u, ID: id, Type: "main", Project: fmt.Sprintf("/w/p%d", i%3)})
	}
	m.offs, m.gone = make([]int64, len(m.refs)), make([]bool, len(m.refs))
	m.cold, m.eager = m.openBoth()
	return m
}

// openBoth opens the two ledgers (cold: lazy; eager: lazy too, filing eagerly,
// with eagerFiling).
func (m *coldModel) openBoth() (*Ledger, *Ledger) {
	return m.open(m.cs, true), m.open(m.es, false)
}

func (m *coldModel) open(state string, lazy bool) *Ledger {
	m.t.Helper()
	l, err := open(state, lazy || m.eagerFiling)
	if err != nil {
		m.t.Fatal(err)
	}
	l.now = coldModelNow
	if m.eagerFiling && !lazy {
		l.eagerFiling = true
	}
	m.t.Cleanup(func() { l.resetReader(); l.cold.close() })
	return l
}

// both runs fn on each ledger.
func (m *coldModel) both(fn func(l *Ledger)) { fn(m.cold); fn(m.eager) }

func (m *coldModel) sync(refs []indexer.SessionRef) {
	m.t.Helper()
	for _, l := range []*Ledger{m.cold, m.eager} {
		if err := l.Sync(refs); err != nil {
			m.t.Fatal(err)
		}
	}
}

// step does one random thing to both ledgers.
func (m *coldModel) step() string {
	i := m.rng.Intn(len(m.refs))
	if m.eagerFiling && m.rng.Intn(2) == 0 {
		i = m.last // the same unit again: its record pending still
	}
	m.last = i
	u := m.refs[i]
	switch k := m.rng.Intn(23); {
	case k < 7 && u.Layout == "mogzi": // its running total
		if m.gone[i] {
			if err := os.WriteFile(u.Path, nil, 0o600); err != nil {
				m.t.Fatal(err)
			}
			m.gone[i] = false
		}
		m.msg++
		tot := m.offs[i] + int64(m.rng.Intn(50)) - 10 // now and then less: a reset
		m.offs[i] = max(tot, 0)
		doc := fmt.Sprintf(`{"usageMetrics":{"inputTokens":%d,"outputTokens":%d,"lastUpdated":"2026-03-01T1%d:00:00Z"}}`, m.offs[i], m.offs[i]/2, m.rng.Intn(5))
		m.both(func(l *Ledger) { l.Document(u, []byte(doc), []*indexer.Session{{Model: "gpt-4.1"}}) })
		return fmt.Sprintf("document %d", i)
	case k < 7: // lines
		if m.gone[i] {
			// The file comes back (a new one): the same key again.
			if err := os.WriteFile(u.Path, nil, 0o600); err != nil {
				m.t.Fatal(err)
			}
			m.nextIno++
			m.refs[i].Ino, m.offs[i], m.gone[i] = uint64(m.nextIno), 0, false
			m.sess[i].UnitRef = m.refs[i]
			u = m.refs[i]
		}
		if m.eagerFiling {
			if _, _, ok := m.cold.Resume(u); !ok {
				// Nothing held of it: the indexer resets it, then reads it
				// (a new record, pending until the next Sync).
				m.both(func(l *Ledger) { l.Reset(u) })
				m.offs[i] = 0
			}
		}
		for n := 1 + m.rng.Intn(3); n > 0; n-- {
			m.msg++
			id, req := fmt.Sprintf("m%d", m.msg), fmt.Sprintf("q%d", m.msg)
			if m.eagerFiling && m.msg > 1 && m.rng.Intn(3) == 0 {
				// The last message again, more tokens, maybe in another
				// quarter hour: the account takes the first copy back.
				id, req = fmt.Sprintf("m%d", m.msg-1), fmt.Sprintf("q%d", m.msg-1)
			}
			ts := time.Date(2026, 3, 1, 9+m.rng.Intn(5), m.rng.Intn(60), 0, 0, time.UTC).Format(time.RFC3339)
			var line string
			if u.Layout == "codex" {
				line = fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":1,"output_tokens":2,"total_tokens":1}}}}`, ts, 10*m.msg)
			} else {
				line = claudeLine(ts, id, req, []string{"opus", "sonnet"}[m.msg%2], m.msg, 2, 3, 4, "")
			}
			off := m.offs[i]
			m.both(func(l *Ledger) { l.Line(u, off, []byte(line)) })
			m.offs[i] += int64(len(line)) + 1
		}
		if k == 6 {
			return fmt.Sprintf("lines %d, read in progress", i) // no Done yet
		}
		off, fp := m.offs[i], fmt.Sprintf("%016x", m.offs[i])
		if i%2 == 1 {
			fp = fmt.Sprintf("fp-%d", m.offs[i])
		}
		m.both(func(l *Ledger) { l.Done(u, off, fp) })
		return fmt.Sprintf("lines %d", i)
	case k < 9:
		m.both(func(l *Ledger) { l.Reset(u) })
		m.offs[i] = 0
		return fmt.Sprintf("reset %d", i)
	case k < 11:
		if !m.gone[i] {
			m.both(func(l *Ledger) { l.Remove(u) })
			os.Remove(u.Path)
			m.gone[i] = true
		}
		return fmt.Sprintf("remove %d", i)
	case k < 13: // refile
		s := &m.sess[i]
		switch m.rng.Intn(3) {
		case 0:
			s.Project = fmt.Sprintf("/w/moved%d", m.rng.Intn(2))
		case 1:
			s.ID = []string{"shared", sid(3), strings.Repeat("s", 700), sid(i)}[m.rng.Intn(4)]
		default:
			s.Type = []string{"main", "subagent"}[m.rng.Intn(2)]
		}
		m.sync([]indexer.SessionRef{*s})
		return fmt.Sprintf("refile %d", i)
	case k < 15:
		m.sync(m.liveSessions())
		return "sync"
	case k < 17:
		m.both(func(l *Ledger) { l.unitsFile.compact = true })
		if m.rng.Intn(3) > 0 {
			m.sync(nil)
			return "compact"
		}
		// The new index cannot be written (a directory where it is renamed
		// to): the records stay in memory until a later compaction.
		for _, st := range []string{m.cs, m.es} {
			idx := filepath.Join(st, DirName, UnitsIndexName)
			os.Remove(idx)
			if err := os.MkdirAll(filepath.Join(idx, "x"), 0o700); err != nil {
				m.t.Fatal(err)
			}
		}
		m.sync(nil)
		for _, st := range []string{m.cs, m.es} {
			os.RemoveAll(filepath.Join(st, DirName, UnitsIndexName))
		}
		return "compact, no index written"
	case k < 18: // a file gone without the ledger told, found at the open
		if !m.gone[i] {
			os.Remove(u.Path)
			m.gone[i] = true
		}
		m.reopen()
		return fmt.Sprintf("gone %d, reopen", i)
	case k < 20:
		m.reopen()
		return "reopen"
	default: // a summary its stamp does not name: the accounts read the long way
		m.sync(nil)
		for _, st := range []string{m.cs, m.es} {
			unstampSummary(m.t, st)
		}
		m.reopen()
		return "untrusted reopen"
	}
}

func (m *coldModel) liveSessions() []indexer.SessionRef {
	var out []indexer.SessionRef
	for i, s := range m.sess {
		if !m.gone[i] {
			out = append(out, s)
		}
	}
	return out
}

func (m *coldModel) reopen() {
	m.sync(nil)
	m.cold.resetReader()
	m.cold.cold.close()
	m.eager.resetReader()
	m.cold, m.eager = m.openBoth()
}

// same compares what the two ledgers answer and hold on disk.
func (m *coldModel) same(when string) {
	m.t.Helper()
	for _, u := range m.refs {
		a1, b1, c1 := m.cold.Resume(u)
		a2, b2, c2 := m.eager.Resume(u)
		if a1 != a2 || b1 != b2 || c1 != c2 {
			m.t.Fatalf("%s: Resume(%s %.40s) = %d %q %v, eager %d %q %v", when, u.Source, u.Unit, a1, b1, c1, a2, b2, c2)
		}
	}
	if !m.eagerFiling && !reflect.DeepEqual(totalsOf(m.cold), totalsOf(m.eager)) {
		m.t.Fatalf("%s: totals differ", when)
	}
	if m.eagerFiling {
		// The indexer's flush: each unit's sessions (a new one's filed there).
		m.sync(m.liveSessions())
	} else {
		m.sync(nil)
	}
	if m.eagerFiling && !reflect.DeepEqual(totalsOf(m.cold), totalsOf(m.eager)) {
		m.t.Fatalf("%s: totals differ after a Sync", when) // a pending record's are filed by it
	}
	// Byte for byte, but for the time a unit found gone at an open was
	// retired (each open's clock), and the index's checksum of the base.
	retiredAt := regexp.MustCompile(`"retired":"[^"]*"`)
	for _, name := range []string{UnitsName, SummaryName, UnitsIndexName} {
		a, _ := os.ReadFile(filepath.Join(m.cs, DirName, name))
		b, _ := os.ReadFile(filepath.Join(m.es, DirName, name))
		if name == UnitsIndexName {
			a, b = indexHeaders(m.t, a), indexHeaders(m.t, b)
		}
		a, b = retiredAt.ReplaceAll(a, nil), retiredAt.ReplaceAll(b, nil)
		if !bytes.Equal(a, b) {
			m.t.Fatalf("%s: %s differs: %d bytes, eager %d", when, name, len(a), len(b))
		}
	}
	a, err1 := ReadSummary(m.cs, Want{})
	b, err2 := ReadSummary(m.es, Want{})
	if err1 != nil || err2 != nil || !reflect.DeepEqual(sortedSummary(a), sortedSummary(b)) {
		m.t.Fatalf("%s: summaries differ (%v, %v)", when, err1, err2)
	}
}

// indexHeaders is the header line of each record of the index data.
func indexHeaders(t *testing.T, data []byte) []byte {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	_, _, recs, err := decodeIndex(data, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&b, "%s %d\n", r.headerLine(), r.idx)
	}
	return b.Bytes()
}

// TestPendingFilingModel: the same random calls handed to a ledger that files
// a new unit at the Sync after its read (pending.go) and to one that files it
// at its Reset and again under its session at that Sync (as before) leave both
// writing the same files byte for byte, after every step: the summary's
// batches list the same rows (those under no project too), the units file and
// its index the same records.
func TestPendingFilingModel(t *testing.T) {
	defer func(a, b, c, d int64) { unitsRatio, unitsMin, summaryRatio, summaryMin = a, b, c, d }(unitsRatio, unitsMin, summaryRatio, summaryMin)
	for _, compactions := range []bool{false, true} {
		if compactions {
			unitsRatio, unitsMin, summaryRatio, summaryMin = 2, 0, 2, 0
		}
		for seed := int64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprint(compactions, seed), func(t *testing.T) {
				m := newModel(t, seed, true)
				var log []string
				for n := 0; n < 300; n++ {
					log = append(log, m.step())
					if m.rng.Intn(3) == 0 {
						// Not after every step: a new unit's record stays
						// pending while others come (a Reset, a Remove, a
						// document of it, a Sync of other sessions).
						m.same(strings.Join(log[max(0, len(log)-8):], "; "))
					}
				}
				for i, u := range m.refs { // the reads in progress end
					if !m.gone[i] && u.Layout != "mogzi" {
						off, fp := m.offs[i], fmt.Sprintf("%016x", m.offs[i])
						m.both(func(l *Ledger) { l.Done(u, off, fp) })
					}
				}
				m.same("the end")
				if d := compareSelf(t, m.cs); len(d) != 0 {
					t.Errorf("check: %v", d)
				}
			})
		}
	}
}

// TestColdLedgerModel: random lines, resets, removals, refilings, files gone,
// compactions and reopens, handed to a ledger that leaves its idle records in
// units.idx and to an eager one, leave both answering the same and writing
// the same files byte for byte, and the summary what the units add up to.
func TestColdLedgerModel(t *testing.T) {
	defer func(a, b, c, d int64) { unitsRatio, unitsMin, summaryRatio, summaryMin = a, b, c, d }(unitsRatio, unitsMin, summaryRatio, summaryMin)
	unitsRatio, unitsMin, summaryRatio, summaryMin = 2, 0, 2, 0 // compactions on the way
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := newColdModel(t, seed)
			var log []string
			for n := 0; n < 200; n++ {
				log = append(log, m.step())
				m.same(strings.Join(log[max(0, len(log)-6):], "; "))
			}
			for i, u := range m.refs { // the reads in progress end
				if !m.gone[i] && u.Layout != "mogzi" {
					off, fp := m.offs[i], fmt.Sprintf("%016x", m.offs[i])
					m.both(func(l *Ledger) { l.Done(u, off, fp) })
				}
			}
			m.same("the end")
			if d := compareSelf(t, m.cs); len(d) != 0 {
				t.Errorf("check: %v", d)
			}
		})
	}
}
