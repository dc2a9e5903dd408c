package search

import (
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// TestSplitBackgroundMergesEqualWhole: background merges cut in two term ranges
// (every merge in the background, every one split) while commits go on and
// readers open the index leave, after Compact, the same units, messages and
// terms as merges in one piece under the lock.
func TestSplitBackgroundMergesEqualWhole(t *testing.T) {
	defer func(p uint64) { parallelMergeMin = p }(parallelMergeMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	units := genUnits(t)
	build := func(split bool) map[string]UnitDigest {
		parallelMergeMin = math.MaxUint64
		opt := Options{Dir: filepath.Join(t.TempDir(), DirName), SpillBytes: 32 << 10, MaxSegments: 4}
		if split {
			parallelMergeMin, opt.MergeBudget = 0, 1
		}
		x, err := Open(opt)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		stop := make(chan struct{})
		go func() { // a reader now and then, as `search` runs beside the daemon
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r, err := OpenReader(opt.Dir); err == nil {
					q, _ := ParseQuery("the")
					r.Search(q, Filter{}, 5)
					r.Close()
				}
			}
		}()
		for i, u := range units {
			u.Hand(x, true, true)
			x.Done(u.Ref, int64(1000+i), "fp")
			if i%3 == 2 {
				if err := x.Sync(nil); err != nil {
					t.Fatal(err)
				}
			}
			if i%7 == 6 {
				x.Remove(units[i-4].Ref)
			}
		}
		if err := x.Compact(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-done
		x.Close()
		dg, err := Digest(opt.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return dg
	}
	want := build(false)
	splits := mergeSplits.Load()
	got := build(true)
	if mergeSplits.Load() == splits {
		t.Fatal("no merge was split")
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("split background merges: %d units, %v; merges in one piece: %d units", len(got), Compare(got, want), len(want))
	}
}
