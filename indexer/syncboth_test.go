package indexer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// stagedLog is a callLog whose Sync waits (up to a deadline) until the flush
// has staged a catalog's temp file, and records whether any catalog was in
// place meanwhile.
type stagedLog struct {
	callLog
	state  string
	fail   error
	staged bool // a temp file was staged while Sync ran
	placed bool // a catalog was in place while Sync ran
}

func (s *stagedLog) Sync(ss []SessionRef) error {
	deadline := time.Now().Add(10 * time.Second)
	for !s.staged && time.Now().Before(deadline) {
		filepath.WalkDir(filepath.Join(s.state, "index"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), TempPrefix) {
				s.staged = true
			}
			if err == nil && d.Name() == CatalogName {
				s.placed = true
			}
			return nil
		})
		time.Sleep(time.Millisecond)
	}
	s.callLog.Sync(ss)
	return s.fail
}

// TestBatchedFlushRendersWhileConsumersSync: a batched flush (reindex) stages
// its catalogs while the consumers sync, and puts none in place before they
// are done (a flush that synced first stages nothing meanwhile). When a
// consumer fails, no catalog is put in place, its temp files are gone, and the
// consumer's error is the pass's; the next flush writes them.
func TestBatchedFlushRendersWhileConsumersSync(t *testing.T) {
	for _, fail := range []error{nil, errors.New("disk full")} {
		t.Run(fmt.Sprint(fail), func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			for i := range 3 {
				os.MkdirAll(filepath.Join(root, fmt.Sprintf("p%d", i)), 0o700)
				appendFile(t, filepath.Join(root, fmt.Sprintf("p%d", i), uuidA+".jsonl"),
					fmt.Sprintf(`{"type":"metadata","workdir":"/w/p%d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", i))
			}
			ix := newLayoutIndexer(t, "wave", root, state, false)
			ix.BatchFullPasses()
			s := &stagedLog{state: state, fail: fail}
			ix.consumers = append(ix.consumers, s)
			err := ix.Reconcile()
			if !s.staged {
				t.Fatal("no catalog was staged while the consumer synced")
			}
			if s.placed {
				t.Fatal("a catalog was in place before the consumer had synced")
			}
			cats, _ := filepath.Glob(filepath.Join(state, "index", "*", "*", CatalogName))
			temps, _ := filepath.Glob(filepath.Join(state, "index", "*", "*", TempPrefix+"*"))
			if fail == nil {
				if err != nil || len(cats) != 3 || len(temps) != 0 {
					t.Fatalf("Reconcile = %v, catalogs %v, temp files %v", err, cats, temps)
				}
				return
			}
			if err == nil || err.Error() != "sync consumers: disk full" {
				t.Fatalf("Reconcile with a failing consumer = %v, want sync consumers: disk full", err)
			}
			if len(cats) != 0 || len(temps) != 0 {
				t.Fatalf("after a failed sync: catalogs %v, temp files %v", cats, temps)
			}
			s.fail = nil
			if err := ix.Update(nil); err != nil {
				t.Fatal(err)
			}
			if c := layoutCatalog(t, state, "wave", "/w/p1"); len(c.Sessions) != 1 {
				t.Errorf("after the consumer recovered the catalog holds %d sessions, want 1", len(c.Sessions))
			}
			// The sessions of the failed flush were handed to the consumer again.
			if last := s.calls[len(s.calls)-1]; !strings.HasPrefix(last, "sync ") || strings.Count(last, "@/w/p") != 3 {
				t.Errorf("last call %q, want a sync of the 3 sessions", last)
			}
		})
	}
}
