package search

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// unitLines is one transcript as the indexer hands it to consumers.
type unitLines = gen.LineUnit

// genUnits writes a generated store of every line layout (plus a Wave file of
// the recall test's unicode, CJK and escaped words) and splits it into lines.
func genUnits(t testing.TB) []unitLines {
	t.Helper()
	out, err := gen.LineUnits(t.TempDir(), gen.Spec{Projects: 3, Sessions: 12, Lines: 24, LineSize: 700, Subagents: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	var b bytes.Buffer
	for i := range 200 {
		var ws []string
		for range 1 + rng.IntN(12) {
			ws = append(ws, recallVocab[rng.IntN(len(recallVocab))])
		}
		line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:%02d:%02dZ","id":"m%d","role":"user","blocks":[{"type":"text","content":%q}]}`, i/60%60, i%60, i, strings.Join(ws, " "))
		b.Write(escapeSome([]byte(line), rng))
		b.WriteString("\n")
		if i%50 == 7 {
			b.WriteString("not json\n\n")
		}
	}
	return append(out, gen.SplitLines(indexer.UnitRef{Source: "wave", Layout: "wave", Unit: "p/unicode.jsonl", Path: "/nonexistent/unicode.jsonl", Dev: 1, Ino: 99999}, b.Bytes()))
}

// TestLinesPreparedMatchesLine: a unit's lines handed over prepared (extracted and
// tokenized on a read worker, counted under the lock; each line given whole or as
// its members scanned once, indexer.Members) build the same segment files, byte
// for byte, as the same lines handed over by Line one at a time, with spills and
// tool output too.
func TestLinesPreparedMatchesLine(t *testing.T) {
	units := genUnits(t)
	for _, tools := range []bool{false, true} {
		t.Run(fmt.Sprintf("tools=%v", tools), func(t *testing.T) {
			build := func(prepared, members bool) (map[string][]byte, Stats) {
				dir := filepath.Join(t.TempDir(), DirName)
				x, err := Open(Options{Dir: dir, ToolOutput: tools, SpillBytes: 64 << 10, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				for i, u := range units {
					u.Hand(x, prepared, members)
					x.Done(u.Ref, int64(1000+i), "fp")
					if i%20 == 19 {
						if err := x.Sync(nil); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := x.Sync(nil); err != nil {
					t.Fatal(err)
				}
				files := map[string][]byte{}
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					data, err := os.ReadFile(filepath.Join(dir, e.Name()))
					if err != nil {
						t.Fatal(err)
					}
					files[e.Name()] = data
				}
				return files, x.Stats()
			}
			want, wantStats := build(false, false)
			if wantStats.Spills == 0 || wantStats.Docs == 0 {
				t.Fatalf("stats %+v: the corpus must spill", wantStats)
			}
			for _, members := range []bool{false, true} {
				t.Run(fmt.Sprintf("members=%v", members), func(t *testing.T) {
					got, gotStats := build(true, members)
					if gotStats != wantStats {
						t.Errorf("stats prepared = %+v, want %+v", gotStats, wantStats)
					}
					if len(got) != len(want) {
						t.Errorf("%d files prepared, want %d", len(got), len(want))
					}
					for name, w := range want {
						if !bytes.Equal(got[name], w) {
							t.Errorf("file %s differs (%d bytes prepared, %d by Line)", name, len(got[name]), len(w))
						}
					}
				})
			}
		})
	}
}

// TestTermDict: the dict numbers terms in order of first occurrence, like a map,
// through several growths, and gives each id its bytes back.
func TestTermDict(t *testing.T) {
	var d termDict
	ref := map[string]uint32{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		w := fmt.Sprintf("w%d", rng.IntN(3000))
		switch i % 7 {
		case 0:
			w = strings.Repeat("x", rng.IntN(64)+1) // shared prefixes, one byte apart
		case 1:
			w = fmt.Sprintf("abcdefgh%d", rng.IntN(50)) // the same first 8 bytes
		}
		// As the tokenizer's buffer hands them over: bytes after the term (up
		// to 8 read at once), or none.
		b := []byte(w)
		if i%2 == 0 {
			b = append(b, "\x05zzzzzzzz"...)[:len(w)]
		}
		id, added := d.id(b)
		want, ok := ref[w]
		if !ok {
			want = uint32(len(ref))
			ref[w] = want
		}
		if id != want || added == ok {
			t.Fatalf("id(%q) = %d, %v; want %d, %v", w, id, added, want, !ok)
		}
	}
	for w, id := range ref {
		if got := string(d.name(id)); got != w {
			t.Fatalf("name(%d) = %q, want %q", id, got, w)
		}
	}
	if len(d.table) < 2*len(ref) {
		t.Fatalf("table of %d slots for %d terms", len(d.table), len(ref))
	}
	// The next (small) unit does not keep the large unit's table: its reset
	// would clear every slot of it, for each small unit after.
	big := len(d.table)
	d.reset()
	if len(d.table) != big {
		t.Fatalf("the unit that grew the table lost it at its reset: %d slots, want %d", len(d.table), big)
	}
	for _, w := range []string{"a", "b", "a"} {
		d.id([]byte(w))
	}
	if got := string(d.name(1)); got != "b" || len(d.ends) != 2 {
		t.Fatalf("after reset: name(1) = %q, %d terms; want b, 2", got, len(d.ends))
	}
	d.reset()
	if len(d.table) > 1024 {
		t.Fatalf("a 2-term unit kept a table of %d slots past its reset", len(d.table))
	}
}

// handAll hands every unit whole to x, each Done at offset 1000+i, with a Sync
// after every `every` units.
func handAll(t testing.TB, x *Index, units []unitLines, every int) {
	t.Helper()
	for i, u := range units {
		u.Hand(x, true, true)
		x.Done(u.Ref, int64(1000+i), "fp")
		if i%every == every-1 {
			if err := x.Sync(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}
