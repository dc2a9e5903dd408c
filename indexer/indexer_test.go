package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

var fixedMtime = time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)

// copyTree copies src into dst and gives every file fixedMtime.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o600); err != nil {
			return err
		}
		return os.Chtimes(target, fixedMtime, fixedMtime)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// newLayoutIndexer makes an indexer for a source named after its layout.
func newLayoutIndexer(t *testing.T, layout, root, state string, check bool) *Indexer {
	t.Helper()
	ix, err := New(Options{Source: layout, Layout: layout, Root: root, StateDir: state, NativeIndex: true, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// assertLayoutConverged checks that a from-scratch rebuild (check mode) would change
// nothing. A reconcile error (a corrupt store) is logged: the comparison still runs.
func assertLayoutConverged(t *testing.T, layout, root, state string) {
	t.Helper()
	chk := newLayoutIndexer(t, layout, root, state, true)
	if err := chk.Reconcile(); err != nil {
		t.Logf("check reconcile: %v", err)
	}
	for _, x := range chk.Differences() {
		data, _ := os.ReadFile(x.Path)
		t.Errorf("rebuild differs: %s %s\n%s", x.Change, x.Path, lineDiff(string(data), string(x.Want)))
	}
}

// foldLines folds lines into acc and summarizes it with a file mtime of mtimeTS; it
// returns the session and how many lines acc rejected.
func foldLines(t *testing.T, acc Accumulator, unit string, lines ...string) (*Session, int) {
	t.Helper()
	bad := 0
	for _, l := range lines {
		if acc.Line([]byte(l)) != nil {
			bad++
		}
	}
	s := &Session{Tail: &Tail{}}
	acc.Summarize(s, FileFacts{Unit: unit, Mtime: ParseTime(mtimeTS)})
	return s, bad
}

// restartIdle restarts a layout's indexer (Load, Reconcile) over an unchanged store
// and checks that it reads no session bytes and writes nothing; it returns it.
func restartIdle(t *testing.T, layout, root, state string) *Indexer {
	t.Helper()
	ix := newLayoutIndexer(t, layout, root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	// What list and show without a daemon ask first: a stat of every file
	// proves the catalogs current.
	if !ix.Unchanged() {
		t.Errorf("Unchanged() over an unchanged %s store = false, want true", layout)
	}
	lite := newLayoutIndexer(t, layout, root, state, false)
	if err := lite.LoadLite(); err != nil || !lite.Unchanged() {
		t.Errorf("after LoadLite (%v), Unchanged() over an unchanged %s store = false, want true", err, layout)
	}
	// The listing LoadLite gives is Load's, session for session.
	key := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			s := *e.Session
			s.Tail, s.acc = nil, nil
			out = append(out, fmt.Sprintf("%s %s %+v", e.Source, e.Project, s))
		}
		slices.Sort(out)
		return out
	}
	if got, want := key(lite.Entries()), key(ix.Entries()); !slices.Equal(got, want) {
		t.Errorf("%s: Entries after LoadLite =\n%q\nwant (after Load)\n%q", layout, got, want)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.BytesRead != 0 || st.CatalogWrites+st.NativeWrites != 0 {
		t.Errorf("restart over unchanged files read %d bytes and wrote %d files, want 0 and 0", st.BytesRead, st.CatalogWrites+st.NativeWrites)
	}
	return ix
}

// layoutCatalog reads the catalog of one project of a layout's source; nil if none.
func layoutCatalog(t *testing.T, state, layout, project string) *Catalog {
	t.Helper()
	c, err := ReadCatalog(filepath.Join(state, "index", layout, ProjectKey(project), CatalogName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// normalizeCatalog zeroes the machine-specific tail fields and replaces root.
func normalizeCatalog(t *testing.T, data []byte, root string) []byte {
	t.Helper()
	c, err := DecodeCatalog(data)
	if err != nil {
		t.Fatalf("decode catalog: %v\n%s", err, data)
	}
	for _, s := range c.Sessions {
		s.Tail.Dev, s.Tail.Ino = 0, 0
	}
	return bytes.ReplaceAll(encodeInline(t, c), []byte(root), []byte("$ROOT"))
}

// readCatalogInline reads a catalog with its resume file and renders it as one
// file, each session's tail inline (the form of the golden files, which pin the
// accumulators' states too).
func readCatalogInline(path string) ([]byte, error) {
	c, err := ReadCatalog(path)
	if err != nil {
		return nil, err
	}
	for _, s := range c.Sessions {
		if s.Tail == nil {
			return nil, fmt.Errorf("%s: session %s has no resume state", path, s.ID)
		}
	}
	return encodeInline(nil, c), nil
}

// encodeInline renders c as Encode does, with each session's tail inline.
func encodeInline(t *testing.T, c *Catalog) []byte {
	plain, err := c.Encode()
	if err != nil && t != nil {
		t.Fatal(err)
	}
	head, _, _ := bytes.Cut(plain, []byte("\n"))
	b := append([]byte(nil), bytes.TrimSuffix(head, []byte("]}"))...)
	for i, s := range c.Sessions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = appendSession(b, s)
	}
	if len(c.Sessions) > 0 {
		b = append(b, '\n')
	}
	return append(b, "]}\n"...)
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestWaveGolden(t *testing.T) {
	root := filepath.Join(t.TempDir(), "projects")
	state := t.TempDir()
	copyTree(t, "testdata/wave/basic/store", root)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, golden string }{
		{EncodeProject("/home/u/proj"), "catalog-proj.json"},
		{EncodeProject("/home/u/other app"), "catalog-other.json"},
	} {
		data, err := readCatalogInline(filepath.Join(state, "index", "wave", c.key, CatalogName))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata/wave/basic", c.golden), normalizeCatalog(t, data, root))
	}
	for _, c := range []struct{ dir, golden string }{
		{"home-u-proj", "native-proj.json"},
		{"home-u-other_app", "native-other.json"},
	} {
		data, err := os.ReadFile(filepath.Join(root, c.dir, CatalogName))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata/wave/basic", c.golden), data)
	}
	// The files it wrote are private.
	fi, err := os.Stat(filepath.Join(state, "index", "wave", EncodeProject("/home/u/proj"), CatalogName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("catalog mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	assertLayoutConverged(t, "wave", root, state)
}

const uuidA = "aaaaaaaa-0000-4000-8000-000000000001"

func msg(ts, text string) string {
	return fmt.Sprintf(`{"timestamp":%q,"id":"x","role":"user","blocks":[{"type":"text","content":%q}]}`+"\n", ts, text)
}

func TestIndexerIncrementalAndRestart(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(dir, uuidA+".jsonl")
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	big := strings.Repeat(msg("2026-01-01T00:00:01Z", strings.Repeat("y", 1000)), 2000)
	appendFile(t, file, header+big)

	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	// Reading costs the bytes themselves plus the fingerprint window before the new
	// offset; an incremental read also re-verifies the window before the old offset.
	if got, want := ix.Stats().BytesRead, int64(len(header)+len(big)+fpWindow); got != want {
		t.Fatalf("cold read %d bytes, want %d", got, want)
	}
	line := msg("2026-01-02T00:00:00Z", "hello")
	appendFile(t, file, line)
	before := ix.Stats().BytesRead
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	if got, want := ix.Stats().BytesRead-before, int64(len(line)+2*fpWindow+headWindow); got != want {
		t.Errorf("append read %d bytes, want %d", got, want)
	}
	c := layoutCatalog(t, state, "wave", "/w/p")
	if c.Sessions[0].LastActiveAt != "2026-01-02T00:00:00.000Z" || c.Sessions[0].MessageCount != 2001 {
		t.Errorf("after append: lastActive %s count %d", c.Sessions[0].LastActiveAt, c.Sessions[0].MessageCount)
	}

	// Restart: nothing changed → only stats; then an append reads only itself.
	restartIdle(t, "wave", root, state)
	line2 := msg("2026-01-03T00:00:00Z", "again")
	appendFile(t, file, line2)
	ix3 := newLayoutIndexer(t, "wave", root, state, false)
	ix3.Load()
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix3.Stats().BytesRead, int64(len(line2)+2*fpWindow+headWindow); got != want {
		t.Errorf("restart after append read %d bytes, want %d", got, want)
	}
	assertLayoutConverged(t, "wave", root, state)
}

func TestIndexerTruncateReplaceDelete(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(dir, uuidA+".jsonl")
	appendFile(t, file, msg("2026-01-01T00:00:00Z", "one")+msg("2026-01-01T00:00:01Z", "two"))
	ix := newLayoutIndexer(t, "wave", root, state, false)
	ix.Reconcile()

	// Truncate and write less: re-read from 0.
	os.WriteFile(file, []byte(msg("2026-01-05T00:00:00Z", "new")), 0o600)
	ix.Update([]string{file})
	s := ix.Sessions()[0]
	if s.FirstPrompt != "new" || s.MessageCount != 1 {
		t.Errorf("after truncate: prompt %q count %d, want new/1", s.FirstPrompt, s.MessageCount)
	}
	// Replace by rename with a longer file: a new inode is re-read from 0.
	tmp := filepath.Join(root, "tmp")
	os.WriteFile(tmp, []byte(msg("2026-01-06T00:00:00Z", "replaced")+msg("2026-01-06T00:00:01Z", "x")+msg("2026-01-06T00:00:02Z", "y")), 0o600)
	os.Rename(tmp, file)
	ix.Update([]string{file})
	s = ix.Sessions()[0]
	if s.FirstPrompt != "replaced" || s.MessageCount != 3 {
		t.Errorf("after replace: prompt %q count %d, want replaced/3", s.FirstPrompt, s.MessageCount)
	}
	native := filepath.Join(dir, CatalogName)
	if _, err := os.Stat(native); err != nil {
		t.Fatalf("native index missing: %v", err)
	}
	// Delete: the session leaves the catalog; the dir's native index goes too.
	os.Remove(file)
	ix.Update([]string{file})
	if n := len(ix.Sessions()); n != 0 {
		t.Errorf("after delete: %d sessions, want 0", n)
	}
	if _, err := os.Stat(native); !os.IsNotExist(err) {
		t.Errorf("native index of an emptied dir still exists (%v)", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "index", "wave")); len(ents) != 0 {
		t.Errorf("catalog dirs left after the last session went: %v", ents)
	}
	assertLayoutConverged(t, "wave", root, state)
}

func TestIndexerRebuildsCorruptIndexes(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	file := filepath.Join(dir, uuidA+".jsonl")
	appendFile(t, file, `{"type":"metadata","workdir":"/w/p"}`+"\n"+msg("2026-01-01T00:00:00Z", "one"))
	ix := newLayoutIndexer(t, "wave", root, state, false)
	ix.Reconcile()
	native := filepath.Join(dir, CatalogName)
	good, _ := os.ReadFile(native)

	// Corrupt native index while running: the event for it triggers a rewrite.
	os.WriteFile(native, []byte("{garbage"), 0o600)
	ix.Update([]string{native})
	if got, _ := os.ReadFile(native); !bytes.Equal(got, good) {
		t.Errorf("corrupt native index not rebuilt: %s", got)
	}
	// Native index deleted while stopped, catalog corrupted while stopped.
	os.Remove(native)
	cat := filepath.Join(state, "index", "wave", ProjectKey("/w/p"), CatalogName)
	goodCat, _ := os.ReadFile(cat)
	os.WriteFile(cat, []byte(`{"version":1,"generator":"sessionwatch","sessions":[{"id":`), 0o600)
	ix2 := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	ix2.Reconcile()
	if got, _ := os.ReadFile(native); !bytes.Equal(got, good) {
		t.Errorf("missing native index not rebuilt: %s", got)
	}
	if got, _ := os.ReadFile(cat); !bytes.Equal(got, goodCat) {
		t.Errorf("corrupt catalog not rebuilt:\n%s\nwant\n%s", got, goodCat)
	}
	assertLayoutConverged(t, "wave", root, state)
}

func TestIndexerProjectFallbacks(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	real := filepath.Join(t.TempDir(), "my-app")
	os.MkdirAll(real, 0o700)
	enc := EncodeResolved(real)
	dir := filepath.Join(root, enc)
	os.MkdirAll(dir, 0o700)
	// No session names its workdir: the dir name is decoded, preferring what exists.
	appendFile(t, filepath.Join(dir, uuidA+".jsonl"), msg("2026-01-01T00:00:00Z", "a"))
	ix := newLayoutIndexer(t, "wave", root, state, false)
	ix.Reconcile()
	if got := ix.Sessions()[0].Project; got != real {
		t.Errorf("decoded project = %q, want %q", got, real)
	}
	// A sibling that names a workdir lends it to the others.
	other := "bbbbbbbb-0000-4000-8000-000000000002"
	f2 := filepath.Join(dir, other+".jsonl")
	appendFile(t, f2, `{"type":"metadata","workdir":"/elsewhere/x"}`+"\n")
	ix.Update([]string{f2})
	for _, s := range ix.Sessions() {
		if s.Project != "/elsewhere/x" {
			t.Errorf("session %s project = %q, want the sibling's /elsewhere/x", s.ID, s.Project)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "index", "wave", ProjectKey(real))); !os.IsNotExist(err) {
		t.Errorf("old project's catalog dir still exists (%v)", err)
	}
	assertLayoutConverged(t, "wave", root, state)
}

func TestCatalogKeysCollide(t *testing.T) {
	keys := catalogKeys(map[string][]*Session{"/a b": nil, "/a_b": nil, "/c": nil, "": nil}, ProjectKey)
	if keys["/a b"] != "a_b" || keys["/c"] != "c" || keys[""] != "_" {
		t.Errorf("keys = %v", keys)
	}
	if k := keys["/a_b"]; !strings.HasPrefix(k, "a_b-") || len(k) != len("a_b-")+8 {
		t.Errorf("colliding key = %q, want a_b-<8 hex>", k)
	}
}

// TestIndexerModel applies random sequences of file operations, telling the indexer
// which paths were touched (as the watcher would), and checks after each sequence
// that the catalogs and native indexes equal a full rebuild.
func TestIndexerModel(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			ix := newLayoutIndexer(t, "wave", root, state, false)
			ix.Reconcile()
			rng := rand.New(rand.NewSource(seed))
			m := newModelOps(t, root, rng)
			for step := 0; step < 150; step++ {
				touched := m.step()
				if rng.Intn(4) == 0 {
					if err := ix.Update(touched); err != nil {
						t.Fatal(err)
					}
				} else {
					m.pending = append(m.pending, touched...)
				}
			}
			ix.Update(m.pending)
			assertLayoutConverged(t, "wave", root, state)
		})
	}
}

// modelOps performs random store operations in a wave root.
type modelOps struct {
	t       *testing.T
	root    string
	rng     *rand.Rand
	pending []string
	n       int
}

func newModelOps(t *testing.T, root string, rng *rand.Rand) *modelOps {
	return &modelOps{t: t, root: root, rng: rng}
}

func (m *modelOps) dirs() []string {
	ents, _ := os.ReadDir(m.root)
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(m.root, e.Name()))
		}
	}
	return out
}

func (m *modelOps) files() []string {
	fs, _ := filepath.Glob(filepath.Join(m.root, "*", "*.jsonl"))
	return fs
}

func (m *modelOps) line() string {
	m.n++
	ts := time.Date(2026, 1, 1, 0, 0, m.n, 0, time.UTC).Format(time.RFC3339)
	switch m.rng.Intn(6) {
	case 0:
		return "garbage " + fmt.Sprint(m.n) + "\n"
	case 1:
		return fmt.Sprintf(`{"timestamp":%q,"id":"u","role":"assistant","blocks":[],"usage":{"total_tokens":%d}}`+"\n", ts, m.n)
	default:
		return msg(ts, fmt.Sprintf("prompt %d", m.n))
	}
}

// step does one random operation and returns the paths it touched.
func (m *modelOps) step() []string {
	t := m.t
	dirs, files := m.dirs(), m.files()
	pick := func(xs []string) string { return xs[m.rng.Intn(len(xs))] }
	switch op := m.rng.Intn(10); {
	case op == 0 || len(dirs) == 0:
		d := filepath.Join(m.root, fmt.Sprintf("home-u-p%d", m.rng.Intn(5)))
		os.MkdirAll(d, 0o700)
		return []string{d}
	case op == 1 || len(files) == 0:
		d := pick(dirs)
		name := fmt.Sprintf("%08x-0000-4000-8000-%012x.jsonl", m.rng.Intn(1<<30), m.rng.Intn(1<<30))
		if m.rng.Intn(3) == 0 {
			name = "subagent-" + name
		}
		p := filepath.Join(d, name)
		content := ""
		if m.rng.Intn(2) == 0 {
			content = fmt.Sprintf(`{"type":"metadata","workdir":"/w/%s","createdAt":"2026-01-01T00:00:00Z"}`+"\n", filepath.Base(d))
		}
		if err := os.WriteFile(p, []byte(content+m.line()), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{p}
	case op <= 4:
		p := pick(files)
		appendFile(t, p, m.line())
		return []string{p}
	case op == 5: // partial line, completed later
		p := pick(files)
		l := m.line()
		cut := m.rng.Intn(len(l))
		appendFile(t, p, l[:cut])
		if m.rng.Intn(2) == 0 {
			appendFile(t, p, l[cut:])
		}
		return []string{p}
	case op == 6: // truncate
		p := pick(files)
		fi, _ := os.Stat(p)
		if fi != nil && fi.Size() > 0 {
			os.Truncate(p, m.rng.Int63n(fi.Size()))
		}
		return []string{p}
	case op == 7: // replace by rename
		p := pick(files)
		tmp := filepath.Join(filepath.Dir(p), "tmp-replace")
		os.WriteFile(tmp, []byte(m.line()+m.line()), 0o600)
		os.Rename(tmp, p)
		return []string{tmp, p}
	case op == 8:
		p := pick(files)
		os.Remove(p)
		return []string{p}
	default: // rmdir (with its content)
		d := pick(dirs)
		os.RemoveAll(d)
		return []string{d}
	}
}

func TestTailJSONRoundTrip(t *testing.T) {
	tl := Tail{Dev: 1, Ino: 2, Offset: 3, Mtime: 4, Size: 5, State: json.RawMessage(`{"zeta":1,"alpha":"x"}`)}
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5,"zeta":1,"alpha":"x"}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	var back Tail
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if string(back.State) != `{"zeta":1,"alpha":"x"}` || back.Size != 5 {
		t.Fatalf("Unmarshal = %+v state %s", back, back.State)
	}
}

// lineDiff shows the lines of got and want that differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "line %d:\n  have %s\n  want %s\n", i+1, gl, wl)
		}
	}
	return b.String()
}

func TestReconcileRemovesStaleTempFiles(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	appendFile(t, filepath.Join(dir, uuidA+".jsonl"), msg("2026-01-01T00:00:00Z", "a"))
	stale := filepath.Join(dir, TempPrefix+CatalogName+"-123")
	fresh := filepath.Join(dir, TempPrefix+CatalogName+"-456")
	os.WriteFile(stale, []byte("{"), 0o600)
	os.WriteFile(fresh, []byte("{"), 0o600)
	old := processStart.Add(-time.Minute)
	os.Chtimes(stale, old, old)
	later := processStart.Add(time.Minute)
	os.Chtimes(fresh, later, later)
	// Only the daemon's indexers (writer lock, CleanTemps) remove them.
	ix, err := New(Options{Source: "wave", Layout: "wave", Root: root, StateDir: state, NativeIndex: true, Writer: NewWriterLock(state), CleanTemps: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("temp file left by a crash still there (%v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a temp file being written now was removed: %v", err)
	}
}

// TestCatalogFastPathMatchesDecode: the line-by-line reader used by list gives the
// same sessions as encoding/json, and falls back for files in another shape.
func TestCatalogFastPathMatchesDecode(t *testing.T) {
	root := filepath.Join(t.TempDir(), "projects")
	state := t.TempDir()
	copyTree(t, "testdata/wave/basic/store", root)
	if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(state, "index", "wave", "*", CatalogName))
	if len(files) == 0 {
		t.Fatal("no catalogs")
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fast, ok := decodeCatalogLines(data)
		if !ok {
			t.Fatalf("fast path refused %s", f)
		}
		full, err := DecodeCatalog(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range full.Sessions {
			s.Tail = nil
		}
		if !reflect.DeepEqual(fast, full) {
			t.Errorf("fast path = %+v\nwant %+v", fast, full)
		}
		var v any
		json.Unmarshal(data, &v)
		pretty, _ := json.MarshalIndent(v, "", "  ")
		if _, ok := decodeCatalogLines(pretty); ok {
			t.Errorf("fast path accepted a re-indented catalog")
		}
		os.WriteFile(f, pretty, 0o600)
		if c, err := readCatalogSummaries(f); err != nil || len(c.Sessions) != len(full.Sessions) {
			t.Errorf("fallback of a re-indented catalog: %v", err)
		}
	}
}

// TestReadMtimeAfterAnAppendDuringTheRead: a file that grew while it was read is
// remembered with the mtime of the size read, so the next look does not take it
// for rewritten (same size, other mtime) and read it all again.
func TestReadMtimeAfterAnAppendDuringTheRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if got := readMtime(f, before, before.Size()); got != before.ModTime().UnixNano() {
		t.Errorf("readMtime(read to the stat's size) = %d, want the stat's %d", got, before.ModTime().UnixNano())
	}
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("{\"b\":2}\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the append did not move the mtime")
	}
	if got := readMtime(f, before, after.Size()); got != after.ModTime().UnixNano() {
		t.Errorf("readMtime(read past the stat, to the file's size) = %d, want the new mtime %d", got, after.ModTime().UnixNano())
	}
	// Read past the first stat but not to the end (another append after the
	// read): the size remembered is below the file's, so the next look sees it
	// grown whatever the mtime; the first stat's is kept.
	if got := readMtime(f, before, after.Size()-1); got != before.ModTime().UnixNano() {
		t.Errorf("readMtime(read to neither size) = %d, want the stat's %d", got, before.ModTime().UnixNano())
	}
}
