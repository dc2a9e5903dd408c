package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

func cmdRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "restore", "sessionwatch restore REF|ACTION-ID [--all] [--source S] [--type main|subagent|all]   (example: sessionwatch restore 1)\n"+
		summaries["restore"]+" REF is read among the rows 'sessionwatch list --archived' prints with the same flags: an id, a row number, a unique id prefix or an archive path. A journal action id (a UUID, shown when one session has several archives) picks one archive.")
	all := fs.Bool("all", false, "look among the archived sessions of every project, not only the current directory's")
	source := fs.String("source", "", "only this source's archives")
	typ := fs.String("type", "all", "main, subagent or all")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("give the id (or a unique id prefix) of an archived session", "restore: want exactly one REF (got %d)", len(pos))
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	switch *typ {
	case "main", "subagent", "all":
	default:
		return usageErr("use --type main, subagent or all", "restore: invalid --type %q", *typ)
	}
	logger := quietLogger(cfg, e.stderr)
	g, err := loadGroup(cfg, logger, false, false)
	if err != nil {
		return err
	}
	j, err := janitor.New(cfg, g, logger, janitor.Options{})
	if err != nil {
		return failErr("", "restore: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, passLockWait)
	defer cancel()
	// A restore or retirement killed half-way is finished or undone first, so
	// the archives listed are the ones that stand.
	if _, err := j.Recover(ctx); err != nil {
		return janitorErr("restore", err)
	}
	// Archives older versions left outside their project's directory.
	janitor.AdoptArchives(cfg.ArchiveDir)
	// A journal action id picks one archive wherever it is (it names exactly
	// one); anything else (session ids are UUIDs too) resolves as a REF among
	// the rows of `list --archived` with the same flags, in the same order.
	everything, err := janitor.ListArchives(cfg.ArchiveDir, nil)
	if err != nil {
		return failErr("", "restore: %v", err)
	}
	ar, err := archiveByAction(everything, cfg.StateDir, pos[0])
	if errors.Is(err, errNoAction) {
		var sources []string
		if *source != "" {
			sources = []string{*source}
		}
		archives, lerr := archivesOf(cfg, scope{all: *all, sources: sources, typ: *typ})
		if lerr != nil {
			return failErr("", "restore: %v", lerr)
		}
		ar, _, err = resolveArchive(archives, pos[0], *all, true)
		if err != nil && isActionID(pos[0]) && !slices.ContainsFunc(archives, func(a janitor.Archived) bool { return a.Meta.ID == pos[0] }) {
			err = failErr("run 'sessionwatch list --archived' to see the archived sessions; the journal (<state_dir>/journal.jsonl) holds the action ids",
				"session not found: no archived session and no archive written by action %s", pos[0])
		}
	}
	if err != nil {
		return err
	}
	rep, err := j.Restore(ctx, ar)
	if err != nil && ar.Record != nil && errors.Is(err, janitor.ErrExists) {
		return failErr("the store holds a record with that key again; 'sessionwatch delete "+ar.Meta.ID+"' first if the archived one should replace it",
			"restore: %v", err)
	}
	if errors.Is(err, indexer.ErrNotFound) || errors.Is(err, iofs.ErrNotExist) {
		return failErr("run 'sessionwatch list --archived' to see the archived sessions", "restore: %v", err)
	}
	if err != nil {
		return janitorErr("restore", err)
	}
	m := ar.Meta
	if ar.Record != nil {
		fmt.Fprintf(e.stdout, "restored %s record %s to %s (%s)\n", termSafe(m.Source), termSafe(m.ID), showPath(m.File), humanSize(rep.Actions[0].Bytes))
		return reportErrors(e, "restore", rep)
	}
	files := "1 file"
	if n := len(rep.Actions[0].Paths); n != 1 {
		files = fmt.Sprintf("%d files", n)
	}
	fmt.Fprintf(e.stdout, "restored %s session %s to %s (%s, %s)\n", termSafe(m.Source), termSafe(m.ID), showPath(m.File), files, humanSize(rep.Actions[0].Bytes))
	return reportErrors(e, "restore", rep)
}

// isActionID reports whether ref is a journal action id (a UUID, 36 characters).
func isActionID(ref string) bool {
	if len(ref) != 36 {
		return false
	}
	_, err := uuid.Parse(ref)
	return err == nil
}

// archiveByAction finds the archive a journal archive action wrote: by the
// action id in its metadata, else by the archive path the journal recorded for
// that action.
func archiveByAction(archives []janitor.Archived, stateDir, id string) (janitor.Archived, error) {
	if !isActionID(id) {
		return janitor.Archived{}, errNoAction
	}
	for _, a := range archives {
		if strings.EqualFold(a.Meta.ActionID, id) {
			return a, nil
		}
	}
	js, _ := janitor.ReadJournal(filepath.Join(stateDir, janitor.JournalName))
	for i := len(js) - 1; i >= 0; i-- {
		// Only an action that archived (a retirement, or a terminal record's
		// removal into records.jsonl) wrote an archive: a restore or an
		// expiry names the archive path too, with an id of its own.
		wrote := js[i].Action == janitor.KindArchive || js[i].Action == janitor.KindRemoveRecord
		if !strings.EqualFold(js[i].ActionID, id) || !wrote || js[i].Archive == "" {
			continue
		}
		for _, a := range archives {
			if a.Path == js[i].Archive && a.Meta.ID == js[i].ID {
				return a, nil
			}
		}
	}
	return janitor.Archived{}, errNoAction
}

// errNoAction: REF names no journal action that wrote an archive.
var errNoAction = errors.New("no archive written by that action")

// resolveArchive finds the archive REF names among the archives of the scope
// (archivesOf: as `list --archived` numbers them) by the shared REF rules (an
// exact id, a row number, a unique id prefix, or an archive file path), and
// returns it with its index; destructive (restore): a number that is also the
// start of an id is refused. One session archived
// twice is ambiguous by id; the archive path picks one.
func resolveArchive(archives []janitor.Archived, ref string, all, destructive bool) (janitor.Archived, int, error) {
	rows := make([]indexer.RefRow, len(archives))
	for i, a := range archives {
		rows[i] = indexer.RefRow{ID: a.Meta.ID, File: a.Path}
		if a.Meta.ActionID != "" {
			rows[i].Note = "(action " + a.Meta.ActionID + ")"
		}
	}
	o := indexer.RefOptions{Numbers: true, Destructive: destructive}
	if all {
		o.Scope = "any project"
	}
	i, err := indexer.ResolveRows(rows, ref, o)
	if errors.Is(err, indexer.ErrNotFound) {
		where := "in this project"
		if all {
			where = "in any project"
		}
		err = fmt.Errorf("%w: no archived session matches %s %s", indexer.ErrNotFound, ref, where)
	}
	if err != nil {
		return janitor.Archived{}, 0, refErr(err, all, "list --archived")
	}
	return archives[i], i, nil
}
