package usage

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestLinesPreparedMatchesLine: a unit's lines handed over prepared (parsed on a
// read worker, credited under the lock) leave the same ledger files, byte for
// byte, as the same lines handed over by Line one at a time, for every line
// layout (Codex's running totals and llxprt's model carried from line to line,
// Claude's streamed copies deduplicated), each line given whole or as its members
// scanned once (indexer.Members).
func TestLinesPreparedMatchesLine(t *testing.T) {
	units := genLineUnits(t)
	// The units file is written in key order; the summary's appended batches in
	// map order, so it is compared as what it reads back as.
	build := func(prepared, members bool) (unitsFile []byte, sum *Summary, recs map[ukey]unitRec) {
		state := t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		var refs []indexer.SessionRef
		for i, u := range units {
			u.Hand(l, prepared, members)
			l.Done(u.Ref, int64(len(u.Lines)), "fp")
			refs = append(refs, indexer.SessionRef{UnitRef: u.Ref, ID: u.Ref.Unit, Type: "main", Project: "/p/" + u.Ref.Source})
			if i%15 == 14 {
				if err := l.Sync(refs); err != nil {
					t.Fatal(err)
				}
				refs = nil
			}
		}
		if err := l.Sync(refs); err != nil {
			t.Fatal(err)
		}
		unitsFile, err = os.ReadFile(filepath.Join(state, DirName, UnitsName))
		if err != nil {
			t.Fatal(err)
		}
		sum = readSummary(t, state)
		// What the ledger holds of each unit beside the files: the parser's
		// state and the dedupe window go on with the next append.
		recs = map[ukey]unitRec{}
		for r := range l.units.all() {
			b, err := l.peekBody(r)
			if err != nil {
				t.Fatal(err)
			}
			recs[ukey{r.source(), r.Unit}] = unitRec{Off: r.Off, unitBody: &unitBody{St: b.St, fed: b.fed, reading: b.reading, acc: b.acc}}
		}
		return unitsFile, sum, recs
	}
	wantUnits, wantSum, wantRecs := build(false, false)
	for _, members := range []bool{false, true} {
		gotUnits, gotSum, gotRecs := build(true, members)
		t.Logf("members=%v", members)
		if !bytes.Equal(gotUnits, wantUnits) {
			t.Errorf("%s differs (%d bytes prepared, %d by Line)", UnitsName, len(gotUnits), len(wantUnits))
		}
		if !reflect.DeepEqual(gotSum, wantSum) {
			t.Errorf("summary differs:\n%d session rows, %d rows prepared\n%d, %d by Line", len(gotSum.Sessions), len(gotSum.Rows), len(wantSum.Sessions), len(wantSum.Rows))
		}
		if len(gotRecs) != len(wantRecs) {
			t.Errorf("%d units prepared, want %d", len(gotRecs), len(wantRecs))
		}
		for k, w := range wantRecs {
			if g := gotRecs[k]; !reflect.DeepEqual(g, w) {
				t.Errorf("unit %v prepared = %+v, want %+v", k, g, w)
			}
		}
	}
}

// unitLines is one generated transcript's JSON lines, as a unit.
type unitLines = gen.LineUnit

// genLineUnits generates a small store of every line layout (3 projects, 10
// sessions each, with subagents) and returns its transcripts' lines, source by source.
func genLineUnits(t *testing.T) []unitLines {
	t.Helper()
	units, err := gen.LineUnits(t.TempDir(), gen.Spec{Projects: 3, Sessions: 10, Lines: 30, LineSize: 400, Subagents: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	return units
}
