package indexer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// failLog is a callLog whose Sync fails with err, if set.
type failLog struct {
	callLog
	err error
}

func (f *failLog) Sync(ss []SessionRef) error {
	f.callLog.Sync(ss)
	return f.err
}

// TestBatchedFlushFailedSyncKeepsRemovals: a batched flush whose consumer
// fails to sync removes no catalog (the consumer has not made the units'
// removal durable), and the removal is not lost: once the consumer syncs
// again, the emptied project's catalog goes.
func TestBatchedFlushFailedSyncKeepsRemovals(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	for i := range 2 {
		os.MkdirAll(filepath.Join(root, fmt.Sprintf("p%d", i)), 0o700)
		appendFile(t, filepath.Join(root, fmt.Sprintf("p%d", i), uuidA+".jsonl"),
			fmt.Sprintf(`{"type":"metadata","workdir":"/w/p%d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", i))
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	ix.BatchFullPasses()
	f := &failLog{}
	ix.consumers = append(ix.consumers, f)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(state, "index", "wave", ProjectKey("/w/p1"), CatalogName)
	if _, err := os.Stat(cat); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(root, "p1"))
	f.err = errors.New("disk full")
	if err := ix.Reconcile(); err == nil {
		t.Fatal("Reconcile with a failing consumer succeeded")
	}
	if _, err := os.Stat(cat); err != nil {
		t.Fatalf("the emptied project's catalog was removed before its consumer synced: %v", err)
	}
	f.err = nil
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cat); err == nil {
		t.Fatal("the emptied project's catalog is still in place after the consumer synced")
	}
}
