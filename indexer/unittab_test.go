package indexer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// checkTab compares t with the map it should equal: every key found, every
// unit yielded once by all, the count, and keys absent from both.
func checkTab(t *testing.T, tab *unitTab, want map[string]*unit, absent []string) {
	t.Helper()
	if tab.len() != len(want) {
		t.Fatalf("len %d, want %d", tab.len(), len(want))
	}
	for k, u := range want {
		if got := tab.get(k); got != u {
			t.Fatalf("get(%q) = %p, want %p", k, got, u)
		}
		if got := tab.getBytes([]byte(k)); got != u {
			t.Fatalf("getBytes(%q) = %p, want %p", k, got, u)
		}
	}
	for _, k := range absent {
		if _, ok := want[k]; !ok && tab.get(k) != nil {
			t.Fatalf("get(%q) found a unit the map does not hold", k)
		}
	}
	seen := map[*unit]bool{}
	for u := range tab.all() {
		if seen[u] || want[u.rel] != u {
			t.Fatalf("all yielded %q twice or not in the map", u.rel)
		}
		seen[u] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("all yielded %d units, want %d", len(seen), len(want))
	}
	if tab.used < tab.n || tab.used*8 > len(tab.slots)*7 {
		t.Fatalf("%d slots used of %d for %d units", tab.used, len(tab.slots), tab.n)
	}
}

// TestUnitTabStress puts, replaces and deletes many keys at random, from a
// small key space (long probe chains, deleted slots reused) and a large one,
// reserving and clearing at times, and compares the table with a map after
// every step.
func TestUnitTabStress(t *testing.T) {
	for _, space := range []int{16, 300, 5000} {
		t.Run(fmt.Sprint(space), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(space), 1))
			var tab unitTab
			want := map[string]*unit{}
			key := func() string { return fmt.Sprintf("p%d/%08x.jsonl", rng.IntN(space)%97, rng.IntN(space)) }
			steps := 20000
			if testing.Short() {
				steps = 4000
			}
			for i := range steps {
				k := key()
				switch op := rng.IntN(100); {
				case op < 55:
					u := &unit{rel: k}
					tab.put(u)
					want[k] = u
				case op < 95:
					got := tab.del(k)
					if got != want[k] {
						t.Fatalf("del(%q) = %p, want %p", k, got, want[k])
					}
					delete(want, k)
				case op < 98:
					tab.reserve(len(want) + rng.IntN(2*space))
				default:
					if rng.IntN(10) == 0 {
						tab.clear()
						clear(want)
					}
				}
				if i%97 == 0 || space == 16 {
					checkTab(t, &tab, want, []string{key(), key()})
				}
			}
			checkTab(t, &tab, want, nil)
		})
	}
}

// TestUnitTabCollisions fills a table with keys whose hashes share their low
// bits and tag (one probe chain), deletes every other one, and finds the rest.
func TestUnitTabCollisions(t *testing.T) {
	var tab unitTab
	tab.reserve(64)
	want := map[string]*unit{}
	h0, tag0 := hashKey("seed")
	for i := 0; len(want) < 40; i++ {
		k := fmt.Sprint("k", i)
		if h, tag := hashKey(k); tab.home(h) == tab.home(h0) && tag == tag0 {
			u := &unit{rel: k}
			tab.put(u)
			want[k] = u
		}
	}
	checkTab(t, &tab, want, []string{"seed"})
	n := 0
	for k := range want {
		if n++; n%2 == 0 {
			tab.del(k)
			delete(want, k)
		}
	}
	checkTab(t, &tab, want, []string{"seed"})
	for k := range want {
		tab.del(k)
		delete(want, k)
	}
	checkTab(t, &tab, want, []string{"seed"})
	if tab.used != 0 {
		t.Errorf("%d slots still used after every key was deleted", tab.used)
	}
}

// TestUnitTabIterateWhileChanging deletes, and adds past a rehash, while all
// iterates: every unit held throughout is yielded once, none deleted before
// its turn is.
func TestUnitTabIterateWhileChanging(t *testing.T) {
	var tab unitTab
	want := map[string]*unit{}
	for i := range 100 {
		u := &unit{rel: fmt.Sprint("a/", i)}
		tab.put(u)
		want[u.rel] = u
	}
	deleted := map[string]bool{}
	seen := map[string]int{}
	added := 0
	for u := range tab.all() {
		if deleted[u.rel] {
			t.Fatalf("%s yielded after its deletion", u.rel)
		}
		seen[u.rel]++
		if added == 0 {
			for i := range 400 { // rehashes the table
				tab.put(&unit{rel: fmt.Sprint("b/", i)})
			}
			added = 400
		}
		for k := range want {
			if k != u.rel && !deleted[k] && seen[k] == 0 {
				tab.del(k)
				deleted[k] = true
				break
			}
		}
	}
	for k := range want {
		if !deleted[k] && seen[k] != 1 {
			t.Errorf("%s yielded %d times, want once", k, seen[k])
		}
	}
	if tab.len() != 100+added-len(deleted) {
		t.Errorf("len %d, want %d", tab.len(), 100+added-len(deleted))
	}
}

// TestUnitTabGrowsPastLoadsReserve: a loaded indexer (its table sized once,
// with 1/16 headroom) takes three times as many new files and loses half the
// old ones while readers list: every session is listed by each reader at the
// end, the catalogs are what a rebuild writes, and -race sees every access of
// the table under the indexer's lock.
func TestUnitTabGrowsPastLoadsReserve(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	manyWaveSessions(t, root, 40)
	if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	slots := len(ix.units.slots)
	ix.mu.Unlock()
	old := ix.Sessions()
	stop := make(chan struct{})
	done := make(chan int)
	for range 2 {
		go func() {
			n := 0
			for {
				select {
				case <-stop:
					done <- n
					return
				default:
				}
				n += len(ix.Entries()) + len(ix.Sessions()) + ix.Stats().Sessions
			}
		}()
	}
	dir := filepath.Join(root, "home-u-new")
	os.MkdirAll(dir, 0o700)
	for i := range 120 {
		f := filepath.Join(dir, fmt.Sprintf("bbbbbbbb-0000-4000-8000-%012x.jsonl", i))
		appendFile(t, f, `{"type":"metadata","workdir":"/home/u/new","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-02T00:00:00Z", fmt.Sprint("new ", i)))
		paths := []string{f}
		if i%6 == 0 && len(old) > 0 {
			os.Remove(old[0].File)
			paths = append(paths, old[0].File)
			old = old[1:]
		}
		if err := ix.Update(paths); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	<-done
	ix.mu.Lock()
	grown := len(ix.units.slots)
	ix.mu.Unlock()
	if grown <= slots {
		t.Fatalf("the table has %d slots after 120 new files, %d after Load: it did not grow", grown, slots)
	}
	if got, want := len(ix.Sessions()), 40-20+120; got != want {
		t.Errorf("%d sessions, want %d", got, want)
	}
	assertLayoutConverged(t, "wave", root, state)
}

// TestUnitTabIterateModel: while all iterates, units are put, deleted and
// reserved for at random (rehashing the table, some runs several times):
// each unit yielded is in the table when yielded, none twice, and every unit
// held from the start to the end is yielded once.
func TestUnitTabIterateModel(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tab unitTab
		n := 1 + rng.IntN(60)
		for i := range n {
			tab.put(&unit{rel: fmt.Sprint("s/", i)})
		}
		start := map[*unit]bool{}
		for u := range tab.all() {
			start[u] = true
		}
		touched := map[string]bool{} // keys deleted or put during the iteration
		yielded := map[*unit]bool{}
		next := n
		for u := range tab.all() {
			if tab.get(u.rel) != u {
				t.Fatalf("seed %d: %s yielded while not in the table", seed, u.rel)
			}
			if yielded[u] {
				t.Fatalf("seed %d: %s yielded twice", seed, u.rel)
			}
			yielded[u] = true
			for range rng.IntN(4) {
				switch op := rng.IntN(10); {
				case op < 4:
					k := fmt.Sprint("s/", rng.IntN(next+1))
					if tab.get(k) == nil {
						touched[k] = true
						tab.put(&unit{rel: k})
					}
				case op < 5:
					k := fmt.Sprint("s/", next)
					next++
					touched[k] = true
					tab.put(&unit{rel: k})
				case op < 9:
					k := fmt.Sprint("s/", rng.IntN(next))
					if tab.del(k) != nil {
						touched[k] = true
					}
				default:
					tab.reserve(tab.len() + rng.IntN(100))
				}
			}
		}
		for u := range start {
			if !touched[u.rel] && tab.get(u.rel) == u && !yielded[u] {
				t.Fatalf("seed %d: %s held throughout, not yielded", seed, u.rel)
			}
		}
	}
}
