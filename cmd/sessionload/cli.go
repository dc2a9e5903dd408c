package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
)

const usage = `usage: sessionload COMMAND [flags]

commands:
  gen    [store flags] ROOT                 write a synthetic store under ROOT
  write  [store flags] [writer flags] ROOT  append to a store gen wrote, at a rate
  scan   --mode headtail|full ROOT          list sessions the way the agents do
  bench  [bench flags]                      side-by-side benchmark, Markdown on stdout

example:
  sessionload gen --layout wave --projects 10 --sessions 1000 /tmp/s/.wave/projects
  sessionload write --layout wave --projects 10 --sessions 1000 --writers 8 --rate 100 --duration 30s /tmp/s/.wave/projects
  go run ./cmd/sessionload bench --sizes 1000,10000
`

// run executes one command and returns the exit code (0 ok, 1 failure, 2 usage):
// exit codes are decided here only.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "gen":
		err = cmdGen(args[1:], stdout, stderr)
	case "write":
		err = cmdWrite(ctx, args[1:], stdout, stderr)
	case "scan":
		err = cmdScan(args[1:], stdout, stderr)
	case "bench":
		err = cmdBench(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "sessionload: unknown command %q\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sessionload: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "sessionload: %v\n", err)
		return 1
	}
}

// newFlags makes a command's flag set with a usage text that shows an example.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// storeFlags registers the flags that describe a store.
func storeFlags(fs *flag.FlagSet) *gen.Spec {
	sp := &gen.Spec{}
	fs.StringVar(&sp.Layout, "layout", "wave", "store layout: "+strings.Join(gen.Layouts(), ", "))
	fs.IntVar(&sp.Projects, "projects", 10, "number of projects")
	fs.IntVar(&sp.Sessions, "sessions", 1000, "number of sessions")
	fs.IntVar(&sp.Lines, "lines", gen.DefaultLines, "mean message lines per session")
	fs.Float64Var(&sp.Spread, "spread", gen.DefaultSpread, "lines per session vary uniformly by ±spread (negative: exactly --lines)")
	fs.IntVar(&sp.LineSize, "line-size", gen.DefaultLineSize, "mean bytes per message line (each within ±50%)")
	fs.Float64Var(&sp.Subagents, "subagents", 0.1, "fraction of sessions that are subagents")
	fs.Int64Var(&sp.Seed, "seed", 1, "seed: the same flags and seed write the same files")
	fs.StringVar(&sp.ProjectPrefix, "project-prefix", "", "prefix of every project name")
	return sp
}

func parse(fs *flag.FlagSet, args []string, wantArgs int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() != wantArgs {
		return nil, usagef("%s: want %d argument(s), got %d (see -h)", fs.Name(), wantArgs, fs.NArg())
	}
	return fs.Args(), nil
}

func cmdGen(args []string, out, stderr io.Writer) error {
	fs := newFlags("gen", "sessionload gen [store flags] ROOT\n\nexample: sessionload gen --layout claude --projects 20 --sessions 2000 --lines 40 /tmp/s/.claude/projects", stderr)
	sp := storeFlags(fs)
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	st, err := gen.Plan(pos[0], *sp)
	if err != nil {
		return usageError{err}
	}
	start := time.Now()
	if err := st.Write(); err != nil {
		return err
	}
	var bytes int64
	for _, s := range st.Sessions {
		if fi, err := os.Stat(st.Path(s)); err == nil {
			bytes += fi.Size()
		}
	}
	fmt.Fprintf(out, "wrote %d %s sessions in %d projects, %s, under %s in %s\n",
		len(st.Sessions), sp.Layout, sp.Projects, human(bytes), st.Root, time.Since(start).Round(time.Millisecond))
	return nil
}

func cmdWrite(ctx context.Context, args []string, out, stderr io.Writer) error {
	fs := newFlags("write", "sessionload write [store flags] [writer flags] ROOT   (the store flags must be those gen was given)\n\nexample: sessionload write --layout claude --projects 20 --sessions 2000 --lines 40 --writers 8 --rate 500 --duration 1m /tmp/s/.claude/projects", stderr)
	sp := storeFlags(fs)
	var opt gen.WriteOptions
	fs.IntVar(&opt.Writers, "writers", 8, "concurrent writers, each owning a share of the sessions")
	fs.Float64Var(&opt.Rate, "rate", 100, "appends per second over all writers (0: as fast as possible)")
	fs.DurationVar(&opt.Duration, "duration", 10*time.Second, "how long to write (0: until --count or Ctrl-C)")
	fs.IntVar(&opt.Count, "count", 0, "stop after this many appends (0: no limit)")
	fs.Float64Var(&opt.Partial, "partial", 0.1, "fraction of appends split in two writes, leaving a partial line in between")
	targets := fs.Int("targets", 0, "append to only the first N sessions (0: all)")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	opt.Seed = sp.Seed
	st, err := gen.Plan(pos[0], *sp)
	if err != nil {
		return usageError{err}
	}
	if err := st.Resume(); err != nil {
		return fmt.Errorf("%w (write the store with 'sessionload gen' and the same store flags first)", err)
	}
	if *targets > 0 && *targets < len(st.Sessions) {
		opt.Targets = st.Sessions[:*targets]
	}
	ws, err := st.Run(ctx, opt)
	fmt.Fprintf(out, "%d appends (%d split), %s in %s: %.1f appends/s\n",
		ws.Appends, ws.Partials, human(ws.Bytes), ws.Elapsed.Round(time.Millisecond), float64(ws.Appends)/ws.Elapsed.Seconds())
	return err
}

// human renders a byte count as B, KiB, MiB or GiB.
func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
