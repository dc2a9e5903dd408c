package indexer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gemChat writes a Gemini chat of n messages (a user prompt, then model replies,
// each with its own id) and returns its path.
func gemChat(t *testing.T, root, project, stem string, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"sessionId":"%s","projectHash":"90fd","startTime":"2026-03-01T10:00:00Z","lastUpdated":"2026-03-01T10:00:00Z"}`+"\n", stem)
	for i := range n {
		typ, text := "gemini", "reply"
		if i == 0 {
			typ, text = "user", "first prompt"
		}
		fmt.Fprintf(&b, `{"id":"msg-%08d-%s","timestamp":"2026-03-01T10:00:01Z","type":%q,"content":%q}`+"\n", i, stem, typ, text)
	}
	path := filepath.Join(root, project, "chats", "session-"+stem+".jsonl")
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// catalogLine returns the catalog line of the session with that id.
func catalogLine(t *testing.T, state, source, id string) []byte {
	t.Helper()
	cats, _ := filepath.Glob(filepath.Join(state, "index", source, "*", CatalogName))
	for _, c := range cats {
		data, _ := os.ReadFile(c)
		for _, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, []byte(`{"id":"`+id+`"`)) {
				return line
			}
		}
	}
	t.Fatalf("no catalog line for %s", id)
	return nil
}

// The catalog holds what a listing needs; a Gemini session's message ids (its
// resume state) live in the resume file: the catalog line of a 2,000-message
// session is as long as that of a 4-message one, but for its counts.
func TestCatalogSizeFlatInMessages(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	gemChat(t, root, "proj", "small", 4)
	gemChat(t, root, "proj", "large", 2000)
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	small, large := catalogLine(t, state, "gemini", "small"), catalogLine(t, state, "gemini", "large")
	if len(large) > len(small)+16 {
		t.Errorf("catalog line of 2000 messages is %d bytes, of 4 messages %d: grows with messages\n%s", len(large), len(small), large)
	}
	if bytes.Contains(large, []byte("msg-")) || bytes.Contains(large, []byte(`"tail"`)) {
		t.Errorf("catalog line holds resume state: %.200s", large)
	}
	c := layoutCatalog(t, state, "gemini", "")
	for _, s := range c.Sessions {
		if s.Tail == nil || !bytes.Contains(s.Tail.State, []byte("msg-")) {
			t.Errorf("session %s: resume state not read back from %s", s.ID, ResumeName)
		}
	}
	restartIdle(t, "gemini", root, state)
}

// A resume file read whole gives every session its state; read up to its states
// (LoadLite) it gives the tails alone, and the two agree.
func TestResumeStatesAndTails(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	gemChat(t, root, "proj", "one", 3)
	gemChat(t, root, "proj", "two", 7)
	ix := newLayoutIndexer(t, "gemini", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	cats, _ := filepath.Glob(filepath.Join(state, "index", "gemini", "*", CatalogName))
	for _, p := range cats {
		full, _, _, err := readCatalogFiles(p, true)
		if err != nil {
			t.Fatal(err)
		}
		lite, _, res, err := readCatalogFiles(p, false)
		if err != nil || res != nil {
			t.Fatalf("lite read: %v, resume bytes kept: %d", err, len(res))
		}
		for i, s := range full.Sessions {
			l := lite.Sessions[i]
			if s.Tail == nil || l.Tail == nil || len(s.Tail.State) == 0 || l.Tail.State != nil {
				t.Fatalf("session %s: full tail %+v, lite tail %+v", s.ID, s.Tail, l.Tail)
			}
			// What Unchanged compares, and nothing it does not need.
			want := Tail{Dev: s.Tail.Dev, Ino: s.Tail.Ino, Offset: s.Tail.Offset, Mtime: s.Tail.Mtime, Size: s.Tail.Size, Dep: s.Tail.Dep}
			if !reflect.DeepEqual(*l.Tail, want) {
				t.Errorf("session %s: lite tail %+v, want %+v", s.ID, *l.Tail, want)
			}
		}
	}
}

// snapshot is the content of every file of the state dir's index.
func snapshot(t *testing.T, state string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(filepath.Join(state, "index"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			out[p] = data
		}
		return nil
	})
	return out
}

// A crash can leave a catalog and its resume file from two different flushes
// (each is replaced atomically, but not together). A session whose catalog line
// the resume entry does not match is read again from the start; the others
// resume where they were; either way the result equals a rebuild.
func TestResumeFileOutOfStepWithCatalog(t *testing.T) {
	for _, stale := range []string{CatalogName, ResumeName} {
		t.Run("stale "+stale, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			a := gemChat(t, root, "proj", "aaa", 3)
			b := gemChat(t, root, "proj", "bbb", 5)
			ix := newLayoutIndexer(t, "gemini", root, state, false)
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, state)
			appendFile(t, a, `{"id":"late","timestamp":"2026-03-01T11:00:00Z","type":"user","content":"later"}`+"\n")
			if err := ix.Update([]string{a}); err != nil {
				t.Fatal(err)
			}
			// The crash: one of the two files is still the previous flush's.
			for p, data := range before {
				if filepath.Base(p) == stale {
					if err := os.WriteFile(p, data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			ix2 := newLayoutIndexer(t, "gemini", root, state, false)
			if err := ix2.Load(); err != nil {
				t.Fatal(err)
			}
			if ix2.Unchanged() {
				t.Errorf("Unchanged() = true with a %s out of step", stale)
			}
			if err := ix2.Reconcile(); err != nil {
				t.Fatal(err)
			}
			fa, _ := os.Stat(a)
			fb, _ := os.Stat(b)
			// aaa is read again from the start (its entry does not match); bbb,
			// whose line and entry agree, costs nothing.
			if got := ix2.Stats().BytesRead; got < fa.Size() || got >= fa.Size()+fb.Size() {
				t.Errorf("read %d bytes, want aaa's %d read again and none of bbb's %d", got, fa.Size(), fb.Size())
			}
			assertLayoutConverged(t, "gemini", root, state)
			restartIdle(t, "gemini", root, state)
		})
	}
}

// A missing, foreign or damaged resume file costs a re-read, never a wrong catalog.
func TestResumeFileMissingOrDamaged(t *testing.T) {
	for name, damage := range map[string]func(path string){
		"missing":   func(p string) { os.Remove(p) },
		"truncated": func(p string) { data, _ := os.ReadFile(p); os.WriteFile(p, data[:len(data)/2], 0o600) },
		"foreign header": func(p string) {
			data, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(data, []byte(`"project":"`), []byte(`"project":"/elsewhere`), 1), 0o600)
		},
		"bad checksum": func(p string) {
			data, _ := os.ReadFile(p)
			// The last entry's (the first may be an empty file's: nothing to re-read).
			i := bytes.LastIndex(data, []byte(`{"line":"`)) + len(`{"line":"`)
			data[i] = "01"[(data[i]-'0'+1)%2] // another valid hex digit
			os.WriteFile(p, data, 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			copyTree(t, "testdata/wave/basic/store", root)
			ix := newLayoutIndexer(t, "wave", root, state, false)
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			resumes, _ := filepath.Glob(filepath.Join(state, "index", "wave", "*", ResumeName))
			if len(resumes) == 0 {
				t.Fatal("no resume file written")
			}
			damage(resumes[0])
			ix2 := newLayoutIndexer(t, "wave", root, state, false)
			if err := ix2.Load(); err != nil {
				t.Fatal(err)
			}
			if ix2.Unchanged() {
				t.Error("Unchanged() = true with a damaged resume file")
			}
			if err := ix2.Reconcile(); err != nil {
				t.Fatal(err)
			}
			if ix2.Stats().BytesRead == 0 {
				t.Error("nothing re-read: sessions without resume state were trusted")
			}
			assertLayoutConverged(t, "wave", root, state)
			restartIdle(t, "wave", root, state)
		})
	}
}

// The resume line's fast parsers read back exactly what the writers wrote.
func TestResumeEntryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "plain", "/home/u/p ö", `quote " and \ back`, "tab\tnew\nline", "\u2028", "\x01ctl"}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	for i := range 500 {
		tail := &Tail{Dev: rng.Uint64(), Ino: rng.Uint64(), Offset: rng.Int64(), Mtime: rng.Int64() - 1<<62,
			Size: rng.Int64(), LongLine: rng.IntN(2) == 0, Fp: pick(), Hfp: pick(), Dep: pick(), OwnProject: pick()}
		if rng.IntN(2) == 0 {
			tail.State = []byte(fmt.Sprintf(`{"v":%d,"ids":["a","b"],"s":{"x":"}"}}`, i))
		}
		s := &Session{ID: "id-" + pick(), File: "/f/" + pick(), Tail: tail}
		sum := rng.Uint32()
		line := appendResumeEntry(nil, s, sum)
		e, ok := parseResumeLine(line)
		if !ok {
			t.Fatalf("parseResumeLine(%s) failed", line)
		}
		if e.sum != sum || !jsonStringIs(e.id, s.ID) || !jsonStringIs(e.file, s.File) {
			t.Fatalf("parseResumeLine(%s) = %+v", line, e)
		}
		got, ok := decodeTailFixed(e.tail)
		if !ok {
			t.Fatalf("decodeTailFixed(%s) failed", e.tail)
		}
		want := *tail
		want.State = nil
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("decodeTailFixed(%s) = %+v, want %+v", e.tail, *got, want)
		}
		var lite Tail
		if !tailLite(e.tail, &lite) || !reflect.DeepEqual(lite, liteOf(&want)) {
			t.Fatalf("tailLite(%s) = %+v, want %+v", e.tail, lite, liteOf(&want))
		}
	}
}

// liteOf is what tailLite keeps of a tail.
func liteOf(t *Tail) Tail {
	return Tail{Dev: t.Dev, Ino: t.Ino, Offset: t.Offset, Mtime: t.Mtime, Size: t.Size, Dep: t.Dep}
}

// FuzzTailLite: tailLite never panics, and whatever it accepts decodeTail reads
// alike (it skips what it does not keep, but not what is malformed).
func FuzzTailLite(f *testing.F) {
	f.Add(appendTailFixed(nil, &Tail{Dev: 1, Ino: 2, Offset: 3, Mtime: -4, Size: 5, Fp: "ab", Dep: `d"\ö`, OwnProject: "/p"}))
	f.Add(appendTailFixed(nil, &Tail{LongLine: true, Hfp: "x", OwnProject: `,"dep":"no"`}))
	f.Add([]byte(`{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5,"dep":"\u00e9"}`))
	f.Add([]byte(`{"dev":1,"ino":2,"offset":3,"mtime":4,"size":5,"fp":"x}`))
	f.Add([]byte(`{"dev":-1,"ino":2,"offset":3,"mtime":4,"size":5}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		var got Tail
		if !tailLite(v, &got) {
			return
		}
		want, ok := decodeTail(v)
		if !ok {
			t.Fatalf("tailLite(%s) accepted what decodeTail refuses", v)
		}
		if !reflect.DeepEqual(got, liteOf(want)) {
			t.Fatalf("tailLite(%s) = %+v, decodeTail %+v", v, got, liteOf(want))
		}
	})
}

// FuzzResumeLine: parseResumeLine never panics, and whatever it accepts from a
// valid JSON line is what encoding/json reads there.
func FuzzResumeLine(f *testing.F) {
	f.Add(appendResumeEntry(nil, &Session{ID: "a", File: "/f", Tail: &Tail{Dev: 1, Fp: "x"}}, 7))
	f.Add(appendResumeEntry(nil, &Session{ID: `q"`, File: "/ö", Tail: &Tail{Offset: -1, OwnProject: "/p"}}, 0xffffffff))
	f.Add([]byte(`{"line":"0000000g","id":"a","file":"b","tail":{}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok := parseResumeLine(line)
		if !ok || !json.Valid(line) {
			return
		}
		var want struct {
			Line string          `json:"line"`
			ID   string          `json:"id"`
			File string          `json:"file"`
			Tail json.RawMessage `json:"tail"`
		}
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if fmt.Sprintf("%08x", e.sum) != strings.ToLower(want.Line) || !jsonStringIs(e.id, want.ID) || !jsonStringIs(e.file, want.File) ||
			!bytes.Equal(e.tail, want.Tail) {
			t.Fatalf("parseResumeLine(%q) = %+v, encoding/json reads %+v", line, e, want)
		}
		decodeTail(e.tail) // must not panic
	})
}

// A catalog written before the resume file existed (tails inline, no resume
// file) is read with its tails: a restart over it reads no transcript bytes, and
// its first full reconcile rewrites it in today's form.
func TestCatalogWithInlineTailsMigrates(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	copyTree(t, "testdata/wave/basic/store", root)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	cats, _ := filepath.Glob(filepath.Join(state, "index", "wave", "*", CatalogName))
	for _, p := range cats {
		old, err := readCatalogInline(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, old, 0o600)
		os.Remove(resumePath(p))
	}
	lite := newLayoutIndexer(t, "wave", root, state, false)
	if err := lite.LoadLite(); err != nil || !lite.Unchanged() {
		t.Errorf("LoadLite (%v) and Unchanged over catalogs with inline tails: want true", err)
	}
	ix2 := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if n := ix2.Stats().BytesRead; n != 0 {
		t.Errorf("restart over catalogs with inline tails read %d transcript bytes, want 0", n)
	}
	for _, p := range cats {
		data, _ := os.ReadFile(p)
		if bytes.Contains(data, []byte(`"tail"`)) {
			t.Errorf("%s still holds tails after a reconcile", p)
		}
		if _, err := os.Stat(resumePath(p)); err != nil {
			t.Errorf("no resume file after a reconcile: %v", err)
		}
	}
	assertLayoutConverged(t, "wave", root, state)
}
