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
	"slices"
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
  delete REF [--dry-run] [--force] [--permanent]
                        archive a session (restorable), or remove it; refused while in use
  clean [--source S] [--older-than D] [--invalid-only] [--max-sessions N] [--dry-run] [--json]
                        one janitor pass now: archive or delete what is due
  restore REF           bring an archived session back to its original path
  reindex [--check]     rebuild catalogs, native indexes, search index and usage ledger
  export [--source S]   the HyperYOLO store's records as one JSON object (a backup)
  usage [daily|weekly|monthly|session|project] [--all] [--by model] [--json] [--statusline]
                        tokens and cost per day, week, month, session or project
  status [--json]       whether the daemon runs, per-source figures, last janitor run
  doctor                check config, roots, permissions and inotify limits
  service install|uninstall|print
                        the systemd user unit (launchd agent on macOS)
  config show|check|init
                        the effective config / validate it / write the default file
  completion bash|zsh|fish
                        print a shell completion script
  version               version and commit
  help [COMMAND]        this text, or a command's usage

REF is a session id, a unique id prefix, a row number of 'list' or a session file path.
'sessionwatch COMMAND --help' shows a command's flags and an example.

example:
  sessionwatch list --all --json
  sessionwatch clean --older-than 30d --dry-run
`

// summaries are the one-line descriptions of the commands, shown by
// `COMMAND --help` under the usage line. Commands is their order.
var summaries = map[string]string{
	"run":        "Run the daemon in the foreground: index every source, watch it, and run the janitor on its schedule.",
	"list":       "List the sessions of this directory's project across all sources (--all: every project), newest first, numbered from 1.",
	"show":       "Show one session in detail. REF is an id, a unique id prefix, a row number of 'list' (same flags) or a session file path.",
	"search":     "Find conversations across every agent: words (all must occur), \"a phrase\", prefix*, -excluded.",
	"delete":     "Retire one session of this project (--all: any project): archive it (restorable), or with --permanent remove its files. REF is read as by 'show', but a number that is also the start of an id is refused.",
	"clean":      "Run one janitor pass now, with these overrides; print each action and a summary line.",
	"restore":    "Bring an archived session back to its original path (never overwrites).",
	"reindex":    "Rebuild the catalogs, native indexes, search index and usage ledger from the session files.",
	"export":     "Print the HyperYOLO store's records as one JSON object (a backup 'cp' could restore).",
	"usage":      "Tokens the agents spent and what they cost, per day, week, month, session or project.",
	"status":     "Whether the daemon runs (pid, uptime), per-source figures, the last janitor run and warnings.",
	"doctor":     "Check the config, the roots, permissions and inotify limits against the watches needed.",
	"service":    "Install, uninstall or print the systemd user unit (launchd agent on macOS).",
	"config":     "Show the effective config, check the file (every problem), or write the default file.",
	"completion": "Print a completion script for bash, zsh or fish.",
	"version":    "Print the version and commit.",
	"help":       "Print the list of commands, or a command's usage.",
}

// commandNames are the commands, in the order of usageText.
var commandNames = []string{"run", "list", "show", "search", "delete", "clean", "restore", "reindex", "export", "usage", "status", "doctor", "service", "config", "completion", "version", "help"}

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
		// Ids, paths and REFs in it came from outside: escaped, line by line.
		lines := strings.Split(msg, "\n")
		fmt.Fprintf(stderr, "sessionwatch: %s\n", termSafe(lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintf(stderr, "  %s\n", termSafe(l))
		}
	}
	if hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", termSafe(hint))
	}
	return code
}

// env is what every command gets.
type env struct {
	configPath string
	// configExplicit: the path came from --config or $SESSIONWATCH_CONFIG, so a
	// missing file is an error rather than "all defaults".
	configExplicit bool
	stdout         io.Writer
	stderr         io.Writer
}

// run parses the global flags and dispatches to a command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &env{stdout: stdout, stderr: stderr}
	rest, err := e.globalFlags(args)
	if err != nil {
		return err
	}
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
	case "usage":
		return cmdUsage(e, cargs)
	case "config":
		return cmdConfig(e, cargs)
	case "status":
		return cmdStatus(e, cargs)
	case "doctor":
		return cmdDoctor(e, cargs)
	case "service":
		return cmdService(e, cargs)
	case "completion":
		return cmdCompletion(e, cargs)
	case completeCmd:
		return cmdComplete(e, cargs)
	case "version", "--version", "-version":
		return cmdVersion(e, cargs)
	case "help", "-h", "--help", "-help":
		if cmd == "help" && len(cargs) > 0 {
			if cargs[0] == "help" {
				return cmdHelp(e)
			}
			// `help CMD [SUB]` is `CMD [SUB] --help`.
			return run(ctx, append(slices.Clone(cargs), "--help"), stdout, stderr)
		}
		return cmdHelp(e)
	}
	return unknownCommand(cmd)
}

func cmdHelp(e *env) error {
	fmt.Fprint(e.stdout, usageText)
	return nil
}

// unknownCommand is the usage error of a mistyped command, with a suggestion.
func unknownCommand(cmd string) error {
	if strings.HasPrefix(cmd, "-") {
		return unknownFlag("sessionwatch", cmd, []string{"config", "help", "version"})
	}
	hint := "run 'sessionwatch help' for the list of commands"
	if s := suggest(cmd, commandNames); s != "" {
		hint = fmt.Sprintf("did you mean 'sessionwatch %s'? (run 'sessionwatch help' for the list of commands)", s)
	}
	return usageErr(hint, "unknown command %q", cmd)
}

// globalFlags takes the global flags (--config PATH) out of args, before or after
// the command (`sessionwatch config check --config x.json`), and returns the rest.
// A "--" ends the flags; --help and --version before the command are commands.
func (e *env) globalFlags(args []string) ([]string, error) {
	var rest []string
	configPath, explicit := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			if len(rest) == 0 && strings.HasPrefix(a, "-") && !isCommandFlag(a) {
				return nil, unknownFlag("sessionwatch", a, []string{"config", "help", "version"})
			}
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, usageErr("example: sessionwatch --config ~/sw.json status", "--config needs a file path")
			}
			i++
			value = args[i]
		}
		configPath, explicit = value, true
	}
	switch {
	case explicit:
		e.configPath = config.ExpandPath(configPath)
	case os.Getenv("SESSIONWATCH_CONFIG") != "":
		e.configPath, explicit = config.DefaultPath(), true
	default:
		e.configPath = config.DefaultPath()
	}
	e.configExplicit = explicit
	return rest, nil
}

// isCommandFlag: a flag that stands for a command (--help, --version).
func isCommandFlag(a string) bool {
	switch a {
	case "-h", "-help", "--help", "-version", "--version":
		return true
	}
	return false
}

// newFlags makes a command's flag set. usage is the synopsis, optionally followed
// by "   (example: …)" and, on further lines, a description; `CMD --help` prints
// them with the flags on stdout.
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { printHelp(e.stdout, fs, usage) }
	return fs
}

// printHelp prints a command's usage: synopsis, description, flags, example.
func printHelp(w io.Writer, fs *flag.FlagSet, usage string) {
	first, more, _ := strings.Cut(usage, "\n")
	synopsis, example, _ := strings.Cut(first, "   (example: ")
	example = strings.TrimSuffix(example, ")")
	desc := strings.TrimSpace(more)
	if desc == "" {
		desc = summaries[strings.Fields(fs.Name())[0]]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n", synopsis)
	if desc != "" {
		fmt.Fprintf(&b, "\n%s\n", desc)
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if n == 0 {
			b.WriteString("\nflags:\n")
		}
		n++
		name := "--" + f.Name
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); !isBool {
			arg, _ := flag.UnquoteUsage(f)
			if arg == "" {
				arg = "value"
			}
			name += " " + strings.ToUpper(arg)
		}
		fmt.Fprintf(&b, "  %-22s %s", name, f.Usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	b.WriteString("\nglobal flags:\n  --config PATH          config file (default $SESSIONWATCH_CONFIG, else ~/.config/sessionwatch/config.json)\n")
	if example != "" {
		fmt.Fprintf(&b, "\nexample:\n  %s\n", example)
	}
	io.WriteString(w, b.String())
}

// parseFlags parses and maps flag errors to usage errors; it allows flags after
// positional arguments ("show REF --json"). -h or --help prints the command's
// usage on stdout and returns flag.ErrHelp (exit 0).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	help := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = help }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				help()
				return nil, err
			}
			return nil, flagErr(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagErr turns the flag package's error into one line and a hint.
func flagErr(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	helpHint := "run 'sessionwatch " + fs.Name() + " --help'"
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		names = append(names, "config", "help")
		return unknownFlag(fs.Name(), name, names)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return usageErr(helpHint, "%s: --%s needs a value", fs.Name(), strings.TrimLeft(name, "-"))
	}
	// invalid value "x" for flag -max-sessions: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if val, name, ok := strings.Cut(rest, " for flag "); ok {
			name, _, _ = strings.Cut(name, ":")
			return usageErr(helpHint, "%s: invalid value %s for --%s", fs.Name(), val, strings.TrimLeft(name, "-"))
		}
	}
	return usageErr(helpHint, "%s: %s", fs.Name(), msg)
}

// unknownFlag is the usage error of a mistyped flag, with a suggestion.
func unknownFlag(cmd, flagArg string, names []string) error {
	name, _, _ := strings.Cut(strings.TrimLeft(flagArg, "-"), "=")
	hint := "run 'sessionwatch " + cmd + " --help' for the flags"
	if cmd == "sessionwatch" {
		hint = "run 'sessionwatch help' for the commands and global flags"
	}
	if s := suggest(name, names); s != "" {
		hint = "did you mean --" + s + "? (" + hint + ")"
	}
	if cmd == "sessionwatch" {
		// exitCode prefixes every message with "sessionwatch: " already.
		return usageErr(hint, "unknown flag --%s", name)
	}
	return usageErr(hint, "%s: unknown flag --%s", cmd, name)
}

// suggest returns the candidate closest to word (edit distance at most 2, and
// less than half its length), or the one candidate word is a prefix of; "" if none.
func suggest(word string, candidates []string) string {
	best, bestD := "", 3
	var prefixed []string
	for _, c := range candidates {
		if word != "" && strings.HasPrefix(c, word) {
			prefixed = append(prefixed, c)
		}
		if d := editDistance(word, c); d < bestD && 2*d < max(len(word), len(c)) {
			best, bestD = c, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: insertions,
// deletions, substitutions and swaps of neighbours ("zhs" → "zsh") cost 1. Bytes:
// names are ASCII.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// loadConfig reads the config file; problems come back as a config error (exit 2)
// listing every problem, one per line.
func (e *env) loadConfig() (*config.Config, error) {
	if e.configExplicit {
		if _, err := os.Stat(e.configPath); errors.Is(err, os.ErrNotExist) {
			return nil, usageErr("create it with 'sessionwatch config init --config "+e.configPath+"', or leave out --config and $SESSIONWATCH_CONFIG to use the defaults",
				"config file %s does not exist", tildePath(e.configPath))
		}
	}
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
	fs := newFlags(e, "version", "sessionwatch version   (example: sessionwatch --version)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "version: unexpected argument %q", pos[0])
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

// tildePath shortens a path under the home directory to ~/… for human output.
func tildePath(p string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return p
	}
	if p == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(home, "/")+"/"); ok {
		return "~/" + rest
	}
	return p
}

// tildeText shortens, in a message for humans, every path under the home
// directory to ~/… (a janitor reason names lock files and directories).
func tildeText(s string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return s
	}
	prefix := strings.TrimSuffix(home, "/") + "/"
	var b strings.Builder
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		// Only where a path starts: at the beginning, after a space, quote or '('.
		if i == 0 || strings.ContainsRune(" \t\"'(=", rune(s[i-1])) {
			b.WriteString(s[:i] + "~/")
		} else {
			b.WriteString(s[:i+len(prefix)])
		}
		s = s[i+len(prefix):]
	}
}

// showPath is a path as human output prints it: under ~, escaped, quoted when it
// holds spaces or had to be escaped.
func showPath(p string) string { return quoteIfOdd(tildePath(p)) }
