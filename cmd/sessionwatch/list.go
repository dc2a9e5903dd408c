package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// listed is one row of `list --json` (SPEC §6).
type listed struct {
	N            int    `json:"n"`
	ID           string `json:"id"`
	Source       string `json:"source"`
	Layout       string `json:"layout"`
	Project      string `json:"project"`
	Type         string `json:"type"`
	Title        string `json:"title"`
	FirstPrompt  string `json:"firstPrompt"`
	CreatedAt    string `json:"createdAt"`
	LastActiveAt string `json:"lastActiveAt"`
	MessageCount int    `json:"messageCount"`
	SizeBytes    int64  `json:"sizeBytes"`
	File         string `json:"file"`
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	InUse        bool   `json:"inUse"`
	Stale        bool   `json:"stale"`
	Invalid      bool   `json:"invalid"`
	Corrupt      bool   `json:"corrupt"`
	Hidden       bool   `json:"hidden,omitempty"` // the agent's own picker leaves it out
}

// scope is the set of sessions a command works on.
type scope struct {
	all     bool
	sources []string
	typ     string
}

// selectSessions reads the catalogs of the scope: the current directory's project,
// or every project.
func selectSessions(cfg *config.Config, sc scope) ([]indexer.Entry, error) {
	var projects []string
	if !sc.all {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find current directory: %w", err)
		}
		projects = indexer.ProjectCandidates(cwd)
	}
	entries, err := indexer.ReadCatalogs(cfg.StateDir, sc.sources, projects)
	if err != nil && len(entries) == 0 {
		return nil, err
	}
	return keepType(entries, sc.typ), nil
}

// keepType keeps the entries of a --type (hidden sessions: --type all only).
func keepType(entries []indexer.Entry, typ string) []indexer.Entry {
	if typ == "all" {
		return entries
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.Type == typ && !e.Hidden {
			kept = append(kept, e)
		}
	}
	return kept
}

// scopeFlags registers the flags that choose a scope, and --json (list, show).
func scopeFlags(e *env, name, usage string) *scopeFlagSet {
	s := addScopeFlags(newFlags(e, name, usage))
	s.fs.BoolVar(&s.json, "json", false, "print JSON")
	s.fs.BoolVar(&s.archived, "archived", false, "archived sessions (numbered as 'restore' reads them), with when and why they were archived")
	return s
}

// addScopeFlags registers --all, --source and --type on fs: the scope a REF
// resolves in is the one `list` shows with the same flags.
func addScopeFlags(fs *flag.FlagSet) *scopeFlagSet {
	s := &scopeFlagSet{fs: fs}
	fs.BoolVar(&s.all, "all", false, "every project, not only the current directory's")
	fs.StringVar(&s.source, "source", "", "only this source")
	fs.StringVar(&s.typ, "type", "main", "main, subagent or all")
	return s
}

type scopeFlagSet struct {
	fs       *flag.FlagSet
	all      bool
	source   string
	typ      string
	json     bool
	archived bool
}

// archivedScope is the scope among archived sessions: every type unless
// --type is given (an archived subagent is as findable as its parent), as
// `restore` reads them.
func (s *scopeFlagSet) archivedScope(sc scope) scope {
	if !flagSet(s.fs, "type") {
		sc.typ = "all"
	}
	return sc
}

func (s *scopeFlagSet) scope(cfg *config.Config) (scope, error) {
	sc := scope{all: s.all, typ: s.typ}
	switch s.typ {
	case "main", "subagent", "all":
	default:
		return sc, usageErr("use --type main, subagent or all", "%s: invalid --type %q", s.fs.Name(), s.typ)
	}
	if s.source != "" {
		found := false
		for _, src := range cfg.Sources {
			if src.Name == s.source {
				found = true
			}
		}
		if !found {
			return sc, usageErr("see 'sessionwatch config show' for the sources", "%s: unknown source %q", s.fs.Name(), s.source)
		}
		sc.sources = []string{s.source}
	}
	return sc, nil
}

func cmdList(e *env, args []string) error {
	f := scopeFlags(e, "list", "sessionwatch list [--all] [--source S] [--type main|subagent|all] [--archived] [--json]   (example: sessionwatch list --all)")
	pos, err := parseFlags(f.fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "list: unexpected argument %q", pos[0])
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	sc, err := f.scope(cfg)
	if err != nil {
		return err
	}
	if f.archived {
		return cmdListArchived(e, cfg, f.archivedScope(sc), f.json)
	}
	entries, err := refreshForListing(e, cfg, sc.sources).selectSessions(cfg, sc)
	if err != nil {
		return err
	}
	now := time.Now()
	inUse := janitor.NewLiveChecker(cfg)
	rows := make([]listed, len(entries))
	for i, en := range entries {
		rows[i] = toListedWith(cfg, i+1, en, now, inUse)
	}
	if f.json {
		return writeJSONRows(e.stdout, rows)
	}
	if len(rows) == 0 {
		explainEmpty(e, cfg, sc)
		return nil
	}
	printTable(e.stdout, rows, termWidth(e.stdout))
	return nil
}

// explainEmpty says on stderr why `list` printed nothing, and what to do
// (stdout stays empty for pipes): the directory and project looked for, the
// sessions of other projects, or that nothing is indexed yet.
func explainEmpty(e *env, cfg *config.Config, sc scope) {
	w := e.stderr
	if sc.all {
		fmt.Fprintln(w, "No sessions found")
	} else {
		fmt.Fprintln(w, "No sessions found for this project")
		if cwd, err := os.Getwd(); err == nil {
			cands := indexer.ProjectCandidates(cwd)
			fmt.Fprintf(w, "  looked in directory %s for project %s\n", showPath(cwd), showPath(cands[len(cands)-1]))
		}
	}
	wide := sc
	wide.all, wide.typ, wide.sources = true, "all", nil
	everything, _ := selectSessions(cfg, wide)
	if len(everything) == 0 {
		fmt.Fprintf(w, "  nothing indexed yet (%s holds no catalog): start the daemon ('sessionwatch run') or run 'sessionwatch reindex'\n", showPath(cfg.StateDir))
		return
	}
	if !sc.all {
		elsewhere := sc
		elsewhere.all = true
		others, _ := selectSessions(cfg, elsewhere)
		projects := map[string]bool{}
		for _, en := range others {
			projects[en.Project] = true
		}
		if len(others) > 0 {
			fmt.Fprintf(w, "  %d %s in %d other %s: sessionwatch list --all\n", len(others), plural(len(others), "session", "sessions"), len(projects), plural(len(projects), "project", "projects"))
			return
		}
	}
	fmt.Fprintf(w, "  %d %s indexed, none matching", len(everything), plural(len(everything), "session", "sessions"))
	if len(sc.sources) > 0 {
		fmt.Fprintf(w, " --source %s", termSafe(sc.sources[0]))
	}
	fmt.Fprintf(w, " --type %s: try --type all or another --source\n", sc.typ)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func toListed(cfg *config.Config, n int, en indexer.Entry, now time.Time) listed {
	return toListedWith(cfg, n, en, now, janitor.NewLiveChecker(cfg))
}

// toListedWith is toListed with a shared in-use checker, so a listing reads each
// agent's live registry once. inUse comes from the lock files and the live
// registries only: list and show do not scan /proc for open files (a walk of
// every process per listing); the janitor and delete do, before removing anything.
func toListedWith(cfg *config.Config, n int, en indexer.Entry, now time.Time, inUse *janitor.LiveChecker) listed {
	return listed{
		N: n, ID: en.ID, Source: en.Source, Layout: en.Layout, Project: en.Project, Type: en.Type,
		Title: en.Title, FirstPrompt: en.FirstPrompt, CreatedAt: en.CreatedAt, LastActiveAt: en.LastActiveAt,
		MessageCount: en.MessageCount, SizeBytes: en.SizeBytes, File: en.File, Provider: en.Provider, Model: en.Model,
		InUse: inUse.InUse(en).Held(), Stale: isStale(cfg, en, now), Invalid: en.Invalid, Corrupt: en.Corrupt,
		Hidden: en.Hidden,
	}
}

// isStale: the session is past its source's retention.
func isStale(cfg *config.Config, en indexer.Entry, now time.Time) bool {
	for _, src := range cfg.Sources {
		if src.Name == en.Source && src.Retention.Enabled() {
			last := indexer.ParseTime(en.LastActiveAt)
			return !last.IsZero() && now.Sub(last) > src.Retention.D
		}
	}
	return false
}

// listHeader is the table's header row.
var listHeader = [...]string{"#", "ID", "AGENT", "STARTED", "LAST ACTIVE", "MODEL", "MSGS", "SIZE", "TITLE"}

const (
	// maxTitle is the widest a TITLE cell gets, terminal or not.
	maxTitle = 60
	// minTitle is the narrowest TITLE a narrow terminal shrinks it to before
	// MODEL shrinks too.
	minTitle = 16
	// minModel is the narrowest MODEL cell.
	minModel = 8
)

// printTable writes the rows as text/tabwriter (padding 2) would lay them out:
// every column but the last as wide as its widest cell (in runes) plus two spaces.
// Within width columns (0: no limit) the TITLE column shrinks first, then MODEL,
// then STARTED is left out.
// It is written by hand because tabwriter was a quarter of `list --all` at 10,000
// rows; TestPrintTableMatchesTabwriter keeps the two identical.
func printTable(w io.Writer, rows []listed, width int) {
	const started, model, title = 3, 5, len(listHeader) - 1
	cells := make([][len(listHeader)]string, 0, len(rows)+1)
	cells = append(cells, listHeader)
	titles := make([]string, len(rows))
	for i, r := range rows {
		t := r.Title
		if t == "" {
			t = r.FirstPrompt
		}
		if r.Hidden {
			t = "(hidden) " + t
		}
		titles[i] = t
		cells = append(cells, [len(listHeader)]string{strconv.Itoa(r.N), termSafe(short(r.ID, 8)), termSafe(oneCell(r.Source)),
			localTime(r.CreatedAt), localTime(r.LastActiveAt), termSafe(oneCell(dash(r.Model))), strconv.Itoa(r.MessageCount),
			humanSize(r.SizeBytes), safeCell(t, maxTitle)})
	}
	var colw [len(listHeader)]int
	for _, row := range cells {
		for i := range colw {
			colw[i] = max(colw[i], utf8.RuneCountInString(row[i]))
		}
	}
	drop := -1 // a column left out of a narrow terminal
	if width > 0 {
		used := 0 // every column but TITLE, with its padding
		for i := range title {
			used += colw[i] + 2
		}
		if colw[title] > width-used {
			if width-used < minTitle && colw[model] > minModel {
				// TITLE alone cannot give enough: MODEL shrinks too.
				newModel := max(minModel, colw[model]-(minTitle-(width-used)))
				for i := range cells[1:] {
					cells[i+1][model] = cell(cells[i+1][model], newModel)
				}
				used -= colw[model] - newModel
				colw[model] = newModel
			}
			if width-used < minTitle {
				// Still too narrow (an 80-column terminal): STARTED goes; LAST
				// ACTIVE is what sorts the list.
				drop = started
				used -= colw[started] + 2
			}
			titleW := max(width-used, minTitle)
			for i := range rows {
				cells[i+1][title] = safeCell(titles[i], titleW)
			}
		}
	}
	const spaces = "                                                                "
	b := make([]byte, 0, 64<<10)
	for _, row := range cells {
		for i, c := range row[:title] {
			if i == drop {
				continue
			}
			b = append(b, c...)
			for pad := colw[i] + 2 - utf8.RuneCountInString(c); pad > 0; {
				n := min(pad, len(spaces))
				b = append(b, spaces[:n]...)
				pad -= n
			}
		}
		b = append(b, row[title]...)
		b = append(b, '\n')
		if len(b) > 60<<10 {
			if _, err := w.Write(b); err != nil {
				return
			}
			b = b[:0]
		}
	}
	w.Write(b)
}

// safeCell is cell(s, n) of text from outside: whitespace runs collapsed, control
// characters escaped (termSafe) before it is cut to n characters.
func safeCell(s string, n int) string {
	c := cell(s, n)
	if termSafe(c) == c {
		return c
	}
	return cell(termSafe(oneLine(s)), n)
}

// oneCell keeps a cell on one line: tabs and newlines would break the table.
func oneCell(s string) string {
	if strings.ContainsAny(s, "\t\n\r") {
		return oneLine(s)
	}
	return s
}

// short is the first n characters of s (not bytes: a cut never splits a character).
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine collapses every whitespace run of s to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell renders s on one line (whitespace runs become one space) in at most n
// characters, the last one "…" when s is longer; it stops reading once full.
func cell(s string, n int) string {
	var b strings.Builder
	count, space := 0, false
	for i, r := range s {
		if unicode.IsSpace(r) {
			space = count > 0
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if count+need > n-1 {
			// No room left beside a "…": only a last character that fits exactly.
			if count+need == n && strings.TrimSpace(s[i+utf8.RuneLen(r):]) == "" {
				if space {
					b.WriteByte(' ')
				}
				b.WriteRune(r)
				return b.String()
			}
			b.WriteString("…")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			count++
			space = false
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

func localTime(ts string) string {
	t := indexer.ParseTime(ts)
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// humanSize renders bytes as B, KB or MB (decimal, as `list` shows).
func humanSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%dB", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1fKB", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1fMB", float64(n)/1000/1000)
	}
}

// writeJSONRows prints a JSON array with one compact row per line: as easy to
// read and grep as an indented array, and several times cheaper to produce for
// tens of thousands of rows.
func writeJSONRows[T any](w io.Writer, rows []T) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		if err := enc.Encode(r); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	if len(rows) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// resolveRef finds the session REF names within the scope `list` shows with the
// same flags (SPEC §6), never beyond it. destructive (delete): a number that is
// also the start of another id is refused rather than read as the row.
func resolveRef(cfg *config.Config, sc scope, ref string, destructive bool) (indexer.Entry, error) {
	entries, err := selectSessions(cfg, sc)
	if err != nil {
		return indexer.Entry{}, err
	}
	o := indexer.RefOptions{Numbers: true, Destructive: destructive}
	if sc.all {
		o.Scope = "any project"
	}
	en, err := indexer.ResolveEntries(entries, ref, o)
	return en, refErr(err, sc.all, "list")
}

// refErr maps a REF resolution error to its exit code and hint; listCmd is the
// command that lists the scope ("list", "list --archived").
func refErr(err error, all bool, listCmd string) error {
	see := fmt.Sprintf("run 'sessionwatch %s' to see this project's sessions, or add --all to look in every project", listCmd)
	if all {
		see = fmt.Sprintf("run 'sessionwatch %s --all' to see the sessions", listCmd)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, indexer.ErrBadRef):
		return usageErr("give a session id, id prefix, row number or session file path; "+see, "%v", err)
	case errors.Is(err, indexer.ErrAmbiguous):
		return failErr(see, "%v", err)
	case errors.Is(err, indexer.ErrNotFound):
		return failErr(see, "%v", err)
	}
	return err
}
