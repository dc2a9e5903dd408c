package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has installed
)

// Zones with DST at night, at midnight (Sao Paulo 2018: 00:00 became 01:00), a
// 30-minute DST (Lord Howe), 45- and 30-minute offsets, a skipped day (Apia
// 2011-12-30), and each with a stretch of days around its transitions.
var rollupZones = []struct {
	name string
	from string // first day (UTC) of the usage generated
	days int
}{
	{"UTC", "2026-03-06", 30},
	{"Europe/Berlin", "2026-03-06", 30},
	{"America/New_York", "2026-03-05", 10},
	{"Australia/Lord_Howe", "2026-04-02", 6},
	{"Asia/Kathmandu", "2026-03-30", 4},
	{"America/St_Johns", "2026-10-30", 5},
	{"America/Sao_Paulo", "2018-11-02", 4},
	{"Pacific/Apia", "2011-12-28", 5},
}

func loadZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// Every quarter hour's run (segmentOf) is the maximal run of quarter hours of
// its day, found by stepping through every quarter hour.
func TestSegmentOfIsTheDaysRun(t *testing.T) {
	for _, z := range rollupZones {
		loc := loadZone(t, z.name)
		from, _ := time.Parse(time.DateOnly, z.from)
		q0 := Quarter(from.UnixMilli())
		q1 := q0 + int32(z.days*96)
		for q := q0; q < q1; {
			day := DayOf(q, loc)
			s := q
			for DayOf(s-1, loc) == day {
				s--
			}
			e := q
			for DayOf(e, loc) == day {
				e++
			}
			for p := q; p < e && p < q1; p++ {
				g := segmentOf(p, loc)
				if g.s != s || g.e != e || g.day != day {
					t.Fatalf("%s: segmentOf(%d) = %d..%d %s, want %d..%d %s", z.name, p, g.s, g.e, g.day, s, e, day)
				}
			}
			q = e
		}
	}
}

// The offsets over a run, and a zone with other offsets is told apart.
func TestZoneOver(t *testing.T) {
	berlin := loadZone(t, "Europe/Berlin")
	day := func(d string, loc *time.Location) daySeg {
		at, _ := time.ParseInLocation("2006-01-02 15:04", d+" 12:00", loc)
		return segmentOf(Quarter(at.UnixMilli()), loc)
	}
	for _, c := range []struct {
		day   string
		loc   *time.Location
		zone  string
		quart int32
	}{
		{"2026-03-28", berlin, "3600", 96},
		{"2026-03-29", berlin, "3600,1774746000,7200", 92},
		{"2026-10-25", berlin, "7200,1792890000,3600", 100},
		{"2026-03-29", time.UTC, "0", 96},
	} {
		g := day(c.day, c.loc)
		if g.zone != c.zone || g.e-g.s != c.quart || g.day != c.day {
			t.Errorf("%s in %s: %s, %d quarter hours, day %s; want %s, %d", c.day, c.loc, g.zone, g.e-g.s, g.day, c.zone, c.quart)
		}
	}
	if daysValid([]DayRow{{S: day("2026-03-29", berlin).s, E: day("2026-03-29", berlin).e, Day: "2026-03-29", Zone: "3600,1774746000,7200"}}, loadZone(t, "Europe/Paris")) != true {
		t.Errorf("Paris has Berlin's offsets: its days are Berlin's")
	}
	if daysValid([]DayRow{{S: day("2026-03-29", berlin).s, E: day("2026-03-29", berlin).e, Day: "2026-03-29", Zone: "3600,1774746000,7200"}}, loadZone(t, "Europe/London")) {
		t.Errorf("London's days taken for Berlin's")
	}
}

// rollupLedger is a ledger of zone loc with random usage over days days from
// from, and the summary it writes: a base, then a committed batch.
func rollupLedger(t testing.TB, rng *rand.Rand, loc *time.Location, from string, days, credits int) (*Ledger, []byte) {
	t.Helper()
	l := newLedger(t.TempDir())
	l.loc = loc
	start, _ := time.Parse(time.DateOnly, from)
	q0 := Quarter(start.UnixMilli())
	var all []*unitRec
	for i := 0; i < 1+rng.IntN(min(200, credits)); i++ {
		r := (&unitRec{Unit: fmt.Sprint(i), unitBody: &unitBody{}}).
			filedAs([]string{"claude", "codex", "gemini"}[rng.IntN(3)], sid(rng.IntN(40)), "main", []string{"/a", "/b\tc", `/d\e`}[rng.IntN(3)])
		l.units.put(r)
		l.file(r, 1)
		all = append(all, r)
	}
	models := []string{"claude-opus-4-5", "claude-sonnet-4-5", "gpt-5", "no-price-model", "m\tx"}
	credit := func(n int) {
		for k := 0; k < n; k++ {
			r := all[rng.IntN(len(all))]
			q := q0 + int32(rng.IntN(days*96))
			r.acc.credit(q, models[rng.IntN(len(models))], Tokens{int64(rng.IntN(5000)), int64(rng.IntN(900)), int64(rng.IntN(70)), int64(rng.IntN(100000))}, 1, l.observe(r))
		}
	}
	credit(1 + rng.IntN(credits))
	l.settleGroups(false)
	base := l.renderSummary()
	clear(l.dirtyRows)
	clear(l.dirtyDays)
	credit(1 + rng.IntN(credits/5+1)) // a batch after the base
	batch := l.appendChanged(nil, l.settleGroups(true))
	return l, append(append(base, batch...), 'C', '\n')
}

func writeSummaryFile(t testing.TB, data []byte) string {
	t.Helper()
	state := t.TempDir()
	os.MkdirAll(filepath.Join(state, DirName), 0o700)
	if err := os.WriteFile(filepath.Join(state, DirName, SummaryName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return state
}

// rollupQueries are the reports the D rows answer, with every filter they take.
func rollupQueries(loc *time.Location, from string) []Query {
	start, _ := time.Parse(time.DateOnly, from)
	d1, d2 := start.AddDate(0, 0, 2).Format(time.DateOnly), start.AddDate(0, 0, 4).Format(time.DateOnly)
	var qs []Query
	for _, period := range []string{"daily", "weekly", "monthly"} {
		for _, by := range []bool{false, true} {
			for _, src := range []map[string]bool{nil, {"claude": true}, {"codex": true, "gemini": true}} {
				for _, r := range [][2]string{{"", ""}, {d1, ""}, {"", d1}, {d2, d2}} {
					qs = append(qs, Query{Period: period, ByModel: by, Sources: src, Since: r[0], Until: r[1], Loc: loc})
				}
			}
		}
	}
	return qs
}

// reportJSON is a report as `usage --json` prints it.
func reportJSON(t testing.TB, s *Summary, q Query) string {
	t.Helper()
	b, err := json.Marshal(BuildReport(s, q, NewPrices(nil)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A daily, weekly or monthly report over every project from the D rows is the
// report from the B rows, byte for byte, with any filter, in the writer's zone
// and in a zone with its offsets; another zone reads the B rows.
func TestDaysAnswerEqualsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, z := range rollupZones {
		loc := loadZone(t, z.name)
		_, data := rollupLedger(t, rng, loc, z.from, z.days, 1500)
		state := writeSummaryFile(t, data)
		rows, err := ParseSummary(data, Want{NoSessions: true})
		if err != nil || rows.FromDays || len(rows.Rows) == 0 {
			t.Fatalf("%s: the B rows: %v, %d rows", z.name, err, len(rows.Rows))
		}
		for _, reader := range []string{z.name, "UTC", "America/Los_Angeles"} {
			rloc := loadZone(t, reader)
			wantDays := sameOffsets(loc, rloc, z.from, z.days)
			queries := rollupQueries(rloc, z.from)
			want := make([]string, len(queries))
			for i, q := range queries {
				want[i] = reportJSON(t, rows, q)
			}
			for _, read := range []func() (*Summary, error){
				func() (*Summary, error) { return ReadSummary(state, Want{NoSessions: true, Days: rloc}) },
				func() (*Summary, error) { return ParseSummary(data, Want{NoSessions: true, Days: rloc}) },
			} {
				days, err := read()
				if err != nil {
					t.Fatal(err)
				}
				if days.FromDays != wantDays {
					t.Fatalf("written in %s, read in %s: FromDays %v, want %v", z.name, reader, days.FromDays, wantDays)
				}
				if days.FromDays && days.Rows != nil {
					t.Fatalf("%s: B rows read though the D rows answer", z.name)
				}
				for i, q := range queries {
					if got := reportJSON(t, days, q); got != want[i] {
						t.Fatalf("written in %s, read in %s, %+v:\nfrom the D rows %s\nfrom the B rows %s", z.name, reader, q, got, want[i])
					}
				}
			}
		}
	}
}

// sameOffsets reports whether a and b have the same UTC offsets at every
// instant of the days (and a day either side).
func sameOffsets(a, b *time.Location, from string, days int) bool {
	start, _ := time.Parse(time.DateOnly, from)
	for t := start.AddDate(0, 0, -1); t.Before(start.AddDate(0, 0, days+1)); t = t.Add(time.Minute) {
		_, x := t.In(a).Zone()
		_, y := t.In(b).Zone()
		if x != y {
			return false
		}
	}
	return true
}

// A rollup that cannot be trusted is never read: a batch torn before its commit
// line, D rows of another zone (or a zone changed in the file), and a summary
// of the previous version, which has none. Each reads the B rows and gives
// their answer; a D section that disagrees with the B rows is not what the
// units add up to (Open rewrites it; reindex --check reports it).
func TestDaysNotUsedWhenUntrusted(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	berlin := loadZone(t, "Europe/Berlin")
	l, data := rollupLedger(t, rng, berlin, "2026-03-26", 6, 1500)
	if !l.sameAsSummary(mustParse(t, data, Want{}), false) || !daysAddUp(mustParse(t, data, Want{})) {
		t.Fatal("the summary written is not the ledger's totals")
	}
	answer := func(name string, data []byte, loc *time.Location, wantDays bool) {
		t.Helper()
		state := writeSummaryFile(t, data)
		rows, err := ParseSummary(data, Want{NoSessions: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := ReadSummary(state, Want{NoSessions: true, Days: loc})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.FromDays != wantDays {
			t.Fatalf("%s: FromDays %v, want %v", name, got.FromDays, wantDays)
		}
		for _, q := range rollupQueries(loc, "2026-03-26") {
			if a, b := reportJSON(t, got, q), reportJSON(t, rows, q); a != b {
				t.Fatalf("%s: %+v:\ngot  %s\nwant %s", name, q, a, b)
			}
		}
	}
	answer("as written", data, berlin, true)

	// A batch torn before its commit line: its D rows are not counted.
	clear(l.dirtyRows)
	clear(l.dirtyDays)
	for r := range l.units.all() {
		r.acc.credit(Quarter(time.Date(2026, 3, 27, 9, 0, 0, 0, berlin).UnixMilli()), "claude-opus-4-5", Tokens{1_000_000, 0, 0, 0}, 1, l.observe(r))
		break
	}
	torn := l.appendChanged(nil, l.settleGroups(true))
	if !bytes.Contains(torn, []byte("\nD\t")) && torn[0] != 'D' {
		t.Fatalf("the batch has no D row:\n%s", torn)
	}
	answer("a torn batch", append(append([]byte(nil), data...), torn...), berlin, true)
	tornWhole := mustParse(t, append(append([]byte(nil), data...), torn...), Want{NoSessions: true, Days: berlin})
	if !bytes.Equal([]byte(reportJSON(t, tornWhole, Query{Period: "daily", Loc: berlin})), []byte(reportJSON(t, mustParse(t, data, Want{NoSessions: true, Days: berlin}), Query{Period: "daily", Loc: berlin}))) {
		t.Fatal("a torn batch's D rows were counted")
	}
	// The same batch committed is counted.
	committed := append(append(append([]byte(nil), data...), torn...), 'C', '\n')
	if reportJSON(t, mustParse(t, committed, Want{NoSessions: true, Days: berlin}), Query{Period: "daily", Loc: berlin}) == reportJSON(t, mustParse(t, data, Want{NoSessions: true, Days: berlin}), Query{Period: "daily", Loc: berlin}) {
		t.Fatal("a committed batch's D rows changed nothing")
	}
	answer("a committed batch", committed, berlin, true)

	// Read in another zone.
	answer("read in London", data, loadZone(t, "Europe/London"), false)
	answer("read in UTC", data, time.UTC, false)

	// D rows whose zone was changed in the file (one row is enough: the last
	// batch's last).
	i := bytes.LastIndex(data, []byte("\nD\t"))
	f := strings.SplitN(string(data[i+1:]), "\t", 6)
	if i < 0 || len(f) < 6 || f[4] != "3600" && f[4] != "7200" {
		t.Fatalf("no D row of Berlin's in the batch: %q", f)
	}
	f[4] = "-3600"
	other := append(append([]byte(nil), data[:i+1]...), strings.Join(f, "\t")...)
	answer("a row of another zone", other, berlin, false)

	// The previous version: no D section.
	v2 := previousVersion(t, data)
	answer("version 2", v2, berlin, false)

	// D rows that are not what the B rows add up to.
	j := bytes.Index(data, []byte("\nD\t"))
	k := bytes.IndexByte(data[j+1:], '\n') + j + 1
	line := string(data[j+1 : k])
	f = strings.Split(line, "\t")
	f[7] = fmt.Sprint(mustAtoi(t, f[7]) + 1)
	bad := append(append(append([]byte(nil), data[:j+1]...), strings.Join(f, "\t")...), data[k:]...)
	for _, anyZone := range []bool{false, true} {
		if l.sameAsSummary(mustParse(t, bad, Want{}), anyZone) {
			t.Fatalf("a D row that is not what the B rows add up to taken for the totals (any zone: %v)", anyZone)
		}
	}
	// A check run in another zone (UTC) than the writer's (Berlin): the D rows
	// add up (reindex --check finds nothing wrong), but they are not the days
	// of a writer in UTC (which rewrites them).
	utc := l.loc
	l.loc, l.segs, l.days = time.UTC, nil, map[rowID]Tokens{}
	for id, t := range l.rows.all() {
		l.addDay(l.rowKeyOf(id), t, 1)
	}
	whole := mustParse(t, committed, Want{}) // what l holds now
	if !l.sameAsSummary(whole, true) || l.sameAsSummary(whole, false) {
		t.Errorf("Berlin's D rows checked in UTC: any zone %v, this zone %v; want true, false", l.sameAsSummary(whole, true), l.sameAsSummary(whole, false))
	}
	l.loc = utc
	// Runs that overlap, and a B row outside every run.
	over := mustParse(t, data, Want{})
	over.Days[len(over.Days)-1].S--
	if daysAddUp(over) {
		t.Error("overlapping runs taken for days")
	}
	short := mustParse(t, data, Want{})
	short.Days = short.Days[1:]
	if daysAddUp(short) {
		t.Error("D rows missing a day taken for the B rows' sum")
	}
}

func mustParse(t testing.TB, data []byte, w Want) *Summary {
	t.Helper()
	s, err := ParseSummary(data, w)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAtoi(t testing.TB, s string) int64 {
	t.Helper()
	v, ok := num([]byte(s))
	if !ok {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// previousVersion is data as the previous version wrote it: no D section or
// rows, a version 2 header.
func previousVersion(t testing.TB, data []byte) []byte {
	t.Helper()
	h, start, err := parseSummaryHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := json.Marshal(map[string]any{"version": 2, "generator": "sessionwatch", "sessions": h.Sessions, "rows": h.Rows})
	out := append(hdr, '\n')
	for _, line := range bytes.SplitAfter(data[start+h.Days:], []byte("\n")) {
		if len(line) > 0 && line[0] != 'D' {
			out = append(out, line...)
		}
	}
	return out
}

// FuzzParseSummary: any summary file is read without a panic; D rows read as
// days of a zone are days of it, and reading only the parts asked for
// (readSummaryParts) finds what the whole parse finds.
func FuzzParseSummary(f *testing.F) {
	berlin := loadZone(f, "Europe/Berlin")
	rng := rand.New(rand.NewPCG(1, 2))
	_, data := rollupLedger(f, rng, berlin, "2026-03-28", 2, 12)
	f.Add(data)
	f.Add(data[:len(data)-2]) // a torn batch
	f.Add(previousVersion(f, data))
	f.Add([]byte("{\"version\":3,\"days\":60}\nD\t1\t2\t1970-01-01\t0\tclaude\tm\t1\t2\t3\t4\n"))
	f.Add([]byte("{\"version\":3,\"days\":0}\nD\t5\t2\t1970-01-01\t0\tc\tm\t1\t2\t3\t4\nC\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseSummary(data, Want{}); err != nil {
			return
		}
		for _, loc := range []*time.Location{berlin, time.UTC} {
			w := Want{NoSessions: true, Days: loc}
			whole, err := ParseSummary(data, w)
			if err != nil {
				t.Fatalf("read whole, then with %v: %v", w, err)
			}
			if whole.FromDays && !daysValid(whole.Days, loc) {
				t.Fatalf("D rows read as days of %s that are not: %+v", loc, whole.Days)
			}
			for _, r := range whole.Days {
				if r.E <= r.S {
					t.Fatalf("a D row of no quarter hours: %+v", r)
				}
			}
			part, ok := readSummaryParts(bytes.NewReader(data), int64(len(data)), w)
			if ok && fmt.Sprint(part) != fmt.Sprint(whole) {
				t.Fatalf("read in parts %+v, whole %+v", part, whole)
			}
		}
	})
}

// reindex --check (Compare) reports a summary whose D rows are not what its B
// rows add up to, or that has none (the previous version); the next writer's
// Open rewrites it, D rows included.
func TestRollupCheckedAndRepaired(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+
		claudeLine("2026-03-01T23:50:00Z", "m1", "r1", "opus", 10, 1, 100, 1000, "")+"\n"+
		claudeLine("2026-03-02T00:10:00Z", "m2", "r2", "sonnet", 1, 2, 3, 4, "")+"\n")
	f.pass()
	path := filepath.Join(f.state, DirName, SummaryName)
	good, err := os.ReadFile(path)
	if err != nil || bytes.Count(good, []byte("\nD\t")) != 2 {
		t.Fatalf("want two D rows (two days) in:\n%s", good)
	}
	if d := f.check(); len(d) != 0 {
		t.Fatalf("a ledger just written differs from a rebuild: %v", d)
	}
	i := bytes.Index(good, []byte("\nD\t"))
	line := good[i+1 : i+1+bytes.IndexByte(good[i+1:], '\n')]
	tokens := bytes.Split(line, []byte("\t"))[7]
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"a D row's tokens changed", bytes.Replace(good, line, bytes.Replace(line, append([]byte("\t"), tokens...), []byte("\t9"), 1), 1)},
		{"the previous version", previousVersion(t, good)},
	} {
		if bytes.Equal(c.data, good) {
			t.Fatalf("%s: nothing changed", c.name)
		}
		os.WriteFile(path, c.data, 0o600)
		if d := f.check(); len(d) != 1 || !strings.Contains(d[0], SummaryName) {
			t.Errorf("%s: reindex --check found %q, want the summary", c.name, d)
		}
		f.pass()
		if d := f.check(); len(d) != 0 {
			t.Errorf("%s: after a writer's Open the ledger differs from a rebuild: %v", c.name, d)
		}
		got, _ := os.ReadFile(path)
		a, b := mustParse(t, got, Want{}), mustParse(t, good, Want{})
		if fmt.Sprint(a.Days, a.Rows) != fmt.Sprint(b.Days, b.Rows) {
			t.Errorf("%s: rewritten as\n%s\nwant\n%s", c.name, got, good)
		}
	}
}
