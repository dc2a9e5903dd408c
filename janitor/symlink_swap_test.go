package janitor

import (
	"fmt"
	"io/fs"

	"context"
	"github.com/sessionwatch/sessionwatch/indexer"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestParentSwappedForSymlinkDuringRetirement: a project directory replaced by
// a symlink to a directory outside the root after the pass checked it (here
// while the session's files are held, just after the intent) must not make
// the janitor rename, archive or delete what the symlink points at. The file
// outside, which has the session's name but is another file, stays untouched;
// so does the session, wherever its directory went.
func TestParentSwappedForSymlinkDuringRetirement(t *testing.T) {
	for _, action := range []string{"archive", "delete"} {
		t.Run(action, func(t *testing.T) {
			const id = "eeeeeeee-0000-4000-8000-000000000001"
			c := newSwapCase(t, action, "/w/swap", id)
			f, path, orig, moved := c.f, c.path, c.orig, c.moved
			victimDir, victim, victimData := c.victimDir, c.victim, c.victimData
			passSwappingAtIntent(t, f.janitor(), func() {
				c.swap(t)
			})
			if got, err := os.ReadFile(victim); err != nil || string(got) != string(victimData) {
				t.Errorf("the file outside the root, reached through the swapped symlink, was touched: %q, %v", got, err)
			}
			ents, _ := os.ReadDir(victimDir)
			if len(ents) != 1 {
				t.Errorf("the directory outside the root holds %d entries, want only the file it had", len(ents))
			}
			ars, _ := ListArchives(f.archive, nil)
			for _, a := range ars {
				t.Errorf("archived %s from %s: the pass archived through the swapped symlink", a.Path, a.Meta.File)
			}
			if got, err := os.ReadFile(filepath.Join(moved, filepath.Base(path))); err != nil || string(got) != string(orig) {
				t.Errorf("the session in its moved directory: %q, %v", got, err)
			}
		})
	}
}

// TestReplacedByRenameDuringRetirement: an agent that rewrites its transcript
// atomically (a new file renamed over the old name: no open of the old file,
// so no lease breaks) after the janitor took hold of the old file must keep
// the new file. Only the file held, checked and (for an archive) archived may
// be removed.
func TestReplacedByRenameDuringRetirement(t *testing.T) {
	for _, action := range []string{"archive", "delete"} {
		t.Run(action, func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d","action":"`+action+`"`)
			const id = "eeeeeeee-0000-4000-8000-000000000002"
			path := f.session("/w/replace", id, 5*24*time.Hour)
			orig, _ := os.ReadFile(path)
			newer := append(append([]byte(nil), orig...), []byte(`{"timestamp":"2026-01-01T00:00:00Z","id":"m2","role":"user","blocks":[{"type":"text","content":"written by the agent"}]}`+"\n")...)
			f.index()
			rep, _ := passSwappingAtIntent(t, f.janitor(), func() {
				tmp := path + ".tmp"
				if err := os.WriteFile(tmp, newer, 0o600); err != nil {
					t.Error(err)
				}
				old := time.Now().Add(-10 * 24 * time.Hour)
				os.Chtimes(tmp, old, old)
				if err := os.Rename(tmp, path); err != nil {
					t.Error(err)
				}
			})
			if got, err := os.ReadFile(path); err != nil || string(got) != string(newer) {
				t.Errorf("the agent's new transcript is gone from the store (%v); pass %+v, %v", err, rep.Actions, err)
			}
			noTemps(t, f.root)
		})
	}
}

// TestEmptyDirSwappedForSymlink: a project directory found empty (emptied by
// the pass, or holding only its native index) and replaced by a symlink before
// it is removed: neither the symlink nor anything it points at (another
// directory's sessions-index.json, outside the root) is removed.
func TestEmptyDirSwappedForSymlink(t *testing.T) {
	for _, withIndex := range []bool{false, true} {
		t.Run(fmt.Sprint("index=", withIndex), func(t *testing.T) {
			f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
			const id = "eeeeeeee-0000-4000-8000-000000000003"
			path := f.session("/w/empty", id, 5*24*time.Hour)
			proj := filepath.Dir(path)
			if withIndex {
				// Only a native index left behind: no session.
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			outside := t.TempDir()
			victimDir := filepath.Join(outside, "victim")
			victim := filepath.Join(victimDir, indexer.CatalogName)
			victimData := []byte(`{"not":"sessionwatch's index"}`)
			f.index()
			if withIndex {
				if err := os.WriteFile(filepath.Join(proj, indexer.CatalogName), []byte("[]\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			swapped := false
			emptyDirHook = func(dir string) {
				if dir != proj || swapped {
					return
				}
				swapped = true
				if err := os.Rename(proj, filepath.Join(outside, "moved")); err != nil {
					t.Error(err)
				}
				if err := os.MkdirAll(victimDir, 0o700); err != nil {
					t.Error(err)
				}
				if err := os.WriteFile(victim, victimData, 0o600); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(victimDir, proj); err != nil {
					t.Error(err)
				}
			}
			defer func() { emptyDirHook = nil }()
			rep, err := f.janitor().RunOnce(context.Background(), Overrides{})
			emptyDirHook = nil
			if !swapped {
				t.Fatalf("the pass never removed %s: %+v, %v", proj, rep.Actions, err)
			}
			if got, err := os.ReadFile(victim); err != nil || string(got) != string(victimData) {
				t.Errorf("%s, outside the root, was removed through the symlink put in place of %s: %q, %v", victim, proj, got, err)
			}
			if fi, err := os.Lstat(proj); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the symlink that replaced %s was removed (%v)", proj, err)
			}
			for _, a := range rep.Actions {
				if a.Kind == KindRmdir {
					t.Errorf("pass reports %s removed: %+v", a.File, a)
				}
			}
		})
	}
}

// TestParentSwappedAndBackDuringRetirement: a project directory swapped for a
// symlink to a directory outside the root just before the session's paths are
// moved aside, and swapped back just after. Nothing outside the root may be
// renamed, even for a moment, nor left under a staging name; the session ends
// exactly once in the store or in the archive.
func TestParentSwappedAndBackDuringRetirement(t *testing.T) {
	for _, action := range []string{"archive", "delete"} {
		t.Run(action, func(t *testing.T) {
			const id = "eeeeeeee-0000-4000-8000-000000000004"
			c := newSwapCase(t, action, "/w/swapback", id)
			f, path, orig, proj, moved := c.f, c.path, c.orig, c.proj, c.moved
			victimDir, victim, victimData := c.victimDir, c.victim, c.victimData
			steps := ""
			crashHook = func(step string) bool {
				switch {
				case step == "intent" && steps == "":
					steps = "swapped"
					c.swap(t)
				case step == "staged" && steps == "swapped":
					steps = "back"
					if got, err := os.ReadFile(victim); err != nil || string(got) != string(victimData) {
						t.Errorf("the file outside the root was moved from its name while the session was staged: %v", err)
					}
					if err := os.Remove(proj); err != nil {
						t.Error(err)
					}
					if err := os.Rename(moved, proj); err != nil {
						t.Error(err)
					}
				}
				return false
			}
			rep, err := f.janitor().RunOnce(context.Background(), Overrides{})
			crashHook = nil
			if steps != "back" {
				t.Fatalf("the pass did not reach both steps (%q): %+v, %v", steps, rep.Actions, err)
			}
			if got, err := os.ReadFile(victim); err != nil || string(got) != string(victimData) {
				t.Errorf("the file outside the root is not at its name after the pass: %v", err)
			}
			if ents, _ := os.ReadDir(victimDir); len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("the directory outside the root holds %v, want only the file it had", names)
			}
			inStore := exists(path)
			if inStore {
				if got, _ := os.ReadFile(path); string(got) != string(orig) {
					t.Errorf("the session in the store differs")
				}
			}
			ars, _ := ListArchives(f.archive, nil)
			switch {
			case action == "archive" && inStore == (len(ars) == 1):
				t.Errorf("the session is in the store: %v, archived %d times; want exactly once", inStore, len(ars))
			case action == "delete" && len(ars) != 0:
				t.Errorf("a delete wrote %d archives", len(ars))
			}
			noTemps(t, f.root)
		})
	}
}

// passSwappingAtIntent runs one pass of j, calling swap once the pass has
// journaled its intent (before anything moves); the test fails if the pass
// never gets there.
func passSwappingAtIntent(t *testing.T, j *Janitor, swap func()) (Report, error) {
	t.Helper()
	swapped := false
	crashHook = func(step string) bool {
		if step == "intent" && !swapped {
			swapped = true
			swap()
		}
		return false
	}
	defer func() { crashHook = nil }()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if !swapped {
		t.Fatalf("the pass never reached the intent: %+v, %v", rep.Actions, err)
	}
	return rep, err
}

// swapCase is a session due for retirement and, outside every root, a victim:
// a file of the session's name in a directory a symlink swapped in for the
// session's project directory can point at.
type swapCase struct {
	f                                    *fixture
	path, proj, moved, victimDir, victim string
	orig, victimData                     []byte
}

// newSwapCase writes the session id in project, five days old, due under a
// retention of a day with action, and indexes it.
func newSwapCase(t *testing.T, action, project, id string) *swapCase {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d","action":"`+action+`"`)
	path := f.session(project, id, 5*24*time.Hour)
	orig, _ := os.ReadFile(path)
	outside := t.TempDir()
	c := &swapCase{f: f, path: path, proj: filepath.Dir(path), moved: filepath.Join(outside, "moved"),
		victimDir: filepath.Join(outside, "victim"), orig: orig, victimData: []byte("not the session: a file outside every root\n")}
	c.victim = filepath.Join(c.victimDir, filepath.Base(path))
	f.index()
	return c
}

// swap moves the project directory aside and leaves in its place a symlink to
// the victim's directory, the victim in it (as old as the session).
func (c *swapCase) swap(t *testing.T) {
	if err := os.Rename(c.proj, c.moved); err != nil {
		t.Error(err)
	}
	if err := os.MkdirAll(c.victimDir, 0o700); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(c.victim, c.victimData, 0o600); err != nil {
		t.Error(err)
	}
	old := time.Now().Add(-10 * 24 * time.Hour)
	os.Chtimes(c.victim, old, old)
	if err := os.Symlink(c.victimDir, c.proj); err != nil {
		t.Error(err)
	}
}
