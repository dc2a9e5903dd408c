package usage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// beyond32 is a token count past 32 bits (2^33) where int has 64 bits; where it
// has 32 (vet for 386), a small one.
const beyond32 = 1 << (strconv.IntSize - 31)

// oddStore is a store of units whose records take every rare path of the
// 96-byte record: session ids not in the unit's name, in it twice, past its
// 255th byte or longer than 255 bytes; devices at and beyond 2^32; and a
// session whose id, type and project change between the kinds.
type oddStore struct {
	t     *testing.T
	state string
	store string
	refs  []indexer.UnitRef
	ids   []string
	offs  []int64
	round int
}

const oddUnits = 24

func newOddStore(t *testing.T) *oddStore {
	o := &oddStore{t: t, state: t.TempDir(), store: t.TempDir()}
	long := strings.Repeat("d", 300)
	for i := 0; i < oddUnits; i++ {
		id := sid(i)
		var unit string
		switch i % 6 {
		case 0: // named after its session
			unit = fmt.Sprintf("-w-p%d/%s.jsonl", i%3, id)
		case 1: // its id twice in the name
			unit = fmt.Sprintf("-w-%s/%s.jsonl", id, id)
		case 2: // its id past byte 255
			unit = fmt.Sprintf("-%s/%s/%s.jsonl", long[:150], long[:150], id)
		case 3: // not named after its session
			unit = fmt.Sprintf("-w-p%d/other-%d.jsonl", i%3, i)
		case 4: // an id longer than 255 bytes, in the name
			id = strings.Repeat("e", 200) + "/" + strings.Repeat("f", 60) + fmt.Sprint(i)
			unit = fmt.Sprintf("-w-p%d/%s.jsonl", i%3, id)
		case 5: // no session id at all (filed under its name)
			unit = fmt.Sprintf("-w-p%d/none-%d.jsonl", i%3, i)
			id = ""
		}
		path := filepath.Join(o.store, "claude", filepath.FromSlash(unit))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		dev := uint64(7)
		switch i % 4 {
		case 1:
			dev = 1<<32 | 7
		case 2:
			dev = 0xfedc_ba98_7654_3210
		}
		o.refs = append(o.refs, indexer.UnitRef{Source: "claude", Layout: "claude", Unit: unit, Path: path, Dev: dev, Ino: uint64(100 + i)})
		o.ids = append(o.ids, id)
	}
	o.offs = make([]int64, oddUnits)
	return o
}

// step feeds every unit a line or two (Resume first, with the indexer's own
// string of its name, as the indexer does), refiles some under other ids,
// types and projects, resets, removes and moves one to another device, and
// syncs.
func (o *oddStore) step(l *Ledger) {
	o.t.Helper()
	r := o.round
	o.round++
	var sessions []indexer.SessionRef
	for i := range o.refs {
		if i == 9 && r > 2 {
			continue // removed
		}
		u := o.refs[i]
		u.Unit = strings.Clone(u.Unit) // the indexer's string, not the ledger's
		if off, _, ok := l.Resume(u); ok && off != o.offs[i] && o.offs[i] != 0 {
			o.t.Fatalf("round %d: %s resumes at %d, want %d", r, u.Unit, off, o.offs[i])
		}
		if (i+r)%3 != 0 || r == 0 {
			ts := time.Date(2026, 3, 1, 9+r, i%60, 0, 0, time.UTC).Format(time.RFC3339)
			line := claudeLine(ts, fmt.Sprintf("m%d-%d", i, r), fmt.Sprintf("q%d-%d", i, r), []string{"opus", "sonnet"}[(i+r)%2], 10+i, 2, 3, beyond32+i, "")
			l.Line(u, o.offs[i], []byte(line))
			o.offs[i] += int64(len(line)) + 1
			l.Done(u, o.offs[i], fmt.Sprintf("%016x", o.offs[i]))
		}
		id, typ, proj := o.ids[i], "main", fmt.Sprintf("/w/p%d", i%3)
		switch {
		case i%6 == 0 && r%2 == 1:
			id = "not-in-the-name-" + fmt.Sprint(i) // the id moves out of the name and back
		case i%6 == 3 && r%2 == 1:
			id = sid(i - 3) // into another unit's session
		case i%4 == 1 && r >= 2:
			typ, proj = "subagent", "/w/moved" // refiled: the shared filing must not follow
		}
		sessions = append(sessions, indexer.SessionRef{UnitRef: u, ID: id, Type: typ, Project: proj})
	}
	switch r {
	case 1:
		u := o.refs[8]
		u.Unit = strings.Clone(u.Unit)
		l.Reset(u)
		o.offs[8] = 0
	case 2:
		u := o.refs[9]
		l.Remove(u) // left the store (its file stays: an open's retire time is the clock's)
	case 3:
		o.refs[10].Dev = 1<<40 | 3 // the same file seen on another device
	}
	if err := l.Sync(sessions); err != nil {
		o.t.Fatal(err)
	}
}

// TestOddUnitsLazyEqualsEager: over units whose records take the rare paths
// (ids not in their name or far into it, devices beyond 32 bits, filings that
// change), a ledger opened from its index and its stamp (names adopted from the
// indexer) and one opened the long way write the same files, report the same,
// and each adds up as a rebuild does.
func TestOddUnitsLazyEqualsEager(t *testing.T) {
	defer func(a, b, c, d int64) { unitsRatio, unitsMin, summaryRatio, summaryMin = a, b, c, d }(unitsRatio, unitsMin, summaryRatio, summaryMin)
	unitsRatio, unitsMin, summaryRatio, summaryMin = 2, 0, 2, 0 // compactions on the way
	o := newOddStore(t)
	l, err := Open(o.state)
	if err != nil {
		t.Fatal(err)
	}
	o.step(l)
	o.step(l)
	l.resetReader()
	lazyState, eagerState := copyLedger(t, o.state), copyLedger(t, o.state)
	fixed := func() time.Time { return time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) }
	same := func(when string, lazy, eager *Ledger) {
		t.Helper()
		if a, b := lazy.headerLines(), eager.headerLines(); !slices.Equal(a, b) {
			t.Fatalf("%s: headers differ:\nlazy  %q\neager %q", when, a, b)
		}
		if !reflect.DeepEqual(totalsOf(lazy), totalsOf(eager)) {
			t.Fatalf("%s: totals differ", when)
		}
		for _, name := range []string{UnitsName, SummaryName, UnitsIndexName} {
			a, b := readLedgerFile(t, lazyState, name), readLedgerFile(t, eagerState, name)
			if !bytes.Equal(a, b) {
				la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
				for i := range min(len(la), len(lb)) {
					if !bytes.Equal(la[i], lb[i]) {
						t.Logf("line %d:\nlazy  %s\neager %s", i, la[i], lb[i])
					}
				}
				t.Fatalf("%s: %s differs: lazy %d bytes, eager %d", when, name, len(a), len(b))
			}
		}
		a, err1 := ReadSummary(lazyState, Want{})
		b, err2 := ReadSummary(eagerState, Want{})
		if err1 == nil && err2 == nil {
			a, b = sortedSummary(a), sortedSummary(b) // the batches' rows come in no order
		}
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
			if a != nil && b != nil {
				for i := range max(len(a.Sessions), len(b.Sessions)) {
					var x, y SessionRow
					if i < len(a.Sessions) {
						x = a.Sessions[i]
					}
					if i < len(b.Sessions) {
						y = b.Sessions[i]
					}
					if x != y {
						t.Logf("S %d:\nlazy  %+v\neager %+v", i, x, y)
					}
				}
				t.Logf("rows equal %v days equal %v", reflect.DeepEqual(a.Rows, b.Rows), reflect.DeepEqual(a.Days, b.Days))
			}
			t.Fatalf("%s: reports differ (%v, %v)", when, err1, err2)
		}
		for _, st := range []string{lazyState, eagerState} {
			if d := compareSelf(t, st); len(d) != 0 {
				t.Fatalf("%s: %s: %v", when, st, d)
			}
		}
	}
	for round := 0; round < 5; round++ {
		lazy, err := open(lazyState, true)
		if err != nil {
			t.Fatal(err)
		}
		eager, err := open(eagerState, false)
		if err != nil {
			t.Fatal(err)
		}
		if round > 0 && (!lazy.trusted || !lazy.fromIndex) {
			t.Fatalf("round %d: lazy open trusted %v, from index %v", round, lazy.trusted, lazy.fromIndex)
		}
		lazy.now, eager.now = fixed, fixed
		same(fmt.Sprintf("round %d open", round), lazy, eager)
		saved, savedRefs := append([]int64(nil), o.offs...), slices.Clone(o.refs)
		o.step(lazy)
		o.round--
		o.offs, o.refs = saved, savedRefs
		o.step(eager)
		same(fmt.Sprintf("round %d", round), lazy, eager)
		lazy.resetReader()
		eager.resetReader()
	}
}

// A session id in its unit's name but beyond what the record's offset holds
// (past byte 255) is the record's own string after an Open from the index, not
// a part of the name's arena: the indexer's name replaces the record's, and
// the arena must go with it.
func TestOddSessionOwnsItsBytes(t *testing.T) {
	compactEverySync(t)
	o := newOddStore(t)
	l, err := Open(o.state)
	if err != nil {
		t.Fatal(err)
	}
	o.step(l)
	l.resetReader()
	l = mustOpen(t, o.state)
	if !l.fromIndex {
		t.Fatal("the open did not read the index")
	}
	n := 0
	for _, u := range o.refs {
		l.warm(u.Source, u.Unit) // out of the index, as a line for it would
		r := l.units.get(u.Source, u.Unit)
		if r == nil || r.odd == nil || r.odd.session == "" {
			continue
		}
		name := uintptr(unsafe.Pointer(unsafe.StringData(r.Unit)))
		sess := uintptr(unsafe.Pointer(unsafe.StringData(r.odd.session)))
		if strings.Contains(r.Unit, r.odd.session) && sess >= name && sess < name+uintptr(len(r.Unit)) {
			t.Errorf("%s: its session id is a part of the arena's name", u.Unit)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no record holds its session id apart")
	}
}
