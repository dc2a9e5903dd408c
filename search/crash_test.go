package search

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// crashChild is the process the crash test kills: it appends to the store, removes
// and rewrites files, and indexes after each change with tiny spill and merge
// thresholds, so that a kill lands in every step of a commit or a merge.
func crashChild(home string) {
	cfg := crashConfig(home)
	x, err := Open(Options{Dir: filepath.Join(cfg.StateDir, DirName), SpillBytes: 2 << 10, MaxSegments: 3,
		KeepRemoved: func(string, string, time.Time) bool { return false }})
	if err != nil {
		panic(err)
	}
	switch os.Getenv("SEARCH_CRASH_MODE") {
	case "split": // every merge cut in two term ranges
		parallelMergeMin, manyWords = 0, true
		runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	case "cold": // a reindex killed: segments without summaries, merged (split) only when many
		parallelMergeMin, manyWords = 0, true
		runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
		x.ColdBuild()
	}
	g, err := indexer.NewGroup(cfg, nil, false)
	if err != nil {
		panic(err)
	}
	g.AddConsumer(x)
	g.Load()
	g.ReconcileAll()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	split := false
	root := filepath.Join(home, "wave")
	for i := 0; ; i++ {
		name := fmt.Sprintf("%08d-1111-4111-8111-111111111111.jsonl", rng.IntN(12))
		p := filepath.Join(root, "p", name)
		switch rng.IntN(20) {
		case 0:
			os.Remove(p)
		case 1:
			os.WriteFile(p, []byte(waveMsg("2026-02-01T00:00:00Z", "user", "rewritten "+word(rng))), 0o600)
		default:
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				var b strings.Builder
				for range 1 + rng.IntN(4) {
					b.WriteString(waveMsg(fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60%60, i%60), "user", sentence(rng)))
				}
				f.WriteString(b.String())
				f.Close()
			}
		}
		g.Apply(batch(p))
		if mergeSplits.Load() > 0 && !split {
			split = true
			os.WriteFile(filepath.Join(home, "split"), nil, 0o600)
		}
	}
}

func crashConfig(home string) *config.Config {
	js := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"sources":[{"name":"wave","layout":"wave","root":%q}]}`,
		filepath.Join(home, "state"), filepath.Join(home, "archive"), filepath.Join(home, "wave"))
	cfg, err := config.Parse(strings.NewReader(js))
	if err != nil {
		panic(err)
	}
	return cfg
}

var vocab = []string{"parser", "deploy", "café", "東京都", "naïve", "zebra", "kernel", "flaky", "résumé", "日本語", "bug", "fix", "the", "a"}

func word(rng *rand.Rand) string { return vocab[rng.IntN(len(vocab))] }

// manyWords: sentences hold rare words too (terms enough for a segment's
// dictionary to have several blocks, which a split merge needs).
var manyWords bool

func sentence(rng *rand.Rand) string {
	var ws []string
	if manyWords {
		for range 8 {
			ws = append(ws, fmt.Sprintf("w%d", rng.IntN(5000)))
		}
	}
	for range 3 + rng.IntN(12) {
		ws = append(ws, word(rng))
	}
	return strings.Join(ws, " ")
}

func TestMain(m *testing.M) {
	if home := os.Getenv("SEARCH_CRASH_CHILD"); home != "" {
		crashChild(home)
		return
	}
	os.Exit(m.Run())
}

// TestCrashAnyMomentEqualsRebuild kills an indexing process at random moments
// (SIGKILL) and checks that, once restarted and caught up, the index equals one
// rebuilt from the store.
func TestCrashAnyMomentEqualsRebuild(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	crashRounds(t, "", rounds)
}

// TestCrashSplitMergeOrColdBuildEqualsRebuild: the same with every merge split
// in two term ranges (a kill lands in a part file's write or its append), and
// with the killed process a cold build (its segments without summaries) that an
// ordinary writer then opens and catches up; no part file outlives the restart.
func TestCrashSplitMergeOrColdBuildEqualsRebuild(t *testing.T) {
	for _, mode := range []string{"split", "cold"} {
		t.Run(mode, func(t *testing.T) { crashRounds(t, mode, 3) })
	}
}

func crashRounds(t *testing.T, mode string, rounds int) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(home, "wave", "p"), 0o700)
	rng := rand.New(rand.NewPCG(42, 7))
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SEARCH_CRASH_CHILD="+home, "SEARCH_CRASH_MODE="+mode)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the child has committed something new (or after a while).
		man := filepath.Join(home, "state", DirName, ManifestName)
		before, _ := os.ReadFile(man)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if now, _ := os.ReadFile(man); len(now) > 0 && string(now) != string(before) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if mode != "" && round == 0 {
			// At least one kill after a split merge (a cold build merges only
			// once many segments piled up).
			for time.Now().Before(deadline) {
				if _, err := os.Stat(filepath.Join(home, "split")); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		dir := filepath.Join(home, "state", DirName)
		if _, _, _, err := load(dir); err != nil {
			t.Fatalf("round %d: index unreadable after SIGKILL: %v", round, err)
		}
		// Restart: open, catch up with the store, as the daemon does.
		cfg := crashConfig(home)
		x, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if parts, _ := filepath.Glob(filepath.Join(dir, "*.part")); len(parts) > 0 {
			t.Fatalf("round %d: merge parts left after the restart: %v", round, parts)
		}
		g, _ := indexer.NewGroup(cfg, nil, false)
		g.AddConsumer(x)
		if err := g.Load(); err != nil {
			t.Fatal(err)
		}
		if err := g.ReconcileAll(); err != nil {
			t.Fatal(err)
		}
		x.Close()
		diffs, err := CheckAgainstRebuild(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(diffs) > 0 {
			t.Fatalf("round %d: after a kill the index differs from a rebuild:\n%s", round, strings.Join(diffs, "\n"))
		}
	}
	if _, err := os.Stat(filepath.Join(home, "split")); mode != "" && err != nil {
		t.Errorf("mode %s: the killed processes split no merge", mode)
	}
}
