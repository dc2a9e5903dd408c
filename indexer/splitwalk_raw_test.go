//go:build linux && (amd64 || arm64 || loong64 || riscv64)

package indexer

import (
	"sync"
	"testing"
)

// The parts of a split walk take the root's entries as they come: a part
// that starts after another has walked every entry finds nothing left (its
// half of a fixed split would leave a worker busy with something else on the
// critical path), parts at once take each entry once, and a part that finds
// a change stops the others.
func TestSplitWalkPartsTakeWhatIsLeft(t *testing.T) {
	for _, layout := range []string{"wave", "claude", "gemini"} {
		state := t.TempDir()
		ix, _, units := leanUnits(t, layout, state)
		part := func(l *rootListing) (*prober, bool) {
			p := &prober{ix: ix, marks: map[*unit]struct{}{}}
			return p, p.walkPart(l)
		}
		l, ok := ix.listRoot()
		if !ok || len(l.entries) < 2 {
			t.Fatalf("%s: listRoot %v, %d entries", layout, ok, len(l.entries))
		}
		first, ok1 := part(l)
		late, ok2 := part(l)
		l.close()
		if !ok1 || !ok2 || len(first.marks) != len(units) || len(late.marks) != 0 {
			t.Errorf("%s: the first part found %d units (%v), the late one %d (%v); want %d and 0", layout, len(first.marks), ok1, len(late.marks), ok2, len(units))
		}
		// At once: every unit found by one part only.
		l, _ = ix.listRoot()
		ps := make([]*prober, 3)
		var wg sync.WaitGroup
		for k := range ps {
			wg.Go(func() {
				var ok bool
				if ps[k], ok = part(l); !ok {
					t.Errorf("%s: part %d found a change", layout, k)
				}
			})
		}
		wg.Wait()
		l.close()
		n := 0
		for _, p := range ps {
			n += len(p.marks)
		}
		if n != len(units) {
			t.Errorf("%s: parts at once found %d units in all, want %d", layout, n, len(units))
		}
		// A change found stops every part: the one still to start takes nothing.
		l, _ = ix.listRoot()
		l.failed.Store(true)
		p, ok := part(l)
		l.close()
		if ok || len(p.marks) != 0 {
			t.Errorf("%s: after a change a part answered %v with %d units", layout, ok, len(p.marks))
		}
	}
}
