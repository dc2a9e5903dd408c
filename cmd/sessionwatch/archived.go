package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// archivedRow is a row of `list --archived --json` (and `show --archived
// --json`): the list fields, then when and why the session was archived and
// where its archive is. File is the session's original path.
type archivedRow struct {
	listed
	ArchivedAt string `json:"archivedAt"`
	Reason     string `json:"reason"`
	Archive    string `json:"archive"`
}

// archivesOf lists the archived sessions of a scope (this directory's project,
// or every project; --source; --type) in the order `list --archived` numbers
// them and `restore N` resolves them: janitor.ListArchives's, newest archived
// first.
func archivesOf(cfg *config.Config, sc scope) ([]janitor.Archived, error) {
	archives, err := janitor.ListArchives(cfg.ArchiveDir, sc.sources)
	if err != nil {
		return nil, err
	}
	archives = archivesInScope(archives, sc)
	if sc.typ == "" || sc.typ == "all" {
		return archives, nil
	}
	kept := archives[:0]
	for _, a := range archives {
		if a.Meta.Type == sc.typ || a.Meta.Type == "" && sc.typ == indexer.TypeMain {
			kept = append(kept, a)
		}
	}
	return kept, nil
}

// archivedRows renders archives as rows numbered from 1. An archive written
// before archives kept their reason gets it from the journal, when it is there.
func archivedRows(cfg *config.Config, archives []janitor.Archived) []archivedRow {
	var reasons map[string]string
	rows := make([]archivedRow, len(archives))
	for i, a := range archives {
		r := archivedRow{listed: archivedListed(i+1, a), ArchivedAt: indexer.FormatTime(a.ArchivedAt), Reason: a.Meta.Reason, Archive: a.Path}
		if a.Record != nil {
			r.Reason = a.Record.Reason
		}
		if r.Reason == "" {
			if reasons == nil {
				reasons = journalReasons(cfg.StateDir)
			}
			r.Reason = reasons[a.Path]
		}
		rows[i] = r
	}
	return rows
}

// archivedListed is the list fields of an archived session: from the summary
// its archive keeps (a HyperYOLO record: from the record itself).
func archivedListed(n int, a janitor.Archived) listed {
	m := a.Meta
	l := listed{N: n, ID: m.ID, Source: m.Source, Layout: m.Layout, Project: m.Project, Type: m.Type, File: m.File}
	if s := m.Summary; s != nil {
		l.Title, l.FirstPrompt, l.CreatedAt, l.LastActiveAt = s.Title, s.FirstPrompt, s.CreatedAt, s.LastActiveAt
		l.MessageCount, l.SizeBytes, l.Provider, l.Model = s.MessageCount, s.SizeBytes, s.Provider, s.Model
	}
	if a.Record != nil {
		l.SizeBytes = int64(len(a.Record.Record))
		if r, err := indexer.DecodeHyperyoloRecord(a.Record.Record); err == nil {
			l.FirstPrompt, l.Provider, l.Invalid = indexer.Prompt(r.LastPrompt), r.Backend, r.Invalid
			l.CreatedAt = indexer.NormTime(r.CreatedAt)
			l.LastActiveAt = indexer.NormTime(r.LastSeenAt)
			if l.LastActiveAt == "" {
				l.LastActiveAt = l.CreatedAt
			}
		}
	}
	if l.SizeBytes == 0 && a.Record == nil {
		for _, f := range m.Files {
			l.SizeBytes += f.Size
		}
	}
	return l
}

// journalReasons maps archive paths to the reason the journal gives for them.
func journalReasons(stateDir string) map[string]string {
	out := map[string]string{}
	js, _ := janitor.ReadJournal(filepath.Join(stateDir, janitor.JournalName))
	for _, e := range js {
		if e.Action == janitor.KindArchive && e.Archive != "" {
			out[e.Archive] = e.Reason
		}
	}
	return out
}

// archivedHeader is the `list --archived` table's header: list's columns,
// ARCHIVED and REASON before the TITLE.
var archivedHeader = []string{"#", "ID", "AGENT", "STARTED", "LAST ACTIVE", "MODEL", "MSGS", "SIZE", "ARCHIVED", "REASON", "TITLE"}

// maxReason is the widest a REASON cell gets.
const maxReason = 40

// printArchivedTable lays the rows out as list does: every column as wide as
// its widest cell plus two spaces, the TITLE last, shrunk to fit width (0: no
// limit, but at most maxTitle).
func printArchivedTable(w io.Writer, rows []archivedRow, width int) {
	cells := [][]string{archivedHeader}
	titles := make([]string, len(rows))
	for i, r := range rows {
		titles[i] = r.Title
		if titles[i] == "" {
			titles[i] = r.FirstPrompt
		}
		cells = append(cells, []string{strconv.Itoa(r.N), termSafe(short(r.ID, 8)), termSafe(oneCell(r.Source)),
			localTime(r.CreatedAt), localTime(r.LastActiveAt), termSafe(oneCell(dash(r.Model))), strconv.Itoa(r.MessageCount),
			humanSize(r.SizeBytes), localTime(r.ArchivedAt), safeCell(dash(r.Reason), maxReason), ""})
	}
	last := len(archivedHeader) - 1
	used := 0
	for c := 0; c < last; c++ {
		colw := 0
		for _, row := range cells {
			colw = max(colw, utf8.RuneCountInString(row[c]))
		}
		used += colw + 2
	}
	titleW := maxTitle
	if width > 0 {
		titleW = max(min(maxTitle, width-used), minTitle)
	}
	for i := range rows {
		cells[i+1][last] = safeCell(titles[i], titleW)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range cells {
		for c, cell := range row {
			if c == last {
				fmt.Fprintln(tw, cell)
			} else {
				fmt.Fprint(tw, cell, "\t")
			}
		}
	}
	tw.Flush()
}

// cmdListArchived is `list --archived`.
func cmdListArchived(e *env, cfg *config.Config, sc scope, asJSON bool) error {
	archives, err := archivesOf(cfg, sc)
	if err != nil {
		return failErr("", "list --archived: %v", err)
	}
	rows := archivedRows(cfg, archives)
	if asJSON {
		return writeJSONRows(e.stdout, rows)
	}
	if len(rows) == 0 {
		explainNoArchives(e, cfg, sc)
		return nil
	}
	printArchivedTable(e.stdout, rows, termWidth(e.stdout))
	return nil
}

// explainNoArchives says on stderr why `list --archived` printed nothing.
func explainNoArchives(e *env, cfg *config.Config, sc scope) {
	w := e.stderr
	if sc.all {
		fmt.Fprintln(w, "No archived sessions")
	} else {
		fmt.Fprintln(w, "No archived sessions for this project")
	}
	wide := sc
	wide.all, wide.typ, wide.sources = true, "all", nil
	if all, _ := archivesOf(cfg, wide); len(all) > 0 && !sc.all {
		fmt.Fprintf(w, "  %d archived %s in other projects or sources: sessionwatch list --archived --all\n",
			len(all), plural(len(all), "session", "sessions"))
		return
	}
	fmt.Fprintf(w, "  nothing in %s: the janitor archives sessions past their retention, and 'sessionwatch delete' archives one\n", showPath(cfg.ArchiveDir))
}

// showArchived is `show --archived REF`.
func showArchived(e *env, cfg *config.Config, sc scope, ref string, asJSON bool) error {
	archives, err := archivesOf(cfg, sc)
	if err != nil {
		return failErr("", "show: %v", err)
	}
	ar, i, err := resolveArchive(archives, ref, sc.all, false)
	if err != nil {
		return err
	}
	row := archivedRows(cfg, []janitor.Archived{ar})[0]
	row.N = i + 1
	if asJSON {
		return writeJSON(e.stdout, row)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	p := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%s\n", k, termSafe(fmt.Sprint(v))) }
	p("id", row.ID)
	p("agent", fmt.Sprintf("%s (%s)", row.Source, row.Layout))
	p("type", dash(row.Type))
	p("project", dash(tildePath(row.Project)))
	p("file", tildePath(row.File))
	p("archive", tildePath(row.Archive))
	p("archived", localTime(row.ArchivedAt))
	p("reason", dash(row.Reason))
	if row.Title != "" {
		p("title", row.Title)
	}
	p("first prompt", dash(row.FirstPrompt))
	p("started", localTime(row.CreatedAt))
	p("last active", localTime(row.LastActiveAt))
	p("messages", row.MessageCount)
	p("size", humanSize(row.SizeBytes))
	if row.Provider != "" {
		p("provider", row.Provider)
	}
	p("model", dash(row.Model))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "restore it with: sessionwatch restore %s%s\n", termSafe(row.ID), scopeArgs(sc))
	return nil
}

// scopeArgs are the flags that give the same scope again (for a hint).
func scopeArgs(sc scope) string {
	s := ""
	if sc.all {
		s += " --all"
	}
	if len(sc.sources) == 1 {
		s += " --source " + termSafe(sc.sources[0])
	}
	if sc.typ != "" && sc.typ != "all" {
		s += " --type " + sc.typ
	}
	return s
}
