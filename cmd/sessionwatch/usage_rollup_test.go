package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/usage"
)

// `usage daily|weekly|monthly --all` answered from the summary's per-day rollup
// prints what the quarter-hour rows print, byte for byte, tables and --json,
// with every filter; a summary without the rollup (the previous version) reads
// the rows; reindex --check reports a rollup that is not what the rows add up to.
func TestUsageRollupEqualsRows(t *testing.T) {
	e := newEnv(t)
	root2 := filepath.Join(e.home, ".wave2", "projects")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"settle":"20ms","max_settle":"200ms",
	 "janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"wave","layout":"wave","root":%q},{"name":"w2","layout":"wave","root":%q}]}`,
		e.state, filepath.Join(e.home, "archive"), e.root, root2)
	models := []string{"claude-sonnet-4-5", "claude-opus-4-5-20251101", "gpt-5", "no-price"}
	for i := 0; i < 24; i++ {
		root := e.root
		if i%3 == 0 {
			root = root2
		}
		dir := filepath.Join(root, fmt.Sprintf("-w-p%d", i%4))
		os.MkdirAll(dir, 0o700)
		var b strings.Builder
		b.WriteString(header(fmt.Sprintf("/w/p%d", i%4)))
		for j := 0; j < 6; j++ {
			// Days from late February into March, at every hour, so weeks and
			// months are crossed and so is midnight in any zone.
			ts := fmt.Sprintf("2026-%02d-%02dT%02d:%02d:00Z", 2+(i+j)%2, 20-(i*j)%19, (i*7+j*5)%24, (j*15)%60)
			b.WriteString(waveAssistant(ts, models[(i+j)%len(models)], 1000*i+j, 37*j+i))
		}
		appendTo(t, filepath.Join(dir, fmt.Sprintf("%08d-1111-4111-8111-111111111111.jsonl", i)), b.String())
	}
	runs := [][]string{
		{"daily", "--all"}, {"daily", "--all", "--json"}, {"weekly", "--all"}, {"weekly", "--all", "--json"},
		{"monthly", "--all"}, {"monthly", "--all", "--json", "--by", "model"}, {"daily", "--all", "--by", "model"},
		{"daily", "--all", "--source", "w2", "--json"}, {"weekly", "--all", "--source", "wave", "--by", "model"},
		{"daily", "--all", "--since", "2026-02-25", "--until", "2026-03-05"}, {"daily", "--all", "--json", "--since", "20260301"},
		{"monthly", "--all", "--until", "2026-02-28", "--json"}, {"daily", "--all", "--utc"}, {"weekly", "--all", "--utc", "--json", "--by", "model"},
	}
	print := func() []string {
		t.Helper()
		var outs []string
		for _, args := range runs {
			out, errOut, code := e.cli(append([]string{"usage"}, args...)...)
			if code != 0 {
				t.Fatalf("usage %v = %d: %s", args, code, errOut)
			}
			outs = append(outs, out)
		}
		return outs
	}
	print() // the index pass; a second settles what it wrote
	print()
	path := filepath.Join(e.state, usage.DirName, usage.SummaryName)
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("\nD\t")) || !bytes.HasPrefix(data, []byte(`{"version":3,`)) {
		t.Fatalf("no D rows in the summary (%v):\n%.300s", err, data)
	}
	fromDays := print()
	if !strings.Contains(fromDays[1], `"totalTokens"`) || strings.Count(fromDays[0], "\n") < 10 {
		t.Fatalf("usage daily printed too little:\n%s\n%s", fromDays[0], fromDays[1])
	}

	// The same summary as the previous version wrote it: no D rows, so the B rows
	// answer. The writer lock is held, as a daemon holds it: usage reads the
	// summary and runs no pass (which would rewrite it).
	w, err := indexer.AcquireWriter(context.Background(), e.state)
	if err != nil {
		t.Fatal(err)
	}
	if again := print(); strings.Join(again, "") != strings.Join(fromDays, "") {
		t.Fatalf("usage with the writer held printed otherwise")
	}
	os.WriteFile(path, withoutDays(t, data), 0o600)
	fromRows := print()
	if got, _ := os.ReadFile(path); !bytes.Equal(got, withoutDays(t, data)) {
		t.Fatalf("usage rewrote the summary: it did not read the previous version's")
	}
	w.Release()
	for i := range runs {
		if fromDays[i] != fromRows[i] {
			t.Errorf("usage %v from the rollup:\n%s\nfrom the quarter-hour rows:\n%s", runs[i], fromDays[i], fromRows[i])
		}
	}

	// reindex --check reports a D row that is not what the B rows add up to, and
	// a summary without them; reindex rebuilds it.
	for _, c := range []struct {
		name string
		data []byte
	}{{"no D rows", withoutDays(t, data)}, {"a D row changed", changeDayRow(data)}} {
		os.WriteFile(path, c.data, 0o600)
		if out, errOut, code := e.cli("reindex", "--check"); code != 1 || !strings.Contains(out, usage.SummaryName) {
			t.Errorf("%s: reindex --check = %d %q %q, want 1 naming the summary", c.name, code, out, errOut)
		}
		if out, errOut, code := e.cli("reindex"); code != 0 {
			t.Fatalf("%s: reindex = %d %q %q", c.name, code, out, errOut)
		}
		if got, _ := os.ReadFile(path); !bytes.Contains(got, []byte("\nD\t")) || bytes.Equal(got, c.data) {
			t.Errorf("%s: the summary was not rewritten:\n%.300s", c.name, got)
		}
		for i, out := range print() {
			if out != fromDays[i] {
				t.Errorf("%s: after reindex, usage %v:\n%s\nwant\n%s", c.name, runs[i], out, fromDays[i])
			}
		}
	}
}

// changeDayRow is data with one digit of the first D row's input tokens changed.
func changeDayRow(data []byte) []byte {
	data = bytes.Clone(data)
	i := bytes.Index(data, []byte("\nD\t"))
	line := data[i+1 : i+1+bytes.IndexByte(data[i+1:], '\n')]
	in := bytes.Split(line, []byte("\t"))[7] // shares data's bytes
	in[len(in)-1] = '0' + (in[len(in)-1]-'0'+1)%10
	return data
}

// withoutDays is a summary as the previous version (2) wrote it: no D rows.
func withoutDays(t *testing.T, data []byte) []byte {
	t.Helper()
	nl := bytes.IndexByte(data, '\n')
	var h struct{ Days, Sessions, Rows int64 }
	if err := json.Unmarshal(data[:nl], &h); err != nil {
		t.Fatal(err)
	}
	out := []byte(fmt.Sprintf(`{"version":2,"generator":"sessionwatch","sessions":%d,"rows":%d}`+"\n", h.Sessions, h.Rows))
	for _, l := range bytes.SplitAfter(data[nl+1:], []byte("\n")) {
		if len(l) > 0 && l[0] != 'D' {
			out = append(out, l...)
		}
	}
	return out
}
