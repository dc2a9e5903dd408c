package janitor

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// raceRounds is how many rounds TestAppendRacingRetirement runs: a few in CI,
// more with SESSIONWATCH_RACE_ROUNDS=N (and SESSIONWATCH_RACE_SESSIONS=M per round).
func raceEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestAppendRacingRetirement races real appends against a janitor pass that
// archives every session (§2 of issue 11): one racer appends to a session
// 0–120 µs after its archive appears (the moment the old code removed the
// transcript unchecked) or after its retirement's intent is journaled (just
// before it is moved aside), others append to random sessions at random moments
// while the pass runs. Every append whose write(2) succeeded must end in the
// store or in the archive, each session exactly once in one of them, and
// restore must give it back. A third writer holds its file open a while
// before it writes. The old code lost a few appends per round.
func TestAppendRacingRetirement(t *testing.T) {
	rounds := raceEnv("SESSIONWATCH_RACE_ROUNDS", 3)
	perRound := raceEnv("SESSIONWATCH_RACE_SESSIONS", 250)
	var total, raced, atIntent, retired, kept, lost, undone int
	for round := 0; round < rounds; round++ {
		a, r, ai, k, l, u := raceRound(t, round, perRound)
		total += a
		atIntent += ai
		lost += l
		undone += u
		raced += r
		retired += k
		kept += perRound - k
	}
	t.Logf("race: %d rounds, %d sessions, %d appends succeeded (%d right after an archive appeared, %d right after a retirement's intent), %d retired, %d kept (%d of them put back mid-retirement), %d lost",
		rounds, rounds*perRound, total, raced, atIntent, retired, kept, undone, lost)
}

// raceRound runs one round; it returns the appends that succeeded, how many
// of them followed an archive's appearance or a retirement's intent, how many sessions were retired,
// how many appends were lost, and how many retirements a racer made undo.
func raceRound(t *testing.T, round, n int) (appends, raced, atIntent, retired, lost, undone int) {
	f := newFixture(t, `{"active_grace":"off"}`, `"retention":"1d"`)
	const workdir = "/w/race"
	paths := make([]string, n)
	byName := map[string]int{}
	for i := range paths {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", round, i)
		paths[i] = f.session(workdir, id, 3*24*time.Hour)
		byName[filepath.Base(paths[i])] = i
	}
	f.index()
	j := f.janitor()
	archDir := filepath.Join(f.archive, "wave", indexer.ProjectKey(workdir))
	if err := os.MkdirAll(archDir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(archDir); err != nil {
		t.Fatal(err)
	}
	// The journal's intent line is written just before a session is moved
	// aside: a racer appends right then too.
	if err := os.MkdirAll(f.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(f.state); err != nil {
		t.Fatal(err)
	}
	journalPath := filepath.Join(f.state, JournalName)
	var journalOff int64
	newIntents := func() []string {
		fh, err := os.Open(journalPath)
		if err != nil {
			return nil
		}
		defer fh.Close()
		data, _ := io.ReadAll(io.NewSectionReader(fh, journalOff, 1<<30))
		k := bytes.LastIndexByte(data, '\n')
		if k < 0 {
			return nil
		}
		journalOff += int64(k + 1)
		var out []string
		for _, line := range bytes.Split(data[:k], []byte("\n")) {
			var e struct{ File, Phase string }
			if json.Unmarshal(line, &e) == nil && e.Phase == "intent" {
				out = append(out, filepath.Base(e.File))
			}
		}
		return out
	}

	var mu sync.Mutex
	written := make([][]string, n) // per session, the markers whose write succeeded
	var seq atomic.Int64
	appendTo := func(i int, tag string) bool {
		fh, err := os.OpenFile(paths[i], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return false // no such file: nothing was written
		}
		defer fh.Close()
		m := fmt.Sprintf(`{"marker":"%s-%d"}`, tag, seq.Add(1))
		if _, err := fh.WriteString(m + "\n"); err != nil {
			return false
		}
		mu.Lock()
		written[i] = append(written[i], m)
		mu.Unlock()
		return true
	}
	spin := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	var nRaced, nIntent atomic.Int64
	wg.Add(1)
	go func() { // the racer: an append as each archive appears
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(round), 1))
		for {
			select {
			case <-done:
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name := filepath.Base(ev.Name)
				if ev.Name == journalPath {
					for _, base := range newIntents() {
						i, ok := byName[base]
						if !ok || rng.IntN(3) != 0 {
							continue // a third of the retirements are raced here
						}
						d := time.Duration(rng.IntN(120)) * time.Microsecond
						wg.Add(1)
						go func() {
							defer wg.Done()
							spin(d)
							if appendTo(i, "at-intent") {
								nIntent.Add(1)
							}
						}()
					}
					continue
				}
				if !ev.Has(fsnotify.Create) || strings.HasPrefix(name, indexer.TempPrefix) {
					continue
				}
				i, ok := byName[strings.TrimSuffix(name, ".gz")]
				if !ok {
					continue
				}
				// Half the racers come within 120 µs, half within 2 ms: the
				// window the old code lost appends in lies somewhere after the
				// archive's directory fsync.
				d := time.Duration(rng.IntN(120)) * time.Microsecond
				if rng.IntN(2) == 0 {
					d = time.Duration(rng.IntN(2000)) * time.Microsecond
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					spin(d)
					if appendTo(i, "after-archive") {
						nRaced.Add(1)
					}
				}()
			case <-w.Errors:
			}
		}
	}()
	for k := 0; k < 1; k++ { // and appends at random moments
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(round), uint64(k)+10))
			for {
				select {
				case <-done:
					return
				default:
				}
				time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
				appendTo(rng.IntN(n), "random")
			}
		}(k)
	}
	wg.Add(1)
	go func() { // and a writer that holds its file open a while before it writes
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(round), 99))
		for {
			select {
			case <-done:
				return
			default:
			}
			i := rng.IntN(n)
			fh, err := os.OpenFile(paths[i], os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			m := fmt.Sprintf(`{"marker":"held-%d"}`, seq.Add(1))
			if _, err := fh.WriteString(m + "\n"); err == nil {
				mu.Lock()
				written[i] = append(written[i], m)
				mu.Unlock()
			}
			fh.Close()
			time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
		}
	}()
	rep, err := j.RunOnce(context.Background(), Overrides{})
	// Let the racer see the last archives.
	time.Sleep(20 * time.Millisecond)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Errorf("round %d: pass errors: %v", round, rep.Errors)
	}
	for _, a := range rep.Actions {
		if strings.HasSuffix(a.Reason, "while being retired") || a.Reason == "held open by another process" {
			undone++
		}
	}

	// Every session is exactly once in the store or in the archive, holding
	// every marker written to it.
	archives := map[string][]string{}
	ents, _ := os.ReadDir(archDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), indexer.TempPrefix) {
			t.Errorf("round %d: temp file left in the archive: %s", round, e.Name())
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".gz")
		if k := strings.LastIndex(base, ".jsonl."); k >= 0 {
			base = base[:k+len(".jsonl")]
		}
		archives[base] = append(archives[base], filepath.Join(archDir, e.Name()))
	}
	for i, p := range paths {
		store, serr := os.ReadFile(p)
		inStore := serr == nil
		arch := archives[filepath.Base(p)]
		switch {
		case inStore && len(arch) > 0:
			t.Errorf("round %d: %s is both in the store and archived (%v)", round, p, arch)
		case !inStore && len(arch) == 0:
			t.Errorf("round %d: %s is neither in the store nor archived", round, p)
		case len(arch) > 1:
			t.Errorf("round %d: %s archived %d times", round, p, len(arch))
		}
		var content []byte
		if inStore {
			content = store
		} else if len(arch) > 0 {
			content = gunzip(t, arch[0])
			retired++
		}
		for _, m := range written[i] {
			if !bytes.Contains(content, []byte(m)) {
				lost++
				t.Errorf("round %d: append %s to %s lost", round, m, filepath.Base(p))
			}
		}
		appends += len(written[i])
		// Restore gives back what was archived, byte for byte, for the
		// sessions a racer wrote to.
		if !inStore && len(arch) == 1 && len(written[i]) > 0 {
			ar, err := ReadArchive(arch[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Restore(context.Background(), ar); err != nil {
				t.Errorf("round %d: restore %s: %v", round, arch[0], err)
			} else if got, _ := os.ReadFile(p); !bytes.Equal(got, content) {
				t.Errorf("round %d: restored %s differs from its archive", round, p)
			}
		}
	}
	// No staging or temp file is left in the store.
	filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), indexer.TempPrefix) {
			t.Errorf("round %d: temp file left in the store: %s", round, p)
		}
		return nil
	})
	if lost > 0 {
		t.Errorf("round %d: %d of %d appends lost", round, lost, appends)
	}
	return appends, int(nRaced.Load()), int(nIntent.Load()), retired, lost, undone
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return data
}
