package janitor

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapshot records content, mode and mtime of every path under root.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil // the root is not part of the session
		}
		v := fi.Mode().String() + " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			v += " " + string(data)
		}
		out[rel] = v
		return nil
	})
	return out
}

func TestTarArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	sess := filepath.Join(root, "sess-1")
	files := map[string]string{
		"sess-1/session.json":             `{"id":"sess-1"}`,
		"sess-1/attachments/a b.txt":      "spaced",
		"sess-1/attachments/日本語.txt":      "non-latin name",
		"sess-1/attachments/\xff\xfe.bin": "not utf-8 name",
		"sess-1/attachments/empty":        "",
		"sess-1.cast":                     "recording",
	}
	mt := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for rel, content := range files {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mt, mt)
	}
	os.Chmod(filepath.Join(root, "sess-1.cast"), 0o600)
	os.MkdirAll(filepath.Join(sess, "emptydir"), 0o750)
	for _, d := range []string{filepath.Join(sess, "emptydir"), filepath.Join(sess, "attachments"), sess} {
		os.Chtimes(d, mt.Add(time.Hour), mt.Add(time.Hour))
	}
	before := snapshot(t, root)

	es, err := collect(root, []string{sess, filepath.Join(root, "sess-1.cast")})
	if err != nil {
		t.Fatal(err)
	}
	meta := ArchiveMeta{ID: "sess-1", Source: "mogzi", Layout: "mogzi", Root: root, File: sess + "/session.json"}
	arch := filepath.Join(dir, "archive", "mogzi", "_")
	path, size, err := writeArchive(arch, "sess-1", meta, es)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, "sess-1.tar.gz") || size <= 0 {
		t.Errorf("archive = %s (%d bytes)", path, size)
	}
	// A second archive of the same name never replaces the first.
	path2, _, err := writeArchive(arch, "sess-1", meta, es)
	if err != nil || path2 == path || !strings.HasSuffix(path2, "sess-1.1.tar.gz") {
		t.Errorf("second archive = %s, %v", path2, err)
	}
	os.Remove(path2)

	ar, err := ReadArchive(path)
	if err != nil || ar.Meta.Format != FormatTar || ar.Meta.ID != "sess-1" || len(ar.Meta.Files) != 2 {
		t.Fatalf("ReadArchive = %+v, %v", ar.Meta, err)
	}
	rd, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	in := func(p string) (*os.Root, string) { rel, _ := filepath.Rel(root, p); return rd, rel }
	if err := removeEntries(es, in); err != nil {
		t.Fatal(err)
	}
	if exists(sess) || exists(filepath.Join(root, "sess-1.cast")) {
		t.Fatal("entries not removed")
	}

	// A file in the way of one target: refused before anything is written.
	os.MkdirAll(filepath.Join(sess, "attachments"), 0o700)
	blocker := filepath.Join(sess, "attachments", "empty")
	os.WriteFile(blocker, []byte("mine"), 0o600)
	if _, _, err := restoreArchive(ar, "test"); !errors.Is(err, ErrExists) {
		t.Fatalf("restore over a file = %v, want ErrExists", err)
	}
	if got, _ := os.ReadFile(blocker); string(got) != "mine" || exists(filepath.Join(root, "sess-1.cast")) {
		t.Fatal("refused restore wrote something")
	}
	os.RemoveAll(sess)

	restored, n, err := restoreArchive(ar, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(restored) != len(files) || n != int64(len("recording")+len(`{"id":"sess-1"}`)+len("spaced")+len("non-latin name")+len("not utf-8 name")) {
		t.Errorf("restored %d files, %d bytes", len(restored), n)
	}
	after := snapshot(t, root)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%q after restore = %q, want %q", k, after[k], v)
		}
	}
	if len(after) != len(before) {
		t.Errorf("restore made %d paths, want %d", len(after), len(before))
	}
	for _, e := range mustGlob(t, filepath.Join(root, "*", ".sessionwatch-tmp-*")) {
		t.Errorf("temp file left: %s", e)
	}
}

func TestRestoreRefusesHostileArchive(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(root, 0o700)
	p := filepath.Join(root, "x.jsonl")
	os.WriteFile(p, []byte("x\n"), 0o600)
	es, _ := collect(root, []string{p})
	for name, mutate := range map[string]func(*ArchiveMeta){
		"escaping path": func(m *ArchiveMeta) { m.Files[0].Rel = "../evil" },
		"relative root": func(m *ArchiveMeta) { m.Root = "root" },
	} {
		t.Run(name, func(t *testing.T) {
			meta := ArchiveMeta{ID: "x", Root: root, File: p}
			path, _, err := writeArchive(filepath.Join(dir, "a"), "x", meta, es)
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			ar, err := ReadArchive(path)
			if err != nil {
				t.Fatal(err)
			}
			mutate(&ar.Meta)
			if _, _, err := restoreArchive(ar, "test"); err == nil {
				t.Errorf("restore with %s accepted", name)
			}
		})
	}
	// A symlinked directory on the way is refused.
	os.Remove(p)
	meta := ArchiveMeta{ID: "x", Root: root, File: filepath.Join(root, "d", "x.jsonl")}
	os.MkdirAll(filepath.Join(root, "d"), 0o700)
	q := filepath.Join(root, "d", "x.jsonl")
	os.WriteFile(q, []byte("x\n"), 0o600)
	es, _ = collect(root, []string{q})
	path, _, _ := writeArchive(filepath.Join(dir, "a"), "x", meta, es)
	os.RemoveAll(filepath.Join(root, "d"))
	os.Symlink(dir, filepath.Join(root, "d"))
	ar, _ := ReadArchive(path)
	if _, _, err := restoreArchive(ar, "test"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("restore through a symlink = %v", err)
	}
}

func TestGzipHeaderIsSelfDescribing(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "proj-é"), 0o700)
	p := filepath.Join(root, "proj-é", "x.jsonl")
	os.WriteFile(p, []byte("line\n"), 0o600)
	es, _ := collect(root, []string{p})
	path, _, err := writeArchive(filepath.Join(dir, "a"), "x.jsonl", ArchiveMeta{ID: "x", Project: "/home/u/😀", Root: root, File: p}, es)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != p {
		t.Errorf("gzip name = %q, want %q", gz.Name, p)
	}
	for _, r := range gz.Comment {
		if r > 0x7f {
			t.Fatalf("gzip comment is not ASCII: %q", gz.Comment)
		}
	}
	ar, err := ReadArchive(path)
	if err != nil || ar.Meta.Project != "/home/u/😀" || ar.Meta.File != p {
		t.Errorf("meta = %+v, %v", ar.Meta, err)
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
