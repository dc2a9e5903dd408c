package janitor

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// rchar returns the bytes this process has read with read(2) and friends so
// far (/proc/self/io), or -1 where that is not available.
func rchar() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// bigStore writes n Wave sessions over n/100 projects, each a few days old (so
// none is due under the default 14-day retention), indexes them, and returns a
// fixture whose group was loaded from the catalogs alone, as after a restart.
func bigStore(tb testing.TB, n int) (*fixture, int64) {
	t := tb.(interface {
		testing.TB
		TempDir() string
	})
	f := &fixture{dir: t.TempDir(), logs: &syncBuffer{}}
	f.root, f.state, f.archive = f.dir+"/wave", f.dir+"/state", f.dir+"/archive"
	os.MkdirAll(f.root, 0o700)
	cfg := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[{"name":"wave","layout":"wave","root":%q}]}`,
		f.state, f.archive, f.root)
	var err error
	if f.cfg, err = parseConfig(cfg); err != nil {
		tb.Fatal(err)
	}
	var total int64
	age := 3 * day
	ts := time.Now().Add(-age)
	for i := 0; i < n; i++ {
		wd := fmt.Sprintf("/bench/p%03d", i/100)
		dir := f.root + "/" + indexer.EncodeProject(wd)
		if i%100 == 0 {
			os.MkdirAll(dir, 0o700)
		}
		content := fmt.Sprintf(`{"type":"metadata","workdir":%q,"createdAt":%q}`+"\n", wd, ts.UTC().Format(time.RFC3339)) +
			fmt.Sprintf(`{"timestamp":%q,"id":"m","role":"user","blocks":[{"type":"text","content":"%s"}]}`+"\n", ts.UTC().Format(time.RFC3339Nano), strings.Repeat("x", 200))
		path := fmt.Sprintf("%s/%08d-0000-4000-8000-%012d.jsonl", dir, i, i)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			tb.Fatal(err)
		}
		os.Chtimes(path, ts, ts)
		total += int64(len(content))
	}
	g, err := indexer.NewGroup(f.cfg, nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		tb.Fatal(err)
	}
	// A fresh group from the catalogs: what the daemon holds after a restart.
	if f.group, err = indexer.NewGroup(f.cfg, nil, false); err != nil {
		tb.Fatal(err)
	}
	if err := f.group.Load(); err != nil {
		tb.Fatal(err)
	}
	return f, total
}

// BenchmarkJanitorPass10k times one janitor pass over 10,000 sessions, none of
// them due, and reports the bytes the pass read (rchar/op): it plans from the
// catalog in memory and reads no transcript.
func BenchmarkJanitorPass10k(b *testing.B) {
	f, total := bigStore(b, 10000)
	j, err := New(f.cfg, f.group, nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total), "transcript-bytes")
	var read int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := rchar()
		rep, err := j.RunOnce(context.Background(), Overrides{})
		read += rchar() - before
		if err != nil || rep.Retired != 0 || len(rep.Errors) > 0 {
			b.Fatalf("pass = %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(read)/float64(b.N), "rchar/op")
}

// BenchmarkJanitorPass10kAllDue is the worst case of the planning side: every
// one of 10,000 sessions is due (--older-than 1d), so each is stat'ed, its lock
// sidecar judged and its open-file status looked up; dry run, so each iteration
// sees the same store.
func BenchmarkJanitorPass10kAllDue(b *testing.B) {
	f, _ := bigStore(b, 10000)
	j, err := New(f.cfg, f.group, nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var read int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := rchar()
		rep, err := j.RunOnce(context.Background(), Overrides{OlderThan: day, DryRun: true})
		read += rchar() - before
		if err != nil || rep.Retired != 10000 {
			b.Fatalf("pass retired %d, %v", rep.Retired, err)
		}
	}
	b.ReportMetric(float64(read)/float64(b.N), "rchar/op")
}

// TestJanitorPassReadsNoTranscripts checks on 2,000 sessions that a pass reads
// (almost) nothing: no transcript, only the catalogs (the daemon keeps no
// session in memory: a pass reads them, once) and a few small state files.
func TestJanitorPassReadsNoTranscripts(t *testing.T) {
	if rchar() < 0 {
		t.Skip("no /proc/self/io")
	}
	f, total := bigStore(t, 2000)
	j, err := New(f.cfg, f.group, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := rchar()
	start := time.Now()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	took := time.Since(start)
	read := rchar() - before
	if err != nil || rep.Retired != 0 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	var catalogs int64
	filepath.WalkDir(filepath.Join(f.cfg.StateDir, "index"), func(_ string, d fs.DirEntry, err error) error {
		if fi, ierr := d.Info(); err == nil && ierr == nil && fi.Mode().IsRegular() {
			catalogs += fi.Size()
		}
		return nil
	})
	t.Logf("pass over 2000 sessions: %s, %d bytes read (transcripts hold %d, catalogs %d)", took, read, total, catalogs)
	if extra := read - catalogs; extra > 64<<10 || extra >= total/10 {
		t.Errorf("pass read %d bytes, want the catalogs' %d and almost nothing else (transcripts hold %d)", read, catalogs, total)
	}
}
