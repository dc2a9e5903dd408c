package indexer

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// callLog is a Consumer that records every call in order, to compare the calls
// of a parallel pass with a sequential one. It takes no lock of its own: the
// contract is that every call is made with the indexer's lock held, and -race
// reports any call made from a read worker.
type callLog struct {
	calls []string
}

func (c *callLog) add(s string) { c.calls = append(c.calls, s) }

func (c *callLog) Resume(u UnitRef) (int64, string, bool) { return 0, "", false }
func (c *callLog) Reset(u UnitRef)                        { c.add("reset " + u.Unit) }
func (c *callLog) Line(u UnitRef, off int64, line []byte) {
	c.add(fmt.Sprintf("line %s %d %s", u.Unit, off, line))
}
func (c *callLog) Done(u UnitRef, off int64, fp string) {
	c.add(fmt.Sprintf("done %s %d %s", u.Unit, off, fp))
}
func (c *callLog) Document(u UnitRef, data []byte, ss []*Session) {
	c.add(fmt.Sprintf("document %s %d", u.Unit, len(data)))
}
func (c *callLog) Remove(u UnitRef) { c.add("remove " + u.Unit) }
func (c *callLog) Sync(ss []SessionRef) error {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.Unit+"/"+s.ID+"@"+s.Project)
	}
	sort.Strings(ids)
	c.add("sync " + strings.Join(ids, ","))
	return nil
}

// prepLog is a callLog that is a Preparer: a worker records the lines it is
// given, and LinesPrepared adds them to the log, so a parallel pass logs what a
// sequential one does only if the prepared lines are the lines Line would have
// been handed, in order, for the unit the walk installs.
type prepLog struct {
	callLog
	batches int // LinesPrepared calls
}

type prepLines struct {
	ref   UnitRef
	lines []string
}

func (p *prepLines) Line(off int64, line []byte) {
	p.lines = append(p.lines, fmt.Sprintf("line %s %d %s", p.ref.Unit, off, line))
}
func (p *prepLines) Size() int64 { return int64(len(p.lines)) }

// LineMembers makes prepLines a MembersPrepared, so that a parallel pass scans
// each line once for the fold and for it (Members): it logs what Line logs, and
// a mismatch if the members handed over are not what ObjectFields gives.
func (p *prepLines) LineMembers(off int64, m *Members) {
	line := m.Line()
	p.Line(off, line)
	if got, want := membersOf(m, line), membersOf(nil, bytes.Clone(line)); got != want {
		p.lines = append(p.lines, fmt.Sprintf("members of %s %d: %q, want %q", p.ref.Unit, off, got, want))
	}
}

// membersOf renders what m.ObjectFields(line) hands over.
func membersOf(m *Members, line []byte) string {
	var b strings.Builder
	err := m.ObjectFields(line, func(k, v []byte) { fmt.Fprintf(&b, "%q=%q,", k, v) })
	fmt.Fprintf(&b, "err=%v", err)
	return b.String()
}

func (c *prepLog) Prepare(u UnitRef) Prepared { return &prepLines{ref: u} }
func (c *prepLog) LinesPrepared(u UnitRef, p Prepared) {
	pl := p.(*prepLines)
	if pl.ref != u {
		c.add(fmt.Sprintf("prepared for %+v, handed over for %+v", pl.ref, u))
	}
	c.batches++
	c.calls = append(c.calls, pl.lines...)
}

// treeFiles reads every file under dir, by path relative to it.
func treeFiles(t *testing.T, dir string, only string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (only != "" && d.Name() != only) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = string(data)
		return nil
	})
	return m
}

// manyWaveSessions writes n Wave transcripts over a few projects, with skipped
// lines, a partial last line and a file too big to be buffered for consumers.
func manyWaveSessions(t *testing.T, root string, n int) {
	t.Helper()
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("home-u-p%d", i%7))
		os.MkdirAll(dir, 0o700)
		var b strings.Builder
		fmt.Fprintf(&b, `{"type":"metadata","workdir":"/home/u/p%d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", i%7)
		for j := range i % 9 {
			b.WriteString(msg(fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i%60, j), fmt.Sprintf("message %d of %d", j, i)))
			if j == 3 {
				b.WriteString("not json\n{broken\n\n")
			}
		}
		if i%5 == 0 {
			b.WriteString(`{"timestamp":"2026-01-01T00:00:09Z","role":"user"`) // no newline yet
		}
		if i == 11 {
			b.WriteString(strings.Repeat(msg("2026-01-02T00:00:00Z", strings.Repeat("z", 1000)), prefetchBufferMax/1000+10))
		}
		name := fmt.Sprintf("%08x-0000-4000-8000-%012x.jsonl", i, i)
		if i%10 == 3 {
			name = "subagent-" + name
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, fixedMtime, fixedMtime)
	}
}

// TestPrefetchMatchesSequential: a full pass that reads new transcripts on
// workers writes the same catalogs and native indexes, and makes the same
// consumer calls in the same order, as one that reads them on the walk.
func TestPrefetchMatchesSequential(t *testing.T) {
	for _, layout := range []string{"wave", "claude", "codex", "gemini", "llxprt", "wave-many"} {
		t.Run(layout, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "store")
			name := layout
			if layout == "wave-many" {
				name = "wave"
				manyWaveSessions(t, root, 300)
			} else {
				copyTree(t, filepath.Join("testdata", layout, "basic", "store"), root)
				if _, err := os.Stat(filepath.Join("testdata", layout, "basic", "projects.json")); err == nil {
					copyTree(t, filepath.Join("testdata", layout, "basic", "projects.json"), filepath.Join(base, "projects.json"))
				}
			}
			// Some stores ship a native index as input: each run starts from them.
			input := treeFiles(t, root, CatalogName)
			run := func(parallel bool) (catalogs, natives map[string]string, calls [2][]string, prefetched int) {
				t.Helper()
				for p, data := range input {
					os.WriteFile(filepath.Join(root, p), []byte(data), 0o600)
				}
				defer func(m, w int) { prefetchMin, prefetchWorkers = m, w }(prefetchMin, prefetchWorkers)
				prefetchMin, prefetchWorkers = 1<<30, 0
				if parallel {
					prefetchMin, prefetchWorkers = 1, 3
				}
				state := t.TempDir()
				ix := newLayoutIndexer(t, name, root, state, false)
				log, plog := &callLog{}, &prepLog{}
				ix.consumers = append(ix.consumers, log, plog)
				if err := ix.Reconcile(); err != nil {
					t.Fatal(err)
				}
				if plog.batches > ix.prefetched || (!parallel && plog.batches > 0) {
					t.Fatalf("%d prepared batches handed over, %d units read on workers", plog.batches, ix.prefetched)
				}
				natives = treeFiles(t, root, CatalogName)
				for p := range natives {
					os.Remove(filepath.Join(root, p))
				}
				return treeFiles(t, filepath.Join(state, "index"), ""), natives, [2][]string{log.calls, plog.calls}, ix.prefetched
			}
			seqCat, seqNat, seqCalls, n := run(false)
			if n != 0 {
				t.Fatalf("sequential pass installed %d prefetched units", n)
			}
			parCat, parNat, parCalls, n := run(true)
			// Small stores may be walked before a worker starts; 300 files are not.
			if n == 0 && layout == "wave-many" {
				t.Fatal("parallel pass read no unit on a worker")
			}
			t.Logf("%d units read on workers", n)
			if len(seqCat) == 0 {
				t.Fatal("no catalogs written")
			}
			for _, c := range []struct {
				what     string
				seq, par map[string]string
			}{{"catalog", seqCat, parCat}, {"native index", seqNat, parNat}} {
				if len(c.seq) != len(c.par) {
					t.Errorf("%s files: %d sequential, %d parallel", c.what, len(c.seq), len(c.par))
				}
				for p, want := range c.seq {
					if got := c.par[p]; got != want {
						t.Errorf("%s %s differs:\n%s", c.what, p, lineDiff(got, want))
					}
				}
			}
			for k, what := range []string{"consumer", "preparing consumer"} {
				seqCalls, parCalls := seqCalls[k], parCalls[k]
				if len(seqCalls) != len(parCalls) {
					t.Fatalf("%s calls: %d sequential, %d parallel", what, len(seqCalls), len(parCalls))
				}
				for i := range seqCalls {
					if seqCalls[i] != parCalls[i] {
						t.Fatalf("%s call %d = %.200q, want %.200q", what, i, parCalls[i], seqCalls[i])
					}
				}
			}
		})
	}
}

// TestReadCatalogsOfCollidingProjects: a project whose catalog key another
// project already holds is listed from its own catalog by name, and only it.
func TestReadCatalogsOfCollidingProjects(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	for i, workdir := range []string{"/home/u/a b", "/home/u/a_b"} {
		dir := filepath.Join(root, fmt.Sprintf("p%d", i))
		os.MkdirAll(dir, 0o700)
		data := fmt.Sprintf(`{"type":"metadata","workdir":%q,"createdAt":"2026-01-01T00:00:00Z"}`+"\n", workdir) + msg("2026-01-01T00:00:01Z", "hi")
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%08d-0000-4000-8000-000000000001.jsonl", i)), []byte(data), 0o600)
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(CatalogDir(state, "wave"), collisionKey("home-u-a_b", "/home/u/a_b"), CatalogName)); err != nil {
		t.Fatalf("the second project's catalog is not where collisionKey says: %v", err)
	}
	for _, p := range []string{"/home/u/a b", "/home/u/a_b"} {
		got, err := ReadCatalogs(state, nil, []string{p})
		if err != nil || len(got) != 1 || got[0].Project != p {
			t.Errorf("ReadCatalogs(%q) = %d entries (%v), want its one session", p, len(got), err)
		}
	}
}

// TestPrefetchHoldsBoundedBuffers: with consumers attached, the workers hold at
// most prefetchHeldMax of buffered lines beyond one transcript each, however far
// the walk lags behind.
func TestPrefetchHoldsBoundedBuffers(t *testing.T) {
	defer func(m, w int, h int64) { prefetchMin, prefetchWorkers, prefetchHeldMax = m, w, h }(prefetchMin, prefetchWorkers, prefetchHeldMax)
	prefetchMin, prefetchWorkers, prefetchHeldMax = 1, 3, 1<<20
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "home-u-big")
	os.MkdirAll(dir, 0o700)
	const size = 256 << 10
	for i := range 40 {
		data := `{"type":"metadata","workdir":"/home/u/big","createdAt":"2026-01-01T00:00:00Z"}` + "\n" +
			strings.Repeat(msg("2026-01-01T00:00:01Z", strings.Repeat("x", 1000)), size/1100)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%08d-0000-4000-8000-000000000001.jsonl", i)), []byte(data), 0o600)
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	log := &callLog{}
	ix.consumers = append(ix.consumers, log)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if ix.prefetched == 0 {
		t.Fatal("no unit read on a worker")
	}
	if limit := prefetchHeldMax + 3*size; ix.prefetchPeak > limit || ix.prefetchPeak == 0 {
		t.Errorf("workers held up to %d bytes of lines, want 1..%d", ix.prefetchPeak, limit)
	}
	// The units passed on to the consumers' queues are bounded alike: at most
	// prefetchHeldMax, or one unit alone.
	if limit := prefetchHeldMax + size; ix.feedPeak > limit || ix.feedPeak == 0 {
		t.Errorf("the consumers' queues held up to %d bytes of lines, want 1..%d", ix.feedPeak, limit)
	}
	if got := ix.Stats().Sessions; got != 40 {
		t.Errorf("%d sessions indexed, want 40", got)
	}
}

// TestStartOverCatalogsReadsNewFilesOnTheWalk: Start over loaded catalogs does
// not walk the tree a second time to read new transcripts on workers; the walk
// reads them, and the catalogs equal a rebuild's. A Start without catalogs
// still reads on workers.
func TestStartOverCatalogsReadsNewFilesOnTheWalk(t *testing.T) {
	defer func(m, w int) { prefetchMin, prefetchWorkers = m, w }(prefetchMin, prefetchWorkers)
	prefetchMin, prefetchWorkers = 1, 3
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 50)
	state := t.TempDir()
	first := newLayoutIndexer(t, "wave", root, state, false)
	if err := first.Reconcile(); err != nil {
		t.Fatal(err)
	}
	manyWaveSessions(t, root, 350) // the first 50 again, unchanged, and 300 new
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if ix.prefetched != 0 {
		t.Errorf("Start over loaded catalogs read %d units on workers, want 0", ix.prefetched)
	}
	if got := ix.Stats().Sessions; got != 350 {
		t.Errorf("sessions after Start = %d, want 350", got)
	}
	rebuilt := t.TempDir()
	fresh := newLayoutIndexer(t, "wave", root, rebuilt, false)
	if err := fresh.Load(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Start(); err != nil {
		t.Fatal(err)
	}
	if fresh.prefetched == 0 {
		t.Error("Start without catalogs read no unit on a worker")
	}
	if err := ix.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	got, want := treeFiles(t, filepath.Join(state, "index"), ""), treeFiles(t, filepath.Join(rebuilt, "index"), "")
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("catalog files: %d after Start, %d rebuilt", len(got), len(want))
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("catalog %s differs from a rebuild:\n%s", p, lineDiff(got[p], w))
		}
	}
}
