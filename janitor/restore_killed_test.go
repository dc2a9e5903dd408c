package janitor

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestRestoreKilledWhileDaemonRuns: `restore` killed after its files are
// back while the daemon keeps running. The daemon ran its start-up recovery
// long ago, so the restore's intent stays open until the next start; its
// scheduled pass meanwhile must take the restore as activity (as a finished
// one, or one recovery finishes) and leave the session in the store, not
// archive it a second time beside the archive the restore came from. At the
// next start, recovery finishes the restore: one copy, in the store. Killed
// before any file came back ("pinned"), the restore is undone at the next
// start and its pin goes with the next pass.
func TestRestoreKilledWhileDaemonRuns(t *testing.T) {
	for _, step := range []string{"restored", "pinned"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
			const id = "cccccccc-0000-4000-8000-000000000003"
			path := f.session("/w/daemon", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			f.index()
			daemon := f.janitor()
			if rep, err := daemon.RunOnce(context.Background(), Overrides{}); err != nil || rep.Archived != 1 {
				t.Fatalf("pass = %+v, %v", rep, err)
			}
			archives, _ := ListArchives(f.archive, nil)
			if len(archives) != 1 {
				t.Fatalf("%d archives", len(archives))
			}
			// `restore`, a process of its own, killed at step.
			crashHook = func(s string) bool { return s == step }
			_, err := f.janitor().Restore(context.Background(), archives[0])
			crashHook = nil
			if !errors.Is(err, errCrashed) || exists(path) != (step == "restored") {
				t.Fatalf("Restore = %v, in the store %v; want it killed at %s", err, exists(path), step)
			}
			// The daemon's indexer sees the file back; its next pass.
			if err := f.group.ReconcileAll(); err != nil {
				t.Fatal(err)
			}
			rep, err := daemon.RunOnce(context.Background(), Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Archived != 0 || exists(path) != (step == "restored") {
				t.Errorf("the daemon's pass archived the session a killed restore brought back: %+v", rep.Actions)
			}
			// The next start.
			f.index()
			rec, err := f.janitor().Recover(context.Background())
			if err != nil || len(rec.Errors) > 0 {
				t.Fatalf("Recover = %+v, %v", rec, err)
			}
			left, _ := ListArchives(f.archive, nil)
			got, _ := os.ReadFile(path)
			switch {
			case step == "restored" && (string(got) != string(orig) || len(left) != 0):
				t.Errorf("after the next start: in the store %v (same bytes %v), %d archives; want it once, in the store",
					exists(path), string(got) == string(orig), len(left))
			case step == "pinned" && (exists(path) || len(left) != 1):
				t.Errorf("after the next start: in the store %v, %d archives; want it once, in the archive (nothing was restored)", exists(path), len(left))
			}
			if step == "pinned" {
				// The pin of a file that never came back goes with the next pass.
				if _, err := f.janitor().RunOnce(context.Background(), Overrides{}); err != nil {
					t.Fatal(err)
				}
				if pins := loadPins(f.state); !pins[path].IsZero() {
					t.Errorf("the pin of a restore that brought nothing back is kept: %v", pins)
				}
			}
		})
	}
}

// TestRestoreRefusedKeepsNoPin: a restore refused because its path is taken
// again (the agent wrote a new session there) takes back the pin it
// recorded before writing: the new file is retired by its own age, as before.
func TestRestoreRefusedKeepsNoPin(t *testing.T) {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
	const id = "cccccccc-0000-4000-8000-000000000004"
	path := f.session("/w/refused", id, 5*24*time.Hour)
	f.index()
	j := f.janitor()
	if rep, err := j.RunOnce(context.Background(), Overrides{}); err != nil || rep.Archived != 1 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	archives, _ := ListArchives(f.archive, nil)
	f.session("/w/refused", id, 5*24*time.Hour) // written again at the same path
	if _, err := j.Restore(context.Background(), archives[0]); !errors.Is(err, ErrExists) {
		t.Fatalf("Restore over a new file = %v, want ErrExists", err)
	}
	if pins := loadPins(f.state); !pins[path].IsZero() {
		t.Errorf("a refused restore left a pin on %s: %v", path, pins)
	}
}
