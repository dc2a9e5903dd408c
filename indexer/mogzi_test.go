package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	mogziA = "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	mogziB = "0197a1b2-0000-7000-8000-0000000000bb"
)

func TestMogziClassify(t *testing.T) {
	unit := mogziA + "/session.json"
	tests := []struct {
		rel, unit string
		kind      UnitKind
	}{
		{mogziA, unit, UnitDocument}, // the session directory: a catalog File maps back
		{mogziA + "/session.json", unit, UnitDocument},
		{mogziA + "/attachments", unit, UnitDocument},
		{mogziA + "/attachments/0-1-ABCDEF0123456789.png", unit, UnitDocument},
		{mogziA + "/attachments/sub/x.bin", unit, UnitDocument},
		{strings.ToUpper(mogziA) + "/session.json", strings.ToUpper(mogziA) + "/session.json", UnitDocument},
		{mogziA + "/session.tmp", "", UnitNone},
		{mogziA + "/session.corrupted", "", UnitNone},
		{mogziA + "/other/session.json", "", UnitNone},
		{mogziA + ".json", "", UnitNone}, // legacy flat file
		{"notes/session.json", "", UnitNone},
		{"notes", "", UnitNone},
		{"session.json", "", UnitNone},
	}
	for _, tt := range tests {
		if u, k := (mogziLayout{}).Classify(tt.rel); u != tt.unit || k != tt.kind {
			t.Errorf("Classify(%q) = %q, %v, want %q, %v", tt.rel, u, k, tt.unit, tt.kind)
		}
	}
}

func TestMogziSkipDir(t *testing.T) {
	tests := []struct {
		rel  string
		skip bool
	}{
		{mogziA, false},
		{mogziA + "/attachments", false},
		{mogziA + "/attachments/sub", false},
		{mogziA + "/other", true},
		{"notes", true},
		{".git", true},
	}
	for _, tt := range tests {
		if got := (mogziLayout{}).SkipDir(tt.rel); got != tt.skip {
			t.Errorf("SkipDir(%q) = %v, want %v", tt.rel, got, tt.skip)
		}
	}
}

func TestMogziParse(t *testing.T) {
	root := t.TempDir()
	mtime := ParseTime(mtimeTS)
	type want struct {
		id, title, prompt, created, last, model, provider string
		msgs                                              int
		corrupt                                           bool
	}
	tests := []struct {
		name string
		data string
		want want
	}{
		{"full", `{"id":"` + mogziB + `","name":"Refactor","createdAt":"2026-02-14T09:00:00.1234567Z","lastModifiedAt":"2026-03-02T17:45:10.7654321+01:00","history":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],"initialPrompt":"  do \n the thing...","usageMetrics":{"inputTokens":5}}`,
			want{mogziB, "Refactor", "do the thing...", "2026-02-14T09:00:00.123Z", "2026-03-02T16:45:10.765Z", "", "", 2, false}},
		{"prompt from first user message", `{"id":"` + mogziB + `","history":[{"role":"system","content":"sys"},{"role":"User","content":"  "},{"role":"user","content":"hello\tthere"}],"initialPrompt":""}`,
			want{mogziB, "", "hello there", mtimeTS, mtimeTS, "", "", 3, false}},
		{"zone-less and MinValue times", `{"createdAt":"2026-02-03T04:00:00","lastModifiedAt":"0001-01-01T00:00:00","history":null,"model":"m","provider":"p"}`,
			want{"dir-id", "", "", "2026-02-03T04:00:00.000Z", mtimeTS, "m", "p", 0, false}},
		{"blank id uses the dir", `{"id":"  ","name":"n"}`,
			want{"dir-id", "n", "", mtimeTS, mtimeTS, "", "", 0, false}},
		{"truncated", `{"id":"` + mogziB + `","name":"x","history":[{"role":"us`,
			want{"dir-id", "", "", mtimeTS, mtimeTS, "", "", 0, true}},
		{"wrong type", `{"id":"` + mogziB + `","history":{"role":"user"}}`,
			want{"dir-id", "", "", mtimeTS, mtimeTS, "", "", 0, true}},
		{"not an object", `null`, want{"dir-id", "", "", mtimeTS, mtimeTS, "", "", 0, true}},
		{"empty", ``, want{"dir-id", "", "", mtimeTS, mtimeTS, "", "", 0, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := (mogziLayout{}).ParseDocument(FileFacts{Root: root, Unit: "dir-id/session.json", Mtime: mtime}, []byte(tt.data))
			if err != nil || len(ss) != 1 {
				t.Fatalf("ParseDocument = %d sessions, %v; want 1 session, never an error", len(ss), err)
			}
			s := ss[0]
			got := want{s.ID, s.Title, s.FirstPrompt, s.CreatedAt, s.LastActiveAt, s.Model, s.Provider, s.MessageCount, s.Corrupt}
			if got != tt.want {
				t.Errorf("summary = %+v, want %+v", got, tt.want)
			}
			if s.File != filepath.Join(root, "dir-id") || s.SizeBytes != int64(len(tt.data)) {
				t.Errorf("file %q size %d, want the session dir and %d", s.File, s.SizeBytes, len(tt.data))
			}
			if tt.want.corrupt != strings.Contains(string(s.Tail.State), `"parseError"`) {
				t.Errorf("state %s: parseError should be there exactly when corrupt", s.Tail.State)
			}
			checkSessionsEncode(t, ss, "")
		})
	}
}

func TestMogziGolden(t *testing.T) {
	root, state := copyStore(t, "mogzi", "basic"), t.TempDir()
	ix := newLayoutIndexer(t, "mogzi", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	data, err := readCatalogInline(filepath.Join(state, "index", "mogzi", "_", CatalogName))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/mogzi/basic/catalog.json", normalizeCatalog(t, data, root))
	assertLayoutConverged(t, "mogzi", root, state)
}

// writeLikeMogzi saves session.json the way Mogzi does: session.tmp, then a move.
func writeLikeMogzi(t *testing.T, dir, content string) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, final := filepath.Join(dir, "session.tmp"), filepath.Join(dir, "session.json")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	return []string{tmp, final}
}

func TestMogziIncremental(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	ix := newLayoutIndexer(t, "mogzi", root, state, false)
	ix.Reconcile()
	dir := filepath.Join(root, mogziB)
	doc := `{"id":"` + mogziB + `","name":"n","createdAt":"2026-02-01T00:00:00Z","lastModifiedAt":"2026-02-01T00:05:00Z","history":[{"role":"user","content":"hi"}],"initialPrompt":"hi"}`
	// A new directory is reported as such; it is walked.
	writeLikeMogzi(t, dir, doc)
	if err := ix.Update([]string{dir}); err != nil {
		t.Fatal(err)
	}
	ss := ix.Sessions()
	if len(ss) != 1 || ss[0].ID != mogziB || ss[0].File != dir || ss[0].SizeBytes != int64(len(doc)) {
		t.Fatalf("after create: %+v", ss)
	}

	// An attachment is added: the size follows, though session.json did not change.
	att := filepath.Join(dir, "attachments", "1-0-0123456789ABCDEF.png")
	os.MkdirAll(filepath.Dir(att), 0o700)
	os.WriteFile(att, make([]byte, 1000), 0o600)
	if err := ix.Update([]string{att}); err != nil {
		t.Fatal(err)
	}
	if got, want := ix.Sessions()[0].SizeBytes, int64(len(doc)+1000); got != want {
		t.Errorf("after attachment: sizeBytes %d, want %d", got, want)
	}
	c := layoutCatalog(t, state, "mogzi", "")
	if c == nil || c.Sessions[0].SizeBytes != int64(len(doc)+1000) || !strings.Contains(string(c.Sessions[0].Tail.State), `"attachments":1`) {
		t.Errorf("catalog after attachment: %+v", c)
	}
	assertLayoutConverged(t, "mogzi", root, state)

	// Restart with nothing changed: the catalog's File (the directory) maps back to
	// its unit, so nothing is read or written.
	ix2 := newLayoutIndexer(t, "mogzi", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := ix2.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 || st.Sessions != 1 {
		t.Errorf("restart: %+v, want 0 bytes read, 0 writes, 1 session", st)
	}
	ix = ix2

	// An attachment grows while sessionwatch is stopped: session.json is unchanged,
	// but the restart's reconcile sees the attachments' stamp differ.
	if err := os.WriteFile(att, make([]byte, 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	ix3 := newLayoutIndexer(t, "mogzi", root, state, false)
	if err := ix3.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix3.Sessions()[0].SizeBytes, int64(len(doc)+3000); got != want {
		t.Errorf("after an attachment changed while stopped: sizeBytes %d, want %d", got, want)
	}
	assertLayoutConverged(t, "mogzi", root, state)
	ix = ix3

	// The attachment goes.
	os.Remove(att)
	if err := ix.Update([]string{att}); err != nil {
		t.Fatal(err)
	}
	if got := ix.Sessions()[0].SizeBytes; got != int64(len(doc)) {
		t.Errorf("after attachment removed: sizeBytes %d, want %d", got, len(doc))
	}

	// A corrupt save is listed corrupt, never dropped.
	if err := ix.Update(writeLikeMogzi(t, dir, doc[:40])); err != nil {
		t.Fatal(err)
	}
	ss = ix.Sessions()
	if len(ss) != 1 || !ss[0].Corrupt || ss[0].ID != mogziB || ss[0].LastActiveAt == "" {
		t.Fatalf("after corrupt save: %+v", ss)
	}
	if c := layoutCatalog(t, state, "mogzi", ""); c == nil || !c.Sessions[0].Corrupt {
		t.Errorf("catalog after corrupt save: %+v", c)
	}
	assertLayoutConverged(t, "mogzi", root, state)

	// Repaired, then the whole directory is removed (as the janitor archives it).
	if err := ix.Update(writeLikeMogzi(t, dir, doc)); err != nil {
		t.Fatal(err)
	}
	if ss := ix.Sessions(); len(ss) != 1 || ss[0].Corrupt || ss[0].Title != "n" {
		t.Fatalf("after repair: %+v", ss)
	}
	os.RemoveAll(dir)
	if err := ix.Update([]string{dir}); err != nil {
		t.Fatal(err)
	}
	if n := len(ix.Sessions()); n != 0 {
		t.Errorf("after dir removed: %d sessions", n)
	}
	if c := layoutCatalog(t, state, "mogzi", ""); c != nil {
		t.Errorf("after dir removed: catalog lists %d sessions", len(c.Sessions))
	}
	assertLayoutConverged(t, "mogzi", root, state)
}

// FuzzMogziSession feeds arbitrary bytes as a session.json: the parser must not
// panic or fail, and always lists exactly one session fit for a catalog, corrupt
// ones under the directory name.
func FuzzMogziSession(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/mogzi/*/store/*/session.json")
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"id":"x","history":[{"role":"user","content":"\u0000"}],"usageMetrics":{"inputTokens":-1}}`))
	f.Add([]byte(`{"createdAt":"9999-12-31T23:59:59-01:00","lastModifiedAt":"0000-01-01T00:00:00+01:00"}`))
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := (mogziLayout{}).ParseDocument(FileFacts{Root: root, Unit: mogziA + "/session.json", Mtime: fixedMtime}, data)
		if err != nil || len(ss) != 1 {
			t.Fatalf("ParseDocument = %d sessions, %v", len(ss), err)
		}
		s := ss[0]
		if s.Corrupt && s.ID != mogziA {
			t.Fatalf("corrupt session id %q, want the dir name", s.ID)
		}
		if s.File != filepath.Join(root, mogziA) || s.SizeBytes != int64(len(data)) {
			t.Fatalf("file %q size %d", s.File, s.SizeBytes)
		}
		checkSessionsEncode(t, ss, "")
	})
}
