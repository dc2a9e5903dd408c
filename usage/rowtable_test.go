package usage

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowTableAgainstMap sets and deletes rows at random, counts small and
// beyond 32 bits or below zero alike, checking each step against a map.
func TestRowTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	count := func() int64 {
		switch rng.IntN(8) {
		case 0:
			return math.MaxUint32 + rng.Int64N(5) - 2 // around the edge
		case 1:
			return -rng.Int64N(3)
		case 2:
			return 1 << 40
		default:
			return rng.Int64N(1000)
		}
	}
	var tab rowTable
	want := map[rowID]Tokens{}
	for i := range 20000 {
		id := rowID{int32(rng.IntN(200)) - 3, uint32(rng.IntN(5))}
		switch rng.IntN(4) {
		case 0:
			tab.del(id)
			delete(want, id)
		default:
			v := Tokens{count(), count(), count(), count()}
			if rng.IntN(10) == 0 {
				v = Tokens{}
			}
			tab.set(id, v)
			if v.IsZero() {
				delete(want, id)
			} else {
				want[id] = v
			}
		}
		if tab.len() != len(want) {
			t.Fatalf("step %d: %d rows, want %d", i, tab.len(), len(want))
		}
		if got := tab.get(id); got != want[id] {
			t.Fatalf("step %d: row %v = %v, want %v", i, id, got, want[id])
		}
		if i%500 == 0 {
			n := 0
			for id, v := range tab.all() {
				n++
				if want[id] != v {
					t.Fatalf("step %d: all yields %v = %v, want %v", i, id, v, want[id])
				}
			}
			if n != len(want) || len(tab.big) > n {
				t.Fatalf("step %d: all yields %d rows (%d big), want %d", i, n, len(tab.big), len(want))
			}
		}
	}
}
