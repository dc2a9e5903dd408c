package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/watcher"
)

// The scale section (issue 16): one store of --scale-sessions sessions in
// --scale-projects projects over every line layout, built once, and each of the
// issue's targets measured on it side by side.

// scaleOptions are the scale section's flags.
type scaleOptions struct {
	sessions, projects int
	lines, lineSize    int
	layouts            string
	rate, targets      int
	phase, idle        time.Duration
	evict              bool
	runs               int
	watchLimit         int
}

var scaleOpt scaleOptions

// scaleFlags registers the scale section's flags on the bench command's set.
func scaleFlags(fs *flag.FlagSet) {
	fs.IntVar(&scaleOpt.sessions, "scale-sessions", 100000, "scale: sessions in the store (spread evenly over the layouts)")
	fs.IntVar(&scaleOpt.projects, "scale-projects", 5000, "scale: projects (each layout has its own; sessions are spread evenly)")
	fs.IntVar(&scaleOpt.lines, "scale-lines", 4, "scale: mean message lines per session")
	fs.IntVar(&scaleOpt.lineSize, "scale-line-size", 512, "scale: mean bytes per line")
	fs.StringVar(&scaleOpt.layouts, "scale-layouts", "wave,claude,codex,gemini,llxprt", "scale: layouts, one source each")
	fs.IntVar(&scaleOpt.rate, "scale-rate", 1000, "scale: appends/s of the load phase")
	fs.IntVar(&scaleOpt.targets, "scale-targets", 1000, "scale: files appended to in the load phase")
	fs.DurationVar(&scaleOpt.phase, "scale-phase", 10*time.Second, "scale: duration of the load phase")
	fs.DurationVar(&scaleOpt.idle, "scale-idle", 10*time.Second, "scale: idle window before the idle RSS reading")
	fs.BoolVar(&scaleOpt.evict, "scale-evict", true, "scale: also time cold reindex and cat with the store evicted from the page cache")
	fs.IntVar(&scaleOpt.runs, "scale-runs", 3, "scale: runs of each list and usage measurement, and cat/reindex pairs of each cold row (the median is reported)")
	fs.IntVar(&scaleOpt.watchLimit, "scale-watch-limit", 0, "scale: inotify watches left to a second daemon run in its own user namespace, to see it run out (0: half the watches the first daemon held; -1: skip)")
}

// scaleStore is the generated store: one source per layout under one HOME.
type scaleStore struct {
	home, state, config string
	roots               []string
	stores              []*gen.Store
	files               []string
	bytes               int64
	project             string // a project of the first layout, as a directory on disk
	projectSessions     int
}

func (s *scaleStore) env() []string {
	return append(os.Environ(), "HOME="+s.home, "XDG_CONFIG_HOME="+filepath.Join(s.home, ".config"), "SESSIONWATCH_CONFIG="+s.config)
}

func (b *bench) scaleStore() (*scaleStore, error) {
	o := scaleOpt
	layouts := strings.Split(o.layouts, ",")
	home := filepath.Join(b.work, "scale")
	s := &scaleStore{home: home, state: b.stateDir("scale"), config: filepath.Join(home, "config.json")}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	var sources []string
	for i, l := range layouts {
		root := gen.DefaultRoot(l, home)
		s.roots = append(s.roots, root)
		sp := gen.Spec{Layout: l, Projects: max(1, o.projects/len(layouts)), Sessions: o.sessions / len(layouts), Lines: o.lines,
			LineSize: o.lineSize, Subagents: 0.1, Seed: b.o.seed + int64(i), Home: filepath.Join(home, "u"), ProjectPrefix: l + "-"}
		st, err := gen.Plan(root, sp)
		if err != nil {
			return nil, err
		}
		b.logf("scale: generating %d %s sessions in %d projects", sp.Sessions, l, sp.Projects)
		if err := st.Write(); err != nil {
			return nil, err
		}
		s.stores = append(s.stores, st)
		for _, ss := range st.Sessions {
			s.files = append(s.files, st.Path(ss))
			if i == 0 && ss.Project == st.Sessions[0].Project {
				s.projectSessions++
			}
		}
		sources = append(sources, fmt.Sprintf(`{"name":%q,"layout":%q,"root":%q,"retention":"off"}`, l, l, root))
	}
	s.project = s.stores[0].Sessions[0].Project
	if err := os.MkdirAll(s.project, 0o700); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"log_level":"warn",
 "janitor":{"run_at_start":false,"schedule":"off"},
 "sources":[%s]}`, s.state, filepath.Join(home, "archive"), strings.Join(sources, ",\n  "))
	if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	for _, f := range s.files {
		if fi, err := os.Stat(f); err == nil {
			s.bytes += fi.Size()
		}
	}
	return s, nil
}

// scaleRun is one timed process: wall, CPU and peak RSS.
type scaleRun struct {
	wall, cpu time.Duration
	maxRSS    int64
	lines     int
}

// gnuTime measures a command's peak RSS: the rusage Go gets for a child it
// started counts the bench's own memory (the child is cloned from it with its
// address space, and Linux keeps that high-water mark across exec), so the child
// is started by GNU time, which forks it from its own small process.
const gnuTime = "/usr/bin/time"

func runIn(dir string, env []string, name string, args ...string) (scaleRun, error) {
	rssFile := ""
	if _, err := os.Stat(gnuTime); err == nil {
		f, err := os.CreateTemp("", "sessionload-rss-")
		if err != nil {
			return scaleRun{}, err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		args = append([]string{"-f", "%M", "-o", rssFile, name}, args...)
		name = gnuTime
	}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = env, dir
	var lc lineCounter
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &lc, &errb
	start := time.Now()
	err := cmd.Run()
	r := scaleRun{wall: time.Since(start), lines: lc.n}
	if ps := cmd.ProcessState; ps != nil {
		r.cpu = ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = int64(ru.Maxrss) << 10 // an upper bound (see gnuTime)
		}
	}
	if rssFile != "" {
		if data, err := os.ReadFile(rssFile); err == nil {
			if kb, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
				r.maxRSS = kb << 10
			}
		}
	}
	if err != nil {
		return r, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return r, nil
}

// medianRun runs f n times and returns the median of each figure.
func medianRun(n int, f func() (scaleRun, error)) (scaleRun, error) {
	var rs []scaleRun
	for range max(n, 1) {
		r, err := f()
		if err != nil {
			return r, err
		}
		rs = append(rs, r)
	}
	return medianOfRuns(rs), nil
}

// medianOfRuns is the median of each figure of rs (the median wall run's lines).
func medianOfRuns(rs []scaleRun) scaleRun {
	rs = slices.Clone(rs)
	pick := func(less func(a, b scaleRun) bool) scaleRun {
		sort.Slice(rs, func(i, j int) bool { return less(rs[i], rs[j]) })
		return rs[len(rs)/2]
	}
	out := pick(func(a, b scaleRun) bool { return a.wall < b.wall })
	out.cpu = pick(func(a, b scaleRun) bool { return a.cpu < b.cpu }).cpu
	out.maxRSS = pick(func(a, b scaleRun) bool { return a.maxRSS < b.maxRSS }).maxRSS
	return out
}

// pairs are alternating runs of two commands (cat and reindex): the verdict is
// taken on the ratio of the medians, so one slow run decides nothing either way,
// and each pair's own ratio is shown beside it.
type pairs struct{ a, b []scaleRun }

func (p *pairs) add(a, b scaleRun) { p.a, p.b = append(p.a, a), append(p.b, b) }

// medians returns the median of each side and the ratio of the median walls (b ÷ a).
func (p *pairs) medians() (a, b scaleRun, x float64) {
	a, b = medianOfRuns(p.a), medianOfRuns(p.b)
	return a, b, b.wall.Seconds() / a.wall.Seconds()
}

// each is every pair's own wall ratio (b ÷ a), in run order.
func (p *pairs) each() string {
	var out []string
	for i := range p.a {
		out = append(out, fmt.Sprintf("%.2f×", p.b[i].wall.Seconds()/p.a[i].wall.Seconds()))
	}
	return strings.Join(out, ", ")
}

// scaleRow is one line of the targets table.
type scaleRow struct{ target, measured, verdict string }

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

func (b *bench) benchScale(ctx context.Context) error {
	o := scaleOpt
	start := time.Now()
	s, err := b.scaleStore()
	if err != nil {
		return err
	}
	b.logf("scale: %d sessions, %s, built in %s", len(s.files), human(s.bytes), time.Since(start).Round(time.Second))
	var rows []scaleRow
	add := func(target, measured string, ok bool) {
		rows = append(rows, scaleRow{target, measured, verdict(ok)})
	}
	addV := func(target, measured, v string) { rows = append(rows, scaleRow{target, measured, v}) }

	// Cold reindex against cat, warm and evicted; the last reindex leaves the
	// catalogs every later measurement starts from.
	cores := runtime.NumCPU()
	coldLimit := 1.5
	if cores < 4 {
		coldLimit = 2
	}
	modes := []bool{false}
	if o.evict {
		modes = append(modes, true)
	}
	for _, drop := range modes {
		cache := "warm page cache"
		if drop {
			cache = "evicted page cache"
		}
		if !drop {
			if _, err := b.scaleCat(s, false); err != nil { // warm the cache
				return err
			}
		}
		b.logf("scale: cold reindex vs cat (%s), %d pairs", cache, max(o.runs, 1))
		var p pairs
		for range max(o.runs, 1) {
			cat, err := b.scaleCat(s, drop)
			if err != nil {
				return err
			}
			re, err := b.scaleReindex(s, drop)
			if err != nil {
				return err
			}
			p.add(cat, re)
		}
		cat, re, x := p.medians()
		limit := coldLimit
		if drop {
			limit = 1.2
		}
		add(fmt.Sprintf("cold `reindex` within %.1f× `cat`, %s (%d cores)", limit, cache, cores),
			fmt.Sprintf("medians of %d alternating pairs: reindex %s (CPU %s, peak RSS %s) vs cat %s (CPU %s): %.2f×; each pair: %s", len(p.a), ms(re.wall), ms(re.cpu), human(re.maxRSS), ms(cat.wall), ms(cat.cpu), x, p.each()),
			x <= limit)
	}

	// list, without a daemon (a refresh: a stat of every file) and with one
	// (catalogs only: we hold the daemon lock as a daemon does).
	b.logf("scale: list")
	for _, daemon := range []bool{false, true} {
		how := "no daemon (refreshes first)"
		var release func()
		if daemon {
			how = "daemon running (catalogs only)"
			if release, err = holdDaemonLock(s.state); err != nil {
				return err
			}
		}
		all, err := medianRun(o.runs, func() (scaleRun, error) { return runIn(s.home, s.env(), b.bin, "list", "--all") })
		if err != nil {
			return err
		}
		one, err := medianRun(o.runs, func() (scaleRun, error) { return runIn(s.project, s.env(), b.bin, "list") })
		if release != nil {
			release()
		}
		if err != nil {
			return err
		}
		add(fmt.Sprintf("`list --all` under 300 ms and 48 MiB, %s", how),
			fmt.Sprintf("%s wall, %s CPU, peak RSS %s, %d rows", ms(all.wall), ms(all.cpu), human(all.maxRSS), all.lines),
			all.wall < 300*time.Millisecond && all.maxRSS < 48<<20)
		add(fmt.Sprintf("`list` of a %d-session project under 10 ms, %s", s.projectSessions, how),
			fmt.Sprintf("%s wall, %s CPU, peak RSS %s, %d rows", ms(one.wall), ms(one.cpu), human(one.maxRSS), one.lines),
			one.wall < 10*time.Millisecond)
	}

	// The daemon over the unchanged store: READY=1, bytes read, RSS idle and
	// under load.
	b.logf("scale: daemon start-up over the unchanged store")
	d, watches, err := b.scaleDaemon(ctx, s, add, addV)
	if d != nil {
		d.stop()
	}
	if err != nil {
		return err
	}

	// The daemon again, out of inotify watches.
	if err := b.scaleWatchLimit(ctx, s, watches, add, addV); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "### Scale (issue 16): %d sessions in %d projects\n\n", len(s.files), o.projects)
	fmt.Fprintf(b.out, "One store, built once: layouts %s, one source each, %d sessions and %d projects per layout (%d sessions per project), %d message lines of %d B ±50%% per session: %s of transcripts. "+
		"Scaled down: the issue's store holds ~100 GiB (1 MiB per transcript); these transcripts are ~%s, so what depends on bytes (cold reindex) is measured on %s, and the rest (listing, start-up, daemon memory), which depends on the session count, at full count. "+
		"Search and usage are on (the daemon and reindex attach both). %d cores.\n\n",
		o.layouts, o.sessions/len(s.stores), o.projects/len(s.stores), s.projectSessions, o.lines, o.lineSize, human(s.bytes), human(s.bytes/int64(max(len(s.files), 1))), human(s.bytes), cores)
	fmt.Fprintln(b.out, "| target | measured | verdict |")
	fmt.Fprintln(b.out, "|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(b.out, "| %s | %s | %s |\n", r.target, r.measured, r.verdict)
	}
	fmt.Fprintln(b.out)
	return nil
}

// scaleCat reads every file of the store with cat (500 per process).
func (b *bench) scaleCat(s *scaleStore, drop bool) (scaleRun, error) {
	m, err := catAll(s.files, drop)
	return scaleRun{wall: m.wall, cpu: m.cpu}, err
}

// scaleReindex runs reindex on an empty state dir with the native indexes removed.
func (b *bench) scaleReindex(s *scaleStore, drop bool) (scaleRun, error) {
	if err := os.RemoveAll(s.state); err != nil {
		return scaleRun{}, err
	}
	for _, root := range s.roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == indexer.CatalogName {
				os.Remove(p)
			}
			return nil
		})
	}
	if drop {
		if err := evict(s.files); err != nil {
			return scaleRun{}, err
		}
	}
	return runIn(s.home, s.env(), b.bin, "reindex")
}

// scaleDaemon starts the daemon over the store as systemd would (NOTIFY_SOCKET)
// and measures start-up, idle RSS and RSS at the load phase's rate.
func (b *bench) scaleDaemon(ctx context.Context, s *scaleStore, add func(string, string, bool), addV func(string, string, string)) (*daemon, int, error) {
	o := scaleOpt
	sock := filepath.Join(s.home, "notify.sock")
	os.Remove(sock)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	logf, err := os.Create(filepath.Join(s.home, "daemon.log"))
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	cmd := exec.Command(b.bin, "run")
	cmd.Env = append(s.env(), "NOTIFY_SOCKET="+sock)
	cmd.Stderr = logf
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	d := &daemon{cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	ready := make(chan time.Duration, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if bytes.Contains(buf[:n], []byte("READY=1")) {
				ready <- time.Since(started)
				return
			}
		}
	}()
	var readyAfter time.Duration
	select {
	case readyAfter = <-ready:
	case err := <-d.done:
		d.done <- err
		log, _ := os.ReadFile(logf.Name())
		return d, 0, fmt.Errorf("daemon exited before READY=1: %v\n%s", err, log)
	case <-time.After(5 * time.Minute):
		return d, 0, errors.New("no READY=1 within 5 minutes")
	}
	var st *status
	for deadline := time.Now().Add(time.Minute); ; {
		if st, err = readStatus(s.state); err == nil && st.Running && st.PID == cmd.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			return d, 0, errors.New("no status.json from the daemon within a minute of READY=1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// doctor, with the daemon running, on the watches this store needs.
	dc := exec.Command(b.bin, "doctor")
	dc.Env = s.env()
	out, _ := dc.Output() // exit 1 on any problem: the line is what counts
	var unwatched struct {
		Unwatched int `json:"unwatched"`
	}
	if data, err := os.ReadFile(filepath.Join(s.state, "status.json")); err == nil {
		json.Unmarshal(data, &unwatched)
	}
	line := "(no inotify line)"
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "inotify watches") {
			line = strings.Join(strings.Fields(l), " ")
		}
	}
	add(fmt.Sprintf("`doctor` reports the inotify watches needed (%d projects) against fs.inotify.max_user_watches", o.projects),
		fmt.Sprintf("daemon holds %d watches (%d unwatched); doctor: `%s` (it names the sysctl only once the watches needed pass 75%% of those free: TestDoctorWarnsBeforeWatchesRunOut, cmd/sessionwatch)", st.Watches, unwatched.Unwatched, line), strings.Contains(line, "needed") || strings.Contains(line, "directories to watch"))
	add("start-up over the unchanged store: READY=1 under 2 s, reading no transcript bytes",
		fmt.Sprintf("READY=1 after %s; %d transcript bytes read (status.json bytesRead)", ms(readyAfter), st.bytesRead()),
		readyAfter < 2*time.Second && st.bytesRead() == 0)

	b.logf("scale: waiting for the daemon to be quiet, then idle %s", o.idle)
	quiet(cmd.Process.Pid, 2*time.Second, time.Minute)
	p0, err := sampleProc(cmd.Process.Pid)
	if err != nil {
		return d, 0, err
	}
	select {
	case <-time.After(o.idle):
	case <-ctx.Done():
		return d, 0, ctx.Err()
	}
	p1, err := sampleProc(cmd.Process.Pid)
	if err != nil {
		return d, 0, err
	}
	add("daemon RSS idle under 64 MiB",
		fmt.Sprintf("%s (idle CPU %.2f%%; VmHWM since start %s)", human(p1.rss), 100*float64(p1.cpu-p0.cpu)/float64(p1.at.Sub(p0.at)), human(p1.hwm)),
		p1.rss < 64<<20)

	// Search and usage, the daemon running and idle.
	if err := b.scaleQueries(s, add, addV); err != nil {
		return d, 0, err
	}

	b.logf("scale: %d appends/s over %d files for %s", o.rate, o.targets, o.phase)
	peakRSS := samplePeakRSS(func() int { return cmd.Process.Pid })
	var wg sync.WaitGroup
	var mu sync.Mutex
	var appends int64
	var werr error
	per := max(o.targets/len(s.stores), 1)
	for i, st := range s.stores {
		var targets []*gen.Session
		for j := 0; j < len(st.Sessions) && len(targets) < per; j += max(len(st.Sessions)/per, 1) {
			targets = append(targets, st.Sessions[j])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, err := st.Run(ctx, gen.WriteOptions{Writers: 2, Rate: float64(o.rate) / float64(len(s.stores)), Duration: o.phase, Seed: b.o.seed + int64(i), Targets: targets})
			mu.Lock()
			appends += ws.Appends
			werr = errors.Join(werr, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	time.Sleep(time.Second) // the last batch
	p2, perr := sampleProc(cmd.Process.Pid)
	loadRSS := peakRSS()
	if werr != nil {
		return d, 0, werr
	}
	if perr != nil {
		return d, 0, perr
	}
	add(fmt.Sprintf("daemon RSS under 96 MiB while %d appends/s arrive", o.rate),
		fmt.Sprintf("peak %s (%.0f appends/s done over %d files; daemon CPU %.0f%%)", human(loadRSS), float64(appends)/o.phase.Seconds(), per*len(s.stores),
			100*float64(p2.cpu-p1.cpu)/float64(p2.at.Sub(p1.at))),
		loadRSS < 96<<20)
	return d, st.Watches, nil
}

// Issue 16 asks search and usage to answer at 100k as fast as their own issues
// ask at 20k, within 2×: issue 14's ≥ 100× grep becomes ≥ 50×, its rare word
// under 20 ms of CPU under 40 ms; issue 15's `usage daily --all` ≥ 500× ccusage
// and under 30 MiB becomes ≥ 250× and under 60 MiB, its --statusline under 10 ms
// under 20 ms.
const (
	scaleGrepTimes      = 50
	scaleRareCPU        = 40 * time.Millisecond
	scaleCcusageTimes   = 250
	scaleDailyRSS       = 60 << 20
	scaleStatuslineWall = 20 * time.Millisecond
)

// scaleQueries measures search and usage with the daemon running and idle.
func (b *bench) scaleQueries(s *scaleStore, add func(string, string, bool), addV func(string, string, string)) error {
	o := scaleOpt
	b.logf("scale: search queries vs grep")
	q, err := b.measureQueries(s.env(), s.roots)
	if err != nil {
		return err
	}
	words := strings.Join(strings.Fields(b.o.searchWords), " ")
	add(fmt.Sprintf("search: a 2-word query ≥ %d× faster than `grep -rliF` of the same words (issue 14: ≥ 100× at 20k; within 2×), daemon running", scaleGrepTimes),
		fmt.Sprintf("`search --all --json %s` %s wall, %s CPU (%d lines) vs grep %s wall, %s CPU (%d files): %s faster by wall, %s by CPU (medians of %d, alternating)",
			words, ms(q.two.wall), ms(q.two.cpu), q.two.lines, ms(q.grep.wall), ms(q.grep.cpu), q.grep.lines, ratio(q.grep.wall, q.two.wall), ratio(q.grep.cpu, q.two.cpu), q.runs),
		q.grep.lines > 0 && q.grep.wall >= scaleGrepTimes*q.two.wall)
	add(fmt.Sprintf("search: a rare-word query under %s of CPU (issue 14: 20 ms; within 2×), daemon running", ms(scaleRareCPU)),
		fmt.Sprintf("`search --all --json %s` %s CPU, %s wall (median of %d)", b.o.searchRare, ms(q.one.cpu), ms(q.one.wall), q.runs),
		q.one.cpu < scaleRareCPU)

	b.logf("scale: usage")
	daily := []string{"usage", "daily", "--all", "--json"}
	dr, err := medianRun(o.runs, func() (scaleRun, error) { return runIn(s.home, s.env(), b.bin, daily...) })
	if err != nil {
		return err
	}
	cc, skip := findCcusage(b.o.usage.ccusage)
	var ccr *scaleRun
	var claude int
	var claudeBytes int64
	for _, st := range s.stores {
		if st.Spec.Layout == "claude" {
			claude = len(st.Sessions)
			for _, ss := range st.Sessions {
				if fi, err := os.Stat(st.Path(ss)); err == nil {
					claudeBytes += fi.Size()
				}
			}
			env := append(s.env(), "CLAUDE_CONFIG_DIR="+filepath.Dir(st.Root))
			if skip == "" {
				b.logf("scale: ccusage daily --json --offline")
				r, err := medianRun(o.runs, func() (scaleRun, error) { return runIn(s.home, env, cc, "daily", "--json", "--offline") })
				if err != nil {
					skip = fmt.Sprintf("ccusage failed: %v", err)
				} else {
					ccr = &r
				}
			}
		}
	}
	if claude == 0 && skip == "" {
		skip = "no claude source in --scale-layouts"
	}
	measured := fmt.Sprintf("`usage daily --all --json` %s wall, %s CPU, peak RSS %s (all %d sessions, median of %d)", ms(dr.wall), ms(dr.cpu), human(dr.maxRSS), len(s.files), max(o.runs, 1))
	if ccr != nil {
		measured += fmt.Sprintf(" vs `%s daily --json --offline` %s wall, %s CPU, peak RSS %s over the claude source, the only one it reads (%d sessions, %s): %s",
			ccVersion(cc), ms(ccr.wall), ms(ccr.cpu), human(ccr.maxRSS), claude, human(claudeBytes), ratio(ccr.wall, dr.wall))
	} else {
		measured += "; ccusage not run: " + skip
	}
	addV(fmt.Sprintf("usage: `usage daily --all` ≥ %d× faster than `ccusage daily` and under %s (issue 15: ≥ 500×, under 30 MiB at 20k; within 2×), daemon running", scaleCcusageTimes, human(scaleDailyRSS)),
		measured, usageDailyVerdict(dr, ccr))
	sl, err := medianRun(o.runs, func() (scaleRun, error) { return runIn(s.home, s.env(), b.bin, "usage", "--statusline") })
	if err != nil {
		return err
	}
	add(fmt.Sprintf("usage: `usage --statusline` under %s (issue 15: 10 ms; within 2×), daemon running", ms(scaleStatuslineWall)),
		fmt.Sprintf("%s wall, %s CPU, peak RSS %s (median of %d)", ms(sl.wall), ms(sl.cpu), human(sl.maxRSS), max(o.runs, 1)),
		sl.wall < scaleStatuslineWall)
	return nil
}

// usageDailyVerdict judges `usage daily --all --json`: at least scaleCcusageTimes
// faster than ccusage (wall) and under scaleDailyRSS. Without a ccusage run (cc
// nil) only the memory part can be judged, and the verdict says so.
func usageDailyVerdict(daily scaleRun, cc *scaleRun) string {
	mem := daily.maxRSS > 0 && daily.maxRSS < scaleDailyRSS
	if cc == nil {
		if mem {
			return "**met on memory only** (no ccusage: speed not judged)"
		}
		return "**missed** (memory; no ccusage: speed not judged)"
	}
	return verdict(mem && cc.wall >= scaleCcusageTimes*daily.wall)
}

// scaleWatchLimit runs the daemon again over the store, in a user namespace of its
// own whose inotify watch limit (/proc/sys/user/max_inotify_watches, which the
// namespace's owner may lower without privileges) leaves it fewer watches than the
// store's directories: the kernel then refuses the rest with ENOSPC, as when
// fs.inotify.max_user_watches runs out. Appends to sessions in every layout must
// still reach the catalogs (by the fallback rescans), doctor must say so with the
// sysctl, and, the daemon stopped, `reindex --check` must find its state equal to
// a rebuild.
func (b *bench) scaleWatchLimit(ctx context.Context, s *scaleStore, need int, add func(string, string, bool), addV func(string, string, string)) error {
	o := scaleOpt
	target := "inotify: out of watches, the daemon stays correct (periodic rescans), and `doctor` says so with the sysctl"
	tests := "proved by TestDaemonOutOfWatchesStillIndexes (cmd/sessionwatch/watchlimit_test.go: the daemon with room for 2 of 5 watches indexes every append, status and doctor name max_user_watches and the sysctl, `reindex --check` passes) and TestWatchLimitFallsBackToRescans (watcher)"
	limit := o.watchLimit
	if limit == 0 {
		limit = need / 2
	}
	if limit < 0 || need == 0 {
		addV(target, "not measured (--scale-watch-limit -1); "+tests, "not measured here")
		return nil
	}
	if out, err := exec.Command("unshare", "-U", "-r", "sh", "-c", "echo 1 > /proc/sys/user/max_inotify_watches").CombinedOutput(); err != nil {
		addV(target, fmt.Sprintf("not measured: no user namespace with its own inotify limit here (`unshare -U -r`: %v %s); %s", err, strings.TrimSpace(string(out)), tests), "not measured here")
		return nil
	}
	b.logf("scale: the daemon with %d inotify watches (the store needs %d)", limit, need)
	logf, err := os.Create(filepath.Join(s.home, "daemon-watchlimit.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("unshare", "-U", "-r", "sh", "-c", `echo "$0" > /proc/sys/user/max_inotify_watches && exec "$@"`, strconv.Itoa(limit), b.bin, "run")
	cmd.Env, cmd.Stderr = s.env(), logf
	if err := cmd.Start(); err != nil {
		return err
	}
	d := &daemon{cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	defer func() {
		if d != nil {
			d.stop()
		}
	}()
	var st *status
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if st, err = readStatus(s.state); err == nil && st.Running && st.PID == cmd.Process.Pid && st.Unwatched > 0 {
			break
		}
		select {
		case err := <-d.done:
			d.done <- err
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("daemon with %d watches exited: %v\n%s", limit, err, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the daemon with %d watches did not report unwatched directories within 5 minutes", limit)
		}
	}
	quiet(cmd.Process.Pid, 2*time.Second, time.Minute)

	// One append to each of up to --scale-targets main sessions spread over every
	// layout's projects, each tracked until its catalog shows it.
	per := max(o.targets/len(s.stores), 1)
	var dirs []string
	type batch struct {
		st      *gen.Store
		targets []*gen.Session
	}
	var batches []batch
	for _, gs := range s.stores {
		var targets []*gen.Session
		stride := max(len(gs.Sessions)/per, 1)
		for j := stride / 2; j < len(gs.Sessions) && len(targets) < per; j += stride {
			if ss := gs.Sessions[j]; !ss.Subagent {
				targets = append(targets, ss)
			}
		}
		for _, ss := range targets {
			cat := scaleCatalog(s, gs, ss)
			if data, err := os.ReadFile(cat); err != nil || !bytes.Contains(data, []byte(`"id":"`+ss.ID+`"`)) {
				return fmt.Errorf("session %s is not in %s (%v): the bench looks for it in the wrong catalog", ss.ID, cat, err)
			}
			dirs = append(dirs, filepath.Dir(cat))
		}
		batches = append(batches, batch{gs, targets})
	}
	slices.Sort(dirs)
	tr, err := newTracker(slices.Compact(dirs))
	if err != nil {
		return err
	}
	defer tr.close()
	r0 := st.Reasons[watcher.ReasonWatchLimit]
	if s0, err := readStatus(s.state); err == nil {
		r0 = s0.Reasons[watcher.ReasonWatchLimit]
	}
	var appends int64
	nTargets := 0
	for i, bt := range batches {
		nTargets += len(bt.targets)
		ws, err := bt.st.Run(ctx, gen.WriteOptions{Writers: 1, Rate: 200, Count: len(bt.targets), Seed: b.o.seed + 100 + int64(i), Targets: bt.targets,
			OnAppend: func(ss *gen.Session, ts time.Time, n int, done time.Time) {
				tr.add(scaleCatalog(s, bt.st, ss), ss.ID, ts, done)
			}})
		if err != nil {
			return err
		}
		appends += ws.Appends
	}
	wait := 2*watcher.DefaultFallbackInterval + time.Minute
	b.logf("scale: %d appends; waiting up to %s for the catalogs to show them", appends, wait)
	deadline := time.Now().Add(wait)
	tr.wait(wait)
	lat, _, lost := tr.take()
	// And at least one fallback rescan since the appends (status.json is rewritten
	// every 10 s), so the row shows the rescans at work whatever the appends hit.
	var st2 *status
	for {
		if st2, err = readStatus(s.state); err == nil && st2.Reasons[watcher.ReasonWatchLimit] > r0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return err
	}
	slow := 0
	for _, l := range lat {
		if l >= time.Second {
			slow++
		}
	}
	dc := exec.Command(b.bin, "doctor")
	dc.Env = s.env()
	out, _ := dc.Output() // exit 1: the problem is the point
	docLine, fix := "(no line about unwatched directories)", ""
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "directories are not watched") {
			docLine = strings.Join(strings.Fields(l), " ")
			if i+1 < len(lines) && strings.Contains(lines[i+1], "sysctl") {
				fix = strings.Join(strings.Fields(lines[i+1]), " ")
			}
		}
	}
	d.stop()
	d = nil
	b.logf("scale: reindex --check after the daemon out of watches")
	chk, cerr := runIn(s.home, s.env(), b.bin, "reindex", "--check")
	check := "passed"
	if cerr != nil {
		check = "FAILED: " + cerr.Error()
	}
	rescans := st2.Reasons[watcher.ReasonWatchLimit]
	add(target,
		fmt.Sprintf("daemon in a user namespace with max_inotify_watches=%d (the store needs %d): %d watches, %d directories unwatched (%q); %d appends to %d sessions over every layout: %d shown in their catalogs (%d after ≥ 1 s), %d lost, latency p50 %s, p95 %s, max %s (fallback rescans every %s; %d watch-limit rescans in all, %d since the appends); doctor: `%s` `%s`; `reindex --check` after it stopped: %s (%s)",
			limit, need, st2.Watches, st2.Unwatched, st2.WatchErr, appends, nTargets, len(lat), slow, lost, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.95)), ms(quantile(lat, 1)),
			watcher.DefaultFallbackInterval, rescans, rescans-r0, docLine, fix, check, ms(chk.wall)),
		lost == 0 && len(lat) > 0 && st2.Unwatched > 0 && rescans > r0 && strings.Contains(fix, "sysctl fs.inotify.max_user_watches") && cerr == nil)
	return nil
}

// scaleCatalog is the catalog that lists session ss of the store's layout gs.
func scaleCatalog(s *scaleStore, gs *gen.Store, ss *gen.Session) string {
	return filepath.Join(indexer.CatalogDir(s.state, gs.Spec.Layout), indexer.ProjectKey(ss.Project), indexer.CatalogName)
}
