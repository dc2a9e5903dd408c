package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
)

// usageOpts are the flags of the usage section.
type usageOpts struct {
	sessions    int    // sessions of the report store
	lines       int    // lines per session
	lineSize    int    // bytes per line
	rssSessions int    // sessions of the daemon-footprint store
	ccusage     string // ccusage binary ("": look it up on PATH)
}

// rusage is a timed run with the process's peak RSS.
type rusage struct {
	meas
	maxRSS int64
}

// timeRSS runs a command and measures it with its peak RSS. The peak is taken by
// GNU time (/usr/bin/time -f %M), which forks: the rusage of a child this process
// starts itself would include this process's own RSS (Go starts children with
// CLONE_VM, and exec records the old address space's high-water mark). Without
// GNU time the peak is left at -1.
func timeRSS(env []string, name string, args ...string) (rusage, error) {
	rssFile := ""
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		f, err := os.CreateTemp("", "sessionload-rss-")
		if err != nil {
			return rusage{}, err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		args = append([]string{"-f", "%M", "-o", rssFile, name}, args...)
		name = "/usr/bin/time"
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var lc lineCounter
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &lc, &errb
	start := time.Now()
	err := cmd.Run()
	r := rusage{meas: meas{wall: time.Since(start), lines: lc.n}, maxRSS: -1}
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if rssFile != "" {
		data, _ := os.ReadFile(rssFile)
		f := strings.Fields(string(data))
		if len(f) > 0 {
			if kb, perr := strconv.ParseInt(f[len(f)-1], 10, 64); perr == nil {
				r.maxRSS = kb << 10
			}
		}
	}
	if err != nil {
		return r, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return r, nil
}

func humanRSS(n int64) string {
	if n < 0 {
		return "n/a (no /usr/bin/time)"
	}
	return human(n)
}

// medianRSS is bench.median with the largest peak RSS of the runs.
func (b *bench) medianRSS(warm bool, env []string, name string, args ...string) (rusage, error) {
	var peak int64
	m, err := b.median(warm, func() (meas, error) {
		r, err := timeRSS(env, name, args...)
		peak = max(peak, r.maxRSS)
		return r.meas, err
	})
	return rusage{m, peak}, err
}

func (b *bench) usageStore(name string, n, lineSize int) (*benchStore, error) {
	saved := b.o.layout
	b.o.layout = "claude"
	defer func() { b.o.layout = saved }()
	return b.store(name, gen.Spec{Layout: "claude", Projects: max(1, n/max(b.o.perProject, 1)), Sessions: n,
		Lines: b.o.usage.lines, LineSize: lineSize, Subagents: b.o.subagents, Seed: b.o.seed})
}

func (b *bench) benchUsage(ctx context.Context) error {
	uo := b.o.usage
	s, err := b.usageStore(fmt.Sprintf("usage-s%d", uo.sessions), uo.sessions, uo.lineSize)
	if err != nil {
		return err
	}
	b.logf("usage %s: %s ready in %s; building the ledger", s.name, human(s.bytes), s.genDur.Round(time.Second))
	if err := os.RemoveAll(s.state); err != nil { // a kept store's earlier ledger
		return err
	}
	build, err := timeRSS(s.env(), b.bin, "reindex")
	if err != nil {
		return err
	}
	type row struct {
		what, cmd string
		r         rusage
	}
	var rows []row
	daily := []string{"usage", "daily", "--all", "--json"}
	// Two passes settle what the first writes into the store (the native indexes);
	// from then on the stamp holds and no pass runs.
	for range 2 {
		if _, err := timeRSS(s.env(), b.bin, daily...); err != nil {
			return err
		}
	}
	add := func(what, cmd string, env []string, name string, args ...string) error {
		b.logf("usage: %s", what)
		r, err := b.medianRSS(true, env, name, args...)
		if err != nil {
			return err
		}
		rows = append(rows, row{what: what, cmd: cmd, r: r})
		return nil
	}
	if err := add("no daemon, store unchanged since the last `usage` (stamp check)", "sessionwatch "+strings.Join(daily, " "), s.env(), b.bin, daily...); err != nil {
		return err
	}
	if err := add("`--statusline`, no daemon", "sessionwatch usage --statusline", s.env(), b.bin, "usage", "--statusline"); err != nil {
		return err
	}
	d, _, err := b.startDaemonIn(s)
	if err != nil {
		return err
	}
	quiet(d.pid(), 2*time.Second, 2*time.Minute)
	err = add("daemon running (the summary only)", "sessionwatch "+strings.Join(daily, " "), s.env(), b.bin, daily...)
	if err == nil {
		err = add("`--statusline`, daemon running", "sessionwatch usage --statusline", s.env(), b.bin, "usage", "--statusline")
	}
	d.stop()
	if err != nil {
		return err
	}
	// A store appended to while no daemon ran: the pass reads what was appended.
	if _, err := s.stores[0].Run(ctx, gen.WriteOptions{Writers: b.o.writers, Rate: 1000, Duration: 2 * time.Second, Seed: b.o.seed + 1}); err != nil {
		return err
	}
	b.logf("usage: after appends, no daemon")
	after, err := timeRSS(s.env(), b.bin, daily...)
	if err != nil {
		return err
	}
	rows = append(rows, row{what: "no daemon, after ~2,000 appends since the last `usage` (one incremental pass)", cmd: "sessionwatch " + strings.Join(daily, " "), r: rusage{after.meas, after.maxRSS}})

	cc, skip := findCcusage(uo.ccusage)
	var ccr rusage
	if skip == "" {
		b.logf("usage: ccusage daily --json --offline")
		env := append(s.env(), "CLAUDE_CONFIG_DIR="+filepath.Dir(s.root))
		if ccr, err = b.medianRSS(true, env, cc, "daily", "--json", "--offline"); err != nil {
			skip = fmt.Sprintf("ccusage failed: %v", err)
		}
	}

	// The daemon's footprint at rssSessions with the ledger on.
	rs, err := b.usageStore(fmt.Sprintf("usage-rss-s%d", uo.rssSessions), uo.rssSessions, 256)
	if err != nil {
		return err
	}
	b.logf("usage %s: daemon footprint", rs.name)
	d, ready, err := b.startDaemon(rs)
	if err != nil {
		return err
	}
	var idleRSS, loadPeak int64
	var appends int64
	err = func() error {
		quiet(d.pid(), 2*time.Second, 2*time.Minute)
		time.Sleep(b.o.idle)
		p, err := sampleProc(d.pid())
		if err != nil {
			return err
		}
		idleRSS = p.rss
		peakRSS := samplePeakRSS(d.pid)
		ws, err := rs.stores[0].Run(ctx, gen.WriteOptions{Writers: b.o.writers, Rate: float64(b.o.rssRate), Duration: b.o.phase, Seed: b.o.seed})
		time.Sleep(time.Second)
		loadPeak = peakRSS()
		appends = ws.Appends
		return err
	}()
	ledger := dirSize(filepath.Join(rs.state, "usage"))
	d.stop()
	if err != nil {
		return err
	}

	fmt.Fprintf(b.out, "### 6. Usage: `sessionwatch usage` against ccusage\n\n")
	fmt.Fprintf(b.out, "Claude Code store of %d sessions (%d main), %s, %d lines of %d B ±50%% per session; the ledger was built by `sessionwatch reindex` in %s (%s CPU, peak RSS %s). ccusage re-reads every transcript on each run (`CLAUDE_CONFIG_DIR` set to the store). Peak RSS is the process's, from GNU time (`%%M`).\n\n",
		len(s.files), s.mains, human(s.bytes), uo.lines, uo.lineSize, ms(build.wall), ms(build.cpu), humanRSS(build.maxRSS))
	fmt.Fprintln(b.out, "| command | case | wall | CPU | peak RSS | ccusage wall ÷ this |")
	fmt.Fprintln(b.out, "|---|---|---:|---:|---:|---:|")
	for _, r := range rows {
		x := "—"
		if skip == "" && strings.Contains(r.cmd, "daily") {
			x = ratio(ccr.wall, r.r.wall)
		}
		fmt.Fprintf(b.out, "| `%s` | %s | %s | %s | %s | %s |\n", r.cmd, r.what, ms(r.r.wall), ms(r.r.cpu), humanRSS(r.r.maxRSS), x)
	}
	if skip == "" {
		fmt.Fprintf(b.out, "| `ccusage daily --json --offline` | %s | %s | %s | %s | 1.0× |\n", ccVersion(cc), ms(ccr.wall), ms(ccr.cpu), humanRSS(ccr.maxRSS))
	} else {
		fmt.Fprintf(b.out, "\nccusage skipped: %s.\n", skip)
	}
	fmt.Fprintf(b.out, "\nDaemon with the ledger on, %d sessions (%s): ready after %s, idle RSS %s after %s, peak RSS %s while %d appends arrived in %s (%d/s asked); ledger files %s.\n\n",
		len(rs.files), human(rs.bytes), ms(ready), human(idleRSS), b.o.idle, human(loadPeak), appends, b.o.phase, b.o.rssRate, human(ledger))
	return nil
}

// findCcusage resolves the --ccusage flag (empty: ccusage on PATH) to a binary,
// or says why there is none.
func findCcusage(flag string) (bin, skip string) {
	if flag == "" {
		if p, err := exec.LookPath("ccusage"); err == nil {
			return p, ""
		}
		return "", "ccusage is not on PATH (npm install --prefix DIR ccusage@20.0.24, then --ccusage DIR/node_modules/.bin/ccusage)"
	}
	if _, err := os.Stat(flag); err != nil {
		return flag, fmt.Sprintf("--ccusage %s: %v", flag, err)
	}
	return flag, ""
}

func ccVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "ccusage"
	}
	return "ccusage " + strings.TrimPrefix(strings.TrimSpace(string(out)), "ccusage ")
}

func dirSize(dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}
