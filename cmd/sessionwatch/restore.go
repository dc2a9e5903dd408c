package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

func cmdRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "restore", "sessionwatch restore REF [--all] [--source S] [--type main|subagent|all]   (example: sessionwatch restore 1)\n"+
		summaries["restore"]+" REF is read among the rows 'sessionwatch list --archived' prints with the same flags: an id, a row number, a unique id prefix or an archive path.")
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
	// Archives older versions left outside their project's directory.
	janitor.AdoptArchives(cfg.ArchiveDir)
	var sources []string
	if *source != "" {
		sources = []string{*source}
	}
	switch *typ {
	case "main", "subagent", "all":
	default:
		return usageErr("use --type main, subagent or all", "restore: invalid --type %q", *typ)
	}
	// The rows of `list --archived` with the same flags, in the same order.
	archives, err := archivesOf(cfg, scope{all: *all, sources: sources, typ: *typ})
	if err != nil {
		return failErr("", "restore: %v", err)
	}
	ar, _, err := resolveArchive(archives, pos[0], *all, true)
	if err != nil {
		return err
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
