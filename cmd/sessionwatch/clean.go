package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
	"github.com/sessionwatch/sessionwatch/usage"
)

// passLockWait is how long a CLI command waits for a running janitor pass (the
// daemon's) to finish before giving up.
const passLockWait = 2 * time.Minute

func cmdClean(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "clean", "sessionwatch clean [--source S] [--older-than D] [--invalid-only] [--max-sessions N] [--dry-run] [--json]   (example: sessionwatch clean --older-than 30d --dry-run)")
	source := fs.String("source", "", "only this source")
	olderThan := fs.String("older-than", "", "retire sessions inactive for longer than this (e.g. 30d, 36h) instead of the retention; also on sources whose retention is off")
	invalidOnly := fs.Bool("invalid-only", false, "retire only sessions marked invalid or corrupt (corrupt ones are always archived)")
	maxSessions := fs.Int("max-sessions", 0, "keep only the newest N main sessions per project")
	dry := fs.Bool("dry-run", false, "print what would be done and change nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "clean: unexpected argument %q", pos[0])
	}
	o := janitor.Overrides{Source: *source, InvalidOnly: *invalidOnly, DryRun: *dry}
	if *olderThan != "" {
		d, err := config.ParseDuration(*olderThan)
		if err != nil || !d.Enabled() {
			return usageErr("give a positive duration such as 30d or 36h", "clean: invalid --older-than %q", *olderThan)
		}
		o.OlderThan = d.D
	}
	if flagSet(fs, "max-sessions") {
		if *maxSessions < 1 {
			return usageErr("give the number of sessions to keep per project, at least 1", "clean: invalid --max-sessions %d", *maxSessions)
		}
		if *invalidOnly {
			return usageErr("run them as two passes", "clean: --invalid-only and --max-sessions cannot be combined")
		}
		o.MaxSessions = *maxSessions
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	if *source != "" {
		if err := checkSource(cfg, "clean", *source); err != nil {
			return err
		}
	}
	logger := quietLogger(cfg, e.stderr)
	// Without a daemon the catalog may lag the files: bring it up to date first
	// (stat only for unchanged files). A dry run does that in memory only.
	g, err := loadGroup(cfg, logger, !daemonActive(cfg.StateDir), o.DryRun || cfg.Janitor.DryRun)
	if err != nil {
		return err
	}
	j, err := janitor.New(cfg, g, logger, janitor.Options{})
	if err != nil {
		return failErr("", "clean: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, passLockWait)
	defer cancel()
	rep, err := j.RunOnce(ctx, o)
	if err != nil {
		return janitorErr("clean", err)
	}
	if *asJSON {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		printActions(e.stdout, rep.Actions)
		fmt.Fprintln(e.stdout, summaryLine(rep))
		if !rep.DryRun && rep.Archived > 0 {
			fmt.Fprintln(e.stderr, "hint: see them with 'sessionwatch list --archived --all'; undo with 'sessionwatch restore REF --all'")
		}
	}
	return reportErrors(e, "clean", rep)
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// checkSource is a usage error unless name is an enabled source of cfg.
func checkSource(cfg *config.Config, cmd, name string) error {
	for _, s := range cfg.Sources {
		if s.Name == name {
			if !s.Enabled {
				return usageErr("enable it in the config first", "%s: source %q is disabled", cmd, name)
			}
			return nil
		}
	}
	return usageErr("see 'sessionwatch config show' for the sources", "%s: unknown source %q", cmd, name)
}

// quietLogger logs only errors: a CLI command prints its own account of what it
// did, so the janitor's info and warning lines would say everything twice.
func quietLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelError}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// loadGroup builds the indexers from the catalogs; with reconcile it also
// brings them up to date with the files (in memory only when dry).
func loadGroup(cfg *config.Config, logger *slog.Logger, reconcile, dry bool) (*indexer.Group, error) {
	g, err := indexer.NewGroup(cfg, logger, reconcile && dry)
	if err != nil {
		return nil, failErr("", "%v", err)
	}
	if !dry {
		// Serialized with the daemon per pass; reloads what it wrote meanwhile.
		g.UseWriterLock(indexer.NewWriterLock(cfg.StateDir), false)
		// Without a daemon we are the only writer: the ledger and the search index
		// follow the catalogs (closed at exit). A running daemon keeps them itself:
		// it reloads the catalogs this pass writes and tells them what left.
		if !daemonActive(cfg.StateDir) {
			if _, err := attachConsumers(cfg, g, logger); err != nil {
				return nil, err
			}
		} else if err := usage.MarkBehind(cfg.StateDir); err != nil {
			// The daemon's ledger is behind what this pass writes until its next pass.
			return nil, failErr("", "mark the usage ledger behind: %v", err)
		}
	}
	if err := g.Load(); err != nil {
		logger.Warn("load catalogs", "err", err)
	}
	if reconcile {
		if err := g.ReconcileAll(); err != nil {
			return nil, failErr("run 'sessionwatch reindex' to see what is wrong", "index the sources: %v", err)
		}
	}
	return g, nil
}

// daemonActive reports whether the daemon of this state dir runs: its status
// file says so and its pid is alive.
func daemonActive(stateDir string) bool {
	st, err := readStatusFile(stateDir)
	return err == nil && st.Running && st.PID > 0 && syscall.Kill(st.PID, 0) == nil
}

// janitorErr maps the janitor's errors to exit codes and hints.
func janitorErr(cmd string, err error) error {
	var re *janitor.RefusedError
	switch {
	case errors.As(err, &re) && re.Hard:
		return failErr("a live lock or a running agent holds it; --force never overrides that: close the agent first", "%s", tildeText(err.Error()))
	case errors.As(err, &re):
		return failErr("add --force to delete it anyway", "%s", tildeText(err.Error()))
	case errors.Is(err, janitor.ErrBusy):
		return failErr("try again when that pass is done", "%s: %s", cmd, tildeText(err.Error()))
	case errors.Is(err, janitor.ErrStoreBusy):
		return failErr("the agent is writing its store right now: try again in a few seconds", "%s: %s", cmd, tildeText(err.Error()))
	case errors.Is(err, janitor.ErrUnknownSource):
		return failErr("enable the source in the config", "%s: %s", cmd, tildeText(err.Error()))
	case errors.Is(err, janitor.ErrExists):
		return failErr("move it away first, then run restore again", "%s: %s", cmd, tildeText(err.Error()))
	case errors.Is(err, indexer.ErrNotFound):
		return failErr("run 'sessionwatch list' to see the sessions", "%s: %s", cmd, tildeText(err.Error()))
	}
	return failErr("", "%s: %s", cmd, tildeText(err.Error()))
}

// reportErrors prints the actions that failed and exits 1 if there were any.
func reportErrors(e *env, cmd string, rep janitor.Report) error {
	if len(rep.Errors) == 0 {
		return nil
	}
	for _, msg := range rep.Errors {
		fmt.Fprintf(e.stderr, "  %s\n", termSafe(msg))
	}
	return failErr("nothing was lost: a failed action keeps the originals; fix the cause and run it again", "%s: %d action(s) failed", cmd, len(rep.Errors))
}

// printActions prints one line per action: action, source, short id, size,
// reason, file.
func printActions(w io.Writer, as []janitor.Action) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range as {
		file := showPath(a.File)
		if a.Kind == janitor.KindWarn {
			file = showPath(a.Project)
		}
		reason := a.Reason
		if a.Error != "" {
			reason = "FAILED: " + a.Error
		}
		if a.Archive != "" && a.Kind != janitor.KindExpireArchive {
			file += " -> " + showPath(a.Archive)
		}
		id := dash(short(a.ID, 8))
		if a.ID != "" && (len(a.ID) <= 16 || a.Kind == janitor.KindOrphan || a.Kind == janitor.KindKillOrphan) {
			// Short keys (hyper_0a1b2c3d) share their first 8 characters, and a
			// tmux session name's end is what tells it apart: print them whole.
			id = a.ID
		}
		// Reason and file share the last cell: a long reason must not pad every line.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s  %s\n", a.Kind, termSafe(a.Source), termSafe(id), humanSize(a.Bytes), termSafe(oneLine(tildeText(reason))), file)
	}
	tw.Flush()
}

// quoteIfOdd escapes s for a terminal (termSafe) and quotes it when it holds
// spaces or had to be escaped, so one action stays one line.
func quoteIfOdd(s string) string {
	safe := termSafe(s)
	if safe != s || strings.ContainsAny(s, " \t\n\r") {
		return `"` + safe + `"`
	}
	return s
}

// summaryLine is the last line of `clean`.
func summaryLine(rep janitor.Report) string {
	s := fmt.Sprintf("retired %d (archived %d, deleted %d), skipped in use %d, freed %s",
		rep.Retired, rep.Archived, rep.Deleted, rep.SkippedInUse, humanSize(rep.BytesFreed))
	if rep.RecordsRemoved > 0 {
		s += fmt.Sprintf(", removed %d dead terminal record(s)", rep.RecordsRemoved)
	}
	if rep.Orphans > 0 {
		s += fmt.Sprintf(", %d orphan tmux session(s) (%d killed)", rep.Orphans, rep.OrphansKilled)
	}
	if n := len(rep.Warnings); n > 0 {
		s += fmt.Sprintf(", %d warning(s)", n)
	}
	if rep.DryRun {
		s = "dry run, nothing changed: " + s
	}
	return s
}

// readStatusFile reads the daemon's status file.
func readStatusFile(stateDir string) (*statusFile, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, "status.json"))
	if err != nil {
		return nil, err
	}
	var st statusFile
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
