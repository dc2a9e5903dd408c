package usage

import (
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// FuzzAppendKeyFast: for any strings and numbers in a unit's record (live and
// retired), appendKeyFast writes exactly encoding/json's line (appendKeyJSON's)
// or leaves it to it, with the buffer as given.
func FuzzAppendKeyFast(f *testing.F) {
	f.Add("claude", "p/a.jsonl", "claude", "/r/p/a.jsonl", "fp", "sid", "main", "/proj", "m-1", "st-model", uint64(1), uint64(2), int64(10), int32(5), int64(100), false)
	f.Add("c\"x", "u\\v", "l\tay", "/p/\u2028", "f<p>", "s&id", "ty\x7f", "pr\xff", "m\u2029", "", uint64(0), uint64(0), int64(0), int32(-7), int64(-1), false)
	f.Add("wave", "doc/s.json", "wave", "/w/doc/s.json", "", "", "", "", "<>&", "a", ^uint64(0), ^uint64(0), int64(1)<<62, int32(-1)<<31, int64(-1)<<63, true)
	f.Fuzz(func(t *testing.T, src, unit, layout, path, fp, sid, typ, proj, model, stModel string, dev, ino uint64, off int64, q int32, n int64, retire bool) {
		if src == "" || unit == "" {
			return
		}
		l := newLedger(t.TempDir())
		l.dir = "" // in memory: Sync files the units and writes nothing
		ref := indexer.UnitRef{Source: src, Unit: unit, Layout: layout, Path: path, Dev: dev, Ino: ino}
		l.Reset(ref)
		r := l.units.get(keyOf(ref).source, keyOf(ref).unit)
		if r == nil {
			t.Skip("no record of the key")
		}
		b := l.bodyOf(r)
		b.St = ParseState{Model: stModel}
		if n != 0 {
			b.St.Prev = &[5]int64{n, -n, 1, 0, n / 2}
		}
		b.Seen = &Tokens{Input: n, Output: -n, CacheWrite: off, CacheRead: int64(q)}
		b.acc.Buckets = []Bucket{{Q: q, Model: model, T: Tokens{Input: n, Output: off, CacheWrite: -1, CacheRead: int64(dev)}}}
		b.acc.Win = []winEntry{{ID: dev, OrigReq: ino, Req: uint64(n), Side: retire, Q: q, Model: model, T: Tokens{Input: off}}}
		l.Done(ref, off, fp)
		l.Sync([]indexer.SessionRef{{UnitRef: ref, ID: sid, Type: typ, Project: proj}})
		if retire {
			l.Remove(ref) // a retired record
		}
		checkAppendKeyFast(t, l, keyOf(ref))
	})
}
