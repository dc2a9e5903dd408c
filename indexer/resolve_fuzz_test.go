package indexer_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// FuzzResolve checks REF resolution (SPEC §6) against its definition: exact id
// (one id listed twice is ambiguous), then a 1-based list number (refused when
// destructive and another id starts with it), then a unique id prefix (ambiguous
// lists at most MaxAmbiguous matches); a REF with "/" or ".." must name a listed
// session file. The seed corpus runs in
// plain `go test`; fuzz with
//
//	go test -run '^$' -fuzz FuzzResolve -fuzztime 60s ./indexer/
func FuzzResolve(f *testing.F) {
	ids := "3e8f6d7b-4444-4555-8666-c77788889999,4f9a7e8c-5555-4666-8777-d8889999aaaa,4f9a0000-0000-4000-8000-000000000000"
	for _, seed := range []struct{ ids, ref string }{
		{ids, "3e8f6d7b-4444-4555-8666-c77788889999"}, // exact
		{ids, "3e8f"},  // unique prefix
		{ids, "4f9a"},  // ambiguous
		{ids, "4f9a7"}, // unique again
		{ids, "1"}, {ids, "3"}, {ids, "4"}, {ids, "0"}, {ids, "01"}, {ids, "-1"}, {ids, "+1"}, {ids, "1e0"},
		{ids, ""}, {ids, " "}, {ids, "zzz"},
		{ids, "/store/3e8f6d7b-4444-4555-8666-c77788889999.jsonl"}, // a listed file
		{ids, "/store/nope.jsonl"},
		{ids, "../etc/passwd"}, {ids, ".."}, {ids, "a/b"}, {ids, "./1"},
		{"1,2,12", "1"}, // an id that is also a number: the id wins
		{"12,13", "1"},  // a number that is also a prefix of two ids
		{"3a,b,c", "3"}, // row 3 and the prefix of row 1
		{"a,b,3c", "3"}, // row 3 is the only id starting with 3: no conflict
		{"a,a", "a"},    // the same id twice (two sources): ambiguous
		{"ab,ab", "a"},  // the same id twice by prefix: ambiguous
		{"5a,5b,5c,5d,5e,5f,5g,5h,5i,5j,5k,5l", "5"}, // more than MaxAmbiguous
		{"x", "9999999999999999999999"},
		{"é,éa", "é"},
	} {
		f.Add(seed.ids, seed.ref)
	}
	f.Fuzz(func(t *testing.T, idList, ref string) {
		var entries []indexer.Entry
		for i, id := range strings.Split(idList, ",") {
			if i == 64 {
				break
			}
			entries = append(entries, indexer.Entry{Session: &indexer.Session{ID: id, File: "/store/" + id + ".jsonl"}, Source: "s" + strconv.Itoa(i%2)})
		}
		for _, o := range []indexer.RefOptions{{}, {Numbers: true}, {Numbers: true, Destructive: true}} {
			got, err := indexer.ResolveEntries(entries, ref, o)
			checkResolve(t, entries, ref, o, got, err)
		}
	})
}

// checkResolve compares one resolution with the rules of SPEC §6.
func checkResolve(t *testing.T, entries []indexer.Entry, ref string, o indexer.RefOptions, got indexer.Entry, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, indexer.ErrNotFound) && !errors.Is(err, indexer.ErrAmbiguous) && !errors.Is(err, indexer.ErrBadRef) {
		t.Fatalf("resolve(%q) = %v: not one of the sentinel errors", ref, err)
	}
	index := -1
	if err == nil {
		for i := range entries {
			if entries[i].Session == got.Session {
				index = i
				break
			}
		}
		if index < 0 {
			t.Fatalf("resolve(%q) returned an entry that was not listed: %+v", ref, got.Session)
		}
	}
	pathLike := strings.ContainsAny(ref, `/`+string(filepath.Separator)) || strings.Contains(ref, "..")
	switch {
	case ref == "":
		if !errors.Is(err, indexer.ErrBadRef) {
			t.Fatalf("resolve(\"\") = %v, want ErrBadRef", err)
		}
	case pathLike:
		abs, aerr := filepath.Abs(ref)
		want := -1
		for i, e := range entries {
			if aerr == nil && e.File == abs {
				want = i
				break
			}
		}
		if want < 0 && !errors.Is(err, indexer.ErrBadRef) {
			t.Fatalf("resolve(%q) = %+v, %v; want ErrBadRef (a path that is no listed file)", ref, got.Session, err)
		}
		if want >= 0 && (err != nil || index != want) {
			t.Fatalf("resolve(%q) = entry %d, %v; want entry %d (its file)", ref, index, err, want)
		}
	default:
		var exact, prefixed []int
		for i, e := range entries {
			if e.ID == ref {
				exact = append(exact, i)
			}
			if strings.HasPrefix(e.ID, ref) {
				prefixed = append(prefixed, i)
			}
		}
		n, nerr := strconv.Atoi(ref)
		number := o.Numbers && nerr == nil && strconv.Itoa(n) == ref && n >= 1 && n <= len(entries)
		conflict := number && o.Destructive && slices.ContainsFunc(prefixed, func(i int) bool { return i != n-1 })
		switch {
		case len(exact) == 1:
			if err != nil || index != exact[0] {
				t.Fatalf("resolve(%q) = entry %d, %v; want the exact id match %d", ref, index, err, exact[0])
			}
		case len(exact) > 1:
			if !errors.Is(err, indexer.ErrAmbiguous) {
				t.Fatalf("resolve(%q) = entry %d, %v; want ErrAmbiguous (the id is listed %d times)", ref, index, err, len(exact))
			}
		case conflict:
			if !errors.Is(err, indexer.ErrAmbiguous) || !strings.Contains(err.Error(), entries[n-1].ID) {
				t.Fatalf("resolve(%q, destructive) = entry %d, %v; want ErrAmbiguous naming row %d and the prefix match", ref, index, err, n)
			}
		case number:
			if err != nil || index != n-1 {
				t.Fatalf("resolve(%q) = entry %d, %v; want list number %d", ref, index, err, n)
			}
		case len(prefixed) == 1:
			if err != nil || index != prefixed[0] {
				t.Fatalf("resolve(%q) = entry %d, %v; want the unique prefix match %d", ref, index, err, prefixed[0])
			}
		case len(prefixed) > 1:
			if !errors.Is(err, indexer.ErrAmbiguous) {
				t.Fatalf("resolve(%q) = entry %d, %v; want ErrAmbiguous (%d ids match)", ref, index, err, len(prefixed))
			}
			lines := strings.Split(err.Error(), "\n")[1:]
			for k, i := range prefixed {
				id := entries[i].ID
				if strings.ContainsAny(id, "\n") {
					break // a line of its own cannot be told apart
				}
				listed := slices.ContainsFunc(lines, func(l string) bool { return l == id || strings.HasPrefix(l, id+"  ") })
				if listed != (k < indexer.MaxAmbiguous) && !(k >= indexer.MaxAmbiguous && slices.ContainsFunc(entries[:i], func(e indexer.Entry) bool { return e.ID == id })) {
					t.Fatalf("ambiguous error %q: match %d (%q) listed = %v, want the first %d only", err, k, id, listed, indexer.MaxAmbiguous)
				}
			}
			if more := len(prefixed) - indexer.MaxAmbiguous; more > 0 && !strings.HasSuffix(err.Error(), "and "+strconv.Itoa(more)+" more") {
				t.Fatalf("ambiguous error %q does not end with \"and %d more\"", err, more)
			}
		default:
			if !errors.Is(err, indexer.ErrNotFound) {
				t.Fatalf("resolve(%q) = entry %d, %v; want ErrNotFound", ref, index, err)
			}
		}
	}
}
