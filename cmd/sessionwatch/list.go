package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

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
	roomForSessions()
	projects, err := sc.projects()
	if err != nil {
		return nil, err
	}
	entries, err := indexer.ReadCatalogs(cfg.StateDir, sc.sources, projects)
	if err != nil && len(entries) == 0 {
		return nil, err
	}
	return keepType(entries, sc.typ), nil
}

// projects are the project paths of the scope: the current directory's, or
// none for every project.
func (sc scope) projects() ([]string, error) {
	if sc.all {
		return nil, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find current directory: %w", err)
	}
	return indexer.ProjectCandidates(cwd), nil
}

// kept reports whether keepType keeps the entry.
func kept(e *indexer.Entry, typ string) bool {
	return typ == "all" || e.Type == typ && !e.Hidden
}

// keepType keeps the entries of a --type (hidden sessions: --type all only).
func keepType(entries []indexer.Entry, typ string) []indexer.Entry {
	if typ == "all" {
		return entries
	}
	out := entries[:0]
	for _, e := range entries {
		if kept(&e, typ) {
			out = append(out, e)
		}
	}
	return out
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
	var rows *catalogRows
	if sc.all && !f.json {
		rows = newCatalogRows(sc) // filled while the catalogs are proven
	}
	fresh := refreshForListing(e, cfg, sc, rows)
	if fresh.catalogsOnly() && !f.json {
		// Nothing refreshed (a daemon keeps the catalogs, or they were proven
		// up to date): the table straight from them.
		if n, done, err := fresh.printCatalogs(e.stdout, cfg, sc, termWidth(e.stdout)); done {
			if err != nil {
				return err
			}
			if n == 0 {
				explainEmpty(e, cfg, sc)
			}
			return nil
		}
	}
	entries, err := fresh.selectSessions(cfg, sc)
	if err != nil {
		return err
	}
	if f.json {
		now := time.Now()
		inUse := janitor.NewLiveChecker(cfg)
		rows := make([]listed, len(entries))
		for i, en := range entries {
			rows[i] = toListedWith(cfg, i+1, en, now, inUse)
		}
		return writeJSONRows(e.stdout, rows)
	}
	if len(entries) == 0 {
		explainEmpty(e, cfg, sc)
		return nil
	}
	// The table shows neither in-use nor stale: no checker, no listed rows.
	printEntries(e.stdout, entries, termWidth(e.stdout))
	return nil
}

// printCatalogs prints what printEntries prints of selectSessions's entries,
// but visits the catalogs (indexer.VisitCatalogs) and keeps of each session only
// its cells and what sorts it (its source, lastActiveAt and id), not the
// session. done is false, with nothing printed, when two rows tie on all three
// (the same id twice in a source): the caller then lists the usual way, whose
// sort breaks such ties by file and project. n is the number of rows printed.
func printCatalogs(w io.Writer, cfg *config.Config, sc scope, width int) (n int, done bool, err error) {
	projects, err := sc.projects()
	if err != nil {
		return 0, true, err
	}
	rows := newCatalogRows(sc)
	err = indexer.VisitCatalogs(cfg.StateDir, sc.sources, projects, rows.workers(), rows.visit)
	if err != nil && rows.seen() == 0 {
		return 0, true, err
	}
	n, done = rows.print(w, width)
	return n, done, nil
}

// printCatalogs is printCatalogs, from the rows the proofs filled if they
// did (refreshed.rows).
func (r *refreshed) printCatalogs(w io.Writer, cfg *config.Config, sc scope, width int) (n int, done bool, err error) {
	if r == nil || r.rows == nil {
		return printCatalogs(w, cfg, sc, width)
	}
	if r.rowsErr != nil && r.rows.seen() == 0 {
		return 0, true, r.rowsErr
	}
	n, done = r.rows.print(w, width)
	return n, done, nil
}

// catalogRows is printCatalogs's table, filled by a visit of the catalogs
// (indexer.VisitCatalogs, or indexer.ProveVisit while it proves them).
type catalogRows struct {
	sc scope
	ws []catalogWorker
	mu sync.Mutex // sources, number
	// sources are the sources numbered in the sort fields.
	sources []string
	number  map[string]int
	// sorted: sort has run; order is the rows' order, unless tie.
	sorted bool
	tie    bool
	order  []arenaPos
}

// catalogWorker is the table of one visiting worker, joined after: each
// worker's rows in its own arena.
type catalogWorker struct {
	t     table
	extra []byte // the sort's fields, kept beside the row
	seen  int    // sessions visited, kept or not
	src   string // the last source, numbered srcN
	srcN  int
}

func newCatalogRows(sc scope) *catalogRows {
	return &catalogRows{sc: sc, ws: make([]catalogWorker, max(1, min(runtime.GOMAXPROCS(0), 4))), number: map[string]int{}}
}

// workers is the number of visiting workers the rows take.
func (r *catalogRows) workers() int { return len(r.ws) }

// visit adds a session's row, from worker wn.
func (r *catalogRows) visit(wn int, en indexer.Entry) {
	w := &r.ws[wn]
	w.seen++
	if !kept(&en, r.sc.typ) {
		return
	}
	if w.seen == 1 || w.src != en.Source {
		r.mu.Lock()
		n, ok := r.number[en.Source]
		if !ok {
			n = len(r.sources)
			r.number[en.Source] = n
			r.sources = append(r.sources, en.Source)
		}
		r.mu.Unlock()
		w.src, w.srcN = en.Source, n
	}
	x := binary.AppendUvarint(w.extra[:0], uint64(w.srcN))
	x = binary.AppendUvarint(x, uint64(len(en.LastActiveAt)))
	x = binary.AppendUvarint(x, uint64(len(en.ID)))
	w.extra = append(append(x, en.LastActiveAt...), en.ID...)
	w.t.add(entryRow(&en), w.extra)
}

// seen is the number of sessions visited, kept or not.
func (r *catalogRows) seen() int {
	n := 0
	for i := range r.ws {
		n += r.ws[i].seen
	}
	return n
}

// print sorts the rows and writes them (printCatalogs's n and done).
func (r *catalogRows) print(w io.Writer, width int) (n int, done bool) {
	if !r.sorted {
		r.sort()
	}
	if r.tie {
		return 0, false
	}
	if len(r.order) > 0 {
		r.ws[0].t.write(w, r.order, func(k int) int { return k + 1 }, width)
	}
	return len(r.order), true
}

// sort joins the workers' tables into the first and puts the rows in
// indexer.SortEntries's order (r.order), unless two tie (r.tie). Every visit
// must have returned.
func (r *catalogRows) sort() {
	r.sorted = true
	ws, sources := r.ws, r.sources
	t := &ws[0].t
	for i := range ws {
		if i > 0 {
			t.join(&ws[i].t)
		}
	}
	// The rows were added one after the other: walk them.
	keys := make([]rowKey, t.rows())
	at := arenaPos{}
	for i := range keys {
		_, x, next := t.row(at)
		src, last, _ := sortFields(x)
		k0, k1, k2 := indexer.TimeKey(string(last))
		chunk := t.cells.chunks[at.chunk]
		x0 := cap(chunk[at.off:]) - cap(x) // x's offset from at
		keys[i] = rowKey{k0: k0, k1: k1, k2: k2, at: at, src: int32(src), x: int32(x0)}
		at = next
	}
	// indexer.SortEntries's order: newest first, then by id, source, file and
	// project; the last two are not kept.
	cmpKeys := func(a, b rowKey) int {
		if c := cmp.Compare(b.k0, a.k0); c != 0 {
			return c
		}
		if c := cmp.Compare(b.k1, a.k1); c != 0 {
			return c
		}
		if c := cmp.Compare(b.k2, a.k2); c != 0 {
			return c
		}
		_, lastA, idA := sortFields(t.cells.chunks[a.at.chunk][a.at.off+a.x:])
		_, lastB, idB := sortFields(t.cells.chunks[b.at.chunk][b.at.off+b.x:])
		if c := bytes.Compare(lastB, lastA); c != 0 {
			return c
		}
		if c := bytes.Compare(idA, idB); c != 0 {
			return c
		}
		return strings.Compare(sources[a.src], sources[b.src])
	}
	slices.SortFunc(keys, cmpKeys)
	r.order = make([]arenaPos, len(keys))
	for i, k := range keys {
		if i > 0 && cmpKeys(keys[i-1], k) == 0 {
			r.tie, r.order = true, nil
			return
		}
		r.order[i] = k.at
	}
}

// sortFields reads what printCatalogs keeps beside a row, from the start of x:
// its source's number and lengths (uvarints), its lastActiveAt and id.
func sortFields(x []byte) (src uint64, last, id []byte) {
	src, k := binary.Uvarint(x)
	x = x[k:]
	nl, k := binary.Uvarint(x)
	x = x[k:]
	ni, k := binary.Uvarint(x)
	x = x[k:]
	return src, x[:nl], x[nl : nl+ni]
}

// rowKey sorts a row of printCatalogs: indexer.TimeKey of its lastActiveAt,
// where the row and its sort fields are, and its source.
type rowKey struct {
	k0, k1, k2 uint64
	at         arenaPos
	src        int32
	x          int32 // where the row's sort fields are, from at
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
// same flags (SPEC §6), never beyond it, and its row number there.
// destructive (delete): a number that is also the start of another id is
// refused rather than read as the row.
func resolveRef(cfg *config.Config, sc scope, ref string, destructive bool) (indexer.Entry, int, error) {
	entries, err := selectSessions(cfg, sc)
	if err != nil {
		return indexer.Entry{}, 0, err
	}
	o := indexer.RefOptions{Numbers: true, Destructive: destructive}
	if sc.all {
		o.Scope = "any project"
	}
	i, err := indexer.ResolveIndex(entries, ref, o)
	if errors.Is(err, indexer.ErrBadRef) && isSessionFile(cfg, ref) {
		// An existing session file outside the scope is a session not found
		// here (the hint names --all), not a bad REF.
		where := o.Scope
		if where == "" {
			where = "this project"
		}
		err = fmt.Errorf("%w for %s: %s", indexer.ErrNotFound, where, ref)
	}
	if err != nil {
		return indexer.Entry{}, 0, refErr(err, sc.all, "list")
	}
	return entries[i], i + 1, nil
}

// isSessionFile reports whether path is the file of a session any catalog
// lists, of any project, type or source. Only a REF that named no session of
// its scope asks, so reading every catalog costs only that error.
func isSessionFile(cfg *config.Config, path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if _, err := os.Lstat(abs); err != nil {
		return false
	}
	entries, _ := indexer.ReadCatalogs(cfg.StateDir, nil, nil)
	for _, en := range entries {
		if en.File == abs {
			return true
		}
	}
	return false
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
