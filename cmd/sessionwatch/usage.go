package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/usage"
)

const usageUsage = `sessionwatch usage [daily|weekly|monthly|session|project] [--since D] [--until D] [--source S] [--all] [--by model] [--json] [--utc]   (example: sessionwatch usage daily --all --since 2026-03-01 --by model)
Tokens the agents spent and what they cost, per day, week, month, session or project.
'sessionwatch usage --statusline [--session ID]' prints one short line for a status bar.`

// usageStdin is where --statusline reads Claude Code's JSON from (tests replace it).
var usageStdin io.Reader = os.Stdin

func cmdUsage(e *env, args []string) error {
	fs := newFlags(e, "usage", usageUsage)
	since := fs.String("since", "", "first day, YYYY-MM-DD or YYYYMMDD")
	until := fs.String("until", "", "last day (inclusive)")
	source := fs.String("source", "", "only this source")
	all := fs.Bool("all", false, "every project, not only the current directory's")
	by := fs.String("by", "", "break rows down: model")
	asJSON := fs.Bool("json", false, "print JSON")
	utc := fs.Bool("utc", false, "days in UTC instead of the local time zone")
	statusline := fs.Bool("statusline", false, "one short line: today's cost and tokens (and the session's)")
	session := fs.String("session", "", "with --statusline: this session's usage too")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	// --statusline is its own mode: refuse the report's flags rather than
	// silently ignore them, and --session outside it.
	if *session != "" && !*statusline {
		return usageErr("example: sessionwatch usage --statusline --session ID", "usage: --session needs --statusline")
	}
	if *statusline {
		if len(pos) > 0 {
			return usageErr("run 'sessionwatch usage --help'", "usage: --statusline takes no report (got %q)", pos[0])
		}
		for _, name := range []string{"since", "until", "source", "all", "by", "json"} {
			if flagSet(fs, name) {
				return usageErr("--statusline takes only --session and --utc", "usage: --statusline takes no --%s", name)
			}
		}
	}
	period := "daily"
	if len(pos) > 1 {
		return usageErr("", "usage: unexpected argument %q", pos[1])
	}
	if len(pos) == 1 {
		period = pos[0]
	}
	if !slices.Contains(usage.Periods, period) {
		return usageErr("use daily, weekly, monthly, session or project", "usage: unknown report %q", period)
	}
	if *by != "" && *by != "model" {
		return usageErr("use --by model", "usage: invalid --by %q", *by)
	}
	var s, u string
	if s, err = normDay(*since); err != nil {
		return usageErr("write days as YYYY-MM-DD", "usage: invalid --since %q", *since)
	}
	if u, err = normDay(*until); err != nil {
		return usageErr("write days as YYYY-MM-DD", "usage: invalid --until %q", *until)
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	loc := time.Local
	if *utc {
		loc = time.UTC
	}
	prices := usage.NewPrices(cfg.Prices)
	if *statusline {
		return usageStatusline(e, cfg, prices, loc, *session)
	}
	q := usage.Query{Period: period, Since: s, Until: u, ByModel: *by == "model", Loc: loc}
	if *source != "" {
		if !slices.ContainsFunc(cfg.Sources, func(src config.Source) bool { return src.Name == *source }) {
			return usageErr("see 'sessionwatch config show' for the sources", "usage: unknown source %q", *source)
		}
		q.Sources = map[string]bool{*source: true}
	}
	if !*all {
		cwd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("find current directory: %w", err)
		}
		q.Projects = map[string]bool{}
		for _, p := range indexer.ProjectCandidates(cwd) {
			q.Projects[p] = true
		}
	}
	refreshForUsage(e, cfg)
	w := usage.Want{NoSessions: period != "session"}
	if q.DaysAnswer() {
		w.Days = loc // the per-day rollup, if it is of this zone
	}
	sum, err := usage.ReadSummary(cfg.StateDir, w)
	if err != nil {
		return failErr("run 'sessionwatch reindex' to rebuild it", "%v", err)
	}
	rep := usage.BuildReport(sum, q, prices)
	if *asJSON {
		return writeJSON(e.stdout, rep)
	}
	if len(rep.Rows) == 0 {
		where := "this project (--all for every project)"
		if *all {
			where = "any project"
		}
		fmt.Fprintf(e.stderr, "No usage recorded for %s in this range.\n", where)
		return nil
	}
	printUsage(e.stdout, rep, isTerminal(e.stdout) && (period == "daily" || period == "weekly"))
	if len(rep.Unpriced) > 0 {
		m := rep.Unpriced[0]
		fmt.Fprintf(e.stderr, "hint: no price for %s; set prices.%s in the config, e.g. \"prices\": {%s: {\"input\": 3, \"output\": 15, \"cache_write\": 3.75, \"cache_read\": 0.3}}\n",
			escapeCell(strings.Join(rep.Unpriced, ", ")), escapeCell(strconv.Quote(m)), escapeCell(strconv.Quote(m)))
	}
	return nil
}

func normDay(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	for _, layout := range []string{time.DateOnly, "20060102"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format(time.DateOnly), nil
		}
	}
	return "", fmt.Errorf("bad day")
}

func printUsage(w io.Writer, rep usage.Report, bars bool) {
	head := map[string]string{"daily": "DATE", "weekly": "WEEK OF", "monthly": "MONTH", "session": "SESSION", "project": "PROJECT"}[rep.Period]
	byModel := len(rep.Rows) > 0 && rep.Rows[0].Model != ""
	cols := []string{head}
	if rep.Period == "session" {
		cols = append(cols, "AGENT", "LAST ACTIVE")
	}
	if byModel {
		cols = append(cols, "MODEL")
	}
	cols = append(cols, "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "TOTAL", "COST")
	lines := [][]string{cols}
	var maxTotal int64
	for _, r := range rep.Rows {
		maxTotal = max(maxTotal, r.Total)
	}
	row := func(r usage.ReportRow) []string {
		key := r.Key
		if rep.Period == "session" && len(key) > 8 {
			key = key[:8]
		}
		c := []string{escapeCell(key)}
		if rep.Period == "session" {
			c = append(c, escapeCell(r.Source), r.LastActive)
		}
		if byModel {
			c = append(c, escapeCell(r.Model))
		}
		return append(c, tokenCount(r.Input), tokenCount(r.Output), tokenCount(r.CacheWrite), tokenCount(r.CacheRead), tokenCount(r.Total), costText(r.Cost))
	}
	for _, r := range rep.Rows {
		lines = append(lines, row(r))
	}
	tot := row(rep.Totals)
	if rep.Period == "session" {
		tot[1], tot[2] = "", ""
	}
	if byModel {
		tot[len(tot)-7] = ""
	}
	lines = append(lines, tot)
	width := make([]int, len(cols))
	for _, l := range lines {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	numeric := len(cols) - 6
	for li, l := range lines {
		var b strings.Builder
		for i, c := range l {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i >= numeric && li > 0 {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if i < len(l)-1 {
				b.WriteString("  ")
			}
		}
		if bars && li > 0 && li < len(lines)-1 && maxTotal > 0 {
			n := int((rep.Rows[li-1].Total*20 + maxTotal - 1) / maxTotal)
			b.WriteString("  " + strings.Repeat("█", n))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// tokenCount renders a count with thousands separators.
func tokenCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func costText(c *float64) string {
	if c == nil {
		return "?"
	}
	return fmt.Sprintf("$%.2f", *c)
}

// escapeCell shows control and invisible characters of transcript-derived text
// (project paths, model names) as Go escapes, so they never reach the terminal.
func escapeCell(s string) string {
	clean := true
	for _, r := range s {
		if !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// compactTokens renders a count as 1.2k / 3.4M.
func compactTokens(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

// usageStatusline prints one line from the ledger alone (no index pass): today's
// cost and tokens, and the session's when one is named (--session, or the JSON
// Claude Code pipes to its statusline command: {"session_id", …}).
func usageStatusline(e *env, cfg *config.Config, prices *usage.Prices, loc *time.Location, session string) error {
	if f, ok := usageStdin.(*os.File); session == "" && (!ok || !isTerminal(f)) {
		var in struct {
			SessionID string `json:"session_id"`
		}
		data, _ := io.ReadAll(io.LimitReader(usageStdin, 1<<20))
		if len(strings.TrimSpace(string(data))) > 0 {
			if err := json.Unmarshal(data, &in); err != nil {
				return usageErr("pipe Claude Code's statusline JSON, or pass --session ID", "usage --statusline: stdin is not JSON: %v", err)
			}
			session = in.SessionID
		}
	}
	now := time.Now().In(loc)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	from := usage.Quarter(midnight.UnixMilli())
	sum, err := usage.ReadSummary(cfg.StateDir, usage.Want{From: from, Session: session, NoSessions: session == ""})
	if err != nil {
		return failErr("run 'sessionwatch reindex' to rebuild it", "%v", err)
	}
	today := usage.BuildReport(sum, usage.Query{Period: "daily", Since: midnight.Format(time.DateOnly), Loc: loc}, prices)
	line := fmt.Sprintf("today %s · %s tok", costText(today.Totals.Cost), compactTokens(today.Totals.Total))
	if session != "" {
		rep := usage.BuildReport(&usage.Summary{Sessions: sum.Sessions}, usage.Query{Period: "session", Loc: loc}, prices)
		line += fmt.Sprintf(" | session %s · %s tok", costText(rep.Totals.Cost), compactTokens(rep.Totals.Total))
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}
