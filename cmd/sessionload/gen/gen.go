// Package gen generates synthetic agent session stores and appends to them the way
// the agents do, for sessionwatch's load tool, benchmarks and torture tests.
//
// A Spec describes a store: a layout, a number of projects and sessions, and the
// number and size of the lines in each transcript. Plan turns it into a Store
// without touching the disk, Store.Write writes every file, and Store.Run appends
// lines at a given rate from concurrent writers, partial lines included. The same
// Spec and seed always give the same files: every id, path and line is a function
// of the seed, the session's index and the line's number (and, for appended lines,
// the timestamp the writer gives it).
//
// Each layout writes exactly the on-disk format documented in
// shared/research/formats.md (SPEC §3): Wave, Claude Code, Codex, Gemini CLI and
// llxprt-code.
package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Defaults for Spec fields left zero.
const (
	DefaultLines    = 8
	DefaultLineSize = 1024
	DefaultSpread   = 0.5
	DefaultHome     = "/home/user"
)

// DefaultStart is the creation time of a Spec's first session when Start is zero.
var DefaultStart = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// span is the time the sessions of a store are spread over.
const span = 120 * 24 * time.Hour

// lineGap is the time between two generated lines of one session.
const lineGap = 20 * time.Second

// Spec describes a synthetic store.
type Spec struct {
	// Layout is the agent format: one of Layouts().
	Layout string
	// Projects is the number of working directories the sessions belong to (≥1).
	Projects int
	// Sessions is the number of sessions, spread round-robin over the projects.
	Sessions int
	// Lines is the mean number of message lines per session (headers not counted);
	// 0 means DefaultLines. -1 writes only the header lines.
	Lines int
	// Spread makes the line count of a session uniform in Lines·[1-Spread, 1+Spread]
	// (0 means DefaultSpread; negative means every session has exactly Lines).
	Spread float64
	// LineSize is the mean size in bytes of a message line; each line is uniform
	// within ±50% of it. 0 means DefaultLineSize.
	LineSize int
	// Subagents is the fraction of sessions that are subagents, for layouts that
	// have them (wave, claude, codex, gemini).
	Subagents float64
	// Seed makes everything deterministic.
	Seed int64
	// Start is when the first session was created (zero: DefaultStart); sessions are
	// spread over the following 120 days.
	Start time.Time
	// Home is the home directory the project paths live under (DefaultHome).
	Home string
	// ProjectPrefix is put in front of every project name, so that two specs can be
	// written into one root without sharing projects.
	ProjectPrefix string
}

func (sp *Spec) normalize() error {
	var errs []error
	if _, ok := layouts[sp.Layout]; !ok {
		errs = append(errs, fmt.Errorf("layout: unknown layout (got %q; want one of %s)", sp.Layout, strings.Join(Layouts(), ", ")))
	}
	if sp.Projects < 1 {
		errs = append(errs, fmt.Errorf("projects: must be at least 1 (got %d)", sp.Projects))
	}
	if sp.Sessions < 0 {
		errs = append(errs, fmt.Errorf("sessions: must not be negative (got %d)", sp.Sessions))
	}
	if sp.Lines < -1 {
		errs = append(errs, fmt.Errorf("lines: must be -1 or more (got %d)", sp.Lines))
	}
	if sp.LineSize < 0 {
		errs = append(errs, fmt.Errorf("line size: must not be negative (got %d)", sp.LineSize))
	}
	if sp.Subagents < 0 || sp.Subagents > 1 {
		errs = append(errs, fmt.Errorf("subagents: must be within [0,1] (got %g)", sp.Subagents))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if sp.Lines == 0 {
		sp.Lines = DefaultLines
	}
	if sp.Lines == -1 {
		sp.Lines = 0
	}
	if sp.Spread == 0 {
		sp.Spread = DefaultSpread
	}
	if sp.Spread < 0 || sp.Spread > 1 {
		sp.Spread = min(max(sp.Spread, 0), 1)
	}
	if sp.LineSize == 0 {
		sp.LineSize = DefaultLineSize
	}
	if sp.Start.IsZero() {
		sp.Start = DefaultStart
	}
	if sp.Home == "" {
		sp.Home = DefaultHome
	}
	return nil
}

// Session is one generated session and what has been written to it so far.
type Session struct {
	Index    int    // position in Store.Sessions
	ID       string // the session id the layout's index reports
	Project  string // working directory (absolute)
	Rel      string // file path relative to the store root, slash-separated
	Subagent bool
	ParentID string // the parent's id, for subagents
	Created  time.Time

	// Planned is the number of message lines Write puts into the file.
	Planned int
	// Lines is the number of complete message lines written (or, before Write,
	// planned); Messages how many of them the layout's messageCount counts.
	Lines    int
	Messages int
	// FirstPrompt is the first prompt as the layout's summary shows it ("" if none).
	FirstPrompt string
	// Title is the session's title as the layout's summary shows it ("" if none).
	Title string
	// LastTS is the timestamp of the last line written.
	LastTS time.Time

	seed    uint64
	agentID string // Claude Code subagents: the agent id in the file name
	slug    string // project dir name
}

// Store is a planned store under one root.
type Store struct {
	Spec     Spec
	Root     string
	Sessions []*Session
	lay      layout
}

// Layouts lists the layouts the generator can write.
func Layouts() []string {
	var out []string
	for n := range layouts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Plan lays out a store under root without writing anything.
func Plan(root string, spec Spec) (*Store, error) {
	if err := spec.normalize(); err != nil {
		return nil, fmt.Errorf("plan store: %w", err)
	}
	st := &Store{Spec: spec, Root: filepath.Clean(root), lay: layouts[spec.Layout]}
	projects := make([]string, spec.Projects)
	for i := range projects {
		projects[i] = projectPath(spec, i)
	}
	gap := span / time.Duration(max(spec.Sessions, 1))
	gap = min(gap, 10*time.Minute)
	lastMain := map[int]*Session{} // project → its latest main session
	for i := 0; i < spec.Sessions; i++ {
		rng := newRand(mix(spec.Seed, "session", i))
		p := i % spec.Projects
		s := &Session{
			Index:   i,
			ID:      sessionID(spec, i),
			Project: projects[p],
			Created: spec.Start.Add(time.Duration(i)*gap + time.Duration(rng.IntN(1000))*time.Millisecond),
			seed:    uint64(rng.Int64()),
		}
		if parent := lastMain[p]; parent != nil && st.lay.subagents() && rng.Float64() < spec.Subagents {
			s.Subagent = true
			s.ParentID = parent.ID
		} else {
			lastMain[p] = s
		}
		lo := float64(spec.Lines) * (1 - spec.Spread)
		hi := float64(spec.Lines) * (1 + spec.Spread)
		s.Planned = int(lo + rng.Float64()*(hi-lo) + 0.5)
		if spec.Lines > 0 && s.Planned < 1 {
			s.Planned = 1
		}
		st.lay.place(st, s, rng)
		st.Sessions = append(st.Sessions, s)
	}
	return st, nil
}

// projectPath is the working directory of project i: a few of them contain spaces
// and upper case, as real ones do.
func projectPath(sp Spec, i int) string {
	name := fmt.Sprintf("%s%s-%03d", sp.ProjectPrefix, projectWords[i%len(projectWords)], i)
	switch i % 7 {
	case 3:
		return sp.Home + "/My Projects/" + name
	case 5:
		return sp.Home + "/src/github.com/acme/" + strings.ToUpper(name[:1]) + name[1:]
	}
	return sp.Home + "/code/" + name
}

// Path is the absolute path of a session's file.
func (st *Store) Path(s *Session) string {
	return filepath.Join(st.Root, filepath.FromSlash(s.Rel))
}

// Write creates the store: project files, then every session file with its header
// and Planned message lines. It resets each session's counters first, so Write may
// be called on a freshly planned store only once per root.
func (st *Store) Write() error {
	if err := os.MkdirAll(st.Root, 0o700); err != nil {
		return fmt.Errorf("write store: %w", err)
	}
	if err := st.lay.projectFiles(st); err != nil {
		return fmt.Errorf("write store: %w", err)
	}
	work := make(chan *Session)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for s := range work {
				var err error
				buf, err = st.writeSession(s, buf[:0])
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, s := range st.Sessions {
		work <- s
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("write store: %w (and %d more)", errs[0], len(errs)-1)
	}
	return nil
}

func (st *Store) writeSession(s *Session, buf []byte) ([]byte, error) {
	s.Lines, s.Messages, s.FirstPrompt, s.Title = 0, 0, "", ""
	s.LastTS = s.Created
	buf = append(buf, st.lay.header(st, s)...)
	for k := 0; k < s.Planned; k++ {
		buf = append(buf, st.Next(s, s.Created.Add(time.Duration(k)*lineGap))...)
	}
	path := st.Path(s)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return buf, err
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		return buf, err
	}
	return buf, nil
}

// Next returns the bytes of the next append to s (one message line; for Gemini the
// message and its "$set" update), stamped ts, and advances s's counters. It is a
// pure function of the store's seed, the session, its line number and ts. Only one
// goroutine may call it for a given session at a time.
func (st *Store) Next(s *Session, ts time.Time) []byte {
	k := s.Lines
	rng := newRand(int64(s.seed) ^ mix(0, "line", k))
	size := st.Spec.LineSize/2 + rng.IntN(st.Spec.LineSize+1)
	m := msg{k: k, ts: ts, size: size, rng: rng}
	m.kind = kindOf(k)
	m.text = m.makeText()
	line, counted := st.lay.line(st, s, &m)
	s.Lines++
	if counted {
		s.Messages++
	}
	if m.kind == kindPrompt && s.FirstPrompt == "" {
		s.FirstPrompt = promptOf(m.shown)
		if st.Spec.Layout == "claude" {
			s.FirstPrompt = claudePromptOf(m.shown)
		}
	}
	s.LastTS = ts
	return line
}

// Resume sets each session's counters from the file on disk, so that Next
// continues a store written by another process: the planned lines are replayed
// until they account for every complete line of the file.
func (st *Store) Resume() error {
	for _, s := range st.Sessions {
		data, err := os.ReadFile(st.Path(s))
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		have := bytes.Count(data, []byte("\n"))
		s.Lines, s.Messages, s.FirstPrompt, s.Title = 0, 0, "", ""
		s.LastTS = s.Created
		n := bytes.Count(st.lay.header(st, s), []byte("\n"))
		for n < have {
			n += bytes.Count(st.Next(s, s.Created.Add(time.Duration(s.Lines)*lineGap)), []byte("\n"))
		}
	}
	return nil
}

// mix derives a seed from a seed, a label and an index (FNV-1a).
func mix(seed int64, label string, i int) int64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	h.Write(b[:])
	h.Write([]byte(label))
	return int64(h.Sum64() & (1<<63 - 1))
}

// newRand is a cheap-to-seed deterministic source.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// sessionID is session i's id: drawn from the seed, the layout and i, so stores
// of several layouts generated into one home with one seed never share an id.
func sessionID(spec Spec, i int) string {
	return uuid(newRand(mix(spec.Seed, "id/"+spec.Layout, i)))
}

// uuid makes a lowercase version-4 UUID from rng.
func uuid(rng *rand.Rand) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hexID makes n lowercase hex digits from rng.
func hexID(rng *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[rng.IntN(16)]
	}
	return string(b)
}
