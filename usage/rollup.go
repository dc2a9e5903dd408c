package usage

import (
	"sort"
	"strconv"
	"time"
)

// The summary's D rows: the B rows added up per day of the writer's time zone,
// source and model (docs/usage.md, "The per-day rollup"). A `daily`, `weekly`
// or `monthly` report over every project (`--all`) in the same zone reads these
// few hundred rows instead of the tens of thousands of quarter-hour B rows.
//
// A D row is valid for a reader's zone only if that zone puts every quarter
// hour of the row's day where the writer's did. Each row says so itself: the
// day's quarter hours [S, E) (a run of consecutive quarter hours of one local
// day in the writer's zone) and the zone's UTC offsets over them (Zone: the
// offset at S, then each transition inside the run and the offset after it).
// Local dates depend on the offset only, so a reader whose zone has the same
// offsets over [S, E) puts every quarter hour of it on the same day; one whose
// zone differs on any row reads the B rows instead.

// DayRow is a D row: the usage of one day of a time zone, source and model.
type DayRow struct {
	S, E   int32  // the day's quarter hours, [S, E)
	Day    string // YYYY-MM-DD in the writer's zone
	Zone   string // the zone's offsets over [S, E) (zoneOver)
	Source string
	Model  string
	T      Tokens
}

// daySeg is a run of quarter hours of one local day: the key of D rows.
type daySeg struct {
	s, e      int32
	day, zone string
}

// zoneOver describes loc's UTC offsets over the quarter hours [s, e): the offset
// (seconds) at s, then for each transition inside the range its time (Unix
// seconds) and the offset from then on, comma-separated.
func zoneOver(s, e int32, loc *time.Location) string {
	from := time.UnixMilli(int64(s) * QuarterMillis).In(loc)
	end := int64(e) * QuarterMillis
	_, off := from.Zone()
	b := strconv.AppendInt(nil, int64(off), 10)
	for t := from; ; {
		_, zend := t.ZoneBounds()
		if zend.IsZero() || zend.UnixMilli() >= end || !zend.After(t) {
			break
		}
		t = zend.In(loc)
		_, off := t.Zone()
		b = append(b, ',')
		b = strconv.AppendInt(b, zend.Unix(), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(off), 10)
	}
	return string(b)
}

// ceilQuarter is the first quarter hour that starts at or after ms.
func ceilQuarter(ms int64) int32 {
	q := Quarter(ms)
	if int64(q)*QuarterMillis < ms {
		q++
	}
	return q
}

// segmentOf is the run of quarter hours around q that loc puts on q's day. It
// jumps to the day's midnight within a stretch of constant offset and steps
// across a transition one quarter hour at a time, so it is exact in any zone
// (DayOf decides), including ones whose clocks go back across midnight.
func segmentOf(q int32, loc *time.Location) daySeg {
	day := DayOf(q, loc)
	s := q
	for {
		t := time.UnixMilli(int64(s) * QuarterMillis).In(loc)
		zstart, _ := t.ZoneBounds()
		mid := int64(s)*QuarterMillis - sinceMidnight(t)
		j := ceilQuarter(mid)
		if !zstart.IsZero() && zstart.UnixMilli() > mid {
			j = ceilQuarter(zstart.UnixMilli())
		}
		s = min(s, j) // every quarter hour in [j, s] is of day (one offset, one local day)
		if DayOf(s-1, loc) != day {
			break
		}
		s--
	}
	e := q + 1
	for {
		t := time.UnixMilli(int64(e-1) * QuarterMillis).In(loc)
		_, zend := t.ZoneBounds()
		next := int64(e-1)*QuarterMillis - sinceMidnight(t) + 24*3600*1000
		j := ceilQuarter(next)
		if !zend.IsZero() && zend.UnixMilli() < next {
			j = ceilQuarter(zend.UnixMilli())
		}
		e = max(e, j)
		if DayOf(e, loc) != day {
			break
		}
		e++
	}
	return daySeg{s: s, e: e, day: day, zone: zoneOver(s, e, loc)}
}

// sinceMidnight is how far t is into its local day, in milliseconds, as its
// clock reads.
func sinceMidnight(t time.Time) int64 {
	return int64(t.Hour())*3600000 + int64(t.Minute())*60000 + int64(t.Second())*1000 + int64(t.Nanosecond()/1e6)
}

// segFor is the day run of quarter hour q in the ledger's zone (cached: the
// runs found so far, sorted by start).
func (l *Ledger) segFor(q int32) daySeg {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].e > q })
	if i < len(l.segs) && l.segs[i].s <= q {
		return l.segs[i]
	}
	g := segmentOf(q, l.loc)
	l.segs = append(l.segs, daySeg{})
	copy(l.segs[i+1:], l.segs[i:])
	l.segs[i] = g
	return g
}

// segAt is the cached run that starts at s.
func (l *Ledger) segAt(s int32) (daySeg, bool) {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].e > s })
	if i < len(l.segs) && l.segs[i].s == s {
		return l.segs[i], true
	}
	return daySeg{}, false
}

// addDay changes the D row of B row rk by t (sign 1 or -1).
func (l *Ledger) addDay(rk rowKey, t Tokens, sign int) {
	g := l.segFor(rk.q)
	addTokens(l.days, l.dirtyDays, l.rowIDOf(rowKey{g.s, rk.src, "", rk.model}), t, sign)
}

// dayRowOf is the D row of day key k with tokens t.
func (l *Ledger) dayRowOf(k rowID, t Tokens) DayRow {
	g, _ := l.segAt(k.q) // every key's run was cached by addDay
	c := l.cols[k.c]
	return DayRow{S: g.s, E: g.e, Day: g.day, Zone: g.zone, Source: c.src, Model: c.model, T: t}
}

// appendDay appends a D row.
func appendDay(b []byte, r *DayRow) []byte {
	b = append(b, 'D')
	b = appendInts(b, int64(r.S), int64(r.E))
	b = appendField(b, r.Day)
	b = appendField(b, r.Zone)
	b = appendField(b, r.Source)
	b = appendField(b, r.Model)
	b = appendInts(b, r.T.Input, r.T.Output, r.T.CacheWrite, r.T.CacheRead)
	return append(b, '\n')
}

// renderDays is the D section: every D row, sorted by day, source and model.
func (l *Ledger) renderDays(b []byte) []byte {
	for _, id := range sortedRows(l, l.days) {
		r := l.dayRowOf(id, l.days[id])
		b = appendDay(b, &r)
	}
	return b
}

// dayKey is a D row's key within one summary: the day's first quarter hour,
// source and model (one summary's D rows are all of its writer's zone).
type dayKey struct {
	s          int32
	src, model string
}

// daysValid reports whether every D row holds days as loc has them: the same
// offsets over the row's quarter hours, and so the same day.
func daysValid(rows []DayRow, loc *time.Location) bool {
	var last DayRow
	for i, r := range rows {
		if i > 0 && r.S == last.S && r.E == last.E && r.Day == last.Day && r.Zone == last.Zone {
			continue
		}
		if r.E <= r.S || zoneOver(r.S, r.E, loc) != r.Zone || DayOf(r.S, loc) != r.Day {
			return false
		}
		last = r
	}
	return true
}

// maxDayQuarters bounds a D row's run: no local day is longer than 26 hours
// (twice that, to be safe); a longer one is not a D row this ledger wrote.
const maxDayQuarters = 2 * 26 * 4

// dayRow parses a D row.
func (p *summaryReader) dayRow(line []byte) (DayRow, bool) {
	var r DayRow
	var se [2]int64
	var n [4]int64
	if len(line) == 0 || line[0] != 'D' || !p.split(line[1:], 10) || !p.nums(0, se[:]) || !p.nums(6, n[:]) {
		return r, false
	}
	if se[0] < -1<<31 || se[1] > 1<<31-1 || se[1] <= se[0] || se[1]-se[0] > maxDayQuarters {
		return r, false
	}
	r.S, r.E = int32(se[0]), int32(se[1])
	r.Day, r.Zone, r.Source, r.Model = p.str(p.f[2]), p.str(p.f[3]), p.str(p.f[4]), p.str(p.f[5])
	r.T = Tokens{n[0], n[1], n[2], n[3]}
	return r, true
}

// sortDays sorts D rows as the summary does: by day, source, model.
func sortDays(rs []DayRow) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		return rowKey{a.S, a.Source, "", a.Model}.less(rowKey{b.S, b.Source, "", b.Model})
	})
}

// sameDays reports whether the summary's D rows are the ledger's: its B rows
// added up per day of the ledger's zone.
func (l *Ledger) sameDays(s *Summary) bool {
	if len(s.Days) != len(l.days) {
		return false
	}
	for _, r := range s.Days {
		id, ok := l.findRow(rowKey{r.S, r.Source, "", r.Model})
		if !ok || l.days[id] != r.T || l.dayRowOf(id, r.T) != r {
			return false
		}
	}
	return true
}

// daysAddUp reports whether a summary's D rows are its B rows added up per day
// of some zone, whichever: their runs of quarter hours do not overlap, each B
// row falls in a run, and each D row is the sum of the B rows of its run,
// source and model. (Whether a run is a day of a reader's zone, each reader
// checks: daysValid.) reindex --check asks this, not sameDays, so that a check
// run in another zone than the daemon's finds nothing wrong.
func daysAddUp(s *Summary) bool {
	type run struct {
		s, e      int32
		day, zone string
	}
	var runs []run
	for i, r := range s.Days {
		if i > 0 && r.S == runs[len(runs)-1].s {
			if g := runs[len(runs)-1]; g.e != r.E || g.day != r.Day || g.zone != r.Zone {
				return false
			}
			continue
		}
		if len(runs) > 0 && r.S < runs[len(runs)-1].e {
			return false
		}
		runs = append(runs, run{r.S, r.E, r.Day, r.Zone})
	}
	sums := map[dayKey]Tokens{}
	for _, b := range s.Rows {
		i := sort.Search(len(runs), func(i int) bool { return runs[i].e > b.Q })
		if i == len(runs) || runs[i].s > b.Q {
			return false
		}
		k := dayKey{runs[i].s, b.Source, b.Model}
		t := sums[k]
		t.Add(b.T)
		sums[k] = t
	}
	n := 0
	for _, r := range s.Days {
		if sums[dayKey{r.S, r.Source, r.Model}] != r.T {
			return false
		}
		n++
	}
	return n == len(sums)
}
