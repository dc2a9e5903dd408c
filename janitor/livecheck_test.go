package janitor

import (
	"os"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestLiveCheckerForFewLooksUpEachLock: for a few sessions the checker answers
// as the listing one does, without listing any directory.
func TestLiveCheckerForFewLooksUpEachLock(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	live := f.session("/proj/l", idLive, day)
	writeLock(t, live+LockSuffix, os.Getpid(), time.Now())
	f.session("/proj/l", idOld, day)
	f.index()
	es, _ := indexer.ReadCatalogs(f.state, nil, nil)
	if len(es) != 2 {
		t.Fatalf("catalog = %v", es)
	}
	for _, n := range []int{len(es), 10000} {
		c := NewLiveCheckerFor(f.cfg, n)
		for _, e := range es {
			h := c.InUse(e)
			if (e.ID == idLive) != h.Held() || (h.Held() && h.PID != os.Getpid()) {
				t.Errorf("n=%d: InUse(%s) = %+v", n, e.ID, h)
			}
		}
		if few := n <= fewSessions; few != (c.listings == 0) {
			t.Errorf("n=%d: %d directories listed", n, c.listings)
		}
	}
}
