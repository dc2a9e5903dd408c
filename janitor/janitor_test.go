package janitor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// fixture is a temp tree with a Wave store, a state dir and an archive dir.
type fixture struct {
	t       *testing.T
	dir     string
	root    string
	state   string
	archive string
	cfg     *config.Config
	group   *indexer.Group
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newFixture writes a config whose janitor section is janitorJSON and whose only
// source is a Wave store with the given extra source keys.
func newFixture(t *testing.T, janitorJSON, sourceJSON string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, root: filepath.Join(dir, "wave"), state: filepath.Join(dir, "state"), archive: filepath.Join(dir, "archive"), logs: &syncBuffer{}}
	if err := os.MkdirAll(f.root, 0o700); err != nil {
		t.Fatal(err)
	}
	if sourceJSON != "" {
		sourceJSON = "," + sourceJSON
	}
	doc := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":%s,"sources":[{"name":"wave","layout":"wave","root":%q%s}]}`,
		f.state, f.archive, janitorJSON, f.root, sourceJSON)
	cfg, err := config.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	f.cfg = cfg
	return f
}

// index builds the group and indexes the store.
func (f *fixture) index() {
	f.t.Helper()
	g, err := indexer.NewGroup(f.cfg, nil, false)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		f.t.Fatal(err)
	}
	f.group = g
}

func (f *fixture) janitor() *Janitor {
	f.t.Helper()
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	j, err := New(f.cfg, f.group, logger, Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// session writes a Wave transcript last active `age` ago, with that mtime too,
// and returns its path.
func (f *fixture) session(workdir, id string, age time.Duration) string {
	f.t.Helper()
	dir := filepath.Join(f.root, indexer.EncodeProject(workdir))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		f.t.Fatal(err)
	}
	ts := time.Now().Add(-age)
	content := fmt.Sprintf(`{"type":"metadata","workdir":%q,"createdAt":%q}`+"\n", workdir, ts.UTC().Format(time.RFC3339)) +
		fmt.Sprintf(`{"timestamp":%q,"id":"m1","role":"user","blocks":[{"type":"text","content":"hello %s"}]}`+"\n", ts.UTC().Format(time.RFC3339Nano), id)
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chtimes(path, ts, ts); err != nil {
		f.t.Fatal(err)
	}
	return path
}

func writeLock(t *testing.T, path string, pid int, ts time.Time) {
	t.Helper()
	data := fmt.Sprintf(`{"pid":%d,"timestamp":%d,"sessionId":"x","ownerToken":"tok"}`, pid, ts.UnixMilli())
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// deadPID returns the pid of a child that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// holdOpen starts a child that holds path open until the test ends; it returns
// the child's pid.
func holdOpen(t *testing.T, path string) int {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	cmd := exec.Command("sleep", "60")
	cmd.ExtraFiles = []*os.File{fh}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The fd is inherited at fork; make sure /proc shows it before going on.
	waitFor(t, 5*time.Second, "child holding the file", func() bool {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", cmd.Process.Pid))
		return err == nil && target == path
	})
	return cmd.Process.Pid
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hashTree hashes every path under dirs: name, type, mode, size, mtime, content
// (symlinks: their target).
func hashTree(t *testing.T, dirs ...string) string {
	t.Helper()
	h := sha256.New()
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(h, "%s err\n", p)
				return nil
			}
			fi, _ := e.Info()
			fmt.Fprintf(h, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				fmt.Fprintln(h, target)
			case fi.Mode().IsRegular():
				data, _ := os.ReadFile(p)
				h.Write(data)
			}
			return nil
		})
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func ids(as []Action, kind string) []string {
	var out []string
	for _, a := range as {
		if a.Kind == kind {
			out = append(out, a.ID)
		}
	}
	sort.Strings(out)
	return out
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

const (
	idOld      = "00000000-0000-4000-8000-000000000001"
	idLive     = "00000000-0000-4000-8000-000000000002"
	idStale    = "00000000-0000-4000-8000-000000000003"
	idOpen     = "00000000-0000-4000-8000-000000000004"
	idRecent   = "00000000-0000-4000-8000-000000000005"
	idLink     = "00000000-0000-4000-8000-000000000006"
	idEmptied  = "00000000-0000-4000-8000-000000000007"
	idWithMem  = "00000000-0000-4000-8000-000000000008"
	idFreshOld = "00000000-0000-4000-8000-000000000009"
)

// hostileStore builds the store of the executor tests; it returns the paths by id.
func hostileStore(t *testing.T, f *fixture) map[string]string {
	old := 20 * day
	p := map[string]string{}
	p[idOld] = f.session("/proj/a", idOld, old)
	p[idLive] = f.session("/proj/a", idLive, old)
	writeLock(t, p[idLive]+LockSuffix, os.Getpid(), time.Now())
	p[idStale] = f.session("/proj/a", idStale, old)
	writeLock(t, p[idStale]+LockSuffix, deadPID(t), time.Now())
	p[idOpen] = f.session("/proj/a", idOpen, old)
	p[idRecent] = f.session("/proj/a", idRecent, time.Minute)
	p[idFreshOld] = f.session("/proj/a", idFreshOld, old) // old content, touched now
	os.Chtimes(p[idFreshOld], time.Now(), time.Now())
	p[idLink] = f.session("/proj/a", idLink, old)
	p[idEmptied] = f.session("/proj/b", idEmptied, old)
	p[idWithMem] = f.session("/proj/c", idWithMem, old)
	mem := filepath.Join(filepath.Dir(p[idWithMem]), "memory")
	os.MkdirAll(mem, 0o700)
	os.WriteFile(filepath.Join(mem, "MEMORY.md"), []byte("remember"), 0o600)
	// An empty project dir, long untouched.
	empty := filepath.Join(f.root, "proj-empty")
	os.MkdirAll(empty, 0o700)
	os.Chtimes(empty, time.Now().Add(-old), time.Now().Add(-old))
	p["empty"] = empty
	// An empty dir made just now (an agent's fresh mkdir) must stay.
	fresh := filepath.Join(f.root, "proj-fresh")
	os.MkdirAll(fresh, 0o700)
	p["fresh"] = fresh

	f.index()
	// Replace one indexed transcript by a symlink to a file outside the root
	// (the catalog still lists it, as it would between two events).
	outside := filepath.Join(f.dir, "outside.jsonl")
	data, _ := os.ReadFile(p[idLink])
	os.WriteFile(outside, data, 0o600)
	os.Chtimes(outside, time.Now().Add(-old), time.Now().Add(-old))
	os.Remove(p[idLink])
	if err := os.Symlink(outside, p[idLink]); err != nil {
		t.Fatal(err)
	}
	p["outside"] = outside
	return p
}

func TestPassRetiresOnlyWhatIsSafe(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	p := hostileStore(t, f)
	openPID := holdOpen(t, p[idOpen])
	j := f.janitor()

	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	if got, want := ids(rep.Actions, KindArchive), []string{idOld, idStale, idEmptied, idWithMem}; fmt.Sprint(got) != fmt.Sprint(sorted(want)) {
		t.Errorf("archived %v, want %v", got, sorted(want))
	}
	if got, want := ids(rep.Actions, KindSkipInUse), sorted([]string{idLive, idOpen}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("skipped in use %v, want %v; actions: %+v", got, want, rep.Actions)
	}
	if got := ids(rep.Actions, KindSkip); fmt.Sprint(got) != fmt.Sprint([]string{idLink}) {
		t.Errorf("skipped %v, want the symlink %s", got, idLink)
	}
	for _, a := range rep.Actions {
		switch a.ID {
		case idLive:
			if a.PID != os.Getpid() || !strings.Contains(a.Reason, "lock") {
				t.Errorf("live lock skip = %+v, want pid %d", a, os.Getpid())
			}
		case idOpen:
			if a.PID != openPID || !strings.Contains(a.Reason, "open") {
				t.Errorf("open file skip = %+v, want pid %d", a, openPID)
			}
		}
	}
	if rep.Retired != 4 || rep.Archived != 4 || rep.SkippedInUse != 2 || rep.BytesFreed <= 0 {
		t.Errorf("report counts = %+v", rep)
	}

	// On disk: retired files gone, the rest untouched.
	for _, id := range []string{idOld, idStale, idEmptied, idWithMem} {
		if exists(p[id]) {
			t.Errorf("%s still exists after archiving", p[id])
		}
	}
	for _, id := range []string{idLive, idOpen, idRecent, idFreshOld} {
		if !exists(p[id]) {
			t.Errorf("%s was removed", p[id])
		}
	}
	if !exists(p[idLive] + LockSuffix) {
		t.Errorf("live lock removed")
	}
	if exists(p[idStale] + LockSuffix) {
		t.Errorf("stale lock of the retired session kept")
	}
	if fi, err := os.Lstat(p[idLink]); err != nil || fi.Mode()&fs.ModeSymlink == 0 || !exists(p["outside"]) {
		t.Errorf("symlink or its target touched: %v", err)
	}
	bDir, cDir := filepath.Dir(p[idEmptied]), filepath.Dir(p[idWithMem])
	if exists(bDir) {
		t.Errorf("emptied project dir %s kept", bDir)
	}
	if !exists(filepath.Join(cDir, "memory", "MEMORY.md")) {
		t.Errorf("memory/ of %s touched", cDir)
	}
	if exists(p["empty"]) || !exists(p["fresh"]) {
		t.Errorf("empty dir removed=%v (want true), fresh dir kept=%v (want true)", !exists(p["empty"]), exists(p["fresh"]))
	}
	if !exists(f.root) {
		t.Fatalf("root removed")
	}

	// Archives: one per retired session, in <archive>/<source>/<project-key>/.
	for id, project := range map[string]string{idOld: "/proj/a", idStale: "/proj/a", idEmptied: "/proj/b", idWithMem: "/proj/c"} {
		a := filepath.Join(f.archive, "wave", indexer.ProjectKey(project), id+".jsonl.gz")
		ar, err := ReadArchive(a)
		if err != nil || ar.Meta.ID != id || ar.Meta.File != p[id] || ar.Meta.Project != project {
			t.Errorf("archive %s: %+v, %v", a, ar.Meta, err)
		}
		if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("archive %s mode: %v", a, err)
		}
	}

	// Catalog and native index no longer list the retired sessions.
	entries, _ := indexer.ReadCatalogs(f.state, nil, nil)
	var listed []string
	for _, e := range entries {
		listed = append(listed, e.ID)
	}
	sort.Strings(listed)
	if want := sorted([]string{idLive, idOpen, idRecent, idFreshOld, idLink}); fmt.Sprint(listed) != fmt.Sprint(want) {
		t.Errorf("catalog lists %v, want %v", listed, want)
	}
	native, _ := os.ReadFile(filepath.Join(filepath.Dir(p[idOld]), indexer.CatalogName))
	if bytes.Contains(native, []byte(idOld)) || !bytes.Contains(native, []byte(idLive)) {
		t.Errorf("native index not updated:\n%s", native)
	}

	// Journal: one parseable line per action, naming file, bytes and reason.
	js, err := ReadJournal(filepath.Join(f.state, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range withoutPasses(js) {
		kinds[e.Action]++
		if e.Time == "" || e.Source != "wave" || e.Reason == "" || e.File == "" {
			t.Errorf("journal entry %+v lacks a field", e)
		}
		if e.Action == KindArchive && (e.Bytes <= 0 || e.Archive == "") {
			t.Errorf("journal archive entry %+v lacks bytes or archive", e)
		}
	}
	if kinds[KindArchive] != 4 || kinds[KindRemoveLock] != 1 || kinds[KindSkipInUse] != 2 || kinds[KindSkip] != 0 || kinds[KindRmdir] != 2 {
		t.Errorf("journal actions = %v", kinds)
	}
	// Every action's lines carry an actionId, a UUID (SPEC §5.6): one action's
	// intent and completion share it, no two actions do; the line ending the
	// pass has one of its own.
	owner := map[string]string{}
	for _, e := range js {
		if _, err := uuid.Parse(e.ActionID); err != nil || len(e.ActionID) != 36 {
			t.Errorf("journal %s line of %s has actionId %q, want a UUID", e.Action, e.File, e.ActionID)
			continue
		}
		what := e.Action + " " + e.File
		if o, ok := owner[e.ActionID]; ok && o != what {
			t.Errorf("actionId %s is shared by %q and %q", e.ActionID, o, what)
		}
		owner[e.ActionID] = what
	}

	// A second pass changes nothing and says so.
	rep2, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil || rep2.Retired != 0 || len(rep2.Errors) > 0 {
		t.Errorf("second pass = %+v, %v", rep2, err)
	}
	if last, ok := j.LastReport(); !ok || !last.Time.Equal(rep2.Time) {
		t.Errorf("LastReport = %+v, %v", last, ok)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestDryRunChangesNothing(t *testing.T) {
	for _, how := range []string{"config", "override"} {
		t.Run(how, func(t *testing.T) {
			jcfg := `{"run_at_start":false,"schedule":"off"}`
			if how == "config" {
				jcfg = `{"run_at_start":false,"schedule":"off","dry_run":true,"archive_retention":"1d"}`
			}
			f := newFixture(t, jcfg, `"max_sessions":1,"warn_count":1`)
			p := hostileStore(t, f)
			holdOpen(t, p[idOpen])
			before := hashTree(t, f.dir)
			j := f.janitor()
			rep, err := j.RunOnce(context.Background(), Overrides{DryRun: how == "override"})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.DryRun || rep.Retired == 0 || len(rep.Warnings) == 0 {
				t.Errorf("dry run report = %+v, want retirements and warnings reported", rep)
			}
			var rmdir, locks int
			for _, a := range rep.Actions {
				switch a.Kind {
				case KindRmdir:
					rmdir++
				case KindRemoveLock:
					locks++
					// The size the real run reports: the lock file's.
					if fi, err := os.Lstat(a.File); err != nil || a.Bytes != fi.Size() || a.Bytes == 0 {
						t.Errorf("dry run remove-lock %s reports %d bytes, want the file's size (%v)", a.File, a.Bytes, err)
					}
				}
			}
			if rmdir != 2 || locks != 1 {
				t.Errorf("dry run reported %d rmdir and %d remove-lock, want 2 and 1: %+v", rmdir, locks, rep.Actions)
			}
			if after := hashTree(t, f.dir); after != before {
				t.Errorf("dry run changed the tree")
			}
			for _, p := range []string{filepath.Join(f.state, JournalName), f.archive, filepath.Join(f.state, PassLockName)} {
				if exists(p) {
					t.Errorf("dry run created %s", p)
				}
			}
		})
	}
}

func TestArchiveRestoreRoundTrip(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	path := f.session("/proj/rt", idOld, 30*day)
	os.Chmod(path, 0o640)
	want, _ := os.ReadFile(path)
	fiBefore, _ := os.Lstat(path)
	f.index()
	j := f.janitor()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil || rep.Archived != 1 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	if exists(path) || exists(filepath.Dir(path)) {
		t.Fatalf("original or its emptied dir still there")
	}
	ars, err := ListArchives(f.archive, nil)
	if err != nil || len(ars) != 1 {
		t.Fatalf("ListArchives = %v, %v", ars, err)
	}
	ar := ars[0]
	if ar.Meta.ID != idOld || ar.Meta.Format != FormatGzip || ar.Meta.Layout != "wave" || ar.Meta.Type != indexer.TypeMain {
		t.Errorf("meta = %+v", ar.Meta)
	}

	// A file in the way: refused, nothing created, archive kept.
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("someone else"), 0o600)
	if _, err := j.Restore(context.Background(), ar); !errors.Is(err, ErrExists) {
		t.Fatalf("Restore over a file = %v, want ErrExists", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "someone else" || !exists(ar.Path) {
		t.Fatalf("refused restore touched the file or the archive")
	}
	os.Remove(path)

	rrep, err := j.Restore(context.Background(), ar)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fiAfter, _ := os.Lstat(path)
	if !bytes.Equal(got, want) || !fiAfter.ModTime().Equal(fiBefore.ModTime()) || fiAfter.Mode() != fiBefore.Mode() {
		t.Errorf("restored file differs: mtime %v vs %v, mode %v vs %v, same bytes %v",
			fiAfter.ModTime(), fiBefore.ModTime(), fiAfter.Mode(), fiBefore.Mode(), bytes.Equal(got, want))
	}
	if exists(ar.Path) {
		t.Errorf("archive kept after restore")
	}
	if len(rrep.Actions) != 1 || rrep.Actions[0].Kind != KindRestore || rrep.Actions[0].Bytes != int64(len(want)) {
		t.Errorf("restore report = %+v", rrep)
	}
	entries, _ := indexer.ReadCatalogs(f.state, nil, nil)
	if len(entries) != 1 || entries[0].ID != idOld {
		t.Errorf("catalog after restore = %v", entries)
	}
	// The restore counts as activity: the next pass keeps it.
	if rep, _ := j.RunOnce(context.Background(), Overrides{}); rep.Retired != 0 {
		t.Errorf("pass after restore retired %d", rep.Retired)
	}
	js, _ := ReadJournal(filepath.Join(f.state, JournalName))
	js = withoutPasses(js)
	if last := js[len(js)-1]; last.Action != KindRestore || last.ID != idOld || last.File != path {
		t.Errorf("last journal line = %+v", last)
	}
}

func TestArchiveRetention(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off","archive_retention":"7d"}`, "")
	f.session("/proj/x", idOld, 30*day)
	f.index()
	j := f.janitor()
	if rep, _ := j.RunOnce(context.Background(), Overrides{}); rep.Archived != 1 {
		t.Fatalf("pass = %+v", rep)
	}
	ars, _ := ListArchives(f.archive, nil)
	// A fresh archive is kept even though the session itself is 30 days old.
	if rep, _ := j.RunOnce(context.Background(), Overrides{}); len(ids(rep.Actions, KindExpireArchive)) != 0 || !exists(ars[0].Path) {
		t.Fatalf("fresh archive expired")
	}
	old := time.Now().Add(-8 * day)
	os.Chtimes(ars[0].Path, old, old)
	rep, _ := j.RunOnce(context.Background(), Overrides{})
	if got := ids(rep.Actions, KindExpireArchive); fmt.Sprint(got) != fmt.Sprint([]string{idOld}) || exists(ars[0].Path) {
		t.Errorf("expire = %v, archive exists %v", got, exists(ars[0].Path))
	}
	if exists(filepath.Dir(ars[0].Path)) {
		t.Errorf("empty archive dir kept")
	}
}

func TestDeleteRefusesInUse(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	live := f.session("/proj/d", idLive, 3*day)
	writeLock(t, live+LockSuffix, os.Getpid(), time.Now())
	open := f.session("/proj/d", idOpen, 3*day)
	recent := f.session("/proj/d", idRecent, time.Minute)
	stale := f.session("/proj/d", idStale, 3*day)
	writeLock(t, stale+LockSuffix, deadPID(t), time.Now())
	f.index()
	openPID := holdOpen(t, open)
	j := f.janitor()
	entry := func(id string) indexer.Entry {
		es, _ := indexer.ReadCatalogs(f.state, nil, nil)
		e, err := indexer.ResolveID(es, id)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx := context.Background()

	var re *RefusedError
	for _, force := range []bool{false, true} {
		_, err := j.Delete(ctx, entry(idLive), DeleteOptions{Force: force})
		if !errors.As(err, &re) || re.PID != os.Getpid() || !re.Hard || !strings.Contains(err.Error(), fmt.Sprintf("in use by pid %d", os.Getpid())) {
			t.Errorf("Delete(live, force=%v) = %v, want refused naming pid %d", force, err, os.Getpid())
		}
	}
	if _, err := j.Delete(ctx, entry(idOpen), DeleteOptions{}); !errors.As(err, &re) || re.PID != openPID || re.Hard {
		t.Errorf("Delete(open) = %v, want a soft refusal naming pid %d", err, openPID)
	}
	if _, err := j.Delete(ctx, entry(idRecent), DeleteOptions{}); !errors.As(err, &re) || !strings.Contains(err.Error(), "active_grace") {
		t.Errorf("Delete(recent) = %v, want refused for active_grace", err)
	}
	if !exists(live) || !exists(open) || !exists(recent) {
		t.Fatalf("a refused delete removed something")
	}
	// Dry run: reports, removes nothing.
	if rep, err := j.Delete(ctx, entry(idStale), DeleteOptions{DryRun: true}); err != nil || len(rep.Actions) != 2 || !exists(stale) || !exists(stale+LockSuffix) {
		t.Errorf("Delete(stale, dry) = %+v, %v", rep, err)
	}
	// A stale lock is removed first, then the session.
	rep, err := j.Delete(ctx, entry(idStale), DeleteOptions{Permanent: true})
	if err != nil || len(rep.Actions) != 2 || rep.Actions[0].Kind != KindRemoveLock || rep.Actions[1].Kind != KindDelete {
		t.Fatalf("Delete(stale) = %+v, %v", rep, err)
	}
	if exists(stale) || exists(stale+LockSuffix) {
		t.Errorf("stale session or its lock kept")
	}
	// --force overrides the softer protections.
	for _, id := range []string{idOpen, idRecent} {
		rep, err := j.Delete(ctx, entry(id), DeleteOptions{Force: true, Permanent: true})
		if err != nil || rep.Deleted != 1 || !strings.Contains(rep.Actions[0].Reason, "--force") {
			t.Errorf("Delete(%s, force) = %+v, %v", id, rep, err)
		}
	}
	if exists(open) || exists(recent) {
		t.Errorf("forced delete kept files")
	}
	es, _ := indexer.ReadCatalogs(f.state, nil, nil)
	if len(es) != 1 || es[0].ID != idLive {
		t.Errorf("catalog after deletes = %v", es)
	}
	js, _ := ReadJournal(filepath.Join(f.state, JournalName))
	if len(js) != 4 {
		t.Errorf("journal has %d lines, want 4 (remove-lock + 3 deletes): %+v", len(js), js)
	}
}

func TestCronPanicDoesNotBlockNextRun(t *testing.T) {
	var runs atomic.Int32
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	c, err := newCron("@every 1s", logger, func() {
		if runs.Add(1) == 1 {
			panic("first run fails")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { runCron(ctx, c); close(done) }()
	waitFor(t, 10*time.Second, "a second run after the panic", func() bool { return runs.Load() >= 2 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cron did not stop")
	}
	if out := logs.String(); !strings.Contains(out, "first run fails") || !strings.Contains(out, "level=ERROR") {
		t.Errorf("panic not logged at ERROR:\n%s", out)
	}
	for _, bad := range []string{"not a spec", "@every nope", "TZ=x"} {
		if _, err := newCron(bad, logger, func() {}); err == nil {
			t.Errorf("newCron(%q) accepted", bad)
		}
	}
}

func TestRunAtStartAndSchedule(t *testing.T) {
	f := newFixture(t, `{"run_at_start":true,"schedule":"@every 1s"}`, "")
	path := f.session("/proj/s", idOld, 30*day)
	f.index()
	var passes atomic.Int32
	j, err := New(f.cfg, f.group, nil, Options{OnPass: func(Report) { passes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	waitFor(t, 10*time.Second, "the start pass to archive the session", func() bool { return !exists(path) })
	waitFor(t, 10*time.Second, "a scheduled pass", func() bool { return passes.Load() >= 2 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if _, err := New(&config.Config{Janitor: config.Janitor{Schedule: "bogus"}}, f.group, nil, Options{}); err == nil {
		t.Errorf("New accepted a bad schedule")
	}
}

func TestPassesAreSerialized(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	for i := 0; i < 20; i++ {
		f.session(fmt.Sprintf("/proj/s%d", i%3), fmt.Sprintf("00000000-0000-4000-8000-%012d", i), 30*day)
	}
	f.index()
	j := f.janitor()
	var wg sync.WaitGroup
	reps := make([]Report, 4)
	for i := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := j.RunOnce(context.Background(), Overrides{})
			if err != nil {
				t.Error(err)
			}
			reps[i] = r
		}()
	}
	wg.Wait()
	total := 0
	for _, r := range reps {
		total += r.Archived
		if len(r.Errors) > 0 {
			t.Errorf("errors: %v", r.Errors)
		}
	}
	if total != 20 {
		t.Errorf("passes archived %d sessions in total, want each of the 20 exactly once", total)
	}
	ars, _ := ListArchives(f.archive, nil)
	if len(ars) != 20 {
		t.Errorf("%d archives, want 20", len(ars))
	}
}

func TestLiveCheckerReadsLocks(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	live := f.session("/proj/l", idLive, day)
	writeLock(t, live+LockSuffix, os.Getpid(), time.Now())
	f.session("/proj/l", idOld, day)
	f.index()
	es, _ := indexer.ReadCatalogs(f.state, nil, nil)
	c := NewLiveChecker(f.cfg)
	for _, e := range es {
		h := c.InUse(e)
		if (e.ID == idLive) != h.Held() || (h.Held() && h.PID != os.Getpid()) {
			t.Errorf("InUse(%s) = %+v", e.ID, h)
		}
	}
}

func TestReportJSON(t *testing.T) {
	r := Report{Time: planNow, Actions: []Action{{Kind: KindArchive, Source: "wave", ID: "x", File: "/f", Bytes: 3, Reason: "r"}}}
	data, _ := json.Marshal(r)
	for _, k := range []string{`"retired"`, `"archived"`, `"deleted"`, `"skippedInUse"`, `"bytesFreed"`, `"warnings"`, `"action":"archive"`} {
		if !bytes.Contains(data, []byte(k)) {
			t.Errorf("report JSON lacks %s: %s", k, data)
		}
	}
}

func parseConfig(doc string) (*config.Config, error) { return config.Parse(strings.NewReader(doc)) }

// TestClaudeLiveRegistryProtects: a Claude Code session listed in
// ~/.claude/sessions/<pid>.json by a live pid is never retired (a hard hold),
// while one whose registered pid is dead is.
func TestClaudeLiveRegistryProtects(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, ".claude", "projects")
	reg := filepath.Join(dir, ".claude", "sessions")
	proj := filepath.Join(root, "-work-c")
	os.MkdirAll(proj, 0o700)
	os.MkdirAll(reg, 0o700)
	old := time.Now().Add(-40 * day)
	write := func(id string) string {
		p := filepath.Join(proj, id+".jsonl")
		line := fmt.Sprintf(`{"type":"user","uuid":"u1","sessionId":%q,"timestamp":%q,"cwd":"/work/c","message":{"role":"user","content":"hi"}}`+"\n", id, old.UTC().Format(time.RFC3339))
		os.WriteFile(p, []byte(line), 0o600)
		os.Chtimes(p, old, old)
		return p
	}
	liveFile, deadFile := write(idLive), write(idOld)
	os.WriteFile(filepath.Join(reg, fmt.Sprintf("%d.json", os.Getpid())), []byte(fmt.Sprintf(`{"pid":%d,"sessionId":%q}`, os.Getpid(), idLive)), 0o600)
	dead := deadPID(t)
	os.WriteFile(filepath.Join(reg, fmt.Sprintf("%d.json", dead)), []byte(fmt.Sprintf(`{"pid":%d,"sessionId":%q}`, dead, idOld)), 0o600)

	cfg, err := parseConfig(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[{"name":"claude","layout":"claude","root":%q}]}`,
		filepath.Join(dir, "state"), filepath.Join(dir, "archive"), root))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: dir, cfg: cfg, logs: &syncBuffer{}}
	f.index()
	j := f.janitor()
	// Claude's retention is off by default: --older-than asks for this pass.
	rep, err := j.RunOnce(context.Background(), Overrides{OlderThan: 30 * day})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Actions, KindSkipInUse); fmt.Sprint(got) != fmt.Sprint([]string{idLive}) {
		t.Errorf("skipped in use %v, want %s; actions %+v", got, idLive, rep.Actions)
	}
	if got := ids(rep.Actions, KindArchive); fmt.Sprint(got) != fmt.Sprint([]string{idOld}) {
		t.Errorf("archived %v, want %s", got, idOld)
	}
	if !exists(liveFile) || exists(deadFile) {
		t.Errorf("live file exists %v (want true), dead file exists %v (want false)", exists(liveFile), exists(deadFile))
	}
	es, _ := indexer.ReadCatalogs(cfg.StateDir, nil, nil)
	if len(es) != 1 {
		t.Fatalf("catalog = %v", es)
	}
	if h := NewLiveChecker(cfg).InUse(es[0]); !h.Hard || h.PID != os.Getpid() {
		t.Errorf("LiveChecker.InUse(live claude session) = %+v", h)
	}
	// delete --force never overrides a live registered session.
	var re *RefusedError
	if _, err := j.Delete(context.Background(), es[0], DeleteOptions{Force: true}); !errors.As(err, &re) || !re.Hard || re.PID != os.Getpid() {
		t.Errorf("Delete(live claude session, force) = %v", err)
	}
}

// TestMogziDirectorySessions: a session that is a directory is archived whole
// as one .tar.gz and restored byte for byte; a corrupt one is only retired by
// --invalid-only, and then archived.
func TestMogziDirectorySessions(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "chats")
	cfg, err := parseConfig(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[{"name":"mogzi","layout":"mogzi","root":%q}]}`,
		filepath.Join(dir, "state"), filepath.Join(dir, "archive"), root))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * day)
	mk := func(id, content string) string {
		d := filepath.Join(root, id)
		os.MkdirAll(filepath.Join(d, "attachments"), 0o700)
		os.WriteFile(filepath.Join(d, "session.json"), []byte(content), 0o600)
		os.WriteFile(filepath.Join(d, "attachments", "pic.png"), []byte("\x89PNG data"), 0o600)
		for _, p := range []string{filepath.Join(d, "session.json"), filepath.Join(d, "attachments", "pic.png"), filepath.Join(d, "attachments"), d} {
			os.Chtimes(p, old, old)
		}
		return d
	}
	good := mk(idOld, fmt.Sprintf(`{"id":%q,"name":"t","createdAt":%q,"lastModifiedAt":%q,"history":[{"role":"user","content":"hi"}]}`, idOld, old.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339)))
	bad := mk(idStale, `{"id": broken`)
	before := snapshot(t, root)
	f := &fixture{t: t, dir: dir, cfg: cfg, logs: &syncBuffer{}}
	f.index()
	j := f.janitor()

	rep, err := j.RunOnce(context.Background(), Overrides{OlderThan: 30 * day})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	if got := ids(rep.Actions, KindArchive); fmt.Sprint(got) != fmt.Sprint([]string{idOld}) || exists(good) || !exists(bad) {
		t.Fatalf("archived %v; good dir exists %v, corrupt dir exists %v", got, exists(good), exists(bad))
	}
	if got := ids(rep.Actions, KindSkip); fmt.Sprint(got) != fmt.Sprint([]string{idStale}) {
		t.Errorf("corrupt session not reported as skipped: %v", got)
	}
	rep, err = j.RunOnce(context.Background(), Overrides{InvalidOnly: true})
	if err != nil || fmt.Sprint(ids(rep.Actions, KindArchive)) != fmt.Sprint([]string{idStale}) || exists(bad) {
		t.Fatalf("--invalid-only pass = %+v, %v", rep.Actions, err)
	}
	ars, _ := ListArchives(cfg.ArchiveDir, nil)
	if len(ars) != 2 {
		t.Fatalf("%d archives, want 2", len(ars))
	}
	for _, ar := range ars {
		if ar.Meta.Format != FormatTar || !strings.HasSuffix(ar.Path, ".tar.gz") {
			t.Errorf("archive %s format %s", ar.Path, ar.Meta.Format)
		}
		if _, err := j.Restore(context.Background(), ar); err != nil {
			t.Fatal(err)
		}
	}
	after := snapshot(t, root)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after restore = %q, want %q", k, after[k], v)
		}
	}
	if es, _ := indexer.ReadCatalogs(cfg.StateDir, nil, nil); len(es) != 2 {
		t.Errorf("catalog after restore lists %d sessions, want 2", len(es))
	}
}
