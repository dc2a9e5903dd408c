package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// benchOpts are the bench command's flags.
type benchOpts struct {
	layout       string
	sections     string
	swOnly       bool // list and growth: only sessionwatch's own rows
	sizes        intList
	perProject   int
	lines        int
	lineSize     int
	subagents    float64
	growthN      int
	growthLines  intList
	rates        intList
	incSessions  int
	incTargets   int
	bigSessions  int
	bigLines     int
	writers      int
	phase        time.Duration
	partial      float64
	rssSizes     intList
	rssRate      int
	idle         time.Duration
	runs         int
	coldCache    bool
	evictMax     int
	seed         int64
	dir          string
	stateDir     string
	keep         bool
	sessionwatch string
	usage        usageOpts
	// search section
	searchSessions, searchLines, searchLineSize int
	searchWords, searchRare                     string
	searchQueryRuns                             int
}

type intList []int

func (l *intList) String() string {
	var s []string
	for _, n := range *l {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 0 {
			return fmt.Errorf("not a list of counts: %q", v)
		}
		*l = append(*l, n)
	}
	return nil
}

const benchUsage = `sessionload bench [flags]

Measures, in one run and side by side on the same generated stores:
  list     sessionwatch list --all vs reading each file's head and tail vs parsing every file
  growth   the same at a fixed session count as transcripts grow
  cold     sessionwatch reindex on a fresh state dir vs cat of the same files
  inc      bytes read per appended line and append-to-index latency at several rates
  scale    issue 16's targets on one 100k-session store (not in the default run: ~10 min)
  rss      daemon RSS, CPU and inotify watches at idle and under load
  search   sessionwatch search: cold build vs cat, index size, queries vs grep, append latency, RSS
and prints Markdown tables (with this machine and the exact command) on stdout.

example (the BENCHMARKS.md run):
  go run ./cmd/sessionload bench > /tmp/bench.md
  go run ./cmd/sessionload bench --sections list,cold --sizes 1000,10000 --runs 5
`

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := benchOpts{sizes: intList{1000, 10000, 50000}, growthLines: intList{8, 64, 512}, rates: intList{10, 100, 1000}, rssSizes: intList{1000, 10000, 100000}}
	fs := newFlags("bench", strings.TrimSpace(benchUsage), stderr)
	fs.StringVar(&o.layout, "layout", "wave", "store layout")
	fs.StringVar(&o.sections, "sections", "list,growth,cold,inc,rss,usage,search", "sections to run")
	fs.Var(&o.sizes, "sizes", "session counts for list and cold")
	scaleFlags(fs) // scale.go
	fs.IntVar(&o.perProject, "per-project", 100, "sessions per project")
	fs.IntVar(&o.lines, "lines", 8, "mean message lines per session")
	fs.IntVar(&o.lineSize, "line-size", 1024, "mean bytes per line")
	fs.Float64Var(&o.subagents, "subagents", 0.1, "fraction of subagent sessions")
	fs.IntVar(&o.growthN, "growth-sessions", 10000, "session count of the transcript-growth series")
	fs.Var(&o.growthLines, "growth-lines", "mean lines per session of the transcript-growth series (× --line-size)")
	fs.Var(&o.rates, "rates", "append rates (appends/s over all writers) for inc")
	fs.IntVar(&o.incSessions, "inc-sessions", 10000, "sessions in the inc store")
	fs.IntVar(&o.incTargets, "inc-targets", 1000, "files appended to in the rate phases")
	fs.IntVar(&o.bigSessions, "big-sessions", 20, "large sessions in the inc store (their own phase)")
	fs.IntVar(&o.bigLines, "big-lines", 4096, "lines of each large session (× --line-size)")
	fs.IntVar(&o.writers, "writers", 8, "concurrent writers")
	fs.DurationVar(&o.phase, "phase", 5*time.Second, "duration of each load phase")
	fs.Float64Var(&o.partial, "partial", 0.2, "fraction of split appends in the partial-lines phase (0: skip it)")
	fs.Var(&o.rssSizes, "rss-sizes", "session counts for rss")
	fs.IntVar(&o.rssRate, "rss-rate", 100, "append rate of the rss load phase")
	fs.DurationVar(&o.idle, "idle", 10*time.Second, "idle window for the idle CPU reading")
	fs.BoolVar(&o.coldCache, "evict", true, "cold: also measure with the store evicted from the page cache (posix_fadvise DONTNEED on its files)")
	fs.IntVar(&o.evictMax, "evict-max", 1024, "largest store (MiB) measured with an evicted page cache (device reads are slow)")
	fs.IntVar(&o.runs, "runs", 3, "timed runs per measurement (the median is reported)")
	fs.BoolVar(&o.swOnly, "sessionwatch-only", false, "list and growth: measure only sessionwatch list (with its refresh, and catalogs only), not the scanners")
	fs.Int64Var(&o.seed, "seed", 1, "store seed")
	fs.StringVar(&o.dir, "dir", "", "work directory (default: a new temp dir, removed afterwards)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.StringVar(&o.stateDir, "state-dir", "", "put each store's sessionwatch state dir under this directory (default: beside the store in the work directory); e.g. a tmpfs, to keep the state writes' filesystem out of the figures")
	fs.StringVar(&o.sessionwatch, "sessionwatch", "", "sessionwatch binary (default: go build it)")
	fs.IntVar(&o.usage.sessions, "usage-sessions", 20000, "usage: sessions of the Claude store reported on")
	fs.IntVar(&o.usage.lines, "usage-lines", 75, "usage: mean lines per session")
	fs.IntVar(&o.usage.lineSize, "usage-line-size", 2048, "usage: mean bytes per line")
	fs.IntVar(&o.usage.rssSessions, "usage-rss-sessions", 10000, "usage: sessions of the store the daemon's footprint is measured on")
	fs.StringVar(&o.usage.ccusage, "ccusage", "", "usage: the ccusage binary (default: ccusage on PATH; skipped if none)")
	fs.IntVar(&o.searchSessions, "search-sessions", 20000, "search: sessions of the store, spread over every line layout")
	fs.IntVar(&o.searchLines, "search-lines", 40, "search: mean lines per session")
	fs.IntVar(&o.searchLineSize, "search-line-size", 6144, "search: mean bytes per line")
	fs.StringVar(&o.searchWords, "search-words", "parser config", "search: the words of the multi-word query")
	fs.StringVar(&o.searchRare, "search-rare", "zzyzx", "search: the rare word")
	fs.IntVar(&o.searchQueryRuns, "search-query-runs", 9, "search: runs of each query and of grep (their median is the figure; a cold build runs --runs times)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if o.runs < 1 {
		return usagef("bench: --runs must be at least 1")
	}
	b := &bench{o: o, log: stderr, out: stdout, stores: map[string]*benchStore{}}
	var effective []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "dir" && f.Name != "keep" && f.Name != "sessionwatch" && f.Name != "state-dir" {
			effective = append(effective, "--"+f.Name+" "+f.Value.String())
		}
	})
	b.invoked = "go run ./cmd/sessionload bench " + strings.Join(args, " ")
	b.effective = "go run ./cmd/sessionload bench " + strings.Join(effective, " ")
	return b.run(ctx)
}

type bench struct {
	o                  benchOpts
	log, out           io.Writer
	work, bin, self    string
	invoked, effective string
	stores             map[string]*benchStore
}

// benchStore is a generated store with its own HOME, config and state dir.
type benchStore struct {
	name   string
	home   string
	root   string
	state  string
	config string
	stores []*gen.Store
	files  []string // every session file
	mains  int      // main sessions
	bytes  int64
	genDur time.Duration
}

func (s *benchStore) env() []string {
	return append(os.Environ(), "HOME="+s.home, "XDG_CONFIG_HOME="+filepath.Join(s.home, ".config"), "SESSIONWATCH_CONFIG="+s.config)
}

// stateDir is where the store called name keeps its sessionwatch state:
// <work>/<name>/state, or <--state-dir>/<name> when that flag is set.
func (b *bench) stateDir(name string) string {
	if b.o.stateDir != "" {
		return filepath.Join(b.o.stateDir, name)
	}
	return filepath.Join(b.work, name, "state")
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (b *bench) section(name string) bool {
	for _, s := range strings.Split(b.o.sections, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}

func (b *bench) run(ctx context.Context) error {
	var err error
	b.work = b.o.dir
	if b.work == "" {
		if b.work, err = os.MkdirTemp("", "sessionload-bench-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(b.work, 0o700); err != nil {
		return err
	}
	if !b.o.keep {
		defer os.RemoveAll(b.work)
	}
	if b.o.stateDir != "" {
		if err := os.MkdirAll(b.o.stateDir, 0o700); err != nil {
			return err
		}
	}
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	built := "binary " + b.o.sessionwatch
	if b.bin = b.o.sessionwatch; b.bin == "" {
		built = "built from " + sourceVersion()
		b.bin = filepath.Join(b.work, "sessionwatch")
		b.logf("building sessionwatch")
		// Built as the README says: statically linked (CGO_ENABLED=0).
		build := exec.Command("go", "build", "-o", b.bin, "github.com/sessionwatch/sessionwatch/cmd/sessionwatch")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build sessionwatch (or pass --sessionwatch): %v\n%s", err, out)
		}
	}
	started := time.Now()
	fmt.Fprintf(b.out, "## Run of %s\n\n", started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(b.out, "- command: `%s`\n- every flag: `%s`\n- sessionwatch: %s\n- machine: %s\n", b.invoked, b.effective, built, machine(b.work))
	if b.o.stateDir != "" {
		fmt.Fprintf(b.out, "- state dirs: under %s (%s), not beside the stores\n", b.o.stateDir, fsType(b.o.stateDir))
	}
	fmt.Fprintf(b.out, "- stores: layout %s, %d sessions per project, %d%% subagents, lines of %d B ±50%%, %d lines per session ±50%% unless stated; seed %d\n",
		b.o.layout, b.o.perProject, int(b.o.subagents*100), b.o.lineSize, b.o.lines, b.o.seed)
	fmt.Fprintf(b.out, "- every time is the median of %d runs, with a warm page cache unless marked \"evicted\"; each contender is its own process, its output read through a pipe; \"CPU\" is the process's user+system time, steadier than wall time on a shared machine\n\n", b.o.runs)

	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		{"list", b.benchList},
		{"growth", b.benchGrowth},
		{"cold", b.benchCold},
		{"inc", b.benchInc},
		{"scale", b.benchScale}, // scale.go
		{"rss", b.benchRSS},
		{"usage", b.benchUsage},
		{"search", b.benchSearch},
	}
	for _, st := range steps {
		if !b.section(st.name) {
			continue
		}
		if err := st.f(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	fmt.Fprintf(b.out, "Finished in %s; load average at the end %s.\n", time.Since(started).Round(time.Second), loadAvg())
	return nil
}

// store returns (generating it on first use) a store of n sessions with lines
// lines each; extra specs are written into the same root.
func (b *bench) store(name string, specs ...gen.Spec) (*benchStore, error) {
	if s := b.stores[name]; s != nil {
		return s, nil
	}
	home := filepath.Join(b.work, name)
	s := &benchStore{name: name, home: home, root: gen.DefaultRoot(b.o.layout, home), state: b.stateDir(name), config: filepath.Join(home, "config.json")}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"log_level":"warn",
 "janitor":{"run_at_start":false,"schedule":"off"},
 "sources":[{"name":%q,"layout":%q,"root":%q,"retention":"off"}]}`,
		s.state, filepath.Join(home, "archive"), b.o.layout, b.o.layout, s.root)
	if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	start := time.Now()
	// With --keep --dir, a store generated by an earlier run from the same specs is
	// used again (the generator is deterministic for a spec).
	mark := filepath.Join(home, "generated.txt")
	want := fmt.Sprintf("%+v\n", specs)
	old, _ := os.ReadFile(mark)
	reuse := b.o.keep && string(old) == want
	if !reuse {
		os.Remove(mark)
	}
	for _, sp := range specs {
		st, err := gen.Plan(s.root, sp)
		if err != nil {
			return nil, err
		}
		if reuse {
			b.logf("reusing %s: %d sessions in %d projects", name, sp.Sessions, sp.Projects)
		} else {
			b.logf("generating %s: %d sessions in %d projects", name, sp.Sessions, sp.Projects)
			if err := st.Write(); err != nil {
				return nil, err
			}
		}
		s.add(st)
	}
	s.genDur = time.Since(start)
	if b.o.keep && !reuse {
		if err := os.WriteFile(mark, []byte(want), 0o600); err != nil {
			return nil, err
		}
	}
	for _, f := range s.files {
		if fi, err := os.Stat(f); err == nil {
			s.bytes += fi.Size()
		}
	}
	b.stores[name] = s
	return s, nil
}

func (b *bench) spec(sessions, lines int) gen.Spec {
	return gen.Spec{Layout: b.o.layout, Projects: max(1, sessions/max(b.o.perProject, 1)), Sessions: sessions,
		Lines: lines, LineSize: b.o.lineSize, Subagents: b.o.subagents, Seed: b.o.seed}
}

func (b *bench) plain(n, lines int) (*benchStore, error) {
	return b.store(fmt.Sprintf("s%d-l%d", n, lines), b.spec(n, lines))
}

// ---- timing helpers ----

// lineCounter counts the lines a command prints.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// meas is one timed run of a command: wall time, the CPU time (user + system) it
// used, and the lines it printed. CPU time is the steadier figure on a shared,
// loaded machine; wall time is what a user waits.
type meas struct {
	wall, cpu time.Duration
	lines     int
	maxRSS    int64 // peak resident set of the process (VmHWM, sampled every ms), bytes
}

func (m meas) add(o meas) meas {
	return meas{m.wall + o.wall, m.cpu + o.cpu, m.lines + o.lines, max(m.maxRSS, o.maxRSS)}
}

// timeCmd runs a command and measures it; its output is read through a pipe
// and its lines counted.
func timeCmd(env []string, name string, args ...string) (meas, error) {
	return timeCmdTo(env, true, name, args...)
}

// timeCmdTo is timeCmd; with pipe unset the output goes to /dev/null.
func timeCmdTo(env []string, pipe bool, name string, args ...string) (meas, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var lc lineCounter
	var errb bytes.Buffer
	if pipe {
		cmd.Stdout = &lc
	}
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Start()
	var peak chan int64
	if err == nil {
		peak = make(chan int64, 1)
		stop := make(chan struct{})
		go func() { peak <- watchHWM(cmd.Process.Pid, stop) }()
		err = cmd.Wait()
		close(stop)
	}
	m := meas{wall: time.Since(start), lines: lc.n}
	if peak != nil {
		m.maxRSS = <-peak
	}
	if cmd.ProcessState != nil {
		m.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return m, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return m, nil
}

// watchHWM samples a process's VmHWM (its peak resident set since its exec)
// every millisecond until stop closes, and returns the last value seen. The
// rusage of a child (ru_maxrss) is no use here: it keeps the peak of the memory
// the child was forked from, so it reports the bench's own size.
func watchHWM(pid int, stop chan struct{}) int64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var hwm int64
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if status, err := os.ReadFile(path); err == nil {
			if v := kbField(status, "VmHWM:"); v > hwm {
				hwm = v
			}
		}
		select {
		case <-stop:
			return hwm
		case <-t.C:
		}
	}
}

// slowRun is how long a warm-up run may take before it is taken as the only run.
const slowRun = 15 * time.Second

// median runs f o.runs times (after one untimed warm-up when warm is set) and
// returns the median wall time, the median CPU time and the last line count.
func (b *bench) median(warm bool, f func() (meas, error)) (meas, error) {
	return b.medianN(b.o.runs, warm, f)
}

// medianN is median over n runs.
func (b *bench) medianN(n int, warm bool, f func() (meas, error)) (meas, error) {
	if warm {
		m, err := f()
		if err != nil {
			return meas{}, err
		}
		if m.wall > slowRun {
			return m, nil // a slow contender: its one run is the figure
		}
	}
	var walls, cpus []time.Duration
	var rsss []int64
	var last meas
	for range n {
		m, err := f()
		if err != nil {
			return meas{}, err
		}
		walls, cpus, rsss, last = append(walls, m.wall), append(cpus, m.cpu), append(rsss, m.maxRSS), m
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	slices.Sort(rsss)
	return meas{wall: walls[len(walls)/2], cpu: cpus[len(cpus)/2], lines: last.lines, maxRSS: rsss[len(rsss)/2]}, nil
}

// reindexFresh runs `sessionwatch reindex` on an empty state dir, with the native
// indexes removed from the store, so every run does the whole cold job; with
// dropCache the store's pages are evicted from the page cache first.
func (b *bench) reindexFresh(s *benchStore, dropCache bool) (meas, error) {
	if err := os.RemoveAll(s.state); err != nil {
		return meas{}, err
	}
	filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == indexer.CatalogName {
			os.Remove(p)
		}
		return nil
	})
	if dropCache {
		if err := evict(s.files); err != nil {
			return meas{}, err
		}
	}
	return timeCmd(s.env(), b.bin, "reindex")
}

// catAll runs cat over every session file (500 per process, output to /dev/null)
// and returns the total;
// with dropCache the files' pages are evicted from the page cache first.
func catAll(files []string, dropCache bool) (meas, error) {
	if dropCache {
		if err := evict(files); err != nil {
			return meas{}, err
		}
	}
	var total meas
	for i := 0; i < len(files); i += 500 {
		m, err := timeCmdTo(nil, false, "cat", files[i:min(i+500, len(files))]...)
		if err != nil {
			return meas{}, err
		}
		total = total.add(m)
	}
	return total, nil
}

// ensureIndexed builds the catalogs once (reindex), unless they exist.
func (b *bench) ensureIndexed(s *benchStore) error {
	if _, err := os.Stat(filepath.Join(s.state, "index")); err == nil {
		return nil
	}
	_, err := timeCmd(s.env(), b.bin, "reindex")
	return err
}

// contender is one way of listing a store.
type contender struct {
	name string
	args func(b *bench, s *benchStore) (string, []string)
	// daemon: hold the state dir's daemon lock meanwhile, as a running daemon
	// does, so list reads the catalogs only (no refresh).
	daemon bool
}

var contenders = []contender{
	{"`sessionwatch list --all`", func(b *bench, s *benchStore) (string, []string) { return b.bin, []string{"list", "--all"} }, false},
	{"`sessionwatch list --all`, catalogs only (daemon running)", func(b *bench, s *benchStore) (string, []string) { return b.bin, []string{"list", "--all"} }, true},
	{"head+tail, lines JSON-decoded", scanArgs(modeHeadTail, parseJSON), false},
	{"head+tail, sessionwatch fold only", scanArgs(modeHeadTail, parseFold), false},
	{"full parse, lines JSON-decoded", scanArgs(modeFull, parseJSON), false},
	{"full parse, sessionwatch fold only", scanArgs(modeFull, parseFold), false},
}

func scanArgs(mode, parser string) func(b *bench, s *benchStore) (string, []string) {
	return func(b *bench, s *benchStore) (string, []string) {
		return b.self, []string{"scan", "--layout", b.o.layout, "--mode", mode, "--parse", parser, s.root}
	}
}

// contenders are the listers measured: all, or only sessionwatch's own rows.
func (b *bench) contenders() []contender {
	if b.o.swOnly {
		return contenders[:2]
	}
	return contenders
}

// measureListing times every contender on one store; the first is the reference.
func (b *bench) measureListing(s *benchStore) ([]meas, error) {
	if err := b.ensureIndexed(s); err != nil {
		return nil, err
	}
	var out []meas
	for _, c := range b.contenders() {
		b.logf("listing %s: %s", s.name, c.name)
		name, args := c.args(b, s)
		var release func()
		if c.daemon {
			var err error
			if release, err = holdDaemonLock(s.state); err != nil {
				return nil, err
			}
		}
		m, err := b.median(true, func() (meas, error) { return timeCmd(s.env(), name, args...) })
		if release != nil {
			release()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

const listingHead = "contender | wall | CPU | wall ÷ list | CPU ÷ list | peak RSS | rows listed |"
const listingRule = "---|---:|---:|---:|---:|---:|---:|"

// listingRows renders one store's measurements, first column(s) given by lead.
func (b *bench) listingRows(lead string, mm []meas) {
	blank := strings.Repeat(" |", strings.Count(lead, "|"))
	for i, m := range mm {
		rows := strconv.Itoa(m.lines - 1) // every lister prints a header line
		if m.lines != mm[0].lines {
			rows += " (differs!)"
		}
		if i > 0 {
			lead = blank
		}
		fmt.Fprintf(b.out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", lead, contenders[i].name, ms(m.wall), ms(m.cpu), ratio(m.wall, mm[0].wall), ratio(m.cpu, mm[0].cpu), human(m.maxRSS), rows)
	}
}

func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f ms", float64(d)/1e6)
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
}

// ---- sections ----

func (b *bench) benchList(ctx context.Context) error {
	fmt.Fprintf(b.out, "### 1. Listing: `sessionwatch list --all` vs head-and-tail vs full parse\n\n")
	fmt.Fprintf(b.out, "Head-and-tail reads the first and last 64 KiB of each main session file and parses the lines found there (how Claude Code 2.1 lists); full parse reads and parses every line (how Gemini CLI lists). Each runs on %d goroutines in its own process and summarizes with sessionwatch's layout parser; \"JSON-decoded\" first decodes every line read with encoding/json into `any`, as the agents' JSON.parse does (V8's JSON.parse is faster than encoding/json, so the truth for an agent lies between the two rows), \"fold only\" is the cheapest lister possible. `list` reads only the catalogs. Ratios are against `list`.\n\n", runtime.GOMAXPROCS(0))
	fmt.Fprintln(b.out, "| sessions | store | "+listingHead)
	fmt.Fprintln(b.out, "|---:|---:|"+listingRule)
	for _, n := range b.o.sizes {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s, err := b.plain(n, b.o.lines)
		if err != nil {
			return err
		}
		mm, err := b.measureListing(s)
		if err != nil {
			return err
		}
		b.listingRows(fmt.Sprintf("%d | %s", n, human(s.bytes)), mm)
	}
	fmt.Fprintln(b.out)
	return nil
}

func (b *bench) benchGrowth(ctx context.Context) error {
	n := b.o.growthN
	fmt.Fprintf(b.out, "### 2. Listing as transcripts grow (%d sessions)\n\n", n)
	fmt.Fprintln(b.out, "| mean transcript | store | "+listingHead)
	fmt.Fprintln(b.out, "|---:|---:|"+listingRule)
	for _, lines := range b.o.growthLines {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s, err := b.plain(n, lines)
		if err != nil {
			return err
		}
		mm, err := b.measureListing(s)
		if err != nil {
			return err
		}
		b.listingRows(fmt.Sprintf("%s | %s", human(s.bytes/int64(max(len(s.files), 1))), human(s.bytes)), mm)
	}
	fmt.Fprintln(b.out)
	return nil
}

func (b *bench) benchCold(ctx context.Context) error {
	fmt.Fprintf(b.out, "### 3. Cold indexing: `sessionwatch reindex` (fresh state dir) vs `cat` of the same files\n\n")
	fmt.Fprintf(b.out, "`cat` reads every session file (500 per process) into /dev/null. `reindex` starts from an empty state dir with the native indexes removed, and writes every catalog and native index (each fsynced). \"evicted\": the store's pages were dropped from the page cache first (posix_fadvise DONTNEED on its files only), so both read from the device.\n\n")
	fmt.Fprintln(b.out, "| sessions | bytes | page cache | cat | reindex | cat MiB/s | reindex MiB/s | reindex ÷ cat | CPU cat | CPU reindex |")
	fmt.Fprintln(b.out, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	seen := map[string]bool{}
	var all []*benchStore
	for _, n := range b.o.sizes {
		s, err := b.plain(n, b.o.lines)
		if err != nil {
			return err
		}
		all = append(all, s)
	}
	if b.o.growthN > 0 {
		for _, lines := range b.o.growthLines {
			s, err := b.plain(b.o.growthN, lines)
			if err != nil {
				return err
			}
			all = append(all, s)
		}
	}
	for _, s := range all {
		if seen[s.name] || ctx.Err() != nil {
			continue
		}
		seen[s.name] = true
		modes := []bool{false}
		if b.o.coldCache && s.bytes <= int64(b.o.evictMax)<<20 {
			modes = append(modes, true)
		}
		for _, drop := range modes {
			cache := "warm"
			if drop {
				cache = "evicted"
			}
			b.logf("cold %s (%s): cat", s.name, cache)
			cat, err := b.median(!drop, func() (meas, error) { return catAll(s.files, drop) })
			if err != nil {
				return err
			}
			b.logf("cold %s (%s): reindex", s.name, cache)
			re, err := b.median(false, func() (meas, error) { return b.reindexFresh(s, drop) })
			if err != nil {
				return err
			}
			mib := float64(s.bytes) / (1 << 20)
			fmt.Fprintf(b.out, "| %d | %s | %s | %s | %s | %.0f | %.0f | %s | %s | %s |\n", len(s.files), human(s.bytes), cache, ms(cat.wall), ms(re.wall),
				mib/cat.wall.Seconds(), mib/re.wall.Seconds(), ratio(re.wall, cat.wall), ms(cat.cpu), ms(re.cpu))
		}
	}
	fmt.Fprintln(b.out)
	return nil
}

// ---- the daemon ----

type daemon struct {
	cmd  *exec.Cmd
	done chan error
	s    *benchStore
}

type status struct {
	Running   bool           `json:"running"`
	PID       int            `json:"pid"`
	UpdatedAt string         `json:"updatedAt"`
	Watches   int            `json:"watches"`
	Unwatched int            `json:"unwatched"`
	WatchErr  string         `json:"watchError"`
	Rescans   int            `json:"rescans"`
	Reasons   map[string]int `json:"rescanReasons"`
	Sources   []struct {
		Sessions  int   `json:"sessions"`
		BytesRead int64 `json:"bytesRead"`
	} `json:"sources"`
}

func readStatus(state string) (*status, error) {
	data, err := os.ReadFile(filepath.Join(state, "status.json"))
	if err != nil {
		return nil, err
	}
	var st status
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func (st *status) bytesRead() int64 {
	var n int64
	for _, s := range st.Sources {
		n += s.BytesRead
	}
	return n
}

// startDaemon starts `sessionwatch run` on a fresh state dir and waits until it has
// indexed the store and written its status.
func (b *bench) startDaemon(s *benchStore) (*daemon, time.Duration, error) {
	if err := os.RemoveAll(s.state); err != nil {
		return nil, 0, err
	}
	return b.startDaemonIn(s)
}

// startDaemonIn starts the daemon on the store's state dir as it is.
func (b *bench) startDaemonIn(s *benchStore) (*daemon, time.Duration, error) {
	logf, err := os.Create(filepath.Join(s.home, "daemon.log"))
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	cmd := exec.Command(b.bin, "run")
	cmd.Env = s.env()
	cmd.Stderr = logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	d := &daemon{cmd: cmd, done: make(chan error, 1), s: s}
	go func() { d.done <- cmd.Wait() }()
	for {
		if st, err := readStatus(s.state); err == nil && st.Running && st.PID == cmd.Process.Pid {
			return d, time.Since(start), nil
		}
		select {
		case err := <-d.done:
			log, _ := os.ReadFile(logf.Name())
			return nil, 0, fmt.Errorf("daemon exited: %v\n%s", err, log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *daemon) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// freshStatus waits for a status file written after t (the daemon rewrites it
// every 10 s).
func (d *daemon) freshStatus(t time.Time) (*status, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := readStatus(d.s.state)
		if err == nil && indexer.ParseTime(st.UpdatedAt).After(t) {
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, errors.New("status.json not refreshed within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// catalogOf is the catalog file that lists a session of store st.
func (b *bench) catalogOf(s *benchStore, sess *gen.Session) string {
	return filepath.Join(indexer.CatalogDir(s.state, b.o.layout), indexer.ProjectKey(sess.Project), indexer.CatalogName)
}

type phaseResult struct {
	name       string
	rate       float64
	ws         gen.WriteStats
	files      int
	fileBytes  int64 // mean size of the target files at the start
	bytesRead  int64 // status.json bytesRead delta
	rchar, rb  int64 // /proc/<pid>/io deltas
	wchar      int64
	lat        []time.Duration
	late, lost int
	cpu        float64 // share of one core during the phase and the drain
	rss        int64   // peak VmRSS sampled during the phase
}

// phase appends to targets at rate for o.phase while the daemon runs, and measures.
func (b *bench) phase(ctx context.Context, d *daemon, tr *tracker, st *gen.Store, targets []*gen.Session, name string, rate float64, partial float64) (phaseResult, error) {
	r := phaseResult{name: name, rate: rate, files: len(targets)}
	for _, t := range targets {
		if fi, err := os.Stat(st.Path(t)); err == nil {
			r.fileBytes += fi.Size()
		}
	}
	r.fileBytes /= int64(max(len(targets), 1))
	s0, err := d.freshStatus(time.Now())
	if err != nil {
		return r, err
	}
	p0, err := sampleProc(d.pid())
	if err != nil {
		return r, err
	}
	peakRSS := samplePeakRSS(d.pid)
	b.logf("inc: %s", name)
	r.ws, err = st.Run(ctx, gen.WriteOptions{Writers: b.o.writers, Rate: rate, Duration: b.o.phase, Partial: partial, Seed: b.o.seed,
		Targets: targets, OnAppend: func(s *gen.Session, ts time.Time, n int, done time.Time) {
			tr.add(b.catalogOf(d.s, s), s.ID, ts, done)
		}})
	if err != nil {
		peakRSS()
		return r, err
	}
	tr.wait(30 * time.Second)
	p1, err := sampleProc(d.pid())
	r.rss = peakRSS()
	if err != nil {
		return r, err
	}
	r.lat, r.late, r.lost = tr.take()
	s1, err := d.freshStatus(time.Now())
	if err != nil {
		return r, err
	}
	r.bytesRead = s1.bytesRead() - s0.bytesRead()
	r.rchar, r.rb, r.wchar = p1.rchar-p0.rchar, p1.readBytes-p0.readBytes, p1.wchar-p0.wchar
	r.cpu = float64(p1.cpu-p0.cpu) / float64(p1.at.Sub(p0.at))
	return r, nil
}

func (b *bench) benchInc(ctx context.Context) error {
	small := b.spec(b.o.incSessions, b.o.lines)
	big := gen.Spec{Layout: b.o.layout, Projects: 1, Sessions: b.o.bigSessions, Lines: b.o.bigLines, Spread: -1,
		LineSize: b.o.lineSize, Seed: b.o.seed + 1, ProjectPrefix: "big-"}
	specs := []gen.Spec{small}
	if b.o.bigSessions > 0 {
		specs = append(specs, big)
	}
	s, err := b.store("inc", specs...)
	if err != nil {
		return err
	}
	b.logf("inc: starting the daemon on %d sessions", len(s.files))
	d, ready, err := b.startDaemon(s)
	if err != nil {
		return err
	}
	defer d.stop()
	var dirs []string
	seen := map[string]bool{}
	for _, st := range s.stores {
		for _, sess := range st.Sessions {
			if dir := filepath.Dir(b.catalogOf(s, sess)); !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir)
			}
		}
	}
	tr, err := newTracker(dirs)
	if err != nil {
		return err
	}
	defer tr.close()
	smallSt := s.stores[0]
	targets := smallSt.Sessions[:min(b.o.incTargets, len(smallSt.Sessions))]
	var results []phaseResult
	for _, rate := range b.o.rates {
		r, err := b.phase(ctx, d, tr, smallSt, targets, fmt.Sprintf("%d/s, %d files", rate, len(targets)), float64(rate), 0)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if len(s.stores) > 1 {
		bigSt := s.stores[1]
		r, err := b.phase(ctx, d, tr, bigSt, bigSt.Sessions, fmt.Sprintf("100/s, %d large files", len(bigSt.Sessions)), 100, 0)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if b.o.partial > 0 {
		r, err := b.phase(ctx, d, tr, smallSt, targets, fmt.Sprintf("100/s, %d files, %.0f%% split lines", len(targets), b.o.partial*100), 100, b.o.partial)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	fmt.Fprintf(b.out, "### 4. Incremental cost: bytes read per appended line and append-to-index latency\n\n")
	fmt.Fprintf(b.out, "The daemon (default settle 50 ms, max settle 1 s) watches a store of %d sessions (%s; indexed in %s at start-up). %d writers append whole lines (open, write, close) to the target files at each rate for %s; each line carries a unique timestamp, and a watcher on the catalog directories records when the catalog first shows it. `bytesRead` is the daemon's own count of session-file bytes read (status.json); `rchar`, `read_bytes` and `wchar` come from /proc/<pid>/io (rchar counts every read() the daemon makes: session files, inotify events, and any index file it reads back). Latency is from the end of the append's write to the catalog replacement that shows it; \"late\" appends were first seen by the tracker's 250 ms sweep rather than by an event (their latency is still taken when first seen), \"lost\" ones never showed within 30 s.\n\n",
		len(s.files), human(s.bytes), ready.Round(time.Millisecond), b.o.writers, b.o.phase)
	fmt.Fprintln(b.out, "| phase | appends/s done | mean target file | mean append | bytesRead/append | overhead/append | rchar/append | read_bytes/append | wchar/append | p50 | p95 | p99 | max | late/lost | daemon CPU | peak RSS |")
	fmt.Fprintln(b.out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		n := max(r.ws.Appends, 1)
		mean := r.ws.Bytes / n
		fmt.Fprintf(b.out, "| %s | %.0f | %s | %d B | %d B | %+d B | %s | %s | %s | %s | %s | %s | %s | %d/%d | %.0f%% | %s |\n",
			r.name, float64(r.ws.Appends)/r.ws.Elapsed.Seconds(), human(r.fileBytes), mean, r.bytesRead/n, r.bytesRead/n-mean,
			human(r.rchar/n), human(r.rb/n), human(r.wchar/n), ms(quantile(r.lat, 0.5)), ms(quantile(r.lat, 0.95)), ms(quantile(r.lat, 0.99)), ms(quantile(r.lat, 1)),
			r.late, r.lost, r.cpu*100, human(r.rss))
	}
	fmt.Fprintln(b.out)
	return nil
}

func (b *bench) benchRSS(ctx context.Context) error {
	type row struct {
		n, files, watches, kernelWatches int
		bytes                            int64
		ready, settle                    time.Duration
		idleCPU, loadCPU                 float64
		idleRSS, loadRSS, hwm            int64
		appends                          int64
	}
	var rows []row
	for _, n := range b.o.rssSizes {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s, err := b.plain(n, b.o.lines)
		if err != nil {
			return err
		}
		b.logf("rss %s: starting the daemon", s.name)
		d, ready, err := b.startDaemon(s)
		if err != nil {
			return err
		}
		r := row{n: n, files: len(s.files), bytes: s.bytes, ready: ready}
		err = func() error {
			// Ready is written before the daemon has digested the events of its own
			// first writes: wait until it is quiet (under 1% of a core for 2 s).
			r.settle = quiet(d.pid(), 2*time.Second, time.Minute)
			p0, err := sampleProc(d.pid())
			if err != nil {
				return err
			}
			b.logf("rss %s: idle %s", s.name, b.o.idle)
			select {
			case <-time.After(b.o.idle):
			case <-ctx.Done():
				return ctx.Err()
			}
			p1, err := sampleProc(d.pid())
			if err != nil {
				return err
			}
			r.idleCPU = float64(p1.cpu-p0.cpu) / float64(p1.at.Sub(p0.at))
			r.idleRSS = p1.rss
			st, err := readStatus(s.state)
			if err != nil {
				return err
			}
			r.watches, r.kernelWatches = st.Watches, inotifyWatches(d.pid())
			b.logf("rss %s: %d appends/s for %s", s.name, b.o.rssRate, b.o.phase)
			peakRSS := samplePeakRSS(d.pid)
			ws, err := s.stores[0].Run(ctx, gen.WriteOptions{Writers: b.o.writers, Rate: float64(b.o.rssRate), Duration: b.o.phase, Seed: b.o.seed})
			time.Sleep(time.Second) // the last batch
			p2, perr := sampleProc(d.pid())
			r.loadRSS = peakRSS()
			if err != nil {
				return err
			}
			if perr != nil {
				return perr
			}
			r.appends = ws.Appends
			r.loadCPU = float64(p2.cpu-p1.cpu) / float64(p2.at.Sub(p1.at))
			r.hwm = p2.hwm
			return nil
		}()
		d.stop()
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(b.out, "### 5. Daemon footprint (from /proc)\n\n")
	fmt.Fprintf(b.out, "Fresh state dir: the daemon indexes the whole store at start-up (\"ready\": status.json written), finishes digesting the events of its own first writes (\"quiet\": under 1%% of a core for 2 s), then idles for %s, then takes %d appends/s spread over all sessions for %s. Watches are status.json's count and, in brackets, the inotify watches the kernel lists in /proc/<pid>/fdinfo.\n\n", b.o.idle, b.o.rssRate, b.o.phase)
	fmt.Fprintln(b.out, "| sessions | store | ready after | quiet after | idle RSS | idle CPU | CPU under load | peak RSS under load | VmHWM (incl. start-up) | inotify watches |")
	fmt.Fprintln(b.out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(b.out, "| %d | %s | %s | +%s | %s | %.2f%% | %.1f%% | %s | %s | %d (%d) |\n", r.files, human(r.bytes), ms(r.ready), ms(r.settle), human(r.idleRSS),
			r.idleCPU*100, r.loadCPU*100, human(r.loadRSS), human(r.hwm), r.watches, r.kernelWatches)
	}
	fmt.Fprintln(b.out)
	return nil
}

// sourceVersion names the commit of the working tree the benchmark builds
// ("unknown" outside a git checkout), marked "+changes" when it has uncommitted ones.
func sourceVersion() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "an unknown commit"
	}
	v := "commit " + strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		v += " +changes"
	}
	return v
}

// quiet waits until process pid has used under 1% of a core for a whole window
// (or limit passed) and returns how long that took.
func quiet(pid int, window, limit time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < limit {
		a, err := sampleProc(pid)
		if err != nil {
			break
		}
		time.Sleep(window)
		z, err := sampleProc(pid)
		if err != nil {
			break
		}
		if float64(z.cpu-a.cpu) < 0.01*float64(z.at.Sub(a.at)) {
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// holdDaemonLock takes the state dir's daemon lock (flock on daemon.pid) as a
// running daemon holds it; the returned func releases it.
func holdDaemonLock(stateDir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(stateDir, "daemon.pid"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// samplePeakRSS samples a process's VmRSS every 100 ms until the returned func is
// called, which stops the sampling and returns the largest value seen.
func samplePeakRSS(pid func() int) func() int64 {
	stop, peak := make(chan struct{}), make(chan int64)
	go func() {
		var m int64
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if p, err := sampleProc(pid()); err == nil {
				m = max(m, p.rss)
			}
			select {
			case <-stop:
				peak <- m
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-peak
	}
}

// add records a generated store: its sessions' files and how many are mains.
func (s *benchStore) add(st *gen.Store) {
	s.stores = append(s.stores, st)
	for _, ss := range st.Sessions {
		s.files = append(s.files, st.Path(ss))
		if !ss.Subagent {
			s.mains++
		}
	}
}
