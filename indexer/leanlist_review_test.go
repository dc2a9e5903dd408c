package indexer

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// A change made while ProveVisit reads the catalogs (from its visit: after
// the catalog that lists the session was read, before the walk) is seen: the
// source is not proven, so the table read with the catalogs is not used.
// With 4 workers the walk is split in parts over one listing of the root.
func TestProveVisitSeesChangeDuringRead(t *testing.T) {
	changes := map[string]func(t *testing.T, ix *Indexer, urel string){
		"append": func(t *testing.T, ix *Indexer, urel string) { appendFile(t, ix.unitPath(urel), "\n") },
		"remove": func(t *testing.T, ix *Indexer, urel string) {
			if err := os.Rename(ix.unitPath(urel), ix.unitPath(urel)+".away"); err != nil {
				t.Fatal(err)
			}
		},
		"create": func(t *testing.T, ix *Indexer, urel string) {
			if !addTwin(t, ix, urel) {
				t.Skipf("no twin for %s", urel)
			}
		},
	}
	for name, change := range changes {
		for _, layout := range []string{"wave", "claude", "codex", "gemini", "llxprt"} {
			for _, workers := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/%s/%d", name, layout, workers), func(t *testing.T) {
					state := t.TempDir()
					ix, root, units := leanUnits(t, layout, state)
					var once sync.Once
					proven, _, _ := ProveVisit(state, nil, []*Indexer{newLayoutIndexer(t, layout, root, state, false)}, workers,
						func(int, Entry) { once.Do(func() { change(t, ix, units[len(units)-1]) }) }, nil)
					if !slices.Equal(proven, []bool{false}) {
						t.Errorf("%s of %s during the read, %d workers: proven %v", name, units[len(units)-1], workers, proven)
					}
				})
			}
		}
	}
}
