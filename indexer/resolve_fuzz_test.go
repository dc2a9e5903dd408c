package indexer_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// FuzzResolve checks REF resolution (SPEC §6) against its definition: exact id,
// then unique id prefix (ambiguous lists every match), then 1-based list number;
// a REF with "/" or ".." must name a listed session file. The seed corpus runs in
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
		{"12,13", "1"},  // a prefix of two ids before a number
		{"a,a", "a"},    // the same id twice (two sources): exact wins
		{"ab,ab", "a"},  // the same id twice by prefix: ambiguous
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
		for _, withNumbers := range []bool{true, false} {
			resolve := indexer.ResolveID
			if withNumbers {
				resolve = indexer.Resolve
			}
			got, err := resolve(entries, ref)
			checkResolve(t, entries, ref, withNumbers, got, err)
		}
	})
}

// checkResolve compares one resolution with the rules of SPEC §6.
func checkResolve(t *testing.T, entries []indexer.Entry, ref string, numbers bool, got indexer.Entry, err error) {
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
		exact, prefixed := -1, []int{}
		for i, e := range entries {
			if exact < 0 && e.ID == ref {
				exact = i
			}
			if strings.HasPrefix(e.ID, ref) {
				prefixed = append(prefixed, i)
			}
		}
		n, nerr := strconv.Atoi(ref)
		number := numbers && nerr == nil && strconv.Itoa(n) == ref && n >= 1 && n <= len(entries)
		switch {
		case exact >= 0:
			if err != nil || index != exact {
				t.Fatalf("resolve(%q) = entry %d, %v; want the exact id match %d", ref, index, err, exact)
			}
		case len(prefixed) == 1:
			if err != nil || index != prefixed[0] {
				t.Fatalf("resolve(%q) = entry %d, %v; want the unique prefix match %d", ref, index, err, prefixed[0])
			}
		case len(prefixed) > 1:
			if !errors.Is(err, indexer.ErrAmbiguous) {
				t.Fatalf("resolve(%q) = entry %d, %v; want ErrAmbiguous (%d ids match)", ref, index, err, len(prefixed))
			}
			for _, i := range prefixed {
				if !strings.Contains(err.Error(), entries[i].ID) {
					t.Fatalf("ambiguous error %q does not list %q", err, entries[i].ID)
				}
			}
		case number:
			if err != nil || index != n-1 {
				t.Fatalf("resolve(%q) = entry %d, %v; want list number %d", ref, index, err, n)
			}
		default:
			if !errors.Is(err, indexer.ErrNotFound) {
				t.Fatalf("resolve(%q) = entry %d, %v; want ErrNotFound", ref, index, err)
			}
		}
	}
}
