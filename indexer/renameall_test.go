package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitBatchRenamesInParallel commits batches of every size around the
// parallel threshold, on 1 to 5 goroutines, some of whose renames fail (a
// directory where the output goes): every other output is in place with its
// data, its temp gone, and the results come in the order a serial commit
// returns them (the failures first, then the renamed in batch order).
func TestCommitBatchRenamesInParallel(t *testing.T) {
	defer func(n int) { renameParallel = n }(renameParallel)
	for _, size := range []int{1, batchSyncfsMin - 1, batchSyncfsMin, 131} {
		for par := 1; par <= 5; par++ {
			renameParallel = par
			root := t.TempDir()
			var batch []staged
			gone := map[string]bool{}
			for i := range size {
				dir := filepath.Join(root, fmt.Sprintf("d%d", i%7))
				path := filepath.Join(dir, fmt.Sprintf("out%d", i))
				tmp, err := writeTemp(path, []byte(path))
				if err != nil {
					t.Fatal(err)
				}
				batch = append(batch, staged{tmp: tmp, res: writeResult{path: path}})
				if i%5 == 3 {
					// A directory where the output goes: its rename fails.
					if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
						t.Fatal(err)
					}
					gone[path] = true
				}
			}
			out := commitBatch(batch)
			if len(out) != size {
				t.Fatalf("size %d, %d goroutines: %d results", size, par, len(out))
			}
			var want []string
			for _, s := range batch {
				if gone[s.res.path] {
					want = append(want, s.res.path)
				}
			}
			for _, s := range batch {
				if !gone[s.res.path] {
					want = append(want, s.res.path)
				}
			}
			for i, r := range out {
				if r.path != want[i] {
					t.Fatalf("size %d, %d goroutines: result %d is %s, want %s", size, par, i, r.path, want[i])
				}
				if gone[r.path] {
					if r.err == nil || !strings.Contains(r.err.Error(), "rename") {
						t.Fatalf("size %d: %s: err %v, want a failed rename", size, r.path, r.err)
					}
					continue
				}
				if r.err != nil {
					t.Fatalf("size %d, %d goroutines: %s: %v", size, par, r.path, r.err)
				}
				if data, err := os.ReadFile(r.path); err != nil || string(data) != r.path {
					t.Fatalf("size %d, %d goroutines: %s holds %q, %v", size, par, r.path, data, err)
				}
			}
			if temps, _ := filepath.Glob(filepath.Join(root, "*", TempPrefix+"*")); len(temps) > 0 {
				t.Fatalf("size %d, %d goroutines: temps left: %v", size, par, temps)
			}
		}
	}
}
