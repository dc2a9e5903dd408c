package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
	"github.com/sessionwatch/sessionwatch/search"
)

// searchRow is one row of `search --json`: the list fields plus the matches.
type searchRow struct {
	listed
	Archived bool          `json:"archived"`
	Score    float64       `json:"score"`
	Matches  []searchMatch `json:"matches"`
}

type searchMatch struct {
	Role    string `json:"role"`
	Time    string `json:"time"`
	Snippet string `json:"snippet"`
	Offset  int64  `json:"offset"`
}

const searchUsage = `sessionwatch search QUERY… [--all] [--source S] [--since D] [--until D] [--role user|assistant] [--archived] [--limit N] [--json]   (example: sessionwatch search "flaky test" parser -legacy)
Find conversations across every agent. QUERY: words (all must occur), "a phrase", prefix*, -excluded.`

func cmdSearch(e *env, args []string) error {
	// A short-lived reader whose garbage is a few MiB: collecting it costs more
	// than holding it.
	defer setGCPercent(400)()
	fs := newFlags(e, "search", searchUsage)
	all := fs.Bool("all", false, "every project, not only the current directory's")
	source := fs.String("source", "", "only this source")
	since := fs.String("since", "", "only messages since D (a duration such as 7d, or a date 2026-01-31)")
	until := fs.String("until", "", "only messages until D")
	role := fs.String("role", "", "only messages of this role: user or assistant (tool: with search.tool_output on)")
	archived := fs.Bool("archived", false, "also archived sessions (marked archived)")
	limit := fs.Int("limit", 20, "at most N sessions (0: all)")
	asJSON := fs.Bool("json", false, "print JSON")
	flagArgs, words := splitSearchArgs(fs, args)
	pos, err := parseFlags(fs, flagArgs)
	if err != nil {
		return err
	}
	q, err := search.ParseQuery(strings.Join(append(pos, words...), " "))
	if err != nil {
		return usageErr(`example: sessionwatch search "flaky test" parser -legacy`, "search: %v", err)
	}
	f := search.Filter{Archived: *archived}
	now := time.Now()
	if f.Since, err = parseWhen(*since, now); err != nil {
		return usageErr("give a duration (7d, 36h) or a date (2026-01-31)", "search: invalid --since %q", *since)
	}
	if f.Until, err = parseWhen(*until, now); err != nil {
		return usageErr("give a duration (7d, 36h) or a date (2026-01-31)", "search: invalid --until %q", *until)
	}
	switch *role {
	case "", search.RoleUser, search.RoleAssistant, search.RoleTool:
		f.Role = *role
	default:
		return usageErr("use --role user, assistant or tool", "search: invalid --role %q", *role)
	}
	if *limit < 0 {
		return usageErr("", "search: --limit must not be negative (got %d)", *limit)
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	sf := scopeFlagSet{fs: fs, all: *all, source: *source, typ: "all"}
	sc, err := sf.scope(cfg)
	if err != nil {
		return err
	}
	r, cleanup, err := openSearchIndex(e, cfg)
	if err != nil {
		return err
	}
	defer cleanup()

	// The scope, as list shows it: catalog entries by file (or by session id for a
	// document holding several), archives by their original file.
	cats := &hitCatalogs{cfg: cfg, sc: sc, byFile: map[string]indexer.Entry{}, read: map[string]bool{}}
	if !sc.all {
		// This project's catalogs are few: read them, and keep only their sessions.
		if err := cats.readScope(); err != nil {
			return err
		}
	}
	archives := map[string]janitor.Archived{}
	if *archived {
		var projects []string
		if !sc.all {
			cwd, _ := os.Getwd()
			projects = indexer.ProjectCandidates(cwd)
		}
		list, _ := janitor.ListArchives(cfg.ArchiveDir, sc.sources)
		for _, a := range list {
			if a.Record == nil && (sc.all || containsString(projects, a.Meta.Project)) {
				archives[a.Meta.Source+"\x00"+a.Meta.File] = a
			}
		}
	}
	archiveOf := func(u search.Unit) (janitor.Archived, bool) {
		a, ok := archives[u.Source+"\x00"+u.Path]
		if !ok {
			a, ok = archives[u.Source+"\x00"+parentDir(u.Path)] // a session directory (Mogzi)
		}
		return a, ok
	}
	f.Sources = sc.sources
	f.Keep = func(u search.Unit) bool {
		if u.Removed {
			_, ok := archiveOf(u)
			return ok
		}
		if !sc.all {
			_, ok := cats.lookup(u)
			return ok
		}
		return true // checked against the catalogs below, for the rows shown only
	}
	type shown struct {
		hit search.Hit
		en  indexer.Entry
		ar  *janitor.Archived
	}
	var hits []shown
	// With --all, a result's session is looked up in the catalogs only once it is
	// shown; one the catalogs no longer list is skipped, so ask for a few more
	// than --limit, and for more again if that was not enough.
	want := *limit
	if want > 0 && sc.all {
		want += 8
	}
	for {
		found, err := r.Search(q, f, want)
		if err != nil {
			return fmt.Errorf("search: %w", err)
		}
		hits = hits[:0]
		// The rows most likely shown; any further one is read when needed.
		if err := cats.prefetch(found[:min(len(found), max(*limit, len(found)*(1-min(*limit, 1))))]); err != nil {
			return err
		}
		for _, h := range found {
			if *limit > 0 && len(hits) == *limit {
				break
			}
			if h.Removed {
				a, _ := archiveOf(h.Unit)
				hits = append(hits, shown{hit: h, ar: &a})
				continue
			}
			en, ok, err := cats.find(h.Unit)
			if err != nil {
				return err
			}
			if ok {
				hits = append(hits, shown{hit: h, en: en})
			}
		}
		if want == 0 || len(found) < want || len(hits) == *limit {
			break
		}
		want *= 4
	}
	inUse := janitor.NewLiveCheckerFor(cfg, len(hits))
	rows := make([]searchRow, 0, len(hits))
	for i, sh := range hits {
		h, en, ar := sh.hit, sh.en, sh.ar
		row := searchRow{Score: h.Score, Matches: []searchMatch{}}
		if ar != nil {
			m := ar.Meta
			row.listed = listed{N: i + 1, ID: m.ID, Source: m.Source, Layout: m.Layout, Project: m.Project, Type: m.Type, File: m.File,
				LastActiveAt: indexer.FormatTime(ar.ArchivedAt)}
			row.Archived = true
		} else {
			row.listed = toListedWith(cfg, i+1, en, now, inUse)
		}
		for _, m := range h.Matches {
			sm := searchMatch{Role: m.Role, Offset: m.Offset}
			if m.Time > 0 {
				sm.Time = indexer.FormatTime(time.Unix(m.Time, 0))
			}
			if msg, err := r.Message(h, m); err == nil {
				if msg.Time > 0 {
					sm.Time = indexer.FormatTime(time.UnixMilli(msg.Time))
				}
				sm.Snippet, _ = search.Snippet(msg.Text, q, 160)
			}
			row.Matches = append(row.Matches, sm)
		}
		rows = append(rows, row)
	}
	if *asJSON {
		return writeJSONRows(e.stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stderr, "No matching sessions"+map[bool]string{true: "", false: " for this project (try --all)"}[sc.all])
		return nil
	}
	printSearch(e.stdout, rows, q, isTerminal(e.stdout))
	return nil
}

// hitCatalogs finds the catalog entries of search results, reading only the
// catalogs it needs: in the default scope, this directory's project's (all read
// first); with --all, the catalog of each result's project as the index last saw
// it, and every catalog only when that hint misses (a project that changed since).
type hitCatalogs struct {
	cfg     *config.Config
	sc      scope
	byFile  map[string]indexer.Entry
	read    map[string]bool // source\x00project catalogs read
	readAll bool            // every catalog of the scope read
	picker  indexer.CatalogPicker
}

func (c *hitCatalogs) add(entries []indexer.Entry) {
	for _, en := range entries {
		c.byFile[en.Source+"\x00"+en.File] = en
		c.byFile[en.Source+"\x00"+en.File+"\x00"+en.ID] = en
	}
}

// readScope reads every catalog of the scope.
func (c *hitCatalogs) readScope() error {
	entries, err := selectSessions(c.cfg, c.sc)
	if err != nil {
		return err
	}
	c.add(entries)
	c.readAll = true
	return nil
}

// lookup finds u's session among the catalogs read so far.
func (c *hitCatalogs) lookup(u search.Unit) (indexer.Entry, bool) {
	if u.Session != "" {
		for _, k := range []string{u.Source + "\x00" + u.Path + "\x00" + u.Session, u.Source + "\x00" + parentDir(u.Path) + "\x00" + u.Session} {
			if en, ok := c.byFile[k]; ok && en.ID == u.Session {
				return en, true
			}
		}
	}
	for _, k := range []string{u.Source + "\x00" + u.Path, u.Source + "\x00" + parentDir(u.Path)} {
		if en, ok := c.byFile[k]; ok {
			return en, true
		}
	}
	return indexer.Entry{}, false
}

// prefetch reads, from the catalog of each hit's project hint (each catalog once),
// the sessions of the hits' files, decoding only their lines.
func (c *hitCatalogs) prefetch(hits []search.Hit) error {
	if c.readAll {
		return nil
	}
	type catKey struct{ source, project string }
	needles := map[catKey][]string{}
	var order []catKey
	for _, h := range hits {
		if h.Removed || h.Project == "" || c.read[h.Source+"\x00"+h.Project] {
			continue
		}
		if _, ok := c.lookup(h.Unit); ok {
			continue
		}
		k := catKey{h.Source, h.Project}
		if _, ok := needles[k]; !ok {
			order = append(order, k)
		}
		needles[k] = append(needles[k], h.Path, parentDir(h.Path))
	}
	for _, k := range order {
		c.read[k.source+"\x00"+k.project] = true
		entries, err := c.picker.Read(c.cfg.StateDir, []string{k.source}, []string{k.project}, needles[k])
		if err != nil && len(entries) == 0 {
			return err
		}
		c.add(entries)
	}
	return nil
}

// find looks u's session up, reading the catalog of its project hint, then every
// catalog of the scope, when it is not among those read.
func (c *hitCatalogs) find(u search.Unit) (indexer.Entry, bool, error) {
	if en, ok := c.lookup(u); ok || c.readAll {
		return en, ok, nil
	}
	if k := u.Source + "\x00" + u.Project; u.Project != "" && !c.read[k] {
		c.read[k] = true
		entries, err := indexer.ReadCatalogs(c.cfg.StateDir, []string{u.Source}, []string{u.Project})
		if err != nil && len(entries) == 0 {
			return indexer.Entry{}, false, err
		}
		c.add(entries)
		if en, ok := c.lookup(u); ok {
			return en, true, nil
		}
	}
	if err := c.readScope(); err != nil {
		return indexer.Entry{}, false, err
	}
	en, ok := c.lookup(u)
	return en, ok, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return p
}

// parseWhen reads --since/--until: "" (unset), a duration back from now (7d,
// 36h), a date (2026-01-31, local midnight) or an RFC 3339 time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := config.ParseDuration(s); err == nil && d.Enabled() {
		return now.Add(-d.D), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

// openSearchIndex returns a reader of an up-to-date index. Without a daemon we are
// the writer: the index (and the catalogs) are brought up to date incrementally
// first, as list does. With a daemon we only read what it keeps current. With no
// index to read, the transcripts are scanned into a temporary index.
func openSearchIndex(e *env, cfg *config.Config) (*search.Reader, func(), error) {
	dir := search.IndexDir(cfg.StateDir)
	refreshCatalogs(e, cfg, nil)
	r, err := search.OpenReader(dir)
	if err == nil {
		return r, r.Close, nil
	}
	if !errors.Is(err, search.ErrNoIndex) {
		return nil, nil, err
	}
	fmt.Fprintln(e.stderr, "sessionwatch: the running daemon keeps no search index yet; scanning the transcripts (slower; restart the daemon to index them)")
	tmp, err := os.MkdirTemp("", "sessionwatch-search-")
	if err != nil {
		return nil, nil, err
	}
	if err := search.Rebuild(cfg, tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("scan transcripts: %w", err)
	}
	r, err = search.OpenReader(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return r, func() { r.Close(); os.RemoveAll(tmp) }, nil
}

// printSearch prints each session as a list-like row, then its snippets indented.
func printSearch(w io.Writer, rows []searchRow, q search.Query, color bool) {
	var b strings.Builder
	for _, r := range rows {
		title := r.Title
		if title == "" {
			title = r.FirstPrompt
		}
		last := localTime(r.LastActiveAt)
		if r.Archived {
			last = "archived " + last
		}
		fmt.Fprintf(&b, "%d  %s  %s  %s  %s  %s\n", r.N, termSafe(short(r.ID, 8)), termSafe(r.Source), last, termSafe(dash(tildePath(r.Project))), termSafe(cell(title, 60)))
		for _, m := range r.Matches {
			snip, spans := search.Snippet(m.Snippet, q, 160)
			fmt.Fprintf(&b, "    %-9s %s  %s\n", m.Role, localTime(m.Time), highlight(snip, spans, color))
		}
	}
	io.WriteString(w, b.String())
}

// highlight escapes a snippet for the terminal and, on a terminal, shows the
// matched words in bold.
func highlight(s string, spans [][2]int, color bool) string {
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp[0] < at || sp[1] > len(s) {
			continue
		}
		b.WriteString(termSafe(s[at:sp[0]]))
		if color {
			b.WriteString("\x1b[1;33m" + termSafe(s[sp[0]:sp[1]]) + "\x1b[0m")
		} else {
			b.WriteString(termSafe(s[sp[0]:sp[1]]))
		}
		at = sp[1]
	}
	b.WriteString(termSafe(s[at:]))
	return b.String()
}

// openSearch opens the search index of the state dir as its writer, to be
// attached to a group. Removed sessions keep their postings through merges while
// an archive of them exists (searchable with --archived).
func openSearch(cfg *config.Config, logger *slog.Logger) (*search.Index, error) {
	return search.Open(search.Options{Dir: search.IndexDir(cfg.StateDir), ToolOutput: cfg.Search.ToolOutput,
		KeepRemoved: archiveKeeper(cfg.ArchiveDir), Logger: logger.With("component", "search")})
}

// archiveKeeper answers search's KeepRemoved from the archives under dir: a
// session's messages stay while an archive of its file (or of its directory)
// exists. The list is read again after a minute, and whenever the merge asking
// was planned after it was read (an archive made just before a removal must be
// seen, or the merge drops messages --archived should find).
//
// Listing reads every archive's header; when the archive directories are as
// they were at the last listing (archivesStamp), the list is still the same.
func archiveKeeper(dir string) func(source, path string, since time.Time) bool {
	var (
		archived map[string]bool
		listedAt time.Time
		stamp    string
	)
	return func(source, path string, since time.Time) bool {
		if archived == nil || time.Since(listedAt) > time.Minute || listedAt.Before(since) {
			now, st := time.Now(), archivesStamp(dir)
			if archived == nil || st != stamp {
				archived, stamp = map[string]bool{}, st
				list, _ := janitor.ListArchives(dir, nil)
				for _, a := range list {
					archived[a.Meta.Source+"\x00"+a.Meta.File] = true
				}
			}
			listedAt = now
		}
		return archived[source+"\x00"+path] || archived[source+"\x00"+parentDir(path)]
	}
}

// archivesStamp tells the archive directory's listing apart from a later one:
// each source's and project's directory (its entry count and mtime) and each
// source's records.jsonl (size and mtime), in directory order.
func archivesStamp(dir string) string {
	var b strings.Builder
	stat := func(p string) {
		if fi, err := os.Lstat(p); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	sources, _ := os.ReadDir(dir)
	for _, s := range sources {
		if !s.IsDir() {
			continue
		}
		sd := filepath.Join(dir, s.Name())
		projects, _ := os.ReadDir(sd)
		fmt.Fprintf(&b, "%d ", len(projects))
		stat(sd)
		stat(filepath.Join(sd, janitor.RecordsName))
		for _, p := range projects {
			if p.IsDir() {
				pd := filepath.Join(sd, p.Name())
				ents, _ := os.ReadDir(pd)
				fmt.Fprintf(&b, "%d ", len(ents))
				stat(pd)
			}
		}
	}
	return b.String()
}

// checkSearch compares the search index with a rebuild (reindex --check): one
// line per unit that differs, limited to one source when given.
func checkSearch(cfg *config.Config, source string) ([]string, error) {
	diffs, err := search.CheckAgainstRebuild(cfg)
	if err != nil {
		return nil, fmt.Errorf("reindex --check: search index: %w", err)
	}
	var out []string
	for _, d := range diffs {
		if source == "" || strings.HasPrefix(d, source+"/") {
			out = append(out, "search index: "+d)
		}
	}
	return out, nil
}

// splitSearchArgs separates the flags from the query: "-word" excludes a word
// unless it names one of the command's flags; everything after "--" is query.
func splitSearchArgs(fs *flag.FlagSet, args []string) (flags, words []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(words, args[i+1:]...)
		}
		name := strings.TrimLeft(a, "-")
		if j := strings.IndexByte(name, '='); j >= 0 {
			name = name[:j]
		}
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "-") || len(a) < 2 || (f == nil && name != "h" && name != "help") {
			words = append(words, a)
			continue
		}
		flags = append(flags, a)
		if f != nil && !strings.Contains(a, "=") {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				if i+1 < len(args) {
					i++
					flags = append(flags, args[i])
				}
			}
		}
	}
	return flags, words
}
