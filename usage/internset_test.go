package usage

import (
	"fmt"
	"slices"
	"testing"
)

// TestInternSets: a string or filing met again is the one met first, through
// the sets' growth; different ones stay different.
func TestInternSets(t *testing.T) {
	var ss strSet
	var fs filingSet
	first := map[string]string{}
	firstF := map[filing]*filing{}
	for round := range 3 {
		for i := range 3000 {
			s := fmt.Sprint("/p/", i%1000, "/", i%7)
			got := ss.intern(s)
			if got != s {
				t.Fatalf("intern(%q) = %q", s, got)
			}
			if p, ok := first[s]; ok && unsafeData(p) != unsafeData(got) {
				t.Fatalf("round %d: %q interned twice", round, s)
			}
			first[s] = got
			f := &filing{source: "claude", root: "/r/", typ: fmt.Sprint(i % 3), project: s}
			c, added := fs.canon(f)
			if *c != *f || added != (firstF[*f] == nil) || (!added && c != firstF[*f]) {
				t.Fatalf("round %d: canon(%+v) = %+v, added %v", round, *f, *c, added)
			}
			firstF[*f] = c
		}
	}
	var cs colSet
	var cols []rowCols
	for round := range 2 {
		for i := range 2000 {
			c := rowCols{"claude", fmt.Sprint("/p/", i%700), fmt.Sprint("m", i%3)}
			n, ok := cs.get(cols, c)
			if !ok {
				if round > 0 || slices.Contains(cols, c) {
					t.Fatalf("round %d: %+v not numbered", round, c)
				}
				cols = append(cols, c)
				cs.add(cols)
				continue
			}
			if cols[n] != c {
				t.Fatalf("%+v numbered %d, which is %+v", c, n, cols[n])
			}
		}
	}
	if ss.n != len(first) || fs.n != len(firstF) || ss.intern("") != "" {
		t.Fatalf("%d strings, %d filings; want %d, %d", ss.n, fs.n, len(first), len(firstF))
	}
}
