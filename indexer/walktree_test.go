package indexer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// walkTreeFixture builds a tree with nested dirs, files, a symlink, an empty
// dir and (when not root) an unreadable dir.
func walkTreeFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"a/x.jsonl", "a/y.jsonl", "a/sub/z.json", "b/skip/w.jsonl", "b/v.jsonl", "c/1", "c/2", "c/3", "d.txt"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		locked := filepath.Join(root, "locked")
		if err := os.MkdirAll(filepath.Join(locked, "in"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(locked, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o700) })
	}
	return root
}

// walkRecorder logs every call a walk makes and answers as WalkDir's callers do:
// SkipDir for b/skip, for c/2 (a file: the rest of c is skipped) and for a
// dir it cannot read.
func walkRecorder(calls *[]string) fs.WalkDirFunc {
	return func(p string, d fs.DirEntry, err error) error {
		name := ""
		if d != nil {
			name = fmt.Sprintf("%s dir=%v type=%v", d.Name(), d.IsDir(), d.Type())
		}
		*calls = append(*calls, fmt.Sprintf("%s [%s] err=%v", p, name, err != nil))
		switch {
		case err != nil:
			return filepath.SkipDir
		case strings.HasSuffix(p, "/b/skip"), strings.HasSuffix(p, "/c/2"):
			return filepath.SkipDir
		}
		return nil
	}
}

// walkTree makes filepath.WalkDir's calls, in its order, with plain joins or
// not, listing from a first walk's listings or not.
func TestWalkTreeIsWalkDir(t *testing.T) {
	root := walkTreeFixture(t)
	var want []string
	if err := filepath.WalkDir(root, walkRecorder(&want)); err != nil {
		t.Fatal(err)
	}
	for _, plain := range []bool{true, false} {
		var got []string
		lists := listings{}
		if err := walkTree(root, plain, nil, lists, walkRecorder(&got)); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plain %v: walkTree calls\n%s\nWalkDir's\n%s", plain, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if _, ok := lists[filepath.Join(root, "b", "skip")]; ok {
			t.Errorf("a skipped dir was listed")
		}
		if len(lists) == 0 {
			t.Fatal("nothing listed")
		}
		// The second walk lists from the first's: the same calls, and every
		// listing used up.
		got = nil
		if err := walkTree(root, plain, lists, nil, walkRecorder(&got)); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plain %v, from listings: walkTree calls\n%s\nWalkDir's\n%s", plain, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(lists) != 0 {
			t.Errorf("listings left: %v", lists)
		}
	}
	// A missing root: one call with the error, as WalkDir.
	var got []string
	want = nil
	missing := filepath.Join(root, "nope")
	errW := filepath.WalkDir(missing, walkRecorder(&want))
	errT := walkTree(missing, true, nil, nil, walkRecorder(&got))
	if !reflect.DeepEqual(got, want) || (errT == nil) != (errW == nil) {
		t.Fatalf("missing root: %v %v, WalkDir %v %v", got, errT, want, errW)
	}
}

// A listing taken is what the second walk sees: a file made after the first
// walk is not listed again by it (the prefetcher's listing stands for the pass).
func TestWalkTreeListsFromListings(t *testing.T) {
	root := walkTreeFixture(t)
	lists := listings{}
	var first []string
	if err := walkTree(root, true, nil, lists, walkRecorder(&first)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "new.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var second []string
	if err := walkTree(root, true, lists, nil, walkRecorder(&second)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("second walk differs from the listing:\n%s\nvs\n%s", strings.Join(second, "\n"), strings.Join(first, "\n"))
	}
	// Without listings it is read afresh.
	var third []string
	walkTree(root, true, nil, nil, walkRecorder(&third))
	if len(third) != len(first)+1 {
		t.Fatalf("a fresh walk made %d calls, want %d", len(third), len(first)+1)
	}
}

// A directory named by a listing is entered only while its path is still a
// directory: one replaced by a symlink or a file since is reported as a
// directory that cannot be read, and nothing is walked below it.
func TestWalkTreeListingOfAReplacedDir(t *testing.T) {
	root := walkTreeFixture(t)
	lists := listings{}
	var first []string
	if err := walkTree(root, true, nil, lists, walkRecorder(&first)); err != nil {
		t.Fatal(err)
	}
	sub, c, b := filepath.Join(root, "a", "sub"), filepath.Join(root, "c"), filepath.Join(root, "b")
	for _, d := range []string{sub, c, b} {
		if err := os.Rename(d, filepath.Join(t.TempDir(), "moved")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(t.TempDir()), sub); err != nil { // a listed dir's subdir
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a"), c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var second []string
	if err := walkTree(root, true, lists, nil, walkRecorder(&second)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(second, "\n") + "\n"
	for _, d := range []string{sub, c, b} {
		if want := fmt.Sprintf("%s [%s dir=true type=d---------] err=true\n", d, filepath.Base(d)); !strings.Contains(got, want) {
			t.Errorf("second walk lacks %q:\n%s", want, got)
		}
		if strings.Contains(got, d+"/") {
			t.Errorf("second walk visits a path below %s, which is no directory now:\n%s", d, got)
		}
	}
	if !strings.Contains(got, filepath.Join(root, "a", "x.jsonl")+" ") {
		t.Errorf("second walk lacks a/x.jsonl:\n%s", got)
	}
}
