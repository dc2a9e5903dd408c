package indexer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Entry is a session as the CLI sees it: its catalog record and where it is filed.
type Entry struct {
	*Session
	Source  string
	Layout  string
	Project string
}

// Sentinel errors of REF resolution.
var (
	ErrNotFound  = errors.New("session not found")
	ErrAmbiguous = errors.New("ambiguous session reference")
	ErrBadRef    = errors.New("invalid session reference")
)

// ReadCatalogs reads the catalogs of the given sources (all when nil) in stateDir.
// When projects is non-empty, only the catalogs of those projects are read. The
// result is sorted newest first. Unreadable catalogs are reported in the error but
// do not stop the others from being read. Sessions come without their Tail (resume
// state); ReadCatalogsFull includes it.
func ReadCatalogs(stateDir string, sources []string, projects []string) ([]Entry, error) {
	var r summaryReader
	return readCatalogs(stateDir, sources, projects, r.read)
}

// ReadCatalogsFull is ReadCatalogs with every session's Tail.
func ReadCatalogsFull(stateDir string, sources []string, projects []string) ([]Entry, error) {
	return readCatalogs(stateDir, sources, projects, ReadCatalog)
}

func readCatalogs(stateDir string, sources []string, projects []string, read func(string) (*Catalog, error)) ([]Entry, error) {
	root := filepath.Join(stateDir, "index")
	if sources == nil {
		ents, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read catalogs: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				sources = append(sources, e.Name())
			}
		}
	}
	var out []Entry
	var errs []error
	want := map[string]bool{}
	for _, p := range projects {
		want[p] = true
	}
	for _, src := range sources {
		var files []string
		if len(projects) == 0 {
			files, _ = filepath.Glob(filepath.Join(root, src, "*", CatalogName))
		} else {
			seen := map[string]bool{}
			for _, p := range projects {
				key := ProjectKey(p)
				cands := []string{filepath.Join(root, src, key, CatalogName)}
				more, _ := filepath.Glob(filepath.Join(root, src, globEscape(key)+"-????????", CatalogName))
				for _, f := range append(cands, more...) {
					if !seen[f] {
						seen[f] = true
						files = append(files, f)
					}
				}
			}
		}
		for _, f := range files {
			c, err := read(f)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
				continue
			}
			if len(projects) > 0 && !want[c.Project] {
				continue
			}
			for _, s := range c.Sessions {
				out = append(out, Entry{Session: s, Source: c.Source, Layout: c.Layout, Project: c.Project})
			}
		}
	}
	SortEntries(out)
	return out, errors.Join(errs...)
}

// SortEntries orders entries newest first (ties by id, source, file and project:
// a total order, so the listing is the same whatever order the catalogs were read).
func SortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		if c := strings.Compare(b.LastActiveAt, a.LastActiveAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return strings.Compare(a.Project, b.Project)
	})
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// ProjectCandidates are the project paths that name directory dir: the path as
// given and with symlinks resolved.
func ProjectCandidates(dir string) []string {
	out := []string{dir}
	if r, err := filepath.EvalSymlinks(dir); err == nil && r != dir {
		out = append(out, r)
	}
	return out
}

// Resolve finds the session a REF names among entries (as listed, numbered from 1):
// exact id, unique id prefix, 1-based number, or the path of a session file. A REF
// holding "/" or ".." that is no session file is rejected with ErrBadRef.
func Resolve(entries []Entry, ref string) (Entry, error) {
	return resolve(entries, ref, true)
}

// ResolveID is Resolve without list numbers: exact id, unique id prefix or path.
func ResolveID(entries []Entry, ref string) (Entry, error) {
	return resolve(entries, ref, false)
}

func resolve(entries []Entry, ref string, numbers bool) (Entry, error) {
	if ref == "" {
		return Entry{}, fmt.Errorf("%w: empty reference", ErrBadRef)
	}
	if strings.ContainsRune(ref, '/') || strings.Contains(ref, "..") || strings.ContainsRune(ref, filepath.Separator) {
		abs, err := filepath.Abs(ref)
		if err == nil {
			for _, e := range entries {
				if e.File == abs {
					return e, nil
				}
			}
		}
		return Entry{}, fmt.Errorf("%w: %s is not a session file", ErrBadRef, ref)
	}
	for _, e := range entries {
		if e.ID == ref {
			return e, nil
		}
	}
	var matches []Entry
	for _, e := range entries {
		if strings.HasPrefix(e.ID, ref) {
			matches = append(matches, e)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	if len(matches) > 1 {
		ids := make([]string, 0, len(matches))
		for _, m := range matches {
			ids = append(ids, m.ID)
		}
		sort.Strings(ids)
		return Entry{}, fmt.Errorf("%w: %s matches %s", ErrAmbiguous, ref, strings.Join(ids, ", "))
	}
	if n, err := strconv.Atoi(ref); numbers && err == nil && n >= 1 && n <= len(entries) && strconv.Itoa(n) == ref {
		return entries[n-1], nil
	}
	return Entry{}, fmt.Errorf("%w for this project: %s", ErrNotFound, ref)
}
