package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = ""
)

const usageText = `usage: sessionwatch [--config PATH] COMMAND [flags]

commands:
  run [--once]          run the daemon in the foreground (index, watch, janitor)
  list                  sessions of this directory's project (--all for every project)
  show REF              one session in detail (--messages: the conversation)
  search QUERY…         find conversations: words, "phrases", prefix*, -excluded
  delete REF [--dry-run] [--force]
                        delete a session's files (refused while it is in use)
  clean [--source S] [--older-than D] [--invalid-only] [--max-sessions N] [--dry-run] [--json]
                        one janitor pass now: archive or delete what is due
  restore REF           bring an archived session back to its original path
  reindex [--check]     rebuild catalogs and native indexes from the session files
  export [--source S]   the HyperYOLO store's records as one JSON object (a backup)
  status [--json]       whether the daemon runs, per-source figures, last janitor run
  doctor                check config, roots, permissions and inotify limits
  service install|uninstall|print
  config show|check|init
  version

example:
  sessionwatch list --all --json
  sessionwatch clean --older-than 30d --dry-run
`

// cliError carries an exit code, a one-line message and an optional hint.
type cliError struct {
	code int
	msg  string
	hint string
}

func (e *cliError) Error() string { return e.msg }

func usageErr(hint, format string, args ...any) error {
	return &cliError{code: 2, msg: fmt.Sprintf(format, args...), hint: hint}
}

func failErr(hint, format string, args ...any) error {
	return &cliError{code: 1, msg: fmt.Sprintf(format, args...), hint: hint}
}

// errSilentFailure exits 1 after the command already printed what went wrong.
var errSilentFailure = &cliError{code: 1}

// exitCode prints err as one line (plus a hint line) and decides the exit code: the
// only place that does.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	msg, hint := err.Error(), ""
	var ce *cliError
	switch {
	case errors.As(err, &ce):
		code, hint = ce.code, ce.hint
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, config.ErrInvalid):
		code = 2
	case errors.Is(err, indexer.ErrBadRef):
		code = 2
	}
	if msg != "" {
		// Several problems (a bad config) are listed one per line after the first.
		lines := strings.Split(msg, "\n")
		fmt.Fprintf(stderr, "sessionwatch: %s\n", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(stderr, "  %s\n", l)
		}
	}
	if hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	return code
}

// env is what every command gets.
type env struct {
	configPath string
	stdout     io.Writer
	stderr     io.Writer
}

// run parses the global flags and dispatches to a command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sessionwatch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", config.DefaultPath(), "config file")
	if err := fs.Parse(args); err != nil {
		return usageErr("run 'sessionwatch help'", "%v", err)
	}
	e := &env{configPath: *configPath, stdout: stdout, stderr: stderr}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usageText)
		return usageErr("", "no command given")
	}
	cmd, cargs := rest[0], rest[1:]
	switch cmd {
	case "run":
		return cmdRun(ctx, e, cargs)
	case "list":
		return cmdList(e, cargs)
	case "show":
		return cmdShow(e, cargs)
	case "search":
		return cmdSearch(e, cargs)
	case "delete":
		return cmdDelete(ctx, e, cargs)
	case "clean":
		return cmdClean(ctx, e, cargs)
	case "restore":
		return cmdRestore(ctx, e, cargs)
	case "reindex":
		return cmdReindex(e, cargs)
	case "export":
		return cmdExport(e, cargs)
	case "config":
		return cmdConfig(e, cargs)
	case "status":
		return cmdStatus(e, cargs)
	case "doctor":
		return cmdDoctor(e, cargs)
	case "service":
		return cmdService(e, cargs)
	case "version":
		return cmdVersion(e, cargs)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usageText)
		return nil
	}
	return usageErr("run 'sessionwatch help' for the list of commands", "unknown command %q", cmd)
}

// newFlags makes a command's flag set; usage shows the example.
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses and maps flag errors to usage errors; it allows flags after
// positional arguments ("show REF --json").
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageErr("run 'sessionwatch "+fs.Name()+" -h'", "%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// loadConfig reads the config file; problems come back as a config error (exit 2)
// listing every problem, one per line.
func (e *env) loadConfig() (*config.Config, error) {
	cfg, err := config.Load(e.configPath)
	if err == nil {
		return cfg, nil
	}
	if !errors.Is(err, config.ErrInvalid) {
		return nil, failErr("", "%v", err)
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var lines []string
	for _, e := range errs {
		var p *config.Problem
		if errors.As(e, &p) {
			lines = append(lines, p.Error())
		} else {
			lines = append(lines, e.Error())
		}
	}
	noun := "problem"
	if len(lines) > 1 {
		noun = "problems"
	}
	return nil, &cliError{code: 2, msg: fmt.Sprintf("invalid config %s (%d %s):\n%s", e.configPath, len(lines), noun, strings.Join(lines, "\n")),
		hint: "fix the file, then run 'sessionwatch config check'"}
}

// newLogger builds the one logger of the process from the config.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	switch cfg.LogLevel {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func cmdVersion(e *env, args []string) error {
	fs := newFlags(e, "version", "sessionwatch version")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	c := commit
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	fmt.Fprintf(e.stdout, "sessionwatch %s (commit %s)\n", version, c)
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
