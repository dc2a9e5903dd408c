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

// unitLines is one transcript as the indexer hands it to consumers: each line
// that starts with '{' (trimmed) and its offset.
type unitLines struct {
	ref   indexer.UnitRef
	offs  []int64
	lines [][]byte
}

// genUnits writes a generated store of every line layout (plus a Wave file of
// the recall test's unicode, CJK and escaped words) and splits it into lines.
func genUnits(t testing.TB) []unitLines {
	t.Helper()
	home := t.TempDir()
	var out []unitLines
	for i, layout := range []string{"wave", "claude", "codex", "gemini", "llxprt"} {
		root := filepath.Join(home, layout)
		st, err := gen.Plan(root, gen.Spec{Layout: layout, Projects: 3, Sessions: 12, Lines: 24, LineSize: 700, Subagents: 0.2, Seed: int64(i + 1), Home: home})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Write(); err != nil {
			t.Fatal(err)
		}
		for j, s := range st.Sessions {
			p := st.Path(s)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, splitUnit(indexer.UnitRef{Source: layout, Layout: layout, Unit: filepath.ToSlash(rel), Path: p, Dev: 1, Ino: uint64(i*1000 + j)}, data))
		}
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
	return append(out, splitUnit(indexer.UnitRef{Source: "wave", Layout: "wave", Unit: "p/unicode.jsonl", Path: "/nonexistent/unicode.jsonl", Dev: 1, Ino: 99999}, b.Bytes()))
}

func splitUnit(ref indexer.UnitRef, data []byte) unitLines {
	u := unitLines{ref: ref}
	off := int64(0)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a partial last line is not handed over
		}
		line := bytes.TrimSpace(data[:i])
		if len(line) > 0 && line[0] == '{' {
			u.offs = append(u.offs, off)
			u.lines = append(u.lines, line)
		}
		off += int64(i + 1)
		data = data[i+1:]
	}
	return u
}

// TestLinesPreparedMatchesLine: a unit's lines handed over prepared (extracted and
// tokenized on a read worker, counted under the lock) build the same segment
// files, byte for byte, as the same lines handed over by Line one at a time,
// with spills and tool output too.
func TestLinesPreparedMatchesLine(t *testing.T) {
	units := genUnits(t)
	for _, tools := range []bool{false, true} {
		t.Run(fmt.Sprintf("tools=%v", tools), func(t *testing.T) {
			build := func(prepared bool) (map[string][]byte, Stats) {
				dir := filepath.Join(t.TempDir(), DirName)
				x, err := Open(Options{Dir: dir, ToolOutput: tools, SpillBytes: 64 << 10, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				for i, u := range units {
					x.Reset(u.ref)
					if prepared {
						p := x.Prepare(u.ref)
						for j, line := range u.lines {
							p.Line(u.offs[j], line)
						}
						x.LinesPrepared(u.ref, p)
					} else {
						for j, line := range u.lines {
							x.Line(u.ref, u.offs[j], line)
						}
					}
					x.Done(u.ref, int64(1000+i), "fp")
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
			want, wantStats := build(false)
			got, gotStats := build(true)
			if wantStats.Spills == 0 || wantStats.Docs == 0 {
				t.Fatalf("stats %+v: the corpus must spill", wantStats)
			}
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
}
