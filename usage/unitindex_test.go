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
)

// longWay is the ledger of state as an Open reads it without the units' index.
func longWay(t *testing.T, state string) *Ledger {
	t.Helper()
	l := newLedger(filepath.Join(state, DirName))
	if _, err := l.load(true, false); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestUnitsIndexUpgradeAndStale: an Open reads the base's records from the
// index, and holds what reading the key lines holds; a ledger without an index
// (an older build's) opens the long way and is rewritten with one; an index of
// another base (a crash between the rewrites of the two files) or a damaged one
// is not used. Whichever way it opened, the ledger goes on the same.
func TestUnitsIndexUpgradeAndStale(t *testing.T) {
	defer func(a, b int64) { unitsRatio, unitsMin = a, b }(unitsRatio, unitsMin)
	unitsRatio, unitsMin = 3, 0 // compactions on the way
	o := newOpenLedger(t)
	ixPath := filepath.Join(o.state, DirName, UnitsIndexName)
	oldIndex, err := os.ReadFile(ixPath)
	if err != nil {
		t.Fatalf("no index after a rewrite: %v", err)
	}
	l, err := Open(o.state)
	if err != nil {
		t.Fatal(err)
	}
	if !l.fromIndex {
		t.Fatal("Open did not read the index")
	}
	for i := 0; i < 3; i++ {
		o.round(l)
	}
	if idx := readLedgerFile(t, o.state, UnitsIndexName); bytes.Equal(idx, oldIndex) {
		t.Fatal("no rewrite of the units file on the way")
	}
	got := mustOpen(t, o.state)
	if want := longWay(t, o.state).headerLines(); !got.fromIndex || !slices.Equal(got.headerLines(), want) {
		t.Fatalf("opened from the index (%v): headers differ from the key lines'\n%s\n%s", got.fromIndex, strings.Join(got.headerLines(), "\n"), strings.Join(want, "\n"))
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Fatalf("check: %v", d)
	}

	current := readLedgerFile(t, o.state, UnitsIndexName)
	flipped := append([]byte(nil), current...)
	flipped[len(flipped)/2] ^= 1
	for _, c := range []struct {
		name  string
		index []byte // nil: none
	}{
		{"no index (an older build)", nil},
		{"the index of an earlier base", oldIndex},
		{"a damaged index", flipped},
		{"a torn index", current[:len(current)-5]},
	} {
		state := copyLedger(t, o.state)
		p := filepath.Join(state, DirName, UnitsIndexName)
		os.Remove(p)
		if c.index != nil {
			os.WriteFile(p, c.index, 0o600)
		}
		got := mustOpen(t, state)
		if got.fromIndex {
			t.Errorf("%s: Open read it", c.name)
		}
		// The open rewrote the units file with its index: the next one reads it.
		again := mustOpen(t, state)
		if !again.fromIndex || !slices.Equal(again.headerLines(), longWay(t, state).headerLines()) {
			t.Errorf("%s: reopened, from the index %v, headers as the key lines' %v", c.name, again.fromIndex,
				slices.Equal(again.headerLines(), longWay(t, state).headerLines()))
		}
		if !reflect.DeepEqual(totalsOf(again), totalsOf(got)) || !reflect.DeepEqual(totalsOf(got), totalsOf(l)) {
			t.Errorf("%s: totals differ", c.name)
		}
		if d := compareSelf(t, state); len(d) != 0 {
			t.Errorf("%s: check: %v", c.name, d)
		}
	}
}

func mustOpen(t *testing.T, state string) *Ledger {
	t.Helper()
	l, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.resetReader)
	return l
}

// TestCheckFindsAWrongIndex: an index that names the base but holds another
// position than the base's line is what reindex --check reports (an Open would
// trust it).
func TestCheckFindsAWrongIndex(t *testing.T) {
	defer func(a, b int64) { unitsRatio, unitsMin = a, b }(unitsRatio, unitsMin)
	unitsRatio, unitsMin = 3, 0 // the base holds the records
	o := newOpenLedger(t)
	p := filepath.Join(o.state, DirName, UnitsIndexName)
	base, crc, recs, err := decodeIndex(readLedgerFile(t, o.state, UnitsIndexName), func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	recs[len(recs)/2].Off++
	if err := os.WriteFile(p, encodeIndex(recs, base, crc), 0o600); err != nil {
		t.Fatal(err)
	}
	d := compareSelf(t, o.state)
	if len(d) != 1 || !strings.Contains(d[0], UnitsIndexName) {
		t.Fatalf("check: %v, want the index named", d)
	}
}

// indexSeeds are indexes of records of every kind, for the fuzz target.
func indexSeeds() [][]byte {
	mk := func(src, unit, sess, path string, idx int32, fp string) *unitRec {
		r := (&unitRec{Unit: unit, Ino: 9, Off: 120, idx: idx}).filedAs(src, sess, "main", "/p")
		r.setSpan(span{10, 40})
		r.setDev(3)
		r.setPath(path)
		r.setFp(fp)
		return r
	}
	recs := []*unitRec{
		mk("claude", "-w-p/0e5b.jsonl", "0e5b", "/h/.claude/projects/-w-p/0e5b.jsonl", -1, "ff8f1dc5a79849af"),
		mk("claude", "-w-p/0e5b.jsonl", "0e5b", "/h/.claude/projects/-w-p/0e5b.jsonl", 0, ""),
		mk("gemini", "tmp/x/chats/s.json", "uuid-9", "/elsewhere/s.json", -1, "short"),
		mk("gemini", "tmp/x/chats/t.json", "", "/g/tmp/x/chats/t.json", 0, "odd fingerprint"),
	}
	recs[3].setDev(1<<40 | 3) // a device beyond 32 bits: the high ones in the filing
	good := encodeIndex(recs, 1000, 77)
	return [][]byte{good, encodeIndex(nil, 5, 0), good[:len(good)-1], []byte("{\"version\":1}\n\x00\x00\x00\x00"), []byte("")}
}

// FuzzUnitsIndex: any bytes read as an index either fail or give records that
// encode back to the same bytes, each with its line inside the base.
func FuzzUnitsIndex(f *testing.F) {
	for _, s := range indexSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		base, crc, recs, err := decodeIndex(data, func(s string) string { return s })
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.span().n <= 0 || r.span().off+r.span().n > base || r.idx < -1 {
				t.Fatalf("record %q: line %+v outside a base of %d", r.Unit, r.span(), base)
			}
		}
		again := encodeIndex(recs, base, crc)
		base2, crc2, recs2, err := decodeIndex(again, func(s string) string { return s })
		if err != nil || base2 != base || crc2 != crc || len(recs2) != len(recs) {
			t.Fatalf("re-encoded index reads back as %d records, base %d (%v)", len(recs2), base2, err)
		}
		a, b := &Ledger{units: newUnitTable(), retired: map[ukey][]*unitRec{}}, &Ledger{units: newUnitTable(), retired: map[ukey][]*unitRec{}}
		for i := range recs {
			a.retired[ukey{"", string(rune(i))}] = []*unitRec{recs[i]}
			b.retired[ukey{"", string(rune(i))}] = []*unitRec{recs2[i]}
		}
		if !slices.Equal(a.headerLines(), b.headerLines()) {
			t.Fatal("re-encoded index holds other records")
		}
	})
}

// TestIndexSeedsRead: the fuzz target's valid seed reads back as written, and a
// body that does not match its checksum is refused.
func TestIndexSeedsRead(t *testing.T) {
	seeds := indexSeeds()
	base, crc, recs, err := decodeIndex(seeds[0], func(s string) string { return s })
	if err != nil || base != 1000 || crc != 77 || len(recs) != 4 {
		t.Fatalf("seed: base %d crc %d, %d records, %v", base, crc, len(recs), err)
	}
	if recs[0].session() != "0e5b" || recs[0].Fp() != "ff8f1dc5a79849af" || recs[0].path() != "/h/.claude/projects/-w-p/0e5b.jsonl" ||
		recs[1].idx != 0 || recs[2].Fp() != "short" || recs[2].path() != "/elsewhere/s.json" || recs[3].session() != "" || recs[3].Fp() != "odd fingerprint" ||
		recs[0].dev() != 3 || recs[3].dev() != 1<<40|3 {
		t.Errorf("seed read back wrong: %v", (&Ledger{units: newUnitTable(), retired: map[ukey][]*unitRec{{}: recs}}).headerLines())
	}
	bad := append([]byte(nil), seeds[0]...)
	bad[len(bad)-6] ^= 0x40
	if _, _, _, err := decodeIndex(bad, func(s string) string { return s }); err == nil {
		t.Error("a damaged index was read")
	}
	// A well-formed index whose records break the order is refused too.
	swapped := []*unitRec{recs[2], recs[0]}
	if _, _, _, err := decodeIndex(encodeIndex(swapped, 1000, 77), func(s string) string { return s }); err == nil {
		t.Error("an index out of order was read")
	}
}

// TestIdleUnitStaysOnDisk: what the indexer asks of an idle unit at start-up
// (Resume, Done at the same position) reads no body back; a unit whose position
// alone moved is written with its body copied from its line, still not read into
// memory, and holds the same usage; a record is no larger than its header.
func TestIdleUnitStaysOnDisk(t *testing.T) {
	if n := unsafe.Sizeof(unitRec{}); n > 96 {
		t.Errorf("a unit's header is %d bytes, want at most 96", n)
	}
	o := newOpenLedger(t)
	l := mustOpen(t, o.state)
	before := totalsOf(l)
	for i, u := range o.refs {
		off, fp, ok := l.Resume(u)
		if u.Layout == "mogzi" {
			continue
		}
		if !ok || off != o.offs[i] {
			t.Fatalf("Resume(%s) = %d, %v; want %d", u.Unit, off, ok, o.offs[i])
		}
		l.Done(u, off, fp)
	}
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if n := l.residentCount(); n != 0 {
		t.Errorf("Resume and Done at the same position read %d bodies", n)
	}
	u := o.refs[0]
	l.Done(u, o.offs[0]+10, "00000000000000ff") // the file grew by a line without usage
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if n := l.residentCount(); n != 0 {
		t.Errorf("a moved position read %d bodies into memory", n)
	}
	again := mustOpen(t, o.state)
	if off, fp, ok := again.Resume(u); !ok || off != o.offs[0]+10 || fp != "00000000000000ff" {
		t.Errorf("reopened: Resume = %d, %q, %v", off, fp, ok)
	}
	if !reflect.DeepEqual(totalsOf(again), before) {
		t.Error("the moved unit's usage changed")
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
	eager := longWay(t, o.state)
	r := eager.units.get(u.Source, u.Unit)
	if r == nil || r.evicted() || len(r.acc.Buckets) == 0 || r.Off != o.offs[0]+10 {
		t.Errorf("the moved unit's line lost its body: %+v", r)
	}
}

// TestDamagedLineNamedAfterAnIndexedBase: a damaged line after the base an index
// stands for is named by its line of the file, as without the index.
func TestDamagedLineNamedAfterAnIndexedBase(t *testing.T) {
	o := newOpenLedger(t)
	l := mustOpen(t, o.state)
	o.round(l) // a batch after the base
	l.resetReader()
	lines := strings.SplitAfter(string(readLedgerFile(t, o.state, UnitsName)), "\n")
	target := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], `{"k":`) {
			target = i
			break
		}
	}
	if target < 0 {
		t.Fatal("no key line")
	}
	lines[target] = `{"k":["claude","x"],"live":{"unit":` + "\n"
	if err := os.WriteFile(filepath.Join(o.state, DirName, UnitsName), []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "line " + strconv.Itoa(target+1) + ":"
	_, withIndex := open(o.state, true)
	if withIndex == nil || !strings.Contains(withIndex.Error(), want) {
		t.Errorf("with the index: %v; want an error naming %q", withIndex, want)
	}
	os.Remove(filepath.Join(o.state, DirName, UnitsIndexName))
	if _, without := open(o.state, true); fmt.Sprint(without) != fmt.Sprint(withIndex) {
		t.Errorf("without the index: %v; with it: %v", without, withIndex)
	}
}

// TestCheckBesideAWriter: reindex --check takes no lock; a daemon that flushes
// while it reads makes its reads of the units file disagree, which must not be
// reported as a damaged index (the comparison is made again once the files
// hold still).
func TestCheckBesideAWriter(t *testing.T) {
	o := newOpenLedger(t)
	l := mustOpen(t, o.state)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			for i, u := range o.refs {
				if u.Layout == "claude" {
					l.Done(u, o.offs[i], fmt.Sprintf("%016x", o.offs[i]+int64(n%1000)))
				}
			}
			if err := l.Sync(nil); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond) // let the check's reads through between flushes
		}
	}()
	checks, bad := 0, 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && checks < 30; checks++ {
		rb := newLedger(filepath.Join(o.state, DirName))
		rb.dir = ""
		d, err := Compare(o.state, rb, map[string]bool{})
		if err != nil {
			continue
		}
		for _, s := range d {
			if strings.Contains(s, UnitsIndexName) {
				bad++
				t.Logf("check %d: %s", checks, s)
			}
		}
	}
	close(stop)
	<-done
	if bad > 0 {
		t.Errorf("a check beside a writer reported a sound index as differing (%d of %d checks)", bad, checks)
	}
}

// TestResumeTakesTheIndexersName: a unit read from the index holds its name
// in an arena of many until the indexer hands the unit over; from then on it
// holds the indexer's string (so the arena can go), with its session, a part of
// its name, and everything else as it was.
func TestResumeTakesTheIndexersName(t *testing.T) {
	o := newOpenLedger(t)
	l := mustOpen(t, o.state)
	if !l.fromIndex {
		t.Fatal("the open did not read the index")
	}
	for _, u := range o.refs {
		r := l.units.get(u.Source, u.Unit)
		if r == nil {
			t.Fatalf("no record of %s", u.Unit)
		}
		before := r.headerLine()
		u.Unit = strings.Clone(u.Unit) // the indexer's own string
		l.Resume(u)
		if unsafeData(r.Unit) != unsafeData(u.Unit) {
			t.Fatalf("%s: the record keeps its own copy of the name", u.Unit)
		}
		if after := r.headerLine(); after != before {
			t.Fatalf("%s: header %s, was %s", u.Unit, after, before)
		}
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}
