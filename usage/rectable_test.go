package usage

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRecTableAgainstMap puts, gets and deletes records at random in tables of
// every size the growth and reserve make (not powers of two), checking each
// against a map: backward-shift deletion must keep every probe run whole (tags
// and records moved together) when runs wrap around the table's end, and the
// record last put or found must answer for its key only while it is held.
func TestRecTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, reserve := range []int{0, 5, 37, 100} {
		tab := newUnitTable()
		tab.reserve(reserve)
		want := map[ukey]*unitRec{}
		for i := range 5000 {
			k := ukey{fmt.Sprint(rng.IntN(3)), fmt.Sprint(rng.IntN(300))}
			switch rng.IntN(3) {
			case 0:
				r := &unitRec{Unit: k.unit}
				r.setSource(k.source)
				tab.put(r)
				want[k] = r
			case 1:
				r := &unitRec{Unit: k.unit}
				r.setSource(k.source)
				if prev := tab.push(r); prev != want[k] {
					t.Fatalf("reserve %d, step %d: push %v replaced %p, want %p", reserve, i, k, prev, want[k])
				}
				want[k] = r
			case 2:
				tab.del(k.source, k.unit)
				delete(want, k)
			}
			// The key just changed and another, every step: the record
			// last put or found (recTable.last) answers only for its key.
			other := ukey{fmt.Sprint(rng.IntN(3)), fmt.Sprint(rng.IntN(300))}
			for _, k := range []ukey{k, other, k} {
				if got := tab.get(k.source, k.unit); got != want[k] {
					t.Fatalf("reserve %d, step %d: get %v is %p, want %p", reserve, i, k, got, want[k])
				}
			}
			if tab.last != nil && want[ukey{tab.last.source(), tab.last.Unit}] != tab.last {
				t.Fatalf("reserve %d, step %d: the last record found is not in the table", reserve, i)
			}
			if tab.len() != len(want) {
				t.Fatalf("reserve %d, step %d: %d records, want %d", reserve, i, tab.len(), len(want))
			}
			if i%97 == 0 {
				for k, r := range want {
					if got := tab.get(k.source, k.unit); got != r {
						t.Fatalf("reserve %d, step %d: get %v is %p, want %p", reserve, i, k, got, r)
					}
				}
				n := 0
				for range tab.all() {
					n++
				}
				if n != len(want) {
					t.Fatalf("reserve %d, step %d: all yields %d, want %d", reserve, i, n, len(want))
				}
			}
		}
	}
	var tab recTable
	tab.key = unitKey
	tab.reserve(100000)
	if got := len(tab.slots); got > 100000*4/3+1 {
		t.Fatalf("reserve(100000) made %d slots, want at most %d", got, 100000*4/3+1)
	}
	// A table reserved for n records does not grow when they are put again.
	for range 2 {
		for i := range 100000 {
			r := &unitRec{Unit: fmt.Sprint(i)}
			r.setSource("s")
			tab.put(r)
		}
	}
	if got := len(tab.slots); tab.len() != 100000 || got > 100000*4/3+1 {
		t.Fatalf("after putting 100000 records twice: %d records in %d slots", tab.len(), got)
	}
}
