package search

import (
	"fmt"
	"hash/maphash"
	"os"
	"sort"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// UnitDigest summarizes what the index holds for one live unit, independently of
// how it is split into segments and numbered: its read position and a
// commutative hash of its messages (fields and terms with their frequencies).
type UnitDigest struct {
	Dev, Ino uint64
	Offset   int64
	Fp       string
	Messages int
	Hash     uint64
}

var digestSeed = maphash.MakeSeed()

// Digest reads the committed index in dir and digests every live unit, keyed by
// "source/unit". Units that left the store (kept for --archived) are not part of
// it: a rebuild from the stores cannot see them.
func Digest(dir string) (map[string]UnitDigest, error) {
	r, err := OpenReader(dir)
	if err == ErrNoIndex {
		return map[string]UnitDigest{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	units, err := r.allUnits()
	if err != nil {
		return nil, err
	}
	out := map[string]UnitDigest{}
	for _, u := range units {
		if u.State == unitLive {
			out[u.Source+"/"+u.Rel] = UnitDigest{Dev: u.Dev, Ino: u.Ino, Offset: u.Offset, Fp: u.Fp}
		}
	}
	for _, s := range r.segs {
		terms := make([]uint64, s.ft.ndocs)
		err := s.dictScan("", func(e dictEntry) bool {
			post, perr := s.postings(e)
			if perr != nil {
				err = perr
				return false
			}
			th := maphash.String(digestSeed, e.term)
			if perr := decodePostings(post, func(doc, tf uint32) {
				if uint64(doc) < uint64(len(terms)) {
					terms[doc] += mix(th, uint64(tf))
				}
			}); perr != nil {
				err = perr
				return false
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		docs, err := s.allDocs()
		if err != nil {
			return nil, err
		}
		for i, d := range docs {
			u := units[d.Unit]
			if u == nil || u.State != unitLive {
				continue
			}
			k := u.Source + "/" + u.Rel
			dg := out[k]
			sess := ""
			if int(d.Sess) < len(u.Sids) {
				sess = u.Sids[d.Sess]
			}
			h := maphash.String(digestSeed, fmt.Sprintf("%s|%d|%d|%d|%d|%d", sess, d.Part, d.Role, d.Offset, d.Time, d.Len))
			dg.Hash += mix(h, terms[i])
			dg.Messages++
			out[k] = dg
		}
	}
	return out, nil
}

func mix(a, b uint64) uint64 {
	x := a ^ (b + 0x9e3779b97f4a7c15 + a<<6 + a>>2)
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>29
}

// Compare lists how index differs from rebuild, one line per unit.
func Compare(index, rebuild map[string]UnitDigest) []string {
	var out []string
	for k, want := range rebuild {
		got, ok := index[k]
		switch {
		case !ok && want.Messages > 0:
			out = append(out, fmt.Sprintf("%s: missing from the search index (%d messages)", k, want.Messages))
		case !ok:
		case got != want:
			out = append(out, fmt.Sprintf("%s: differs in the search index (%d messages at offset %d, a rebuild has %d at offset %d)", k, got.Messages, got.Offset, want.Messages, want.Offset))
		}
	}
	for k, got := range index {
		if _, ok := rebuild[k]; !ok {
			out = append(out, fmt.Sprintf("%s: stale in the search index (%d messages)", k, got.Messages))
		}
	}
	sort.Strings(out)
	return out
}

// Rebuild builds a fresh index of every enabled source of cfg into dir (which must
// not be the state dir's index), writing nothing else: the indexers run in check
// mode.
func Rebuild(cfg *config.Config, dir string) error {
	x, err := Open(Options{Dir: dir, ToolOutput: cfg.Search.ToolOutput})
	if err != nil {
		return err
	}
	defer x.Close()
	x.ColdBuild() // Compact below merges it into one segment
	g, err := indexer.NewGroup(cfg, nil, true)
	if err != nil {
		return err
	}
	g.AddConsumer(x)
	if err := g.ReconcileAll(); err != nil {
		return err
	}
	return x.Compact()
}

// CheckAgainstRebuild compares the index of the state dir with a rebuild made in
// a temporary directory, and returns the differences.
func CheckAgainstRebuild(cfg *config.Config) ([]string, error) {
	tmp, err := os.MkdirTemp("", "sessionwatch-search-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := Rebuild(cfg, tmp); err != nil {
		return nil, fmt.Errorf("rebuild search index: %w", err)
	}
	want, err := Digest(tmp)
	if err != nil {
		return nil, err
	}
	got, err := Digest(IndexDir(cfg.StateDir))
	if err != nil {
		return nil, err
	}
	return Compare(got, want), nil
}

// IndexDir is the index's directory in a state dir.
func IndexDir(stateDir string) string { return stateDir + string(os.PathSeparator) + DirName }
