package main

import (
	"context"
	"fmt"

	"github.com/sessionwatch/sessionwatch/janitor"
)

func cmdDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "delete", "sessionwatch delete REF [--all] [--source S] [--type main|subagent|all] [--dry-run] [--force] [--permanent]   (example: sessionwatch delete 3 --dry-run)\n"+
		summaries["delete"]+"\n\n"+
		"By default the session is archived as the janitor archives it: gzipped into archive_dir, journaled, and\n"+
		"restorable ('sessionwatch list --archived', then 'sessionwatch restore REF'). --permanent removes its\n"+
		"files (and a stale lock sidecar) instead: that cannot be undone. A session in use is refused.")
	sf := addScopeFlags(fs)
	dry := fs.Bool("dry-run", false, "print what would be done and change nothing")
	force := fs.Bool("force", false, "retire it even if recently active or held open (never if a live lock or running agent holds it)")
	permanent := fs.Bool("permanent", false, "remove the files instead of archiving them (not restorable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("example: sessionwatch delete 3 --dry-run", "delete: want exactly one REF (got %d)", len(pos))
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	sc, err := sf.scope(cfg)
	if err != nil {
		return err
	}
	// REF is resolved within what `list` prints with the same flags; a number that
	// is also the start of another id is refused, never guessed.
	en, _, err := resolveRef(cfg, sc, pos[0], true)
	if err != nil {
		return err
	}
	logger := quietLogger(cfg, e.stderr)
	g, err := loadGroup(cfg, logger, false, *dry)
	if err != nil {
		return err
	}
	j, err := janitor.New(cfg, g, logger, janitor.Options{})
	if err != nil {
		return failErr("", "delete: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, passLockWait)
	defer cancel()
	rep, err := j.Delete(ctx, en, janitor.DeleteOptions{Force: *force, DryRun: *dry, Permanent: *permanent})
	printActions(e.stdout, rep.Actions)
	if err != nil {
		return janitorErr("delete", err)
	}
	switch {
	case *dry:
		fmt.Fprintln(e.stdout, "dry run, nothing changed")
	case rep.Archived > 0:
		fmt.Fprintf(e.stdout, "archived: see it with 'sessionwatch list --archived --all', undo with 'sessionwatch restore %s --all'\n", termSafe(en.ID))
	}
	return reportErrors(e, "delete", rep)
}
