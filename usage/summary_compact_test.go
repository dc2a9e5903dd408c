package usage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// longProject's S rows are longer than the buffer the compaction reads the
// base through.
var longProject = "/" + strings.Repeat("long\\", 14<<10)

// The streamed compaction writes, byte for byte, the base that parsing every S
// row and rendering the file in memory wrote: batches that change, add and take
// away sessions (escaped fields among them) folded into the base.
func TestCompactSummaryStreamedEqualsRendered(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 12; round++ {
		dir := t.TempDir()
		l := newLedger(dir)
		var all []*unitRec
		for i := 0; i < 1+rng.IntN(400); i++ {
			r := (&unitRec{Unit: fmt.Sprint(i), unitBody: &unitBody{}}).
				filedAs([]string{"claude", "codex"}[rng.IntN(2)], []string{sid(rng.IntN(60)), "s\\x", "s\tt", "s\nn"}[rng.IntN(4)], "main", []string{"/a", "/b\tc", `/d\e`, longProject}[rng.IntN(4)])
			l.units.put(r)
			l.file(r, 1)
			all = append(all, r)
		}
		credit := func() {
			for k := 0; k < 1+rng.IntN(300); k++ {
				r := all[rng.IntN(len(all))]
				l.file(r, -1)
				r.acc.credit(int32(1000+rng.IntN(500)), []string{"opus", "gpt-5", "m\tx"}[rng.IntN(3)], Tokens{int64(rng.IntN(9)), 1, 0, 0}, 1, nil)
				l.file(r, 1)
			}
		}
		credit()
		l.settleGroups(false)
		data := l.renderSummary()
		clear(l.dirtyRows)
		for b := 0; b < rng.IntN(4); b++ {
			credit()
			// Some sessions leave: their rows go to zero in the batch.
			for k := 0; k < rng.IntN(20); k++ {
				r := all[rng.IntN(len(all))]
				if l.units.get(r.source(), r.Unit) == r {
					l.file(r, -1)
					l.units.del(r.source(), r.Unit)
				}
			}
			var batch []byte
			for _, r := range l.settleGroups(true) {
				batch = appendSession(batch, &r)
			}
			for k := range l.dirtyRows {
				batch = appendRow(batch, l.rowKeyOf(k), l.rows.get(k))
			}
			clear(l.dirtyRows)
			data = append(append(data, batch...), 'C', '\n')
		}
		s, p, err := parseSummary(data, Want{NoRows: true})
		if err != nil || !p.clean {
			t.Fatalf("round %d: %v %v", round, err, p.clean)
		}
		want := l.renderWith(s.Sessions)
		l.summaryFile.path = filepath.Join(dir, SummaryName)
		if err := os.WriteFile(l.summaryFile.path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := l.compactSummary(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(l.summaryFile.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: the streamed compaction wrote\n%q\nnot\n%q", round, got, want)
		}
		if !l.summaryMatches() {
			t.Fatalf("round %d: the compacted summary is not the ledger's totals", round)
		}
	}
}

// A summary with a torn batch is not compacted from itself but rewritten from
// the units.
func TestCompactSummaryTornBatchRewrites(t *testing.T) {
	dir := t.TempDir()
	l := newLedger(dir)
	r := (&unitRec{Unit: "u", unitBody: &unitBody{}}).filedAs("claude", sid(1), "main", "/a")
	l.units.put(r)
	r.acc.credit(1000, "opus", Tokens{1, 2, 3, 4}, 1, nil)
	l.file(r, 1)
	l.settleGroups(false)
	data := append(l.renderSummary(), "S\tbogus"...)
	l.summaryFile.path = filepath.Join(dir, SummaryName)
	if err := os.WriteFile(l.summaryFile.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.compactSummary(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(l.summaryFile.path); !bytes.Equal(got, l.renderSummary()) {
		t.Fatalf("summary after compacting a torn one:\n%q", got)
	}
}

// A base S row that is not one (found while the base is streamed, before
// anything is written) makes the summary be rewritten from the units.
func TestCompactSummaryBadBaseRowRewrites(t *testing.T) {
	dir := t.TempDir()
	l := newLedger(dir)
	for i, p := range []string{"/a", longProject} {
		r := (&unitRec{Unit: fmt.Sprint(i), unitBody: &unitBody{}}).filedAs("claude", sid(i), "main", p)
		l.units.put(r)
		r.acc.credit(1000, "opus", Tokens{1, 2, 3, 4}, 1, nil)
		l.file(r, 1)
	}
	l.settleGroups(false)
	want := l.renderSummary()
	for _, bad := range []string{"\nX\t", "\nS\tx\t"} {
		i := bytes.LastIndex(want, []byte("\nS\t"))
		if i < 0 {
			t.Fatal("no S row")
		}
		data := append(append(append([]byte{}, want[:i]...), bad...), want[i+3:]...)
		l.summaryFile.path = filepath.Join(dir, SummaryName)
		if err := os.WriteFile(l.summaryFile.path, append(data, 'C', '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := l.compactSummary(); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(l.summaryFile.path); !bytes.Equal(got, want) {
			t.Fatalf("%q: summary after compacting a bad base:\n%.300q", bad, got)
		}
	}
}
