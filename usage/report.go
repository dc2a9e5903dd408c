package usage

import (
	"sort"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
)

// Periods a report groups by.
var Periods = []string{"daily", "weekly", "monthly", "session", "project"}

// Query chooses what a report covers.
type Query struct {
	Period   string          // one of Periods
	Since    string          // first day (YYYY-MM-DD, in Loc), "" for no bound
	Until    string          // last day, inclusive
	Sources  map[string]bool // nil: every source
	Projects map[string]bool // nil: every project
	ByModel  bool
	Loc      *time.Location // the days' time zone
}

// ReportRow is one row of a report (and its --json form).
type ReportRow struct {
	Key        string   `json:"key"`
	Source     string   `json:"source,omitempty"`
	Project    string   `json:"project,omitempty"`
	Model      string   `json:"model,omitempty"`
	Models     []string `json:"models"`
	Input      int64    `json:"inputTokens"`
	Output     int64    `json:"outputTokens"`
	CacheWrite int64    `json:"cacheWriteTokens"`
	CacheRead  int64    `json:"cacheReadTokens"`
	Total      int64    `json:"totalTokens"`
	Cost       *float64 `json:"cost"` // null when a model has no price
	LastActive string   `json:"lastActive,omitempty"`
}

// Report is a usage report.
type Report struct {
	Period     string      `json:"period"`
	TimeZone   string      `json:"timeZone"`
	PricesDate string      `json:"pricesDate"`
	Rows       []ReportRow `json:"rows"`
	Totals     ReportRow   `json:"totals"`
	Unpriced   []string    `json:"unpricedModels"`
}

type acc struct {
	row    ReportRow
	t      Tokens
	cost   float64
	priced bool
	models map[string]Tokens // the tokens of each model
	last   int32
}

// DayOf is the day (YYYY-MM-DD, in loc) of quarter hour q.
func DayOf(q int32, loc *time.Location) string {
	return time.UnixMilli(int64(q) * QuarterMillis).In(loc).Format(time.DateOnly)
}

func periodKey(period string, q int32, loc *time.Location) string {
	t := time.UnixMilli(int64(q) * QuarterMillis).In(loc)
	switch period {
	case "weekly": // the Monday that starts the week
		wd := (int(t.Weekday()) + 6) % 7
		return time.Date(t.Year(), t.Month(), t.Day()-wd, 12, 0, 0, 0, loc).Format(time.DateOnly)
	case "monthly":
		return t.Format("2006-01")
	}
	return t.Format(time.DateOnly)
}

// DaysAnswer reports whether a summary read with Want.Days can answer q: a
// daily, weekly or monthly report over every project.
func (q Query) DaysAnswer() bool {
	return q.Projects == nil && (q.Period == "daily" || q.Period == "weekly" || q.Period == "monthly")
}

// BuildReport adds up a summary as q asks, pricing each model with prices. A
// summary read with Want.Days (FromDays) must be one q.DaysAnswer allows. Each
// row's cost is priced from its tokens per model, so a report adds up to the same
// bytes from the B rows or the D rows.
func BuildReport(s *Summary, q Query, prices *Prices) Report {
	if q.Loc == nil {
		q.Loc = time.Local
	}
	rep := Report{Period: q.Period, TimeZone: q.Loc.String(), PricesDate: DefaultPrices().Date, Rows: []ReportRow{}, Unpriced: []string{}}
	groups := map[[3]string]*acc{}
	lastQ, lastDay, lastKey := int32(0), "", ""
	dayKey := func(quarter int32) (string, string) {
		if quarter != lastQ || lastDay == "" {
			lastQ, lastDay, lastKey = quarter, DayOf(quarter, q.Loc), periodKey(q.Period, quarter, q.Loc)
		}
		return lastDay, lastKey
	}
	inRange := func(day string) bool {
		return (q.Since == "" || day >= q.Since) && (q.Until == "" || day <= q.Until)
	}
	add := func(key [3]string, base ReportRow, model string, t Tokens, last int32) {
		if q.ByModel {
			key[2] = model
			base.Model = model
		}
		a := groups[key]
		if a == nil {
			a = &acc{row: base, priced: true, models: map[string]Tokens{}, last: last}
			groups[key] = a
		}
		a.t.Add(t)
		mt := a.models[model]
		mt.Add(t)
		a.models[model] = mt
		a.last = max(a.last, last)
	}
	keep := func(src, proj string) bool {
		return (q.Sources == nil || q.Sources[src]) && (q.Projects == nil || q.Projects[proj])
	}
	switch {
	case q.Period == "session":
		for _, r := range s.Sessions {
			if !keep(r.Source, r.Project) || !inRange(DayOf(r.Last, q.Loc)) && !inRange(DayOf(r.First, q.Loc)) {
				continue
			}
			add([3]string{r.Source, r.Session}, ReportRow{Key: r.Session, Source: r.Source, Project: r.Project}, r.Model, r.T, r.Last)
		}
	case s.FromDays:
		if !q.DaysAnswer() {
			panic("usage: BuildReport: a summary of days cannot answer a " + q.Period + " report of some projects")
		}
		for _, r := range s.Days {
			if q.Sources != nil && !q.Sources[r.Source] || !inRange(r.Day) {
				continue
			}
			// Every quarter hour of the day has the same period key.
			_, k := dayKey(r.S)
			add([3]string{k}, ReportRow{Key: k}, r.Model, r.T, r.S)
		}
	default:
		for _, r := range s.Rows {
			if !keep(r.Source, r.Project) {
				continue
			}
			day, k := dayKey(r.Q)
			if !inRange(day) {
				continue
			}
			if q.Period == "project" {
				add([3]string{r.Project}, ReportRow{Key: r.Project}, r.Model, r.T, r.Q)
			} else {
				add([3]string{k}, ReportRow{Key: k}, r.Model, r.T, r.Q)
			}
		}
	}
	// A model's price is looked up once, not per row.
	type lookup struct {
		pr config.Price
		ok bool
	}
	priced := map[string]lookup{}
	unpriced := map[string]bool{}
	price := func(a *acc) {
		for m := range a.models {
			pl, seen := priced[m]
			if !seen {
				pl.pr, pl.ok = prices.Lookup(m)
				priced[m] = pl
			}
			if !pl.ok {
				a.priced = false
				unpriced[m] = true
			}
		}
		if a.priced {
			// In the models' order: the same sum however the tokens were added up.
			for _, m := range sortedModels(a.models) {
				a.cost += Cost(priced[m].pr, a.models[m])
			}
		}
	}
	accs := make([]*acc, 0, len(groups))
	for _, a := range groups {
		price(a)
		accs = append(accs, a)
	}
	sort.Slice(accs, func(i, j int) bool {
		a, b := accs[i], accs[j]
		if q.Period == "session" && a.last != b.last {
			return a.last < b.last
		}
		if a.row.Key != b.row.Key {
			return a.row.Key < b.row.Key
		}
		if a.row.Source != b.row.Source {
			return a.row.Source < b.row.Source
		}
		return a.row.Model < b.row.Model
	})
	tot := acc{priced: true, models: map[string]Tokens{}}
	for _, a := range accs {
		rep.Rows = append(rep.Rows, finish(a, q))
		tot.t.Add(a.t)
		tot.cost += a.cost
		tot.priced = tot.priced && a.priced
		for m := range a.models {
			tot.models[m] = Tokens{}
		}
	}
	tot.row.Key = "total"
	rep.Totals = finish(&tot, Query{})
	for m := range unpriced {
		rep.Unpriced = append(rep.Unpriced, m)
	}
	sort.Strings(rep.Unpriced)
	return rep
}

func sortedModels(m map[string]Tokens) []string {
	ms := make([]string, 0, len(m))
	for k := range m {
		ms = append(ms, k)
	}
	sort.Strings(ms)
	return ms
}

func finish(a *acc, q Query) ReportRow {
	r := a.row
	r.Input, r.Output, r.CacheWrite, r.CacheRead, r.Total = a.t.Input, a.t.Output, a.t.CacheWrite, a.t.CacheRead, a.t.Total()
	if a.priced {
		c := a.cost
		r.Cost = &c
	}
	r.Models = sortedModels(a.models)
	if q.Period == "session" && q.Loc != nil {
		r.LastActive = time.UnixMilli(int64(a.last) * QuarterMillis).In(q.Loc).Format("2006-01-02 15:04")
	}
	return r
}
