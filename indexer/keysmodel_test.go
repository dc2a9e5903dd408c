package indexer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Review test of the catalog keys a flush keeps (keysStillHold): a random run
// of sessions created, appended to, moved to another project (their workdir
// rewritten), removed, with colliding projects among them, and full passes and
// a Release, Load and Start in between; after every step the keys are those
// catalogKeys assigns the projects and the catalogs are what a rebuild writes.
func TestFlushKeysModel(t *testing.T) {
	workdirs := []string{"/p/a-b", "/p/a/b", "/p/c", "/p/a b", "/p/a_b",
		"/p/a-b" + collisionKey("p-a-b", "/p/a/b")[len("p-a-b"):]} // its own key is /p/a/b's collision key
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			root, state := t.TempDir(), t.TempDir()
			ix := newLayoutIndexer(t, "wave", root, state, false)
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			var files []string
			n := 0
			write := func(path, wd string) {
				os.WriteFile(path, nil, 0o600)
				appendFile(t, path, `{"type":"metadata","workdir":"`+wd+`","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "hi"))
			}
			for step := range 40 {
				var changed []string
				op := rng.IntN(10)
				switch {
				case op < 3 || len(files) == 0:
					dir := filepath.Join(root, fmt.Sprintf("d%d", rng.IntN(3)))
					os.MkdirAll(dir, 0o700)
					path := filepath.Join(dir, fmt.Sprintf("%08x-0000-4000-8000-%012x.jsonl", n, n))
					n++
					write(path, workdirs[rng.IntN(len(workdirs))])
					files = append(files, path)
					changed = append(changed, path)
				case op < 5:
					path := files[rng.IntN(len(files))]
					appendFile(t, path, msg(fmt.Sprintf("2026-01-01T00:00:%02dZ", 2+step), "more"))
					changed = append(changed, path)
				case op < 7:
					path := files[rng.IntN(len(files))]
					write(path, workdirs[rng.IntN(len(workdirs))])
					changed = append(changed, path)
				case op < 8:
					i := rng.IntN(len(files))
					os.Remove(files[i])
					changed = append(changed, files[i])
					files = append(files[:i], files[i+1:]...)
				case op < 9:
					if err := ix.Reconcile(); err != nil {
						t.Fatal(err)
					}
				default:
					ix.Release()
					if err := ix.Load(); err != nil {
						t.Fatal(err)
					}
					if err := ix.Start(); err != nil {
						t.Fatal(err)
					}
				}
				if len(changed) > 0 {
					if err := ix.Update(changed); err != nil {
						t.Fatal(err)
					}
				}
				ix.mu.Lock()
				projects := map[string]bool{}
				for u := range ix.units.all() {
					for _, s := range u.sessions() {
						projects[s.Project] = true
					}
					if u.skey != 0 {
						projects[ix.parkedProject(u)] = true
					}
				}
				got := map[string]string{}
				for p, k := range ix.keys {
					got[p] = k
				}
				ix.mu.Unlock()
				if want := catalogKeys(projects, ProjectKey); !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (op %d): keys %v, want %v", step, op, got, want)
				}
				assertLayoutConverged(t, "wave", root, state)
				if t.Failed() {
					t.Fatalf("step %d (op %d): catalogs differ from a rebuild", step, op)
				}
			}
		})
	}
}
