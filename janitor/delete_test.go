package janitor

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// Delete archives by default, as a pass does: restorable, journaled, with
// the catalog's summary in the archive for `list --archived`.
func TestDeleteArchivesByDefault(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	path := f.session("/proj/d", idStale, 3*day)
	writeLock(t, path+LockSuffix, deadPID(t), time.Now())
	f.index()
	j := f.janitor()
	es, _ := indexer.ReadCatalogs(f.state, nil, nil)
	en, err := indexer.ResolveID(es, idStale)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := j.Delete(context.Background(), en, DeleteOptions{})
	if err != nil || rep.Archived != 1 || rep.Deleted != 0 || len(rep.Actions) != 2 || rep.Actions[1].Archive == "" {
		t.Fatalf("Delete = %+v, %v; want the stale lock removed and the session archived", rep, err)
	}
	if exists(path) || exists(path+LockSuffix) {
		t.Errorf("Delete kept the session or its stale lock")
	}
	if es, _ := indexer.ReadCatalogs(f.state, nil, nil); len(es) != 0 {
		t.Errorf("catalog after Delete = %v", es)
	}
	ars, err := ListArchives(f.archive, nil)
	if err != nil || len(ars) != 1 {
		t.Fatalf("ListArchives = %v, %v", ars, err)
	}
	m := ars[0].Meta
	if m.ID != idStale || m.Reason != "archived by request" || m.Summary == nil || m.Summary.FirstPrompt != "hello "+idStale ||
		m.Summary.MessageCount != 1 || m.Summary.LastActiveAt == "" {
		t.Errorf("archive metadata = %+v, summary %+v", m, m.Summary)
	}
	js, _ := ReadJournal(filepath.Join(f.state, JournalName))
	if js = withoutPasses(js); len(js) != 2 || js[1].Action != KindArchive || js[1].Reason != "archived by request" || js[1].Archive != ars[0].Path {
		t.Errorf("journal = %+v", js)
	}
	if _, err := j.Restore(context.Background(), ars[0]); err != nil || !exists(path) {
		t.Errorf("Restore of a deleted session = %v, restored %v", err, exists(path))
	}
}

func TestHyperyoloDeleteArchivesByDefault(t *testing.T) {
	f, store := hyFixture(t, "")
	j := f.pinned()
	var en indexer.Entry
	for _, s := range f.group.Indexer("hyperyolo").Sessions() {
		if s.ID == "hyper_2c2c2c2c" {
			en = indexer.Entry{Source: "hyperyolo", Layout: "hyperyolo", Session: s}
		}
	}
	rep, err := j.Delete(context.Background(), en, DeleteOptions{})
	if err != nil || rep.Archived != 1 || rep.Actions[0].Archive != filepath.Join(f.archive, "hyperyolo", RecordsName) {
		t.Fatalf("Delete = %+v, %v", rep, err)
	}
	if recs, _ := indexer.ReadHyperyoloStore(store); recs["hyper_2c2c2c2c"] != nil {
		t.Errorf("record still in the store")
	}
	ars, _ := ListArchives(f.archive, nil)
	if len(ars) != 1 || ars[0].Record == nil || ars[0].Record.Reason != "archived by request" {
		t.Fatalf("archives = %+v", ars)
	}
	if _, err := j.Restore(context.Background(), ars[0]); err != nil {
		t.Errorf("Restore = %v", err)
	}
	if recs, _ := indexer.ReadHyperyoloStore(store); recs["hyper_2c2c2c2c"] == nil {
		t.Errorf("record not restored")
	}
}
