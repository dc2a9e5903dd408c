package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Helpers shared by the hyperyolo, mogzi and collab-terminals tests. Each source is
// named after its layout.

// sessionByID finds a session in a list, nil if absent.
func sessionByID(ss []*Session, id string) *Session {
	for _, s := range ss {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// checkSessionsEncode checks what every parsed session must satisfy to be filed in
// a catalog: an id, a type, times in TimeLayout, a tail state that is a JSON object
// not shadowing the fixed tail keys, and a catalog round trip that changes nothing.
func checkSessionsEncode(t *testing.T, ss []*Session, file string) {
	t.Helper()
	for _, s := range ss {
		if s.ID == "" || s.Type != TypeMain {
			t.Fatalf("session id %q type %q", s.ID, s.Type)
		}
		for _, ts := range []string{s.CreatedAt, s.LastActiveAt} {
			if tt, err := time.Parse(TimeLayout, ts); err != nil || FormatTime(tt) != ts {
				t.Fatalf("session %s time %q not in TimeLayout", s.ID, ts)
			}
		}
		if s.Tail == nil {
			t.Fatalf("session %s has no tail", s.ID)
		}
		if len(s.Tail.State) > 0 {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(s.Tail.State, &m); err != nil {
				t.Fatalf("session %s state %s: %v", s.ID, s.Tail.State, err)
			}
			for k := range m {
				if tailKeys[k] {
					t.Fatalf("session %s state shadows tail key %q", s.ID, k)
				}
			}
		}
		if s.File == "" {
			s.File = file
		}
	}
	c := &Catalog{Version: CatalogVersion, Generator: "sessionwatch", Source: "s", Layout: "l", Sessions: ss}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCatalog(data)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, data)
	}
	again, err := back.Encode()
	if err != nil || !bytes.Equal(data, again) {
		t.Fatalf("catalog round trip differs (%v):\n%s\n%s", err, data, again)
	}
}

// copyStore copies testdata/<layout>/<case>/store to a temp dir with fixed mtimes.
func copyStore(t *testing.T, layout, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	copyTree(t, filepath.Join("testdata", layout, name, "store"), root)
	return root
}

const hyRecA = `{"backend":"claude","nativeId":"n-a","createdAt":"2026-02-01T09:00:00.000Z","lastSeenAt":"2026-03-01T10:00:00.000Z","lastPrompt":"first"}`

func TestHyperyoloClassify(t *testing.T) {
	tests := []struct {
		rel  string
		kind UnitKind
	}{
		{"sessions.json", UnitDocument},
		{"store.json", UnitDocument}, // a configured root may have another name
		{"sessions.json.tmp", UnitNone},
		{"sessions.json.lock", UnitNone},
		{"sessions.json.lock/x", UnitNone},
		{"a/sessions.json", UnitNone},
		{".", UnitNone},
		{"", UnitNone},
	}
	for _, tt := range tests {
		if unit, got := (hyperyoloLayout{}).Classify(tt.rel); got != tt.kind || (got != UnitNone && unit != tt.rel) {
			t.Errorf("Classify(%q) = %q, %v, want %v", tt.rel, unit, got, tt.kind)
		}
	}
	if !(hyperyoloLayout{}).SkipDir("anything") || (hyperyoloLayout{}).ProjectDir("sessions.json") != "" {
		t.Errorf("a file root must never be walked and has no project dir")
	}
}

func TestHyperyoloParse(t *testing.T) {
	mtime := ParseTime(mtimeTS)
	type want struct {
		id, created, last, prompt, provider string
		invalid                             bool
		size                                int64
		skipped                             int
		state                               string
	}
	tests := []struct {
		name    string
		data    string
		want    []want
		wantErr bool
	}{
		{"full record", `{"hyper_0a1b2c3d":` + hyRecA + `}`,
			[]want{{"hyper_0a1b2c3d", "2026-02-01T09:00:00.000Z", "2026-03-01T10:00:00.000Z", "first", "claude", false, int64(len(hyRecA)), 0, `{"backend":"claude","nativeId":"n-a","lastSeenAt":"2026-03-01T10:00:00.000Z"}`}}, false},
		{"no lastSeenAt: lastActive is createdAt", `{"hyper_00000001":{"backend":"codex","nativeId":"x","createdAt":"2026-01-01T00:00:00Z","invalid":true,"lastResumeStatus":"rejected"}}`,
			[]want{{"hyper_00000001", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", "", "codex", true, 114, 0, `{"backend":"codex","nativeId":"x","lastResumeStatus":"rejected"}`}}, false},
		{"no times: file mtime", `{"hyper_00000002":{"backend":"gemini","lastPrompt":"  a \n  b "}}`,
			[]want{{"hyper_00000002", mtimeTS, mtimeTS, "a b", "gemini", false, 46, 0, `{"backend":"gemini"}`}}, false},
		{"wrong types are ignored", `{"hyper_00000003":{"backend":7,"createdAt":"2026-01-01T00:00:00Z","lastSeenAt":"soon","invalid":"yes","lastPrompt":["x"]}}`,
			[]want{{"hyper_00000003", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", "", "", false, 103, 0, `{"lastSeenAt":"soon"}`}}, false},
		{"bad keys and values are skipped and counted on the newest", `{"lastCleanup":"x","hyper_zz":{},"hyper_00000004":"str","hyper_00000005":null,"hyper_00000006":{"createdAt":"2026-01-02T00:00:00Z"},"hyper_00000007":{"createdAt":"2026-01-03T00:00:00Z"}}`,
			[]want{
				{"hyper_00000007", "2026-01-03T00:00:00.000Z", "2026-01-03T00:00:00.000Z", "", "", false, 36, 4, ""},
				{"hyper_00000006", "2026-01-02T00:00:00.000Z", "2026-01-02T00:00:00.000Z", "", "", false, 36, 0, ""},
			}, false},
		{"repeated key keeps the last value", `{"hyper_00000008":{"backend":"a"},"hyper_00000008":{"backend":"b"}}`,
			[]want{{"hyper_00000008", mtimeTS, mtimeTS, "", "b", false, 15, 0, `{"backend":"b"}`}}, false},
		{"empty file is an empty store", " \n", nil, false},
		{"empty object", "{}", nil, false},
		{"half written", `{"hyper_0a1b2c3d": {"backend": "cl`, nil, true},
		{"array", `[1,2]`, nil, true},
		{"null", `null`, nil, true},
		{"trailing data", `{} {}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := (hyperyoloLayout{}).ParseDocument(FileFacts{Unit: "sessions.json", Mtime: mtime}, []byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseDocument(%q) error = %v, want error %v", tt.data, err, tt.wantErr)
			}
			if len(ss) != len(tt.want) {
				t.Fatalf("ParseDocument(%q) = %d sessions, want %d", tt.data, len(ss), len(tt.want))
			}
			for i, s := range ss {
				got := want{s.ID, s.CreatedAt, s.LastActiveAt, s.FirstPrompt, s.Provider, s.Invalid, s.SizeBytes, s.SkippedLines, string(s.Tail.State)}
				if got != tt.want[i] {
					t.Errorf("session %d = %+v, want %+v", i, got, tt.want[i])
				}
			}
			checkSessionsEncode(t, ss, "/x/sessions.json")
		})
	}
}

func TestHyperyoloGolden(t *testing.T) {
	dir := copyStore(t, "hyperyolo", "basic")
	root := filepath.Join(dir, "sessions.json")
	state := t.TempDir()
	ix := newLayoutIndexer(t, "hyperyolo", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	data, err := readCatalogInline(filepath.Join(state, "index", "hyperyolo", "_", CatalogName))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/hyperyolo/basic/catalog.json", normalizeCatalog(t, data, dir))
	if st := ix.Stats(); st.Sessions != 4 || st.SkippedLines != 3 || st.Projects != 1 {
		t.Errorf("stats = %+v, want 4 sessions, 3 skipped entries, 1 project", st)
	}
	assertLayoutConverged(t, "hyperyolo", root, state)
}

// TestHyperyoloStoreRoundTrip: decoding a store and encoding it again, in file
// order, reproduces HyperYOLO's own bytes, so a rewrite that retires some records
// leaves the others exactly as they were.
func TestHyperyoloStoreRoundTrip(t *testing.T) {
	path := "testdata/hyperyolo/basic/store/sessions.json"
	orig, _ := os.ReadFile(path)
	recs, keys, err := DecodeHyperyoloStore(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeHyperyoloStore(recs, keys)
	if err != nil || !bytes.Equal(out, orig) {
		t.Fatalf("EncodeHyperyoloStore(DecodeHyperyoloStore(x)) != x (%v):\n%s", err, out)
	}
	viaRead, err := ReadHyperyoloStore(path)
	if err != nil || !reflect.DeepEqual(viaRead, recs) {
		t.Fatalf("ReadHyperyoloStore = %v, %v", viaRead, err)
	}
	// Retire one record: every other record keeps its bytes.
	delete(recs, "hyper_deadbeef")
	out, err = EncodeHyperyoloStore(recs, keys)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := DecodeHyperyoloStore(out)
	if err != nil || len(back) != len(recs) {
		t.Fatalf("re-read after retiring: %d records, %v", len(back), err)
	}
	for k, v := range recs {
		if !bytes.Equal(back[k], v) {
			t.Errorf("record %s changed:\n%s\nwant\n%s", k, back[k], v)
		}
	}
	if r, err := DecodeHyperyoloRecord(recs["hyper_0a1b2c3d"]); err != nil || r.Backend != "claude" || string(r.LastResumeStatus) != `"ok"` {
		t.Errorf("DecodeHyperyoloRecord = %+v, %v", r, err)
	}
	if _, err := ReadHyperyoloStore(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadHyperyoloStore(missing) = %v, want ErrNotExist", err)
	}
	if out, _ := EncodeHyperyoloStore(nil, nil); string(out) != "{}" {
		t.Errorf("EncodeHyperyoloStore(empty) = %q, want {}", out)
	}
}

// writeLikeHyperyolo replaces the store the way HyperYOLO does: write
// sessions.json.tmp, then rename it over sessions.json. It returns both paths, as
// the watcher would report them.
func writeLikeHyperyolo(t *testing.T, store, content string) []string {
	t.Helper()
	tmp := store + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, store); err != nil {
		t.Fatal(err)
	}
	return []string{tmp, store}
}

func TestHyperyoloIncremental(t *testing.T) {
	dir, state := filepath.Join(t.TempDir(), "hyperyolo"), t.TempDir()
	store := filepath.Join(dir, "sessions.json")
	ix := newLayoutIndexer(t, "hyperyolo", store, state, false)
	// No store yet: nothing, and no error.
	if err := ix.Reconcile(); err != nil || len(ix.Sessions()) != 0 {
		t.Fatalf("missing store: %v, %d sessions", err, len(ix.Sessions()))
	}
	os.MkdirAll(dir, 0o700)
	two := `{"hyper_0000000a":` + hyRecA + `,"hyper_0000000b":{"backend":"codex","nativeId":"n-b","createdAt":"2026-02-02T00:00:00.000Z"}}`
	if err := ix.Update(writeLikeHyperyolo(t, store, two)); err != nil {
		t.Fatal(err)
	}
	if c := layoutCatalog(t, state, "hyperyolo", ""); c == nil || len(c.Sessions) != 2 {
		t.Fatalf("after first write: catalog %+v", c)
	}

	// A lock directory and other siblings change nothing.
	os.Mkdir(store+".lock", 0o700)
	if err := ix.Update([]string{store + ".lock", filepath.Join(dir, "other.json")}); err != nil {
		t.Fatal(err)
	}

	// HyperYOLO resumes b and creates c.
	three := `{"hyper_0000000a":` + hyRecA + `,"hyper_0000000b":{"backend":"codex","nativeId":"n-b","createdAt":"2026-02-02T00:00:00.000Z","lastSeenAt":"2026-03-03T00:00:00.000Z","lastPrompt":"again"},"hyper_0000000c":{"backend":"gemini","nativeId":"n-c","createdAt":"2026-03-02T00:00:00.000Z"}}`
	if err := ix.Update(writeLikeHyperyolo(t, store, three)); err != nil {
		t.Fatal(err)
	}
	c := layoutCatalog(t, state, "hyperyolo", "")
	if c == nil || len(c.Sessions) != 3 || c.Sessions[0].ID != "hyper_0000000b" || c.Sessions[0].FirstPrompt != "again" || c.Sessions[0].LastActiveAt != "2026-03-03T00:00:00.000Z" {
		t.Fatalf("after resume: %+v", c)
	}
	good, _ := os.ReadFile(filepath.Join(state, "index", "hyperyolo", "_", CatalogName))

	// A corrupt rewrite is an error and keeps the sessions.
	if err := ix.Update(writeLikeHyperyolo(t, store, three[:len(three)/2])); err == nil {
		t.Errorf("corrupt store: Update returned no error")
	}
	if n := len(ix.Sessions()); n != 3 {
		t.Errorf("corrupt store: %d sessions, want the previous 3", n)
	}
	if got, _ := os.ReadFile(filepath.Join(state, "index", "hyperyolo", "_", CatalogName)); !bytes.Equal(got, good) {
		t.Errorf("corrupt store changed the catalog:\n%s", got)
	}
	// A reconcile meanwhile reports it, and still keeps them.
	if err := ix.Reconcile(); err == nil || len(ix.Sessions()) != 3 {
		t.Errorf("reconcile of a corrupt store: err %v, %d sessions", err, len(ix.Sessions()))
	}

	// Fixed again: a record retired by the janitor leaves the catalog.
	recs, keys, err := DecodeHyperyoloStore([]byte(three))
	if err != nil {
		t.Fatal(err)
	}
	delete(recs, "hyper_0000000a")
	fixed, _ := EncodeHyperyoloStore(recs, keys)
	if err := ix.Update(writeLikeHyperyolo(t, store, string(fixed))); err != nil {
		t.Fatal(err)
	}
	if ss := ix.Sessions(); len(ss) != 2 || sessionByID(ss, "hyper_0000000a") != nil {
		t.Errorf("after retiring a: %d sessions", len(ss))
	}
	assertLayoutConverged(t, "hyperyolo", store, state)

	// Restart with nothing changed: no bytes read, nothing written.
	ix2 := newLayoutIndexer(t, "hyperyolo", store, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := ix2.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 || st.Sessions != 2 {
		t.Errorf("restart: %+v, want 0 bytes read, 0 writes, 2 sessions", st)
	}

	// The store goes: so do its sessions and the catalog.
	os.Remove(store)
	if err := ix2.Update([]string{store}); err != nil {
		t.Fatal(err)
	}
	if n := len(ix2.Sessions()); n != 0 {
		t.Errorf("store removed: %d sessions", n)
	}
	if c := layoutCatalog(t, state, "hyperyolo", ""); c != nil {
		t.Errorf("store removed: catalog still lists %d sessions", len(c.Sessions))
	}
}

// FuzzHyperyoloStore feeds arbitrary bytes to the store parser: it must not panic;
// an accepted store yields sessions fit for a catalog, and decoding then encoding
// the store keeps every value.
func FuzzHyperyoloStore(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/hyperyolo/*/store/*")
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"hyper_0a1b2c3d":` + hyRecA + `}`))
	f.Add([]byte(`{"hyper_00000001":{"createdAt":"0001-01-01T00:00:00Z","lastSeenAt":"9999-12-31T23:59:59-01:00"},"x":1}`))
	f.Add([]byte(`{"hyper_00000001":{"lastResumeStatus":{"code":1}},"hyper_00000001":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := (hyperyoloLayout{}).ParseDocument(FileFacts{Unit: "sessions.json", Mtime: fixedMtime}, data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range ss {
			if !hyperyoloKeyRE().MatchString(s.ID) || seen[s.ID] || s.SizeBytes <= 0 {
				t.Fatalf("session id %q (dup %v) size %d", s.ID, seen[s.ID], s.SizeBytes)
			}
			seen[s.ID] = true
		}
		checkSessionsEncode(t, ss, "/x/sessions.json")
		recs, keys, err := DecodeHyperyoloStore(data)
		if err != nil {
			t.Fatalf("parsed but DecodeHyperyoloStore fails: %v", err)
		}
		out, err := EncodeHyperyoloStore(recs, keys)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		back, keys2, err := DecodeHyperyoloStore(out)
		if err != nil || !reflect.DeepEqual(keys, keys2) || len(back) != len(recs) {
			t.Fatalf("re-decode: %v, keys %q vs %q", err, keys, keys2)
		}
		for k, v := range recs {
			var a, b bytes.Buffer
			json.Compact(&a, v)
			json.Compact(&b, back[k])
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("record %q changed: %s -> %s", k, v, back[k])
			}
		}
		if again, _ := EncodeHyperyoloStore(back, keys2); !bytes.Equal(again, out) {
			t.Fatalf("encoding is not stable:\n%s\n%s", out, again)
		}
		if !strings.HasPrefix(string(out), "{") {
			t.Fatalf("encoded store %q", out)
		}
	})
}
