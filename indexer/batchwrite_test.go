package indexer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// outputsOf reads every file under dirs: generated outputs by path, and the
// paths of temp files apart.
func outputsOf(t *testing.T, dirs ...string) (outs map[string]string, temps []string) {
	t.Helper()
	outs = map[string]string{}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			if strings.HasPrefix(e.Name(), TempPrefix) {
				temps = append(temps, p)
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			outs[p] = string(data)
			return nil
		})
	}
	return outs, temps
}

// batchIndexer is reindex's indexer: full passes write in one batch.
func batchIndexer(t *testing.T, root, state string) *Indexer {
	ix := daemonIndexer(t, root, state)
	ix.BatchFullPasses()
	return ix
}

// A full pass makes its outputs durable in one batch: temp files first, one sync,
// then the renames. A crash between the sync and the renames (the fault below)
// leaves every output exactly as it was and only temp files besides, which the
// next pass removes; that pass then writes everything. Both ways of syncing:
// file by file for a small batch, whole filesystems (syncfs) for a large one.
func TestBatchedWritesCrashBeforeRename(t *testing.T) {
	for _, projects := range []int{2, batchSyncfsMin} {
		t.Run(fmt.Sprint(projects, "projects"), func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			var files []string
			for i := range projects {
				dir := filepath.Join(root, fmt.Sprintf("p%03d", i))
				os.MkdirAll(dir, 0o700)
				f := filepath.Join(dir, uuidA+".jsonl")
				appendFile(t, f, fmt.Sprintf(`{"type":"metadata","workdir":"/w/p%03d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", i)+msg("2026-01-01T00:00:01Z", "first"))
				files = append(files, f)
			}
			if err := batchIndexer(t, root, state).Reconcile(); err != nil {
				t.Fatal(err)
			}
			before, temps := outputsOf(t, root, state)
			if len(temps) != 0 {
				t.Fatalf("temp files after a pass: %v", temps)
			}
			for _, f := range files {
				appendFile(t, f, msg("2026-01-02T00:00:00Z", "second"))
			}

			// The crash: the temps are kept aside (hard links, as a killed process
			// would leave them), and the batch stops before its first rename.
			crashed := 0
			batchBeforeRename = func() error {
				crashed++
				_, temps := outputsOf(t, root, state)
				for _, p := range temps {
					if err := os.Link(p, p+"-crashed"); err != nil {
						t.Fatal(err)
					}
				}
				return errors.New("crash before rename")
			}
			defer func() { batchBeforeRename = func() error { return nil } }()
			if err := batchIndexer(t, root, state).Reconcile(); err == nil {
				t.Fatal("Reconcile with the fault = nil, want its error")
			}
			if crashed != 1 {
				t.Fatalf("the fault ran %d times, want once (one batch)", crashed)
			}

			after, left := outputsOf(t, root, state)
			outputs := 0
			for p, old := range before {
				if n := filepath.Base(p); n != CatalogName && n != ResumeName {
					continue // transcripts, the writer lock
				}
				outputs++
				if after[p] != old {
					t.Errorf("%s changed though no rename ran:\n%s", p, after[p])
				}
			}
			if outputs != 3*projects {
				t.Errorf("%d outputs compared, want %d", outputs, 3*projects)
			}
			if len(after) != len(before) {
				t.Errorf("%d outputs after the crash, %d before", len(after), len(before))
			}
			wantTemps := 3 * projects // catalog, resume file and native index of each
			if len(left) != wantTemps {
				t.Fatalf("%d temp files left by the crash, want %d", len(left), wantTemps)
			}
			for _, p := range left {
				if !strings.HasSuffix(p, "-crashed") {
					t.Errorf("the failed batch left its own temp %s", p)
				}
				old := processStart.Add(-time.Hour) // a crashed earlier process's
				os.Chtimes(p, old, old)
			}

			// The next pass removes the crash's temps and writes every output.
			batchBeforeRename = func() error { return nil }
			if err := batchIndexer(t, root, state).Reconcile(); err != nil {
				t.Fatal(err)
			}
			final, left := outputsOf(t, root, state)
			if len(left) != 0 {
				t.Errorf("temp files after the next pass: %v", left)
			}
			for i := range projects {
				if c := layoutCatalog(t, state, "wave", fmt.Sprintf("/w/p%03d", i)); c == nil || c.Sessions[0].MessageCount != 2 {
					t.Fatalf("catalog of p%03d after the next pass: %+v, want 2 messages", i, c)
				}
			}
			for p := range final {
				if strings.HasPrefix(p, state) {
					if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != 0o600 {
						t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
					}
				}
			}
			assertLayoutConverged(t, "wave", root, state)

			// The daemon's passes write file by file: the fault is never reached.
			for _, f := range files {
				appendFile(t, f, msg("2026-01-03T00:00:00Z", "third"))
			}
			batchBeforeRename = func() error { crashed++; return errors.New("crash before rename") }
			if err := daemonIndexer(t, root, state).Reconcile(); err != nil || crashed != 1 {
				t.Fatalf("a daemon's pass: %v, fault ran %d times, want nil and still once", err, crashed)
			}
			assertLayoutConverged(t, "wave", root, state)
		})
	}
}

// A batch whose data cannot be made durable renames nothing: its outputs fail
// (and are retried) and its temps are gone.
func TestCommitBatchSyncFailureRenamesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	os.WriteFile(path, []byte("old"), 0o600)
	tmp, err := writeTemp(path, []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	batchBeforeRename = func() error { return errors.New("EIO") }
	defer func() { batchBeforeRename = func() error { return nil } }()
	res := commitBatch([]staged{{tmp, writeResult{path: path}}})
	if len(res) != 1 || res[0].err == nil {
		t.Fatalf("results %+v, want one failure", res)
	}
	if data, _ := os.ReadFile(path); string(data) != "old" {
		t.Errorf("output %q after a failed batch, want the old content", data)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temp %s still there after the failed batch (%v)", tmp, err)
	}
}
