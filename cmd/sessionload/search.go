package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/search"
)

// searchLayouts are the line layouts of the search store, --layout's first (its
// sessions are the append targets: the tracker knows its catalogs).
func (b *bench) searchLayouts() []string {
	out := []string{b.o.layout}
	for _, l := range gen.Layouts() {
		if l != b.o.layout {
			out = append(out, l)
		}
	}
	return out
}

// searchStore generates a store of n sessions spread over every line layout, one
// source per layout in its config.
func (b *bench) searchStore(n int) (*benchStore, error) {
	name := fmt.Sprintf("search-%d", n)
	if s := b.stores[name]; s != nil {
		return s, nil
	}
	home := filepath.Join(b.work, name)
	s := &benchStore{name: name, home: home, root: gen.DefaultRoot(b.o.layout, home), state: filepath.Join(home, "state"), config: filepath.Join(home, "config.json")}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	layouts := b.searchLayouts()
	var sources []string
	start := time.Now()
	for i, l := range layouts {
		root := gen.DefaultRoot(l, home)
		sources = append(sources, fmt.Sprintf(`{"name":%q,"layout":%q,"root":%q,"retention":"off"}`, l, l, root))
		per := n / len(layouts)
		if i == 0 {
			per += n % len(layouts)
		}
		sp := gen.Spec{Layout: l, Projects: max(1, per/max(b.o.perProject, 1)), Sessions: per, Lines: b.o.searchLines,
			LineSize: b.o.searchLineSize, Subagents: b.o.subagents, Seed: b.o.seed}
		st, err := gen.Plan(root, sp)
		if err != nil {
			return nil, err
		}
		b.logf("generating %s: %d %s sessions", name, per, l)
		if err := st.Write(); err != nil {
			return nil, err
		}
		s.add(st)
	}
	s.genDur = time.Since(start)
	cfg := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"log_level":"warn",
 "janitor":{"run_at_start":false,"schedule":"off"},
 "sources":[%s]}`, s.state, filepath.Join(home, "archive"), strings.Join(sources, ","))
	if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	for _, f := range s.files {
		if fi, err := os.Stat(f); err == nil {
			s.bytes += fi.Size()
		}
	}
	b.stores[name] = s
	return s, nil
}

// textBytes is how many bytes of message text the index holds (tool output off):
// the extractors' output over every line of every file.
func textBytes(s *benchStore) (int64, error) {
	var n int64
	for _, st := range s.stores {
		layout := st.Spec.Layout
		for _, sess := range st.Sessions {
			f, err := os.Open(st.Path(sess))
			if err != nil {
				return 0, err
			}
			br := bufio.NewReaderSize(f, 1<<20)
			var off int64
			var msgs []search.Message
			for {
				line, err := br.ReadBytes('\n')
				if len(line) > 0 {
					msgs = search.ExtractLine(msgs[:0], layout, off, bytes.TrimSpace(line), false)
					for _, m := range msgs {
						n += int64(len(m.Text))
					}
					off += int64(len(line))
				}
				if err != nil {
					break
				}
			}
			f.Close()
		}
	}
	return n, nil
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// roots are the store's session roots, for grep.
func (s *benchStore) roots() []string {
	var out []string
	for _, st := range s.stores {
		out = append(out, st.Root)
	}
	return out
}

func (b *bench) benchSearch(ctx context.Context) error {
	s, err := b.searchStore(b.o.searchSessions)
	if err != nil {
		return err
	}
	words := strings.Fields(b.o.searchWords)
	rare := b.o.searchRare
	fmt.Fprintf(b.out, "### 6. Search (issue 14)\n\n")
	fmt.Fprintf(b.out, "Store: %d sessions over the line layouts %s (%d lines of %d B ±50%% each, ±50%%), %s of transcripts. tool_output off. Query words `%s`, rare word `%s`.\n\n",
		len(s.files), strings.Join(b.searchLayouts(), ", "), b.o.searchLines, b.o.searchLineSize, human(s.bytes), strings.Join(words, " "), rare)

	// Cold build: reindex on a fresh state dir (catalogs, search index, usage
	// ledger) against cat of the same files.
	b.logf("search: cold build vs cat")
	cat, err := b.median(true, func() (meas, error) { return catAll(s.files, false) })
	if err != nil {
		return err
	}
	re, err := b.median(false, func() (meas, error) { return b.reindexFresh(s, false) })
	if err != nil {
		return err
	}
	idx := dirBytes(filepath.Join(s.state, search.DirName))
	text, err := textBytes(s)
	if err != nil {
		return err
	}
	fmt.Fprintln(b.out, "| measure | command | figure | target | verdict |")
	fmt.Fprintln(b.out, "|---|---|---:|---|---|")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	fmt.Fprintf(b.out, "| cat of the transcripts (warm) | `cat` (500 files per process) | %s wall, %s CPU | | |\n", ms(cat.wall), ms(cat.cpu))
	fmt.Fprintf(b.out, "| cold build: catalogs + search index + ledger | `sessionwatch reindex` (fresh state dir) | %s wall, %s CPU = %s cat (wall) | ≤ 3× cat | %s |\n",
		ms(re.wall), ms(re.cpu), ratio(re.wall, cat.wall), verdict(re.wall <= 3*cat.wall))
	fmt.Fprintf(b.out, "| index size | `du state/search` | %s = %.1f%% of %s message text, %.1f%% of transcripts | ≤ 30%% of text | %s |\n",
		human(idx), 100*float64(idx)/float64(max(text, 1)), human(text), 100*float64(idx)/float64(max(s.bytes, 1)), verdict(float64(idx) <= 0.3*float64(text)))

	// Queries, with a daemon holding the state dir (the CLI then only reads).
	b.logf("search: starting the daemon")
	d, ready, err := b.startDaemon(s)
	if err != nil {
		return err
	}
	defer d.stop()
	quiet(d.pid(), 2*time.Second, time.Minute)
	env := s.env()
	q2 := append([]string{"search", "--all", "--json"}, words...)
	qruns := max(b.o.searchQueryRuns, 1)
	grepCmd := fmt.Sprintf("grep -rliF %s %s | xargs -r grep -liF %s", shq(words[0]), strings.Join(shqAll(s.roots()), " "), shq(words[len(words)-1]))
	for _, w := range words[1 : len(words)-1] {
		grepCmd += " | xargs -r grep -liF " + shq(w)
	}
	// Side by side: the two contenders' runs alternate, so that the machine's load
	// weighs on both alike.
	two, grep, err := b.pairMedian(qruns,
		func() (meas, error) { return timeCmd(env, b.bin, q2...) },
		func() (meas, error) { return timeCmd(nil, "sh", "-c", grepCmd) })
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "| 2-word query, 20 rows with snippets (daemon running; median of %d runs, alternating with grep's) | `sessionwatch search --all --json %s` | %s wall, %s CPU; %d lines | | |\n", qruns, strings.Join(words, " "), ms(two.wall), ms(two.cpu), two.lines)
	fmt.Fprintf(b.out, "| same words with grep | `grep -rliF %s ROOTS \\| xargs -r grep -liF %s` | %s wall, %s CPU; %d files | search ≥ 100× faster | %s faster (wall): %s; %s by CPU |\n",
		words[0], words[len(words)-1], ms(grep.wall), ms(grep.cpu), grep.lines, ratio(grep.wall, two.wall), verdict(grep.wall >= 100*two.wall), ratio(grep.cpu, two.cpu))
	if _, err := os.Stat("/usr/bin/rg"); err == nil {
		rgCmd := fmt.Sprintf("rg -li %s %s | xargs -r rg -li %s", shq(words[0]), strings.Join(shqAll(s.roots()), " "), shq(words[len(words)-1]))
		rg, err := b.medianN(qruns, true, func() (meas, error) { return timeCmd(nil, "sh", "-c", rgCmd) })
		if err != nil {
			return err
		}
		fmt.Fprintf(b.out, "| same words with rg | `%s` | %s wall, %s CPU | | %s faster |\n", "rg -li … | xargs rg -li …", ms(rg.wall), ms(rg.cpu), ratio(rg.wall, two.wall))
	}
	one, err := b.medianN(qruns, true, func() (meas, error) { return timeCmd(env, b.bin, "search", "--all", "--json", rare) })
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "| rare-word query (daemon running; median of %d runs) | `sessionwatch search --all --json %s` | %s wall, %s CPU (whole process) | < 20 ms CPU | %s |\n",
		qruns, rare, ms(one.wall), ms(one.cpu), verdict(one.cpu < 20*time.Millisecond))

	// Append-to-searchable: the index is committed before the catalog write of
	// the same flush, so the catalog showing a line bounds when it is searchable.
	var dirs []string
	seen := map[string]bool{}
	st := s.stores[0]
	for _, sess := range st.Sessions {
		if dir := filepath.Dir(b.catalogOf(s, sess)); !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	tr, err := newTracker(dirs)
	if err != nil {
		return err
	}
	defer tr.close()
	targets := st.Sessions[:min(b.o.incTargets, len(st.Sessions))]
	r, err := b.phase(ctx, d, tr, st, targets, fmt.Sprintf("%d/s, %d files", b.o.rssRate, len(targets)), float64(b.o.rssRate), 0)
	if err != nil {
		return err
	}
	p95 := quantile(r.lat, 0.95)
	fmt.Fprintf(b.out, "| append → searchable, p95 at %d appends/s | daemon running; %d writers for %s; latency to the catalog write that follows the index commit | p50 %s, p95 %s, max %s; late/lost %d/%d | p95 < 300 ms | %s |\n",
		b.o.rssRate, b.o.writers, b.o.phase, ms(quantile(r.lat, 0.5)), ms(p95), ms(quantile(r.lat, 1)), r.late, r.lost, verdict(p95 < 300*time.Millisecond && r.lost == 0))
	fmt.Fprintf(b.out, "| daemon RSS with search on | peak VmRSS during that phase (%d sessions; ready after %s) | %s | < 64 MiB | %s |\n",
		len(s.files), ms(ready), human(r.rss), verdict(r.rss < 64<<20))
	fmt.Fprintln(b.out)
	return nil
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shqAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shq(s)
	}
	return out
}

// pairMedian runs f and g alternately n times each (after one warm-up run of
// each) and returns the median of each.
func (b *bench) pairMedian(n int, f, g func() (meas, error)) (meas, meas, error) {
	var fs, gs []meas
	for i := range n + 1 {
		mf, err := f()
		if err != nil {
			return meas{}, meas{}, err
		}
		mg, err := g()
		if err != nil {
			return meas{}, meas{}, err
		}
		if i > 0 {
			fs, gs = append(fs, mf), append(gs, mg)
		}
	}
	return medianOf(fs), medianOf(gs), nil
}

// medianOf is the median wall, CPU and RSS of runs (the last run's lines).
func medianOf(ms []meas) meas {
	var walls, cpus []time.Duration
	var rsss []int64
	for _, m := range ms {
		walls, cpus, rsss = append(walls, m.wall), append(cpus, m.cpu), append(rsss, m.maxRSS)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	slices.Sort(rsss)
	return meas{wall: walls[len(walls)/2], cpu: cpus[len(cpus)/2], lines: ms[len(ms)-1].lines, maxRSS: rsss[len(rsss)/2]}
}
