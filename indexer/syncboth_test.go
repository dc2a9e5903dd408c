package indexer

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// meetLog is a callLog whose Sync waits (up to a deadline) until every consumer
// of its group has entered Sync, then fails with its err, if any.
type meetLog struct {
	callLog
	in, of *atomic.Int32
	met    bool
	err    error
}

func (m *meetLog) Sync(ss []SessionRef) error {
	m.in.Add(1)
	deadline := time.Now().Add(10 * time.Second)
	for m.in.Load() < m.of.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m.met = m.in.Load() >= m.of.Load()
	m.callLog.Sync(ss)
	return m.err
}

// TestConsumersSyncAtOnce: a flush syncs its consumers at once, each on its own
// goroutine (a flush that synced them one after another never has two in Sync
// together); the error is the first failing consumer's, in their order, and no
// catalog is written when any failed.
func TestConsumersSyncAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		errs      [2]error
		wantErr   error
		wantWrite bool
	}{
		{"both synced", [2]error{nil, nil}, nil, true},
		{"first fails", [2]error{errors.New("first: disk full"), errors.New("second: disk full")}, errors.New("first: disk full"), false},
		{"second fails", [2]error{nil, errors.New("second: disk full")}, errors.New("second: disk full"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			os.MkdirAll(filepath.Join(root, "p"), 0o700)
			appendFile(t, filepath.Join(root, "p", uuidA+".jsonl"), `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}`+"\n")
			ix := newLayoutIndexer(t, "wave", root, state, false)
			var in, of atomic.Int32
			of.Store(2)
			a := &meetLog{in: &in, of: &of, err: tc.errs[0]}
			b := &meetLog{in: &in, of: &of, err: tc.errs[1]}
			ix.consumers = append(ix.consumers, a, b)
			err := ix.Reconcile()
			if !a.met || !b.met {
				t.Fatal("the consumers' Syncs ran one after another")
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatal(err)
			case tc.wantErr != nil && (err == nil || err.Error() != "sync consumers: "+tc.wantErr.Error()):
				t.Fatalf("Reconcile = %v, want sync consumers: %v", err, tc.wantErr)
			}
			cats, _ := filepath.Glob(filepath.Join(state, "index", "*", "*", CatalogName))
			if wrote := len(cats) > 0; wrote != tc.wantWrite {
				t.Fatalf("catalogs written: %v, want %v", cats, tc.wantWrite)
			}
		})
	}
}
