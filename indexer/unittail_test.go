package indexer

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unsafe"
)

// Every fingerprint string a catalog can hold comes back from a unit's tail as
// it was read, and compares equal to itself only.
func TestUnitTailFingerprintRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("one line\nanother line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fp, _, err := Fingerprint(f, 20)
	if err != nil {
		t.Fatal(err)
	}
	hfp, _, err := HeadFingerprint(f, 20)
	if err != nil {
		t.Fatal(err)
	}
	short, _, err := Fingerprint(f, 1000)
	if err != nil || short != "short" {
		t.Fatalf("fingerprint past the end: %q, %v", short, err)
	}
	fps := []string{"", fp, hfp, short, "0000000000000000", "ffffffffffffffff", "00000000000000ab",
		"ABCDEF0123456789", "0123456789abcde", "0123456789abcdef0", "g123456789abcdef", "shorts", "x"}
	for i, a := range fps {
		for _, b := range fps {
			dep := ""
			if i%2 == 1 {
				dep = "d"
			}
			x := Tail{Dev: 7, Ino: 9, Offset: 20, Mtime: 11, Size: 22, LongLine: i%3 == 2, Fp: a, Hfp: b, Dep: dep,
				OwnProject: "p", State: []byte(`{"k":1}`)}
			var u unitTail
			u.set(&x)
			got := u.get()
			want := x
			want.OwnProject, want.State = "", nil
			if got.Dev != want.Dev || got.Ino != want.Ino || got.Offset != want.Offset || got.Mtime != want.Mtime ||
				got.Size != want.Size || got.LongLine != want.LongLine || got.Fp != want.Fp || got.Hfp != want.Hfp ||
				got.Dep != want.Dep || got.OwnProject != "" || got.State != nil {
				t.Fatalf("fp %q hfp %q: got %+v, want %+v", a, b, got, want)
			}
			if !u.same(&x) {
				t.Fatalf("fp %q hfp %q: a tail is not the same as itself", a, b)
			}
			if (u.rare != nil) != (!canonicalFp(a) || !canonicalFp(b) || dep != "" || x.LongLine) {
				t.Fatalf("fp %q hfp %q dep %q: rare strings kept %v", a, b, dep, u.rare)
			}
			for _, c := range fps {
				if u.fpIs(c) != (c == a) || u.hfpIs(c) != (c == b) {
					t.Fatalf("fp %q hfp %q: fpIs(%q) %v, hfpIs(%q) %v", a, b, c, u.fpIs(c), c, u.hfpIs(c))
				}
				y := x
				y.Fp = c
				if u.same(&y) != (c == a) {
					t.Fatalf("fp %q: same as a tail with fp %q: %v", a, c, u.same(&y))
				}
			}
			u.SetFp(b)
			u.SetHfp(a)
			u.SetLongLine(!x.LongLine)
			if u.Fp() != b || u.Hfp() != a || u.Dep() != dep || u.LongLine() == x.LongLine {
				t.Fatalf("set %q, %q, %v: got %q, %q, dep %q, %v", b, a, !x.LongLine, u.Fp(), u.Hfp(), u.Dep(), u.LongLine())
			}
		}
	}
	var u unitTail
	if u.same(nil) {
		t.Fatal("a unit's tail is the same as no tail")
	}
}

// canonicalFp: the fingerprints held without a string (as a value, or none).
func canonicalFp(s string) bool {
	if s == "" {
		return true
	}
	if len(s) != 16 || s == "0000000000000000" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Load's path copies equal their source, survive its reuse, and never share
// bytes with one another, across blocks and for paths too long for one.
func TestRelArena(t *testing.T) {
	var a relArena
	src := make([]byte, 0, 4096)
	var got, want []string
	for i := 0; i < 3000; i++ {
		n := 1 + i*7%300
		if i%500 == 0 {
			n = relBlock // longer than a block's share: copied on its own
		}
		src = src[:0]
		for j := 0; j < n; j++ {
			src = append(src, byte('a'+(i+j)%26))
		}
		want = append(want, string(src))
		got = append(got, a.clone(unsafe.String(&src[0], len(src)))) // the source's bytes, not a copy
		for j := range src {
			src[j] = '!' // the source's bytes reused: the copy keeps its own
		}
	}
	if a.clone("") != "" {
		t.Error("an empty path copied as another")
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("copy %d is %q, want %q", i, got[i], want[i])
		}
	}
}

var fpField = regexp.MustCompile(`"h?fp":"[0-9a-f]{16}"`)

// A resume file whose fingerprints are not of the form Fingerprint writes (a
// catalog edited by another tool) is kept as read: a restart parks its units
// and writes nothing, and the sessions read back carry the same strings.
func TestUnitTailOddFingerprintsRestart(t *testing.T) {
	root, state, files := startStore(t, 2)
	paths, err := filepath.Glob(filepath.Join(CatalogDir(state, "wave"), "*", ResumeName))
	if err != nil || len(paths) != 2 {
		t.Fatalf("resume files %v, %v", paths, err)
	}
	edited := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// Upper-case hex and a stranger head fingerprint: same length, so
		// every offset in the file stays right.
		s := fpField.ReplaceAllStringFunc(string(data), func(f string) string {
			edited++
			if strings.HasPrefix(f, `"hfp"`) {
				return `"hfp":"zzzzzzzzzzzzzzzz"`
			}
			return `"fp":"` + strings.ToUpper(f[6:22]) + `"`
		})
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if edited != 2*len(files) {
		t.Fatalf("edited %d fingerprints, want %d", edited, 2*len(files))
	}
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 || st.Sessions != len(files) {
		t.Errorf("Start read %d bytes, wrote %d catalogs, counts %d sessions; want none, none, %d", st.BytesRead, st.CatalogWrites, st.Sessions, len(files))
	}
	ix.mu.Lock()
	for u := range ix.units.all() {
		if u.skey == 0 || u.tail.rare == nil || !upperFp(u.tail.Fp()) || u.tail.Hfp() != "zzzzzzzzzzzzzzzz" {
			t.Errorf("%s: parked %v, fingerprints %q, %q", u.rel, u.skey != 0, u.tail.Fp(), u.tail.Hfp())
		}
	}
	ix.mu.Unlock()
	for _, s := range ix.Sessions() {
		if s.Tail == nil || !upperFp(s.Tail.Fp) || s.Tail.Hfp != "zzzzzzzzzzzzzzzz" {
			t.Errorf("%s: read back with tail %+v", s.File, s.Tail)
		}
	}
}

// upperFp: a fingerprint of 16 hex digits, upper-case, one of them a letter.
func upperFp(s string) bool {
	return len(s) == 16 && s == strings.ToUpper(s) && s != strings.ToLower(s) && strings.Trim(s, "0123456789ABCDEF") == ""
}
