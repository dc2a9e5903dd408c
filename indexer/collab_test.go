package indexer

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestCollabClassify(t *testing.T) {
	tests := []struct {
		rel, project, session string
		ok                    bool
	}{
		{".collab/sessions/s1/terminal-sessions.json", "", "s1", true},
		{".collab/s1/terminal-sessions.json", "", "s1", true},
		{"app/.collab/sessions/s1/terminal-sessions.json", "app", "s1", true},
		{"app/.collab/s1/terminal-sessions.json", "app", "s1", true},
		{"app/.collab/sessions/terminal-sessions.json", "app", "sessions", true}, // old layout, a session named "sessions"
		{"a/b/.collab/sessions/s1/terminal-sessions.json", "a/b", "s1", true},    // .collab at level 3
		{"a/b/c/.collab/sessions/s1/terminal-sessions.json", "", "", false},      // level 4: too deep
		{"app/node_modules/.collab/s1/terminal-sessions.json", "", "", false},
		{"app/node_modules/x/.collab/s1/terminal-sessions.json", "", "", false},
		{".git/.collab/s1/terminal-sessions.json", "", "", false},
		{"app/.hidden/.collab/s1/terminal-sessions.json", "", "", false},
		{"app/.collab/.s1/terminal-sessions.json", "", "", false},
		{"app/.collab/terminal-sessions.json", "", "", false},
		{"app/.collab/sessions/s1/x/terminal-sessions.json", "", "", false},
		{"app/.collab/s1/diagrams/terminal-sessions.json", "", "", false},
		{"app/.collab/sessions/s1/other.json", "", "", false},
		{"app/terminal-sessions.json", "", "", false},
	}
	for _, tt := range tests {
		unit, kind := (collabLayout{}).Classify(tt.rel)
		if ok := kind == UnitDocument && unit == tt.rel; ok != tt.ok {
			t.Errorf("Classify(%q) = %q, %v, want unit %v", tt.rel, unit, kind, tt.ok)
		}
		if tt.ok {
			if p, s, _ := collabSplit(tt.rel); p != tt.project || s != tt.session {
				t.Errorf("collabSplit(%q) = %q, %q, want %q, %q", tt.rel, p, s, tt.project, tt.session)
			}
			if p := (collabLayout{}).ProjectDir(tt.rel); p != tt.project {
				t.Errorf("ProjectDir(%q) = %q, want %q", tt.rel, p, tt.project)
			}
		}
	}
}

func TestCollabSkipDir(t *testing.T) {
	tests := []struct {
		rel  string
		skip bool
	}{
		{"app", false},
		{"clients/acme", false},
		{"clients/acme/site", true}, // its .collab would be at level 4
		{".collab", false},
		{"app/.collab", false},
		{"clients/acme/.collab", false},
		{"clients/acme/.collab/sessions", false},
		{"clients/acme/.collab/sessions/s1", false},
		{"clients/acme/site/.collab", true},
		{"app/.collab/s1", false},
		{"app/.collab/sessions", false},
		{"app/.collab/sessions/s1", false},
		{"app/.collab/sessions/s1/diagrams", true},
		{"app/.collab/s1/diagrams", true},
		{"app/.collab/.cache", true},
		{"app/.collab/sessions/.tmp", true},
		{"node_modules", true},
		{"app/node_modules", true},
		{".git", true},
		{"app/.git", true},
		{"app/.venv", true},
		{".hidden", true},
	}
	for _, tt := range tests {
		if got := (collabLayout{}).SkipDir(tt.rel); got != tt.skip {
			t.Errorf("SkipDir(%q) = %v, want %v", tt.rel, got, tt.skip)
		}
	}
}

// TestCollabWalkedDirs: of the fixture tree, only the directories that can lead to
// a terminal-sessions.json are walked (and so watched).
func TestCollabWalkedDirs(t *testing.T) {
	root := "testdata/collab-terminals/basic/store"
	var walked []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && (collabLayout{}).SkipDir(rel) {
			return filepath.SkipDir
		}
		walked = append(walked, rel)
		return nil
	})
	want := []string{".", ".collab", ".collab/sessions", ".collab/sessions/rootsess",
		"clients", "clients/acme", "clients/acme/.collab", "clients/acme/.collab/sessions", "clients/acme/.collab/sessions/brightfox",
		"webapp", "webapp/.collab", "webapp/.collab/openboldmeadow", "webapp/.collab/sessions", "webapp/.collab/sessions/broken", "webapp/.collab/sessions/quietriver"}
	sort.Strings(walked)
	if !reflect.DeepEqual(walked, want) {
		t.Errorf("walked dirs:\n%s\nwant:\n%s", strings.Join(walked, "\n"), strings.Join(want, "\n"))
	}
}

func TestCollabParse(t *testing.T) {
	mtime := ParseTime(mtimeTS)
	type want struct {
		id, title, created, last string
		skipped                  int
		state                    string
	}
	rec := func(id, created string, order string) string {
		return `{"id":"` + id + `","name":"T ` + id + `","tmuxSession":"mc-s-` + id + `","created":"` + created + `","order":` + order + `}`
	}
	tests := []struct {
		name    string
		data    string
		want    []want
		wantErr bool
	}{
		{"records", `{"sessions":[` + rec("a", "2026-02-01T00:00:00.000Z", "0") + `,` + rec("b", "2026-02-02T00:00:00.000Z", "1") + `],"lastModified":"2026-03-01T00:00:00.000Z"}`,
			[]want{
				{"a", "T a", "2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z", 0, `{"collabSession":"s1","tmuxSession":"mc-s-a","order":0}`},
				{"b", "T b", "2026-02-02T00:00:00.000Z", "2026-03-01T00:00:00.000Z", 0, `{"collabSession":"s1","tmuxSession":"mc-s-b","order":1}`},
			}, false},
		{"no lastModified: created", `{"sessions":[` + rec("a", "2026-02-01T00:00:00Z", `"x"`) + `]}`,
			[]want{{"a", "T a", "2026-02-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z", 0, `{"collabSession":"s1","tmuxSession":"mc-s-a"}`}}, false},
		{"no times: mtime", `{"sessions":[{"id":"a"}],"lastModified":5}`,
			[]want{{"a", "", mtimeTS, mtimeTS, 0, `{"collabSession":"s1"}`}}, false},
		{"bad records skipped", `{"sessions":[1,null,{"name":"no id"},{"id":""},` + rec("a", "2026-02-01T00:00:00Z", "0") + `,` + rec("a", "2026-02-05T00:00:00Z", "1") + `]}`,
			[]want{{"a", "T a", "2026-02-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z", 5, `{"collabSession":"s1","tmuxSession":"mc-s-a","order":0}`}}, false},
		{"no sessions key", `{"lastModified":"2026-03-01T00:00:00Z"}`, nil, false},
		{"sessions null", `{"sessions":null}`, nil, false},
		{"sessions not an array", `{"sessions":{}}`, nil, true},
		{"half written", `{"sessions":[{"id":"a","na`, nil, true},
		{"empty file", ``, nil, true},
		{"array", `[]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := (collabLayout{}).ParseDocument(FileFacts{Root: "/p", Unit: "app/.collab/sessions/s1/terminal-sessions.json", Mtime: mtime}, []byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseDocument(%q) error = %v, want error %v", tt.data, err, tt.wantErr)
			}
			if len(ss) != len(tt.want) {
				t.Fatalf("ParseDocument(%q) = %d sessions, want %d", tt.data, len(ss), len(tt.want))
			}
			for i, s := range ss {
				got := want{s.ID, s.Title, s.CreatedAt, s.LastActiveAt, s.SkippedLines, string(s.Tail.State)}
				if got != tt.want[i] {
					t.Errorf("session %d = %+v, want %+v", i, got, tt.want[i])
				}
				if s.Tail.OwnProject != "/p/app" {
					t.Errorf("session %d project %q, want /p/app", i, s.Tail.OwnProject)
				}
			}
			checkSessionsEncode(t, ss, "/p/app/.collab/sessions/s1/terminal-sessions.json")
		})
	}
	ss, _ := (collabLayout{}).ParseDocument(FileFacts{Root: "/p", Unit: ".collab/x/terminal-sessions.json", Mtime: mtime}, []byte(`{"sessions":[{"id":"a"}]}`))
	if len(ss) != 1 || ss[0].Tail.OwnProject != "/p" {
		t.Errorf("a .collab in the root itself: project %q, want the root", ss[0].Tail.OwnProject)
	}
}

func TestCollabGolden(t *testing.T) {
	root, state := copyStore(t, "collab-terminals", "basic"), t.TempDir()
	ix := newLayoutIndexer(t, "collab-terminals", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ project, golden string }{
		{root, "catalog-root.json"},
		{filepath.Join(root, "webapp"), "catalog-webapp.json"},
		{filepath.Join(root, "clients", "acme"), "catalog-acme.json"},
	} {
		data, err := readCatalogInline(filepath.Join(state, "index", "collab-terminals", ProjectKey(c.project), CatalogName))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata/collab-terminals/basic", c.golden), normalizeCatalog(t, data, root))
	}
	if st := ix.Stats(); st.Projects != 3 || st.Sessions != 5 {
		t.Errorf("stats = %+v, want 3 projects and 5 sessions", st)
	}
	assertLayoutConverged(t, "collab-terminals", root, state)
}

// TestCollabFileRoundTrip: the janitor's reader keeps the file as the tool wrote
// it, unknown fields included, and a rewrite changes only what it edits.
func TestCollabFileRoundTrip(t *testing.T) {
	for _, p := range []string{
		"testdata/collab-terminals/basic/store/webapp/.collab/openboldmeadow/terminal-sessions.json",
		"testdata/collab-terminals/basic/store/webapp/.collab/sessions/quietriver/terminal-sessions.json",
	} {
		orig, _ := os.ReadFile(p)
		cf, err := ReadCollabFile(p)
		if strings.Contains(p, "quietriver") {
			if err == nil {
				t.Errorf("ReadCollabFile(%s) accepted a record that is not an object", p)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := cf.Encode()
		if err != nil || !bytes.Equal(out, orig) {
			t.Fatalf("Encode(ReadCollabFile(%s)) != file (%v):\n%s", p, err, out)
		}
		if len(cf.Sessions) != 2 || string(cf.Extra["version"]) != "2" || string(cf.Sessions[1].Extra["cwd"]) != `"/srv/app"` {
			t.Errorf("ReadCollabFile = %+v", cf)
		}
		// Reconcile-like edit: drop the first record, renumber.
		cf.Sessions = cf.Sessions[1:]
		cf.Sessions[0].Order = 0
		out, _ = cf.Encode()
		want := `{
  "sessions": [
    {
      "id": "3f2a1b0c-1111-4a2b-8c3d-000000000002",
      "name": "server",
      "tmuxSession": "mc-openboldmeadow-c3d4",
      "created": "2026-02-11T10:00:00.000Z",
      "order": 0,
      "cwd": "/srv/app"
    }
  ],
  "lastModified": "2026-03-01T08:00:00.000Z",
  "version": 2
}`
		if string(out) != want {
			t.Errorf("after edit:\n%s\nwant\n%s", out, want)
		}
	}
	// Known fields of an unexpected type are kept verbatim, in place.
	cf, err := DecodeCollabFile([]byte(`{"lastModified":7,"sessions":[{"order":"x","id":"a","name":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cf.MarshalJSON()
	if want := `{"lastModified":7,"sessions":[{"order":"x","id":"a","name":null}]}`; string(out) != want {
		t.Errorf("MarshalJSON = %s, want %s", out, want)
	}
	for _, bad := range []string{``, `[]`, `{"sessions":{}}`, `{"sessions":[1]}`, `{"sessions":[null]}`, `{"sessions":[{"id":"a"}`} {
		if _, err := DecodeCollabFile([]byte(bad)); err == nil {
			t.Errorf("DecodeCollabFile(%q) accepted", bad)
		}
	}
}

func TestCollabIncremental(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	ix := newLayoutIndexer(t, "collab-terminals", root, state, false)
	ix.Reconcile()
	proj := filepath.Join(root, "app")
	file := filepath.Join(proj, ".collab", "sessions", "s1", CollabFileName)
	os.MkdirAll(filepath.Dir(file), 0o700)
	one := `{"sessions":[{"id":"a","name":"Terminal 1","tmuxSession":"mc-s1-a","created":"2026-02-01T00:00:00.000Z","order":0}],"lastModified":"2026-02-01T00:00:00.000Z"}`
	os.WriteFile(file, []byte(one), 0o600)
	// A new project dir is reported as such: walked, the file found.
	if err := ix.Update([]string{proj}); err != nil {
		t.Fatal(err)
	}
	c := layoutCatalog(t, state, "collab-terminals", proj)
	if c == nil || len(c.Sessions) != 1 || c.Project != proj || c.Sessions[0].File != file {
		t.Fatalf("after create: %+v", c)
	}

	// The tool rewrites the file in place: a second terminal.
	two := `{"sessions":[{"id":"a","name":"Terminal 1","tmuxSession":"mc-s1-a","created":"2026-02-01T00:00:00.000Z","order":0},{"id":"b","name":"Terminal 2","tmuxSession":"mc-s1-b","created":"2026-02-02T00:00:00.000Z","order":1}],"lastModified":"2026-02-02T00:00:00.000Z"}`
	os.WriteFile(file, []byte(two), 0o600)
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	if ss := ix.Sessions(); len(ss) != 2 || sessionByID(ss, "b") == nil || sessionByID(ss, "a").LastActiveAt != "2026-02-02T00:00:00.000Z" {
		t.Fatalf("after second terminal: %+v", ss)
	}
	// Caught half-written: an error, the sessions stay.
	os.WriteFile(file, []byte(two[:50]), 0o600)
	if err := ix.Update([]string{file}); err == nil || len(ix.Sessions()) != 2 {
		t.Errorf("half-written file: err %v, %d sessions, want an error and 2", err, len(ix.Sessions()))
	}
	os.WriteFile(file, []byte(two), 0o600)
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	assertLayoutConverged(t, "collab-terminals", root, state)

	// Too deep and inside node_modules: never indexed.
	for _, p := range []string{"a/b/c/.collab/sessions/x/" + CollabFileName, "app/node_modules/.collab/x/" + CollabFileName} {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o700)
		os.WriteFile(full, []byte(one), 0o600)
		if err := ix.Update([]string{full, filepath.Join(root, "a")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ix.Sessions()); n != 2 {
		t.Errorf("files too deep or in node_modules were indexed: %d sessions", n)
	}

	// The collab session dir goes: its terminals leave the catalog.
	os.RemoveAll(filepath.Dir(file))
	if err := ix.Update([]string{filepath.Dir(file)}); err != nil {
		t.Fatal(err)
	}
	if n := len(ix.Sessions()); n != 0 {
		t.Errorf("after removal: %d sessions", n)
	}
	assertLayoutConverged(t, "collab-terminals", root, state)
}

// FuzzCollabFile feeds arbitrary bytes to both collab readers: the indexer's must
// not panic and, when it accepts, yield unique, catalog-fit sessions; the janitor's
// strict reader must re-encode stably, keeping every record.
func FuzzCollabFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/collab-terminals/*/store/*/.collab/*/*")
	more, _ := filepath.Glob("testdata/collab-terminals/*/store/*/.collab/sessions/*/" + CollabFileName)
	for _, p := range append(seeds, more...) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"sessions":[{"id":"a","order":1e0,"x":{"y":[1]}},{"id":"a"}],"lastModified":"2026-01-01T00:00:00Z","z":null}`))
	f.Add([]byte(`{"sessions":[{"id":"a","id":"b","order":null}],"sessions":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := (collabLayout{}).ParseDocument(FileFacts{Root: "/p", Unit: "app/.collab/sessions/s1/" + CollabFileName, Mtime: fixedMtime}, data)
		if err == nil {
			seen := map[string]bool{}
			for _, s := range ss {
				if seen[s.ID] || strings.TrimSpace(s.ID) == "" || s.Tail.OwnProject != "/p/app" {
					t.Fatalf("session id %q (dup %v) project %q", s.ID, seen[s.ID], s.Tail.OwnProject)
				}
				seen[s.ID] = true
			}
			checkSessionsEncode(t, ss, "/p/app/.collab/sessions/s1/"+CollabFileName)
		}
		cf, err := DecodeCollabFile(data)
		if err != nil {
			return
		}
		out, err := cf.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		back, err := DecodeCollabFile(out)
		if err != nil || len(back.Sessions) != len(cf.Sessions) {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		again, err := back.Encode()
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("encoding is not stable:\n%s\n%s", out, again)
		}
		for i := range cf.Sessions {
			a, b := cf.Sessions[i], back.Sessions[i]
			if a.ID != b.ID || a.Name != b.Name || a.TmuxSession != b.TmuxSession || a.Created != b.Created || a.Order != b.Order || len(a.Extra) != len(b.Extra) {
				t.Fatalf("record %d changed: %+v -> %+v", i, a, b)
			}
		}
	})
}
