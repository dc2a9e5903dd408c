package usage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

const sessA = "11111111-1111-4111-8111-111111111111"

type fixture struct {
	t           *testing.T
	root, state string
	layout      string
}

func newFixture(t *testing.T, layout string) *fixture {
	return &fixture{t: t, root: t.TempDir(), state: t.TempDir(), layout: layout}
}

func (f *fixture) cfg() *config.Config {
	c := config.Default()
	c.StateDir = f.state
	s := config.SourceDefaults(f.layout)
	s.Name, s.Root, s.Enabled, s.NativeIndex = f.layout, f.root, true, false
	c.Sources = []config.Source{s}
	return c
}

// pass runs one index pass (as the daemon after a restart would: catalogs loaded,
// ledger opened) and returns the ledger.
func (f *fixture) pass() *Ledger {
	f.t.Helper()
	g, err := indexer.NewGroup(f.cfg(), nil, false)
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := Open(f.state)
	if err != nil {
		f.t.Fatal(err)
	}
	g.AddConsumer(l)
	if err := g.Load(); err != nil {
		f.t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		f.t.Fatal(err)
	}
	return l
}

// check compares the ledger with a rebuild; it returns the differences.
func (f *fixture) check() []string {
	f.t.Helper()
	g, err := indexer.NewGroup(f.cfg(), nil, true)
	if err != nil {
		f.t.Fatal(err)
	}
	rb, err := NewRebuild(f.state)
	if err != nil {
		f.t.Fatal(err)
	}
	g.AddConsumer(rb)
	if err := g.ReconcileAll(); err != nil {
		f.t.Fatal(err)
	}
	d, err := Compare(f.state, rb, map[string]bool{f.layout: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) total() Tokens {
	f.t.Helper()
	s, err := ReadSummary(f.state, Want{})
	if err != nil {
		f.t.Fatal(err)
	}
	var t Tokens
	for _, r := range s.Rows {
		t.Add(r.T)
	}
	var ts Tokens
	for _, r := range s.Sessions {
		ts.Add(r.T)
	}
	if ts != t {
		f.t.Errorf("session rows add up to %+v, quarter rows to %+v", ts, t)
	}
	return t
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(text); err != nil {
		t.Fatal(err)
	}
	fh.Close()
}

func claudeUser(ts string) string {
	return `{"type":"user","cwd":"/w/p","sessionId":"` + sessA + `","timestamp":"` + ts + `","uuid":"u1","message":{"role":"user","content":"hello"}}` + "\n"
}

func TestLedgerFollowsAppendsAcrossRestarts(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+
		claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 10, 1, 100, 1000, "")+"\n"+
		claudeLine("2026-03-01T10:00:02Z", "m1", "r1", "opus", 10, 5, 100, 1000, "")+"\n")
	f.pass()
	if got, want := f.total(), (Tokens{10, 5, 100, 1000}); got != want {
		t.Fatalf("after the first pass the ledger holds %+v, want %+v (streamed copies once)", got, want)
	}
	// A later copy of the same message, then a new message, read by a restarted pass.
	appendTo(t, file, claudeLine("2026-03-01T10:00:03Z", "m1", "r1", "opus", 10, 7, 100, 1000, "")+"\n"+
		claudeLine("2026-03-02T00:10:00Z", "m2", "r2", "sonnet", 1, 2, 3, 4, "")+"\n")
	f.pass()
	if got, want := f.total(), (Tokens{11, 9, 103, 1004}); got != want {
		t.Fatalf("after the restart the ledger holds %+v, want %+v", got, want)
	}
	s, _ := ReadSummary(f.state, Want{})
	if len(s.Sessions) != 2 || s.Sessions[0].Session != sessA || s.Sessions[0].Project != "/w/p" {
		t.Errorf("session rows %+v, want two models of %s in /w/p", s.Sessions, sessA)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
	// A pass over an unchanged store writes nothing.
	before, _ := os.Stat(filepath.Join(f.state, DirName, SummaryName))
	f.pass()
	after, _ := os.Stat(filepath.Join(f.state, DirName, SummaryName))
	if !before.ModTime().Equal(after.ModTime()) {
		t.Errorf("an idle pass rewrote the summary")
	}
}

// A crash after the ledger synced but before the catalog was written: the next
// pass hands the same lines again, and they are not counted twice.
func TestLedgerAheadOfCatalogCountsOnce(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 1, 1, 0, 0, "")+"\n")
	f.pass()
	cats, _ := filepath.Glob(filepath.Join(f.state, "index", "*", "*", indexer.CatalogName))
	if len(cats) != 1 {
		t.Fatalf("catalogs %v, want one", cats)
	}
	older, _ := os.ReadFile(cats[0])
	appendTo(t, file, claudeLine("2026-03-01T10:05:00Z", "m2", "r2", "opus", 2, 2, 0, 0, "")+"\n")
	f.pass()
	os.WriteFile(cats[0], older, 0o600) // the catalog write never happened
	f.pass()
	if got, want := f.total(), (Tokens{3, 3, 0, 0}); got != want {
		t.Errorf("ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

// A crash between a shard write and the summary write: Open rewrites the summary.
func TestLedgerStaleSummaryRepairedOnOpen(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 1, 1, 0, 0, "")+"\n")
	f.pass()
	summary := filepath.Join(f.state, DirName, SummaryName)
	old, _ := os.ReadFile(summary)
	appendTo(t, file, claudeLine("2026-03-01T10:05:00Z", "m2", "r2", "opus", 2, 2, 0, 0, "")+"\n")
	f.pass()
	os.WriteFile(summary, old, 0o600)
	if d := f.check(); len(d) != 1 || !strings.Contains(d[0], SummaryName) {
		t.Fatalf("check of a stale summary = %v, want it named", d)
	}
	if _, err := Open(f.state); err != nil {
		t.Fatal(err)
	}
	if got, want := f.total(), (Tokens{3, 3, 0, 0}); got != want {
		t.Errorf("after Open the summary holds %+v, want %+v", got, want)
	}
}

func TestLedgerKeepsUsageOfRemovedSessions(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	content := claudeUser("2026-03-01T10:00:00Z") + claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 4, 4, 0, 0, "") + "\n"
	appendTo(t, file, content)
	f.pass()
	os.Remove(file)
	f.pass()
	if got, want := f.total(), (Tokens{4, 4, 0, 0}); got != want {
		t.Fatalf("after the session was deleted the ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild (files + retired part): %v", d)
	}
	// Restored: counted from its file again, not twice.
	appendTo(t, file, content)
	f.pass()
	if got, want := f.total(), (Tokens{4, 4, 0, 0}); got != want {
		t.Errorf("after the session came back the ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

func TestLedgerRecountsRewrittenFile(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 4, 4, 0, 0, "")+"\n")
	f.pass()
	os.WriteFile(file, []byte(claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m9", "r9", "x", 1, 0, 0, 0, "")+"\n"), 0o600) // shorter
	f.pass()
	if got, want := f.total(), (Tokens{1, 0, 0, 0}); got != want {
		t.Errorf("after a rewrite the ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}

func TestLedgerCheckFindsADifference(t *testing.T) {
	f := newFixture(t, "claude")
	file := filepath.Join(f.root, "-w-p", sessA+".jsonl")
	appendTo(t, file, claudeUser("2026-03-01T10:00:00Z")+claudeLine("2026-03-01T10:00:01Z", "m1", "r1", "opus", 4, 4, 0, 0, "")+"\n")
	f.pass()
	shards, _ := filepath.Glob(filepath.Join(f.state, DirName, UnitsName))
	tampered := 0
	for _, p := range shards {
		data, _ := os.ReadFile(p)
		if i := strings.LastIndex(string(data), `"opus",4,4`); i >= 0 { // the bucket (after the window)
			os.WriteFile(p, []byte(string(data[:i])+`"opus",5,4`+string(data[i+len(`"opus",4,4`):])), 0o600)
			tampered++
		}
	}
	if tampered != 1 {
		t.Fatalf("tampered with %d unit files, want 1", tampered)
	}
	if d := f.check(); len(d) == 0 {
		t.Errorf("check found no difference in a tampered ledger")
	}
}

func TestLedgerMogziCountsIncreases(t *testing.T) {
	f := newFixture(t, "mogzi")
	dir := filepath.Join(f.root, sessA)
	os.MkdirAll(dir, 0o700)
	write := func(in, out int, at string) {
		doc := `{"id":"` + sessA + `","name":"n","createdAt":"2026-03-01T09:00:00Z","lastModifiedAt":"` + at + `","history":[],"initialPrompt":"p","usageMetrics":{"inputTokens":` + itoa(in) + `,"outputTokens":` + itoa(out) + `,"cacheReadTokens":0,"cacheWriteTokens":0,"requestCount":1,"lastUpdated":"` + at + `"}}`
		tmp := filepath.Join(dir, "session.tmp")
		os.WriteFile(tmp, []byte(doc), 0o600)
		os.Rename(tmp, filepath.Join(dir, "session.json"))
	}
	write(100, 10, "2026-03-01T23:50:00Z")
	f.pass()
	write(150, 30, "2026-03-02T00:20:00Z")
	f.pass()
	s, _ := ReadSummary(f.state, Want{})
	if len(s.Rows) != 2 || s.Rows[0].T != (Tokens{Input: 100, Output: 10}) || s.Rows[1].T != (Tokens{Input: 50, Output: 20}) {
		t.Fatalf("mogzi rows %+v, want the increases 100/10 then 50/20 on two days", s.Rows)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
	// A total that went down (the session reset) counts anew; the earlier spend stays.
	write(5, 1, "2026-03-02T01:00:00Z")
	f.pass()
	if got, want := f.total(), (Tokens{Input: 155, Output: 31}); got != want {
		t.Errorf("after a reset the ledger holds %+v, want %+v", got, want)
	}
	if d := f.check(); len(d) != 0 {
		t.Errorf("ledger differs from a rebuild: %v", d)
	}
}
