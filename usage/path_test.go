package usage

import (
	"path/filepath"
	"testing"
	"unsafe"
)

// A record keeps its unit's path as the interned root plus its Unit; a path that
// does not end in the Unit is kept whole. Either way the path written out and
// compared is the one given.
func TestRecordPathRoundTrip(t *testing.T) {
	l := newLedger(t.TempDir())
	cases := []struct{ unit, path string }{
		{"-w-p/a.jsonl", "/home/u/.claude/projects/-w-p/a.jsonl"},
		{"-w-p/b.jsonl", "/home/u/.claude/projects/-w-p/b.jsonl"},
		{"2026/03/01/s.jsonl", "/r/2026/03/01/s.jsonl"},
		{"a.jsonl", "/elsewhere/b.jsonl"},       // does not end in the unit
		{"p/a.jsonl", "/rootp/a.jsonl"},         // ends in it, but not at a separator
		{"a.jsonl", "a.jsonl"},                  // nothing before it
		{"", "/r/x"},                            // no unit
		{"-w-p/a.jsonl", "/other/-w-p/a.jsonl"}, // another root
	}
	var recs []*unitRec
	for _, c := range cases {
		r := &unitRec{Unit: c.unit}
		r.setPath(c.path)
		l.canonFiling(r)
		if got := r.path(); got != c.path {
			t.Errorf("unit %q, path %q: path() = %q", c.unit, c.path, got)
		}
		if !r.pathIs(c.path) || r.pathIs(c.path+"x") || r.pathIs(filepath.Dir(c.path)) {
			t.Errorf("unit %q, path %q: pathIs is wrong", c.unit, c.path)
		}
		w := toWire(r, &unitBody{})
		back, err := fromWire(w, l.intern)
		if err != nil {
			t.Fatal(err)
		}
		if back.path() != c.path {
			t.Errorf("unit %q: the path read back is %q, not %q", c.unit, back.path(), c.path)
		}
		recs = append(recs, r)
	}
	// Units of one root share its string.
	if !recs[0].pathWhole && recs[0].pathDir() != "/home/u/.claude/projects/" {
		t.Errorf("pathDir = %q", recs[0].pathDir())
	}
	if recs[3].pathWhole != true || recs[4].pathWhole != true || recs[0].pathWhole {
		t.Errorf("pathWhole: %v %v %v", recs[0].pathWhole, recs[3].pathWhole, recs[4].pathWhole)
	}
	if recs[0].filed != recs[1].filed || unsafeData(recs[0].pathDir()) != unsafeData(recs[1].pathDir()) {
		t.Error("the two units of one root hold two copies of it")
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }

// filedAs makes src r's source and files r under session sid, type typ and
// project proj (r.Unit set), for tests that make records by hand.
func (r *unitRec) filedAs(src, sid, typ, proj string) *unitRec {
	r.setSource(src)
	r.setSession(sid)
	r.setFiling(typ, proj)
	return r
}
