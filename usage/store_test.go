package usage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

func sid(i int) string { return fmt.Sprintf("%08x-1111-4111-8111-111111111111", i) }

func claudeSession(proj string, i int, ts string) string {
	return `{"type":"user","cwd":"` + proj + `","sessionId":"` + sid(i) + `","timestamp":"` + ts + `","uuid":"u1","message":{"role":"user","content":"hello"}}` + "\n" +
		claudeLine(ts, fmt.Sprintf("m%d", i), fmt.Sprintf("r%d", i), "opus", 1, 2, 3, 4, "") + "\n"
}

// daemonLike keeps one group and ledger open across passes, as the daemon does.
func (f *fixture) daemonLike() (*indexer.Group, *Ledger) {
	f.t.Helper()
	g, err := indexer.NewGroup(f.cfg(), nil, false)
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := Open(f.state)
	if err != nil {
		f.t.Fatal(err)
	}
	g.AddConsumer(l)
	if err := g.Load(); err != nil {
		f.t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		f.t.Fatal(err)
	}
	return g, l
}

func fileID(t *testing.T, path string) (ino uint64, size int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino, fi.Size()
}

// One append to one session of many: the flush appends a few hundred bytes to
// each ledger file and rewrites neither (the first version rewrote the whole
// summary and every shard the flush touched).
func TestLedgerFlushWritesWhatChanged(t *testing.T) {
	f := newFixture(t, "claude")
	const n = 400
	for i := 0; i < n; i++ {
		proj := fmt.Sprintf("/w/p%d", i%20)
		appendTo(t, filepath.Join(f.root, strings.ReplaceAll(proj, "/", "-"), sid(i)+".jsonl"), claudeSession(proj, i, "2026-03-01T10:00:00Z"))
	}
	g, _ := f.daemonLike()
	units, summary := filepath.Join(f.state, DirName, UnitsName), filepath.Join(f.state, DirName, SummaryName)
	uIno, uSize := fileID(t, units)
	sIno, sSize := fileID(t, summary)
	if sSize < 40*n {
		t.Fatalf("summary of %d sessions is %d bytes, expected more", n, sSize)
	}
	appendTo(t, filepath.Join(f.root, "-w-p7", sid(7)+".jsonl"), claudeLine("2026-03-01T11:00:00Z", "mx", "rx", "sonnet", 5, 5, 5, 5, "")+"\n")
	if err := g.ReconcileAll(); err != nil {
		t.Fatal(err)
	}
	uIno2, uSize2 := fileID(t, units)
	sIno2, sSize2 := fileID(t, summary)
	if uIno2 != uIno || sIno2 != sIno {
		t.Errorf("a flush of one append rewrote a ledger file (units %v, summary %v)", uIno2 != uIno, sIno2 != sIno)
	}
	if d := uSize2 - uSize; d <= 0 || d > 2048 {
		t.Errorf("units file grew by %d bytes for one append", d)
	}
	if d := sSize2 - sSize; d <= 0 || d > 512 {
		t.Errorf("summary grew by %d bytes for one append", d)
	}
	if got, want := f.total(), (Tokens{n + 5, 2*n + 5, 3*n + 5, 4*n + 5}); got != want {
		t.Errorf("ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

// Many flushes with compaction after nearly every one: the ledger, read back after
// a restart and checked, is what a rebuild finds.
func TestLedgerCompactionKeepsEverything(t *testing.T) {
	defer func(a, b, c, d int64) { unitsRatio, unitsMin, summaryRatio, summaryMin = a, b, c, d }(unitsRatio, unitsMin, summaryRatio, summaryMin)
	unitsRatio, unitsMin, summaryRatio, summaryMin = 4, 0, 4, 0
	f := newFixture(t, "claude")
	for i := 0; i < 30; i++ {
		appendTo(t, filepath.Join(f.root, "-w-p", sid(i)+".jsonl"), claudeSession("/w/p", i, "2026-03-01T10:00:00Z"))
	}
	g, _ := f.daemonLike()
	units := filepath.Join(f.state, DirName, UnitsName)
	ino, _ := fileID(t, units)
	rewrites := 0
	rng := rand.New(rand.NewPCG(1, 2))
	want := Tokens{30, 60, 90, 120}
	for k := 0; k < 60; k++ {
		i := rng.IntN(30)
		ts := fmt.Sprintf("2026-03-%02dT%02d:%02d:00Z", 1+k/24, k%24, rng.IntN(60))
		appendTo(t, filepath.Join(f.root, "-w-p", sid(i)+".jsonl"), claudeLine(ts, fmt.Sprintf("k%d", k), "r", []string{"opus", "sonnet"}[k%2], 1, 1, 1, 1, "")+"\n")
		want.Add(Tokens{1, 1, 1, 1})
		if err := g.ReconcileAll(); err != nil {
			t.Fatal(err)
		}
		if now, _ := fileID(t, units); now != ino {
			rewrites++
			ino = now
		}
	}
	if rewrites == 0 || rewrites == 60 {
		t.Errorf("the units file was rewritten %d times in 60 flushes, want some but not all", rewrites)
	}
	if got := f.total(); got != want {
		t.Errorf("ledger holds %+v, want %+v", got, want)
	}
	f.pass()
	if got := f.total(); got != want {
		t.Errorf("after a restart the ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

// A writer killed in the middle of an append leaves a torn batch: readers leave it
// out, the check names it, and the next writer rewrites the file.
func TestLedgerTornBatch(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 1, 1, 0, 0, "")+"\n")
	f.pass()
	units, summary := filepath.Join(f.state, DirName, UnitsName), filepath.Join(f.state, DirName, SummaryName)
	appendTo(t, summary, "B\t1969288\tclaude\t/w/p\topus\t9\t9\t0\t0\nB\t1969289\tcla")
	appendTo(t, units, `{"k":["claude","-w-p/x.jsonl"],"live":{"source":"cl`)
	if got, want := f.total(), (Tokens{1, 1, 0, 0}); got != want {
		t.Errorf("a reader of the torn summary sees %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 1 || !strings.Contains(d[0], "torn") {
		t.Errorf("check of a torn summary = %v, want it named", d)
	}
	appendTo(t, file, claudeLine("2026-03-01T10:05:00Z", "m2", "r2", "opus", 2, 2, 0, 0, "")+"\n")
	f.pass()
	for _, p := range []string{units, summary} {
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), "cla\n") || strings.Contains(string(data), `"cl{`) || !strings.HasSuffix(string(data), "\n") {
			t.Errorf("%s still holds the torn batch:\n%s", p, data)
		}
	}
	if got, want := f.total(), (Tokens{3, 3, 0, 0}); got != want {
		t.Errorf("ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

// A ledger of the first version (64 JSON shards) is read and rewritten.
func TestLedgerMigratesFirstVersion(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 4, 4, 0, 0, "")+"\n")
	_, l := f.daemonLike()
	gone := &unitRec{Unit: "-w-q/gone.jsonl", unitBody: &unitBody{Layout: "claude", Retired: "2026-03-02T00:00:00Z",
		acc: account{Buckets: []Bucket{{Q: 1969300, Model: "opus", T: Tokens{Input: 7}}}}}}
	gone.setSource("claude")
	gone.setRoot("/nowhere", true)
	var live []*unitRec
	for r := range l.units.all() {
		l.accOf(r) // idle accounts are on disk only
		live = append(live, r)
	}
	data, err := encodeShard(live, []*unitRec{gone})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.state, DirName)
	os.Remove(filepath.Join(dir, UnitsName))
	os.WriteFile(filepath.Join(dir, SummaryName), []byte(`{"version":1,"generator":"sessionwatch","strings":[]}`+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "units-05.json"), data, 0o600)
	f.pass()
	if got, want := f.total(), (Tokens{Input: 11, Output: 4}); got != want {
		t.Errorf("after the migration the ledger holds %+v, want %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "units-05.json")); err == nil {
		t.Errorf("the first version's shard was left behind")
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

// Reading part of the summary (rows from a quarter hour, one session's rows) finds
// what reading it whole and filtering finds, with batches appended after the base.
func TestParseSummaryPartsEqualWhole(t *testing.T) {
	// Searched sections and lines longer than a probe's first read, in small files.
	defer func(w, d int64) { seekWindow, seekDone = w, d }(seekWindow, seekDone)
	seekWindow, seekDone = 16, 64
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 20; round++ {
		l := newLedger(t.TempDir())
		var all []*unitRec
		// Half the rounds are large enough for the file reader to search the
		// sections rather than read them (readSummaryParts).
		units, sessions, credits := 300, 50, 400
		if round%2 == 1 {
			units, sessions, credits = 3000, 600, 6000
		}
		for i := 0; i < 1+rng.IntN(units); i++ {
			r := (&unitRec{Unit: fmt.Sprint(i), unitBody: &unitBody{}}).
				filedAs([]string{"claude", "codex"}[rng.IntN(2)], sid(rng.IntN(sessions)), "main", []string{"/a", "/b\tc", `/d\e`}[rng.IntN(3)])
			l.units.put(r)
			l.file(r, 1)
			all = append(all, r)
		}
		credit := func() {
			for k := 0; k < 1+rng.IntN(credits); k++ {
				r := all[rng.IntN(len(all))]
				r.acc.credit(int32(1000+rng.IntN(500)), []string{"opus", "gpt-5"}[rng.IntN(2)], Tokens{int64(rng.IntN(9)), 1, 0, 0}, 1, l.observe(r))
			}
		}
		credit()
		l.settleGroups(false)
		base := l.renderSummary()
		clear(l.dirtyRows)
		clear(l.dirtyDays)
		credit() // a batch after the base
		batch := l.appendChanged(nil, l.settleGroups(true))
		data := append(append(base, batch...), 'C', '\n')
		whole, err := ParseSummary(data, Want{})
		if err != nil {
			t.Fatal(err)
		}
		if !l.sameAsSummary(whole, false) {
			t.Fatalf("round %d: the summary read whole is not the ledger's totals", round)
		}
		from := int32(1000 + rng.IntN(520))
		part, err := ParseSummary(data, Want{From: from, NoSessions: true})
		if err != nil {
			t.Fatal(err)
		}
		var want []Row
		for _, r := range whole.Rows {
			if r.Q >= from {
				want = append(want, r)
			}
		}
		if !reflect.DeepEqual(part.Rows, want) || part.Sessions != nil {
			t.Fatalf("round %d: rows from %d: %d rows, want %d", round, from, len(part.Rows), len(want))
		}
		s := sid(rng.IntN(sessions))
		one, err := ParseSummary(data, Want{Session: s, NoRows: true})
		if err != nil {
			t.Fatal(err)
		}
		var wantS []SessionRow
		for _, r := range whole.Sessions {
			if r.Session == s {
				wantS = append(wantS, r)
			}
		}
		key := func(rs []SessionRow) {
			sort.Slice(rs, func(i, j int) bool { return sessKeyOf(&rs[i]).less(sessKeyOf(&rs[j])) })
		}
		key(wantS)
		key(one.Sessions)
		if !reflect.DeepEqual(one.Sessions, wantS) || one.Rows != nil {
			t.Fatalf("round %d: session %s: %+v, want %+v", round, s, one.Sessions, wantS)
		}
		// The file reader finds what the whole parse finds, for every kind of want.
		for _, w := range []Want{{From: from, NoSessions: true}, {Session: s, NoRows: true}, {From: from, Session: s},
			{NoSessions: true}, {From: from}, {Session: sid(sessions + 1)}, {From: 1 << 30, NoSessions: true},
			{NoSessions: true, Days: l.loc}, {NoSessions: true, Days: time.FixedZone("X", 3600)}} {
			want, err := ParseSummary(data, w)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := readSummaryParts(bytes.NewReader(data), int64(len(data)), w)
			if !ok {
				t.Fatalf("round %d: readSummaryParts(%+v) gave up on a well-formed summary", round, w)
			}
			key(want.Sessions)
			key(got.Sessions)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: readSummaryParts(%+v) = %d sessions, %d rows; want %d, %d", round, w, len(got.Sessions), len(got.Rows), len(want.Sessions), len(want.Rows))
			}
		}
	}
}

// A flush (another source's) in the middle of a read of a unit does not write that
// unit: after a crash it is read again from its last position and counts once. A
// read that failed half way and is handed over again counts nothing twice.
func TestLedgerReadInProgress(t *testing.T) {
	state := t.TempDir()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(path, nil, 0o600)
	// Codex: no dedupe to hide a line counted twice.
	u := indexer.UnitRef{Source: "codex", Layout: "codex", Unit: "2026/03/01/s.jsonl", Path: path, Dev: 1, Ino: 2}
	line := func(k int) []byte {
		return []byte(fmt.Sprintf(`{"timestamp":"2026-03-01T10:00:%02dZ","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":0}}}}`, k))
	}
	l, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	l.Reset(u)
	l.Line(u, 0, line(0))
	l.Line(u, 100, line(1))
	l.Done(u, 200, "fp200")
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	l.Line(u, 200, line(2))
	if err := l.Sync(nil); err != nil { // another indexer's flush, mid-read
		t.Fatal(err)
	}
	// The crash: a new writer reads the ledger; the unit is where its last read ended.
	l2, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	if off, fp, ok := l2.Resume(u); !ok || off != 200 || fp != "fp200" {
		t.Fatalf("after the crash the ledger resumes at %d %q %v, want 200 fp200", off, fp, ok)
	}
	l2.Line(u, 200, line(2))
	l2.Done(u, 300, "fp300")
	l2.Sync(nil)
	s, _ := ReadSummary(state, Want{})
	if len(s.Rows) != 1 || s.Rows[0].T.Input != 3 {
		t.Errorf("after the crash the summary holds %+v, want 3 input tokens", s.Rows)
	}
	// A read that failed half way (no Done), handed over again from the position.
	l2.Line(u, 300, line(3))
	l2.Line(u, 400, line(4))
	l2.Line(u, 300, line(3))
	l2.Line(u, 400, line(4))
	l2.Line(u, 500, line(5))
	l2.Done(u, 600, "fp600")
	l2.Sync(nil)
	s, _ = ReadSummary(state, Want{})
	if len(s.Rows) != 1 || s.Rows[0].T.Input != 6 {
		t.Errorf("after a read handed over twice the summary holds %+v, want 6 input tokens", s.Rows)
	}
}

// Idle units keep only their header in memory: after a flush every account is on
// disk only, and one read back when its unit grows again still deduplicates
// against the messages counted before (its window came back with it), through
// compactions that copy idle units' lines as they are and across a restart.
func TestLedgerIdleUnitsLeaveMemory(t *testing.T) {
	defer func(a, b int64) { unitsRatio, unitsMin = a, b }(unitsRatio, unitsMin)
	unitsRatio, unitsMin = 4, 0
	f := newFixture(t, "claude")
	const n = 50
	for i := 0; i < n; i++ {
		appendTo(t, filepath.Join(f.root, "-w-p", sid(i)+".jsonl"), claudeSession("/w/p", i, "2026-03-01T10:00:00Z"))
	}
	g, l := f.daemonLike()
	resident := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		c := 0
		for r := range l.units.all() {
			if !r.evicted() {
				c++
			}
		}
		return c
	}
	if c := resident(); c != 0 {
		t.Fatalf("%d of %d idle units hold their account in memory after a flush", c, n)
	}
	want := Tokens{n, 2 * n, 3 * n, 4 * n}
	for k := 0; k < 12; k++ {
		i := (k * 7) % n
		// A later copy of the unit's first message (same ids, larger): it replaces
		// the copy counted, found in the window read back from disk.
		appendTo(t, filepath.Join(f.root, "-w-p", sid(i)+".jsonl"),
			claudeLine("2026-03-01T10:00:01Z", fmt.Sprintf("m%d", i), fmt.Sprintf("r%d", i), "opus", 1, 2, 3, 4+k+1, "")+"\n"+
				claudeLine("2026-03-01T11:00:00Z", fmt.Sprintf("x%d", k), "rx", "sonnet", 1, 1, 1, 1, "")+"\n")
		if err := g.ReconcileAll(); err != nil {
			t.Fatal(err)
		}
		if c := resident(); c != 0 {
			t.Fatalf("after flush %d, %d units hold their account in memory", k, c)
		}
	}
	// Units 0, 7, …: the last copy of each replaced message counts.
	last := map[int]int{}
	for k := 0; k < 12; k++ {
		last[(k*7)%n] = 4 + k + 1
	}
	for _, v := range last {
		want.CacheRead += int64(v - 4)
	}
	want.Add(Tokens{12, 12, 12, 12})
	if got := f.total(); got != want {
		t.Errorf("ledger holds %+v, want %+v", got, want)
	}
	f.pass()
	if got := f.total(); got != want {
		t.Errorf("after a restart the ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}
