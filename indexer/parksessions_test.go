package indexer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// inMemory counts the units holding their sessions in memory, and those
// whose sessions are parked.
func inMemory(ix *Indexer) (held, parked int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for u := range ix.units.all() {
		if len(u.sessions()) > 0 {
			held++
		}
		if u.skey != 0 {
			parked++
		}
	}
	return held, parked
}

// sessionLines renders sessions as comparable lines (what the catalog says of
// each, and where it is filed).
func sessionLines(ss []*Session) []string {
	var out []string
	for _, s := range ss {
		off := int64(-1)
		if s.Tail != nil {
			off = s.Tail.Offset
		}
		out = append(out, fmt.Sprintf("%s %s %s %q %q %q %s %s %d %d %d %s", s.ID, s.Type, s.File, s.Project, s.Title, s.FirstPrompt,
			s.CreatedAt, s.LastActiveAt, s.MessageCount, s.SizeBytes, off, s.Dir))
	}
	slices.Sort(out)
	return out
}

// A daemon's indexer keeps no catalog session in memory between changes: Load
// parks them, a change brings back its project's from the catalog, and the
// flush parks them again; Sessions reads them for the caller and keeps
// nothing. In every layout's store: what Sessions returns is a rebuild's, and
// after appends to every file the outputs equal a rebuild's.
func TestParkedSessionsEveryLayout(t *testing.T) {
	stores, _ := filepath.Glob("testdata/*/basic/store")
	for _, store := range stores {
		layout := filepath.Base(filepath.Dir(filepath.Dir(store)))
		t.Run(layout, func(t *testing.T) {
			root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
			copyTree(t, store, root)
			if layout == "hyperyolo" {
				root = filepath.Join(root, "sessions.json")
			}
			first := newLayoutIndexer(t, layout, root, state, false)
			first.Reconcile() // a deliberately corrupt test file may report an error
			if held, parked := inMemory(first); parked == 0 || held > parked {
				t.Errorf("after Reconcile: %d units hold sessions, %d parked: want most parked", held, parked)
			}
			want := sessionLines(first.Sessions())
			if len(want) == 0 {
				t.Fatal("no session indexed")
			}

			ix := newLayoutIndexer(t, layout, root, state, false)
			if err := ix.Load(); err != nil {
				t.Fatal(err)
			}
			held, parked := inMemory(ix)
			if parked == 0 || held > parked {
				t.Errorf("after Load: %d units hold sessions, %d parked: want most parked", held, parked)
			}
			if got := sessionLines(ix.Sessions()); !slices.Equal(got, want) {
				t.Errorf("Sessions after Load:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if h, p := inMemory(ix); h != held || p != parked {
				t.Errorf("Sessions kept sessions: %d held, %d parked after; %d, %d before", h, p, held, parked)
			}
			if err := ix.Start(); err != nil {
				t.Logf("start: %v", err)
			}
			if err := ix.VerifyOutputs(); err != nil {
				t.Fatal(err)
			}
			if h, _ := inMemory(ix); h > held {
				t.Errorf("after Start and VerifyOutputs %d units hold sessions, %d after Load", h, held)
			}
			assertLayoutConverged(t, layout, root, state)

			// A blank line appended to every file (a line unit reads it from its
			// offset, a document is parsed again): one Update per file.
			var files []string
			filepath.WalkDir(filepath.Dir(root), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && d.Name() != CatalogName && (layout != "hyperyolo" || p == root) {
					files = append(files, p)
				}
				return nil
			})
			for _, f := range files {
				appendFile(t, f, "\n")
				ix.Update([]string{f}) // a corrupt test file reports an error
			}
			assertLayoutConverged(t, layout, root, state)
			if h, _ := inMemory(ix); h > held {
				t.Errorf("after the appends %d units hold sessions, %d after Load", h, held)
			}
			rebuilt := newLayoutIndexer(t, layout, root, t.TempDir(), false)
			rebuilt.Reconcile()
			if got, want := sessionLines(ix.Sessions()), sessionLines(rebuilt.Sessions()); !slices.Equal(got, want) {
				t.Errorf("Sessions after the appends:\n%s\nwant (a rebuild's)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// An append to a parked unit reads the append and its project's catalog,
// nothing else; the project's units are parked again after the flush, the
// other projects' never came back.
func TestParkedSessionsAppend(t *testing.T) {
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		before := ix.Stats().BytesRead
		add := msg(fmt.Sprintf("2026-01-02T00:00:0%dZ", i), "more")
		old, _ := os.Stat(files[0])
		appendFile(t, files[0], add)
		if err := ix.Update([]string{files[0]}); err != nil {
			t.Fatal(err)
		}
		// The append and the fingerprints' windows (all of these small files),
		// not the sibling parked beside it.
		sib, _ := os.Stat(files[1])
		if read := ix.Stats().BytesRead - before; read >= old.Size()+int64(len(add))+sib.Size() {
			t.Errorf("append %d read %d bytes: the sibling (%d) too", i, read, sib.Size())
		}
		if held, parked := inMemory(ix); held != 0 || parked != len(files) {
			t.Errorf("append %d: %d units hold sessions, %d parked; want 0, %d", i, held, parked, len(files))
		}
		if c := layoutCatalog(t, state, "wave", "/w/p0"); c == nil || c.Sessions[0].MessageCount+c.Sessions[1].MessageCount != 3+i {
			t.Errorf("append %d: catalog %+v", i, c)
		}
		if st := ix.Stats(); st.Sessions != len(files) || st.Projects != 3 {
			t.Errorf("append %d: counters %d sessions in %d projects, want %d in 3", i, st.Sessions, st.Projects, len(files))
		}
	}
	assertLayoutConverged(t, "wave", root, state)
	if lazy, all := stateless(ix); lazy != all {
		t.Errorf("%d of %d units hold no state in memory, want all", lazy, all)
	}
}

// A catalog that no longer holds the sessions parked in it (removed, or
// replaced by another project's while the daemon was not looking) does not
// lose them: the flush that needs them reads their units again from their
// files, and the outputs equal a rebuild's.
func TestParkedSessionsLostAreReadAgain(t *testing.T) {
	for _, how := range []string{"removed", "replaced", "resume removed"} {
		t.Run(how, func(t *testing.T) {
			root, state, files := startStore(t, 3)
			ix := loadedIndexer(t, root, state)
			if err := ix.Start(); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(state, "index", "wave")
			p0, p1 := filepath.Join(dir, ProjectKey("/w/p0")), filepath.Join(dir, ProjectKey("/w/p1"))
			switch how {
			case "removed":
				os.Remove(filepath.Join(p0, CatalogName))
				os.Remove(filepath.Join(p0, ResumeName))
			case "replaced":
				for _, name := range []string{CatalogName, ResumeName} {
					data, err := os.ReadFile(filepath.Join(p1, name))
					if err != nil {
						t.Fatal(err)
					}
					os.WriteFile(filepath.Join(p0, name), data, 0o600)
				}
			case "resume removed":
				os.Remove(filepath.Join(p0, ResumeName))
			}
			// The sibling of the file appended to is parked in the lost catalog.
			before := ix.Stats().BytesRead
			appendFile(t, files[0], msg("2026-01-02T00:00:00Z", "more"))
			if err := ix.Update([]string{files[0]}); err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(files[1])
			if read := ix.Stats().BytesRead - before; read < fi.Size() {
				t.Errorf("read %d bytes, want the sibling's %d at least", read, fi.Size())
			}
			assertLayoutConverged(t, "wave", root, state)
			if got := len(ix.Sessions()); got != len(files) {
				t.Errorf("%d sessions, want %d", got, len(files))
			}
			if held, parked := inMemory(ix); held != 0 || parked != len(files) {
				t.Errorf("%d units hold sessions, %d parked; want 0, %d", held, parked, len(files))
			}
		})
	}
}

// A rescan (Verify, a full pass) over parked sessions brings them back a batch
// of projects at a time, as VerifyOutputs does, not all at once; and it still
// puts every edited catalog right.
func TestRescanBringsBackABatchOfSessions(t *testing.T) {
	defer func(b int) { verifyBatch, trackSessionPeak = b, false }(verifyBatch)
	verifyBatch, trackSessionPeak = 4, true
	root, state, files := startStore(t, 20)
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(state, "index", "wave", ProjectKey("/w/p7"), CatalogName)
	want, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(catalog, append(append([]byte{}, want...), ' '), 0o600)
	appendFile(t, files[3], msg("2026-01-02T00:00:00Z", "more"))
	ix.mu.Lock()
	ix.sessionPeak = 0
	ix.mu.Unlock()
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	peak := ix.sessionPeak
	ix.mu.Unlock()
	if peak < 1 || peak > 6 { // a batch closes at the project that reaches 4: at most 3+2 units, +1 changed
		t.Errorf("units holding sessions at once = %d, want 1..6 (of %d)", peak, len(files))
	}
	if got, _ := os.ReadFile(catalog); !slices.Equal(got, want) {
		t.Errorf("the edited catalog was not put right by the rescan")
	}
	assertLayoutConverged(t, "wave", root, state)
	if held, parked := inMemory(ix); held != 0 || parked != len(files) {
		t.Errorf("after the rescan %d units hold sessions, %d parked; want 0, %d", held, parked, len(files))
	}
}

// claudeUserLine is one Claude user line of session id with the given cwd.
func claudeUserLine(id, cwd, ts, text string, side bool) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":%v,"userType":"external","cwd":%q,"sessionId":%q,"type":"user","message":{"role":"user","content":%q},"uuid":"u%s","timestamp":%q}`+"\n",
		side, cwd, id, text, ts, ts)
}

// Claude sessions filed under another project than their directory's (their
// cwd), and subagents under their parent's directory, are parked in the
// catalog they are filed in; an append to a sibling, a session that moves to
// another project and a subagent that appears each bring back what they need,
// and the outputs equal a rebuild's with every unit parked again.
func TestParkedSessionsFiledElsewhere(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	const (
		a1 = "11111111-1111-4111-8111-111111111111"
		a2 = "22222222-2222-4222-8222-222222222222"
		b1 = "33333333-3333-4333-8333-333333333333"
	)
	dirA, dirB := filepath.Join(root, "-w-a"), filepath.Join(root, "-w-b")
	os.MkdirAll(dirA, 0o700)
	os.MkdirAll(dirB, 0o700)
	fa1, fa2, fb1 := filepath.Join(dirA, a1+".jsonl"), filepath.Join(dirA, a2+".jsonl"), filepath.Join(dirB, b1+".jsonl")
	sub := filepath.Join(dirA, a1, "subagents", "agent-abc.jsonl")
	appendFile(t, fa1, claudeUserLine(a1, "/w/a", "2026-03-01T10:00:00Z", "first a", false))
	appendFile(t, fa2, claudeUserLine(a2, "/w/b", "2026-03-01T10:00:01Z", "filed under b", false)) // in a's dir, cwd b
	appendFile(t, fb1, claudeUserLine(b1, "/w/b", "2026-03-01T10:00:02Z", "first b", false))
	ix := restartedIndexer(t, "claude", root, state)
	ix.mu.Lock()
	if u := ix.units.get(filepath.Base(dirA) + "/" + a2 + ".jsonl"); u == nil {
		t.Error("no unit for the session filed under /w/b")
	} else if ix.skeyOf(u) != ProjectKey("/w/b") {
		t.Errorf("the session filed under /w/b is parked in %q, want its catalog %q", ix.skeyOf(u), ProjectKey("/w/b"))
	}
	ix.mu.Unlock()
	check := func(step string, wantSessions int) {
		t.Helper()
		assertLayoutConverged(t, "claude", root, state)
		if got := len(ix.Sessions()); got != wantSessions {
			t.Errorf("%s: %d sessions, want %d", step, got, wantSessions)
		}
		if held, parked := inMemory(ix); held != 0 || parked != wantSessions {
			t.Errorf("%s: %d units hold sessions, %d parked; want 0, %d", step, held, parked, wantSessions)
		}
		if st := ix.Stats(); st.Sessions != wantSessions {
			t.Errorf("%s: counters say %d sessions, want %d", step, st.Sessions, wantSessions)
		}
	}
	check("start", 3)

	appendFile(t, fa1, claudeUserLine(a1, "/w/a", "2026-03-01T11:00:00Z", "more a", false))
	if err := ix.Update([]string{fa1}); err != nil {
		t.Fatal(err)
	}
	check("append to a sibling", 3)

	// The session of a's directory filed under b leaves b: a new session file
	// without a cwd of its own takes its directory's project.
	os.Remove(fa2)
	appendFile(t, fa2, `{"type":"user","message":{"role":"user","content":"no cwd"},"uuid":"x","timestamp":"2026-03-01T12:00:00Z","sessionId":"`+a2+`"}`+"\n")
	if err := ix.Update([]string{fa2}); err != nil {
		t.Fatal(err)
	}
	check("moved to its directory's project", 3)
	if c := layoutCatalog(t, state, "claude", "/w/b"); c == nil || len(c.Sessions) != 1 {
		t.Errorf("catalog of /w/b after the move: %+v", c)
	}

	os.MkdirAll(filepath.Dir(sub), 0o700)
	appendFile(t, sub, claudeUserLine(a1, "/w/a", "2026-03-01T13:00:00Z", "a subagent", true))
	if err := ix.Update([]string{filepath.Dir(sub)}); err != nil {
		t.Fatal(err)
	}
	check("subagent", 4)

	os.Remove(fb1)
	if err := ix.Update([]string{fb1}); err != nil {
		t.Fatal(err)
	}
	check("b's last session removed", 3)
	if c := layoutCatalog(t, state, "claude", "/w/b"); c != nil {
		t.Errorf("catalog of /w/b still there: %+v", c)
	}
}

// restartedIndexer indexes root with one indexer, then returns another as a
// restarted daemon has it: loaded from the catalogs and started.
func restartedIndexer(t *testing.T, layout, root, state string) *Indexer {
	t.Helper()
	if err := newLayoutIndexer(t, layout, root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	ix := newLayoutIndexer(t, layout, root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	return ix
}
