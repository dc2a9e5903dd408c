package search

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/watcher"
)

// store is a temp HOME with one root per line layout and a state dir.
type store struct {
	t     *testing.T
	home  string
	state string
	cfg   *config.Config
}

func newStore(t *testing.T) *store {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	s := &store{t: t, home: home, state: filepath.Join(home, "state")}
	js := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"sources":[
	 {"name":"wave","layout":"wave","root":%q},
	 {"name":"claude","layout":"claude","root":%q},
	 {"name":"codex","layout":"codex","root":%q},
	 {"name":"mogzi","layout":"mogzi","root":%q}]}`, s.state, filepath.Join(home, "archive"),
		s.root("wave"), s.root("claude"), s.root("codex"), s.root("mogzi"))
	cfg, err := config.Parse(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	return s
}

func (s *store) root(layout string) string { return filepath.Join(s.home, layout) }

// write appends text to a file under a layout's root.
func (s *store) write(layout, rel, text string) string {
	s.t.Helper()
	p := filepath.Join(s.root(layout), filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		s.t.Fatal(err)
	}
	return p
}

// index runs one indexing pass (as the daemon or `run --once` would) with a fresh
// Index attached, and returns it still open.
func (s *store) index(opt Options) (*Index, *indexer.Group) {
	s.t.Helper()
	if opt.Dir == "" {
		opt.Dir = filepath.Join(s.state, DirName)
	}
	x, err := Open(opt)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.indexWith(x)
}

func (s *store) search(q string, f Filter) []Hit {
	s.t.Helper()
	r, err := OpenReader(filepath.Join(s.state, DirName))
	if err != nil {
		s.t.Fatal(err)
	}
	defer r.Close()
	pq, err := ParseQuery(q)
	if err != nil {
		s.t.Fatal(err)
	}
	hits, err := r.Search(pq, f, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return hits
}

func hitNames(hits []Hit) string {
	var out []string
	for _, h := range hits {
		n := filepath.Base(h.Path)
		if h.Session != "" {
			n = h.Session
		}
		if h.Removed {
			n += "(removed)"
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

const (
	uuid1 = "11111111-1111-4111-8111-111111111111"
	uuid2 = "22222222-2222-4222-8222-222222222222"
	uuid3 = "33333333-3333-4333-8333-333333333333"
)

func waveMsg(ts, role, text string) string {
	return fmt.Sprintf(`{"timestamp":"%s","id":"x","role":"%s","blocks":[{"type":"text","content":%q}]}`+"\n", ts, role, text)
}

func TestIndexFollowsAppendsResetsAndRemovals(t *testing.T) {
	s := newStore(t)
	a := s.write("wave", "p/"+uuid1+".jsonl", `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+
		waveMsg("2026-01-01T00:00:01Z", "user", "fix the flaky parser test")+waveMsg("2026-01-01T00:00:02Z", "assistant", "the parser is fixed"))
	s.write("wave", "p/"+uuid2+".jsonl", waveMsg("2026-01-02T00:00:01Z", "user", "deploy the parser"))
	s.write("claude", "-w-p/"+uuid3+".jsonl", `{"type":"user","cwd":"/w/p","sessionId":"`+uuid3+`","timestamp":"2026-01-03T00:00:00Z","message":{"role":"user","content":"caf\u00e9 cr\u00e8me in the parser"}}`+"\n")
	s.write("mogzi", uuid1+"/session.json", `{"id":"`+uuid1+`","name":"m","createdAt":"2026-01-01T00:00:00Z","lastModifiedAt":"2026-01-04T00:00:00Z","history":[{"role":"user","content":"mogzi parser question"}]}`)
	archived := map[string]bool{}
	x, g := s.index(Options{KeepRemoved: func(source, path string, _ time.Time) bool { return archived[path] }})
	defer x.Close()

	if got, want := hitNames(s.search("parser", Filter{})), uuid1+" "+uuid1+".jsonl "+uuid2+".jsonl "+uuid3+".jsonl"; got != want {
		t.Errorf("parser → %q, want %q", got, want)
	}
	if got, want := hitNames(s.search("CAFE creme", Filter{})), uuid3+".jsonl"; got != want {
		t.Errorf("CAFE creme → %q, want %q", got, want)
	}
	if got, want := hitNames(s.search(`"parser is fixed"`, Filter{})), uuid1+".jsonl"; got != want {
		t.Errorf("phrase → %q, want %q", got, want)
	}
	if got := hitNames(s.search(`"fixed parser"`, Filter{})); got != "" {
		t.Errorf("phrase in the wrong order → %q, want nothing", got)
	}
	if got, want := hitNames(s.search("parser -deploy -mogzi -cafe", Filter{})), uuid1+".jsonl"; got != want {
		t.Errorf("exclusions → %q, want %q", got, want)
	}
	if got, want := hitNames(s.search("fla*", Filter{})), uuid1+".jsonl"; got != want {
		t.Errorf("prefix → %q, want %q", got, want)
	}
	if got, want := hitNames(s.search("fixed", Filter{Role: RoleUser})), ""; got != want {
		t.Errorf("fixed as user → %q, want %q", got, want)
	}

	// An appended line is searchable after the next update.
	s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-05T00:00:00Z", "user", "now add zanzibar support"))
	if err := g.Apply(batch(a)); err != nil {
		t.Fatal(err)
	}
	if got, want := hitNames(s.search("zanzibar", Filter{})), uuid1+".jsonl"; got != want {
		t.Errorf("appended word → %q, want %q", got, want)
	}
	// Rewritten: the old text leaves the results, the new one is found.
	os.WriteFile(a, []byte(waveMsg("2026-01-06T00:00:00Z", "user", "entirely different words")), 0o600)
	if err := g.Apply(batch(a)); err != nil {
		t.Fatal(err)
	}
	if got := hitNames(s.search("zanzibar", Filter{})); got != "" {
		t.Errorf("after rewrite zanzibar → %q, want nothing", got)
	}
	if got, want := hitNames(s.search("different", Filter{})), uuid1+".jsonl"; got != want {
		t.Errorf("after rewrite → %q, want %q", got, want)
	}
	// Removed (archived): out of the results at once; with --archived it is
	// found, marked removed, also after merges.
	archived[a] = true
	os.Remove(a)
	if err := g.Apply(batch(a)); err != nil {
		t.Fatal(err)
	}
	if got := hitNames(s.search("different", Filter{})); got != "" {
		t.Errorf("after removal → %q, want nothing", got)
	}
	if got, want := hitNames(s.search("different", Filter{Archived: true})), uuid1+".jsonl(removed)"; got != want {
		t.Errorf("archived after removal → %q, want %q", got, want)
	}
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	if got, want := hitNames(s.search("different", Filter{Archived: true})), uuid1+".jsonl(removed)"; got != want {
		t.Errorf("archived after compaction → %q, want %q", got, want)
	}
	// A merge drops the docs of removed units that are not kept (the archive was
	// deleted, or the session was deleted permanently).
	archived[a] = false
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := hitNames(s.search("different", Filter{Archived: true})); got != "" {
		t.Errorf("removed and not archived, after compaction → %q, want nothing", got)
	}
	if got, want := hitNames(s.search("parser", Filter{})), uuid1+" "+uuid2+".jsonl "+uuid3+".jsonl"; got != want {
		t.Errorf("after compaction parser → %q, want %q", got, want)
	}
}

func batch(paths ...string) watcher.Batch { return watcher.Batch{Paths: paths} }

// TestCheckReportsDifferences: the comparison with a rebuild sees a message the
// store does not hold, and a unit the index lacks.
func TestCheckReportsDifferences(t *testing.T) {
	s := newStore(t)
	s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:01Z", "user", "hello world"))
	x, _ := s.index(Options{})
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) != 0 {
		t.Fatalf("fresh index: diffs %q, err %v; want none", diffs, err)
	}
	ref := indexer.UnitRef{Source: "wave", Layout: "wave", Unit: "p/" + uuid1 + ".jsonl"}
	x.mu.Lock()
	x.addLocked(x.u.recs[x.liveLocked(ref)].id, 0, &Message{Offset: 999, Role: RoleUser, Text: "phantom"})
	x.commitLocked()
	x.mu.Unlock()
	x.Close()
	diffs, err := CheckAgainstRebuild(s.cfg)
	if err != nil || len(diffs) != 1 || !strings.Contains(diffs[0], "differs") {
		t.Fatalf("after a phantom message: diffs %q, err %v; want one difference", diffs, err)
	}
	os.RemoveAll(filepath.Join(s.state, DirName))
	diffs, _ = CheckAgainstRebuild(s.cfg)
	if len(diffs) != 1 || !strings.Contains(diffs[0], "missing") {
		t.Fatalf("without an index: diffs %q; want the unit missing", diffs)
	}
}

// TestLargeMergeRunsInBackground: a merge above the budget does not run inside
// Sync (the indexer's flush goes on while it is held back); once it finishes the
// segments are merged and the index still equals a rebuild.
func TestLargeMergeRunsInBackground(t *testing.T) {
	s := newStore(t)
	p := s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", "alpha0"))
	dir := filepath.Join(s.state, DirName)
	x, err := Open(Options{Dir: dir, MergeBudget: 1, MaxSegments: 3})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	x.mergeGate = gate
	g, err := indexer.NewGroup(s.cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	g.AddConsumer(x)
	if err := g.Load(); err != nil {
		t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("alpha%d", i)))
		if err := g.Apply(batch(p)); err != nil { // returns although the merge is held back
			t.Fatal(err)
		}
	}
	if m := x.Stats().Merges; m != 0 {
		t.Fatalf("merges before the gate opened = %d, want 0 (a large merge ran inside Sync)", m)
	}
	if n := x.Segments(); n <= 3 {
		t.Fatalf("segments while the merge is held = %d, want more than 3", n)
	}
	close(gate)
	deadline := time.Now().Add(10 * time.Second)
	for x.Stats().Merges == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background merge never finished")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 8; i++ {
		if got := hitNames(s.search(fmt.Sprintf("alpha%d", i), Filter{})); got != uuid1+".jsonl" {
			t.Errorf("search alpha%d = %q, want a.jsonl", i, got)
		}
	}
	x.Close()
	diffs, err := CheckAgainstRebuild(s.cfg)
	if err != nil || len(diffs) > 0 {
		t.Fatalf("CheckAgainstRebuild = %v, %v; want no differences", diffs, err)
	}
}

// TestFailedCommitKeepsMessages: a commit whose manifest cannot be written (a full
// disk, here a directory in its place) loses nothing: the messages it had written
// to a segment are committed by the next Sync, and the index equals a rebuild.
func TestFailedCommitKeepsMessages(t *testing.T) {
	s := newStore(t)
	a := s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:01Z", "user", "alpha"))
	x, g := s.index(Options{})
	defer x.Close()
	man := filepath.Join(s.state, DirName, ManifestName)
	saved, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(man)
	if err := os.MkdirAll(filepath.Join(man, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:02Z", "user", "beta"))
	if err := g.Apply(batch(a)); err == nil {
		t.Fatal("the update succeeded with a directory in the manifest's place")
	}
	os.RemoveAll(man)
	if err := os.WriteFile(man, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:03Z", "user", "gamma"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := g.Apply(batch(a))
		if err == nil && hitNames(s.search("gamma", Filter{})) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the update after the manifest came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range []string{"alpha", "beta", "gamma"} {
		if got, want := hitNames(s.search(w, Filter{})), uuid1+".jsonl"; got != want {
			t.Errorf("%s → %q, want %q", w, got, want)
		}
	}
	x.Close()
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) != 0 {
		t.Fatalf("after the failed commit: diffs %q, err %v; want none", diffs, err)
	}
}
