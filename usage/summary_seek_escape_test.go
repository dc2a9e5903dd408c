package usage

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// The S section is sorted by the session field as written (escaped), which is
// how both searches compare it: a session id holding a tab (or \n, \r) escaped
// sorts elsewhere than raw, and must not hide its own rows or its neighbours'.
func TestSeekFindsSessionsWithEscapedIDs(t *testing.T) {
	defer func(w, d int64) { seekWindow, seekDone = w, d }(seekWindow, seekDone)
	seekWindow, seekDone = 16, 64
	l := newLedger(t.TempDir())
	odd := "s05\tx"
	for i := 0; i < 200; i++ {
		s := fmt.Sprintf("s%03d", i)
		if i == 7 {
			s = odd
		}
		r := (&unitRec{Unit: fmt.Sprint(i), unitBody: &unitBody{}}).filedAs("claude", s, "main", "/a")
		l.units.put(r)
		l.file(r, 1)
		r.acc.credit(1000, "opus", Tokens{5, 1, 0, 0}, 1, l.observe(r))
	}
	l.settleGroups(false)
	data := append(l.renderSummary(), 'C', '\n')
	t.Logf("s050 rows %d odd rows %d", bytes.Count(data, []byte("S\ts050\t")), bytes.Count(data, []byte("S\ts05\\tx\t")))
	for _, s := range []string{odd, "s055", "s050"} {
		w := Want{Session: s, NoRows: true}
		all, err := ParseSummary(data, Want{NoRows: true})
		if err != nil {
			t.Fatal(err)
		}
		want := &Summary{}
		for _, r := range all.Sessions {
			if r.Session == s {
				want.Sessions = append(want.Sessions, r)
			}
		}
		mem, err := ParseSummary(data, w)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(mem.Sessions, want.Sessions) {
			t.Errorf("session %q: ParseSummary(Want{Session}) found %d S rows, the whole parse %d", s, len(mem.Sessions), len(want.Sessions))
		}
		got, ok := readSummaryParts(bytes.NewReader(data), int64(len(data)), w)
		if !ok {
			t.Fatalf("%q: gave up", s)
		}
		t.Logf("%q: got %d want %d (file %d bytes)", s, len(got.Sessions), len(want.Sessions), len(data))
		if !reflect.DeepEqual(got.Sessions, want.Sessions) {
			t.Errorf("session %q: readSummaryParts found %d S rows, the whole parse %d", s, len(got.Sessions), len(want.Sessions))
		}
	}
}

func TestReviewDump(t *testing.T) {
	l := newLedger(t.TempDir())
	for i := 0; i < 5; i++ {
		s := fmt.Sprintf("s%03d", i)
		if i == 2 {
			s = "s00\tx"
		}
		r := (&unitRec{Unit: fmt.Sprint(i), unitBody: &unitBody{}}).filedAs("claude", s, "main", "/a")
		l.units.put(r)
		l.file(r, 1)
		r.acc.credit(1000, "opus", Tokens{5, 1, 0, 0}, 1, l.observe(r))
	}
	l.settleGroups(false)
	t.Logf("%q", l.renderSummary())
}
