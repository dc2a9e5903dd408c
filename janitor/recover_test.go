package janitor

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestRecoverInterruptedRetirement stops a retirement dead at every step, as a
// SIGKILL would, then lets a new janitor start: the session must be exactly
// once in the store or in the archive, byte-identical, restorable, with no
// temp or staging file left and no second archive after another pass, and
// the journal must close the action (§5 of issue 11).
func TestRecoverInterruptedRetirement(t *testing.T) {
	for _, step := range []string{"intent", "staged", "archived", "removed"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
			const id = "bbbbbbbb-0000-4000-8000-000000000001"
			path := f.session("/w/rec", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			f.index()
			crashHook = func(s string) bool { return s == step }
			f.janitor().RunOnce(context.Background(), Overrides{})
			crashHook = nil

			// The next start: a new janitor recovers before its first pass.
			f.index()
			j := f.janitor()
			rec, err := j.Recover(context.Background())
			if err != nil || len(rec.Errors) > 0 {
				t.Fatalf("Recover = %+v, %v", rec, err)
			}
			if rec.Finished+rec.RolledBack != 1 {
				t.Errorf("Recover = %+v, want one action resolved", rec)
			}
			archives, _ := ListArchives(f.archive, nil)
			_, serr := os.Stat(path)
			inStore := serr == nil
			switch {
			case inStore && len(archives) > 0:
				t.Fatalf("session both in the store and archived (%d)", len(archives))
			case !inStore && len(archives) != 1:
				t.Fatalf("session not in the store, %d archives", len(archives))
			}
			if inStore {
				if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
					t.Errorf("put-back session differs")
				}
			}
			noTemps(t, f.root, f.archive)
			// A pass then archives it (again): one archive, never X.jsonl.1.gz.
			if _, err := j.RunOnce(context.Background(), Overrides{}); err != nil {
				t.Fatal(err)
			}
			archives, _ = ListArchives(f.archive, nil)
			if len(archives) != 1 || exists(path) || strings.Contains(archives[0].Path, ".1.gz") {
				t.Fatalf("after the next pass: archives %v, store %v", archives, exists(path))
			}
			if got := gunzip(t, archives[0].Path); !bytes.Equal(got, orig) {
				t.Errorf("archive differs from the session")
			}
			if _, err := j.Restore(context.Background(), archives[0]); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
				t.Errorf("restored session differs")
			}
			if open, _ := openIntents(filepath.Join(f.state, JournalName)); len(open) != 0 {
				t.Errorf("journal leaves %d intents open: %+v", len(open), open)
			}
			noTemps(t, f.root, f.archive)
		})
	}
}

// TestRecoverInterruptedRestore: a restore killed after its files are in
// place but before the archive went is finished at the next start; one killed
// while writing its temp file is rolled back with the temp removed, and
// restore then succeeds (it used to say "already exists" or leave the temp).
func TestRecoverInterruptedRestore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		finish bool
	}{{"files in place", true}, {"temp file only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
			const id = "cccccccc-0000-4000-8000-000000000001"
			path := f.session("/w/rec", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			f.index()
			j := f.janitor()
			if rep, err := j.RunOnce(context.Background(), Overrides{}); err != nil || rep.Archived != 1 {
				t.Fatalf("pass = %+v, %v", rep, err)
			}
			archives, _ := ListArchives(f.archive, nil)
			if tc.finish {
				crashHook = func(s string) bool { return s == "restored" }
				j.Restore(context.Background(), archives[0])
				crashHook = nil
			} else {
				// Killed while writing: the intent is journaled, a partial temp exists.
				jr := newJournal(f.state, false)
				jr.intent(JournalEntry{Time: indexer.FormatTime(time.Now()), Action: KindRestore, ActionID: "0f0f0f0f-0000-4000-8000-000000000001",
					Source: "wave", ID: id, File: path, Archive: archives[0].Path, Paths: []string{path}})
				jr.close()
				tmp := filepath.Join(filepath.Dir(path), indexer.TempPrefix+"restore-0f0f0f0f-0000-4000-8000-000000000001-123")
				os.WriteFile(tmp, orig[:10], 0o600)
			}
			j2 := f.janitor()
			rec, err := j2.Recover(context.Background())
			if err != nil || len(rec.Errors) > 0 {
				t.Fatalf("Recover = %+v, %v", rec, err)
			}
			noTemps(t, f.root, f.archive)
			left, _ := ListArchives(f.archive, nil)
			if tc.finish {
				if len(left) != 0 || !exists(path) {
					t.Fatalf("finished restore: archives %d, store %v", len(left), exists(path))
				}
			} else {
				if len(left) != 1 || exists(path) {
					t.Fatalf("rolled-back restore: archives %d, store %v", len(left), exists(path))
				}
				if _, err := j2.Restore(context.Background(), left[0]); err != nil {
					t.Fatalf("restore after a killed restore: %v", err)
				}
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
				t.Errorf("restored session differs")
			}
		})
	}
}

func noTemps(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(e.Name(), indexer.TempPrefix) {
				t.Errorf("temp file left: %s", p)
			}
			return nil
		})
	}
}

// TestRecoverAfterTornJournalLine: a journal whose last line was cut short (a
// crash or a full disk in the middle of a write leaves no newline) must not
// swallow the next intent. The retirement after it is killed with the session
// staged; the next start must still find that intent and put the session back.
func TestRecoverAfterTornJournalLine(t *testing.T) {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
	const id = "dddddddd-0000-4000-8000-000000000001"
	path := f.session("/w/torn", id, 5*24*time.Hour)
	orig, _ := os.ReadFile(path)
	f.index()
	if err := os.MkdirAll(f.state, 0o700); err != nil {
		t.Fatal(err)
	}
	torn := `{"time":"2026-01-01T00:00:00.000Z","action":"archive","actionId":"0e0e0e0e-0000-4000-8000-0000000`
	if err := os.WriteFile(filepath.Join(f.state, JournalName), []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	crashHook = func(s string) bool { return s == "staged" }
	f.janitor().RunOnce(context.Background(), Overrides{})
	crashHook = nil
	if exists(path) {
		t.Fatalf("the crash left the session in place: the test staged nothing")
	}
	f.index()
	rec, err := f.janitor().Recover(context.Background())
	if err != nil || len(rec.Errors) > 0 || rec.RolledBack != 1 {
		t.Fatalf("Recover = %+v, %v; want one action rolled back", rec, err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, orig) {
		t.Fatalf("session not back in the store after recovery (%v)", err)
	}
	noTemps(t, f.root, f.archive)
	// Readers skip the fragment and still see every line after it.
	all, err := ReadJournalAll(filepath.Join(f.state, JournalName))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("ReadJournalAll error = %v, want one naming line 1", err)
	}
	phases := map[string]int{}
	for _, e := range all {
		phases[e.Phase]++
	}
	if phases[PhaseIntent] != 1 || phases[PhaseRollback] != 1 {
		t.Errorf("journal after the torn line holds %v, want one intent and one rollback", phases)
	}
}

// TestRecoverSurvivesASecondCrash: a retirement killed with its archive
// written and the session staged is rolled back at the next start; that
// recovery is killed too, part-way through putting the session back. The start
// after must still leave the session exactly once, in the store or in the
// archive (never both: a pass would archive it a second time), byte-identical,
// with the journal closed and no staging or temp file left.
func TestRecoverSurvivesASecondCrash(t *testing.T) {
	for _, step := range []string{"recover-archive-dropped", "putback-linked"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
			const id = "dddddddd-0000-4000-8000-000000000002"
			path := f.session("/w/twice", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			f.index()
			crashHook = func(s string) bool { return s == "archived" }
			f.janitor().RunOnce(context.Background(), Overrides{})
			crashed := false
			crashHook = func(s string) bool {
				if s == step && !crashed {
					crashed = true
					return true
				}
				return false
			}
			f.index()
			f.janitor().Recover(context.Background())
			crashHook = nil
			if !crashed {
				t.Fatalf("recovery never reached step %q", step)
			}

			f.index()
			j := f.janitor()
			rec, err := j.Recover(context.Background())
			if err != nil || len(rec.Errors) > 0 {
				t.Fatalf("Recover after the second crash = %+v, %v", rec, err)
			}
			archives, _ := ListArchives(f.archive, nil)
			inStore := exists(path)
			switch {
			case inStore && len(archives) > 0:
				t.Fatalf("session both in the store and archived (%d archives)", len(archives))
			case !inStore && len(archives) != 1:
				t.Fatalf("session not in the store, %d archives", len(archives))
			case inStore:
				if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
					t.Errorf("session in the store differs")
				}
			default:
				if got := gunzip(t, archives[0].Path); !bytes.Equal(got, orig) {
					t.Errorf("archive differs from the session")
				}
			}
			noTemps(t, f.root, f.archive)
			if open, _ := openIntents(filepath.Join(f.state, JournalName)); len(open) != 0 {
				t.Errorf("journal leaves %d intents open: %+v", len(open), open)
			}
		})
	}
}

// TestRootTurnedSymlinkIsNotRetiredThrough: the root was resolved to a real
// directory at start; the user then moves the store and leaves a symlink in its
// place (onto another disk, into a dotfiles repo) while the daemon runs. A pass
// and a delete must not retire anything through that symlink: nothing is deleted
// or archived until the root is resolved again.
func TestRootTurnedSymlinkIsNotRetiredThrough(t *testing.T) {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
	const id = "dddddddd-0000-4000-8000-000000000003"
	path := f.session("/w/moved", id, 5*24*time.Hour)
	f.index()
	moved := f.root + ".real"
	if err := os.Rename(f.root, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, f.root); err != nil {
		t.Fatal(err)
	}
	j := f.janitor()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Retired != 0 {
		t.Errorf("pass retired %d sessions through the symlinked root", rep.Retired)
	}
	es, _ := indexer.ReadCatalogs(f.state, nil, nil)
	en, err := indexer.ResolveID(es, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Delete(context.Background(), en, DeleteOptions{Force: true, Permanent: true}); err == nil {
		t.Errorf("delete through the symlinked root succeeded")
	}
	real := filepath.Join(moved, filepath.Base(filepath.Dir(path)), filepath.Base(path))
	if !exists(real) {
		t.Fatalf("session %s removed through the symlinked root", real)
	}
	if archives, _ := ListArchives(f.archive, nil); len(archives) != 0 {
		t.Errorf("%d archives written through the symlinked root", len(archives))
	}
}

// TestRestoreFinishedAtStartUpIsNotRetiredAgain: a restore killed once its
// files are back (before the archive went and the restore was recorded) is
// finished at the next start, and, as any restore, counts as activity: the
// pass that follows recovery keeps the session instead of archiving it again
// (its mtime and last message are as old as when it was archived).
func TestRestoreFinishedAtStartUpIsNotRetiredAgain(t *testing.T) {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
	const id = "cccccccc-0000-4000-8000-000000000002"
	path := f.session("/w/pin", id, 5*24*time.Hour)
	f.index()
	j := f.janitor()
	if rep, err := j.RunOnce(context.Background(), Overrides{}); err != nil || rep.Archived != 1 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	archives, _ := ListArchives(f.archive, nil)
	if len(archives) != 1 {
		t.Fatalf("%d archives", len(archives))
	}
	crashHook = func(s string) bool { return s == "restored" }
	_, err := j.Restore(context.Background(), archives[0])
	crashHook = nil
	if !errors.Is(err, errCrashed) || !exists(path) {
		t.Fatalf("Restore = %v, in the store %v; want it killed with the files back", err, exists(path))
	}
	// The next start: recovery, then a pass.
	f.index()
	j2 := f.janitor()
	rep, err := j2.RunOnce(context.Background(), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Archived != 0 || !exists(path) {
		t.Errorf("the pass after the restore's recovery archived the restored session again: %+v", rep.Actions)
	}
	if left, _ := ListArchives(f.archive, nil); len(left) != 0 {
		t.Errorf("%d archives left", len(left))
	}
}
