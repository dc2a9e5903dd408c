package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/usage"
)

// A reindex of several sources, then one of a single source over the ledger it
// left: after each plain reindex
// the ledger is settled (stamped, EndColdBuild) and --check finds nothing.
func TestReindexEndColdBuildSettlesTheLedger(t *testing.T) {
	e := newEnv(t)
	roots := []string{filepath.Join(e.home, "w1"), filepath.Join(e.home, "w2"), filepath.Join(e.home, "w3")}
	var files []string
	for i, r := range roots {
		for p := 0; p < 3; p++ {
			work := fmt.Sprintf("/w%d/p%d", i, p)
			d := filepath.Join(r, indexer.EncodeProject(work))
			os.MkdirAll(d, 0o700)
			for s := 0; s < 8; s++ {
				f := filepath.Join(d, fmt.Sprintf("%08x-1111-4111-8111-%012x.jsonl", i*100+p*10+s, s))
				appendTo(t, f, header(work)+waveAssistant("2026-03-01T10:00:00Z", "claude-sonnet-4-5", 100+s, 1)+
					waveAssistant(fmt.Sprintf("2026-03-0%dT11:00:00Z", 1+s%5), "gpt-5", 7, 3))
				files = append(files, f)
			}
		}
	}
	e.writeConfig(`{"state_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[{"name":"w1","layout":"wave","root":%q},{"name":"w2","layout":"wave","root":%q},{"name":"w3","layout":"wave","root":%q}]}`, e.state, roots[0], roots[1], roots[2])
	check := func(what string) {
		t.Helper()
		if !usage.Stamped(e.state) {
			t.Errorf("%s: the ledger is not stamped", what)
		}
		if out, errs, code := e.cli("reindex", "--check"); code != 0 {
			t.Errorf("%s: check = %d\n%s%s", what, code, out, errs)
		}
	}
	if out, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d %s %s", code, out, errs)
	}
	check("after reindex")
	if out, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d %s %s", code, out, errs)
	}
	check("after a second reindex")
	for _, f := range files[24:] {
		appendTo(t, f, waveAssistant("2026-03-04T12:00:00Z", "gpt-5", 5, 5))
	}

	if out, errs, code := e.cli("reindex", "--source", "w2"); code != 0 {
		t.Fatalf("reindex --source = %d %s %s", code, out, errs)
	}
	if !usage.Stamped(e.state) {
		t.Errorf("after reindex --source w2: the ledger is not stamped")
	}
	if out, errs, code := e.cli("reindex", "--check", "--source", "w2"); code != 0 {
		t.Errorf("after reindex --source w2: check --source w2 = %d\n%s%s", code, out, errs)
	}
	if out, errs, code := e.cli("reindex", "--source", "w3"); code != 0 {
		t.Fatalf("reindex --source = %d %s %s", code, out, errs)
	}
	check("after reindex --source w2 and w3")
}

// A session file removed from the store, then a plain reindex (no daemon):
// the search index must no longer hold it.
func TestReindexForgetsARemovedFileInSearch(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/w/p")
	var files []string
	for s := 0; s < 4; s++ {
		f := filepath.Join(dir, fmt.Sprintf("%08x-1111-4111-8111-%012x.jsonl", s, s))
		appendTo(t, f, header("/w/p")+waveAssistant("2026-03-01T10:00:00Z", "claude-sonnet-4-5", 100+s, 1))
		files = append(files, f)
	}
	for _, args := range [][]string{{"reindex"}, {"reindex", "--source", "wave"}} {
		if out, errs, code := e.cli("reindex"); code != 0 {
			t.Fatalf("reindex = %d %s %s", code, out, errs)
		}
		os.Remove(files[0])
		files = files[1:]
		if out, errs, code := e.cli(args...); code != 0 {
			t.Fatalf("%v = %d %s %s", args, code, out, errs)
		}
		if out, errs, code := e.cli("reindex", "--check"); code != 0 {
			t.Errorf("after a file removed and %v: check = %d\n%s%s", args, code, out, errs)
		}
	}
}
