package indexer

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// A daemon through random appends, new and removed sessions and projects,
// reloads after another writer and restarts keeps its key table exact, every
// unit filed under its own project's catalog, and its catalogs those a rebuild
// writes.
func TestKeyTabStress(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { keyTabStress(t, seed) })
	}
}

func keyTabStress(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	root, state, files := startStore(t, 3)
	live := map[string]bool{}
	for _, f := range files {
		live[f] = true
	}
	d := daemonIndexer(t, root, state)
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reconcile(); err != nil {
		t.Fatal(err)
	}
	n := 100
	newFile := func(p int) string {
		dir := filepath.Join(root, fmt.Sprintf("p%d", p))
		os.MkdirAll(dir, 0o700)
		n++
		f := filepath.Join(dir, fmt.Sprintf("cccccccc-0000-4000-8000-%012d.jsonl", n))
		appendFile(t, f, fmt.Sprintf(`{"type":"metadata","workdir":"/w/p%d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", p)+
			msg("2026-01-01T00:00:01Z", fmt.Sprintf("new %d", n)))
		live[f] = true
		return f
	}
	pick := func() string {
		for f := range live {
			return f
		}
		return ""
	}
	for step := 0; step < 30; step++ {
		var changed []string
		op := rng.Intn(7)
		switch op {
		case 0: // append
			if f := pick(); f != "" {
				appendFile(t, f, msg("2026-01-01T00:00:02Z", fmt.Sprintf("more %d", step)))
				changed = append(changed, f)
			}
		case 1: // new session in a project
			changed = append(changed, newFile(rng.Intn(5)))
		case 2: // remove a session
			if f := pick(); f != "" {
				os.Remove(f)
				delete(live, f)
				changed = append(changed, f)
			}
		case 3: // remove a project
			p := filepath.Join(root, fmt.Sprintf("p%d", rng.Intn(5)))
			for f := range live {
				if filepath.Dir(f) == p {
					delete(live, f)
					changed = append(changed, f)
				}
			}
			os.RemoveAll(p)
		case 4: // another writer rewrites the catalogs: the daemon reloads
			rewriteAsWriter(t, root, state)
		case 5: // restart
			d = daemonIndexer(t, root, state)
			if err := d.Load(); err != nil {
				t.Fatal(err)
			}
		case 6: // a new project and an append elsewhere in one pass
			changed = append(changed, newFile(5+rng.Intn(3)))
			if f := pick(); f != "" {
				appendFile(t, f, msg("2026-01-01T00:00:03Z", fmt.Sprintf("also %d", step)))
				changed = append(changed, f)
			}
		}
		var err error
		if len(changed) > 0 && rng.Intn(2) == 0 {
			err = d.Update(changed)
		} else {
			err = d.Reconcile()
		}
		if err != nil {
			t.Fatalf("step %d (op %d): %v", step, op, err)
		}
		checkKeyTab(t, d)
		if ss := d.Sessions(); len(ss) != len(live) {
			t.Fatalf("step %d (op %d): %d sessions, want %d", step, op, len(ss), len(live))
		}
		assertLayoutConverged(t, "wave", root, state)
		if t.Failed() {
			t.Fatalf("step %d (op %d)", step, op)
		}
	}
}
