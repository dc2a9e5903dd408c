package usage

import (
	"os"
	"strings"
	"testing"
)

// A record the ledger lets go of after an Open from the index (a unit reset,
// or removed with nothing counted) keeps neither its name nor its body: the
// index's records stay in one slab as long as any of them is held, and a name
// cut from an arena would keep that arena (64 KiB of other units' names, all
// adopted from the indexer by now) for the daemon's life, as a body would its
// account. The records an Open replaces are cleared likewise (loadFile).
func TestLetGoRecordsHoldNothing(t *testing.T) {
	o := newOpenLedger(t)
	l := mustOpen(t, o.state)
	if !l.fromIndex {
		t.Fatal("the open did not read the index")
	}
	// The indexer hands every unit over: each live record takes its name.
	for _, u := range o.refs {
		u.Unit = strings.Clone(u.Unit)
		l.Resume(u)
	}
	// One unit with usage to reset, one with none to remove.
	var empty, reset int = -1, -1
	for i, u := range o.refs {
		r := l.units.get(u.Source, u.Unit)
		if r == nil || u.Layout != "claude" {
			continue
		}
		if len(l.accOf(r).Buckets) == 0 && empty < 0 {
			empty = i
		} else if len(l.accOf(r).Buckets) > 0 && reset < 0 {
			reset = i
		}
	}
	if reset < 0 {
		t.Fatal("no unit with usage")
	}
	if empty < 0 {
		// Make one: a unit of the index's with nothing counted.
		empty = reset + 1
		u := o.refs[empty]
		r := l.units.get(u.Source, u.Unit)
		l.file(r, -1)
		l.accOf(r).Buckets = nil
		l.file(r, 1)
	}
	ru := l.units.get(o.refs[reset].Source, o.refs[reset].Unit)
	re := l.units.get(o.refs[empty].Source, o.refs[empty].Unit)
	// Their names as the index's arena held them (Resume gave them the
	// indexer's; a let-go record must not have kept the arena's either way).
	l.Reset(o.refs[reset])
	os.Remove(o.refs[empty].Path)
	l.Remove(o.refs[empty])
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*unitRec{ru, re} {
		if r.Unit != "" || r.unitBody != nil || r.filed != nil || r.odd != nil {
			t.Errorf("a record let go still holds name %q, body %v, filing %v", r.Unit, r.unitBody != nil, r.filed != nil)
		}
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}
