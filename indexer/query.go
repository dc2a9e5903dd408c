package indexer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// collisionKey is the catalog directory of a project whose ProjectKey another
// project (sorting before it) already has.
func collisionKey(base, project string) string {
	sum := sha256.Sum256([]byte(project))
	return fmt.Sprintf("%s-%x", base, sum[:4])
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
	var cats []*Catalog
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
				// The project's own key, or the one it gets when another project
				// shares that key (catalogKeys): named, not globbed, so one
				// project's list reads no listing of the whole index directory.
				key := ProjectKey(p)
				for _, f := range []string{filepath.Join(root, src, key, CatalogName), filepath.Join(root, src, collisionKey(key, p), CatalogName)} {
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
			cats = append(cats, c)
		}
	}
	return mergeCatalogs(cats), errors.Join(errs...)
}

// mergeCatalogs lists the catalogs' sessions in SortEntries order. A catalog
// keeps its sessions sorted (SortSessions is SortEntries within one source and
// project), so the catalogs are runs to merge, not entries to sort: log2(runs)
// comparisons per entry instead of log2(entries). A run found out of order (a
// catalog not written by Encode) is sorted first.
func mergeCatalogs(cats []*Catalog) []Entry {
	n := 0
	for _, c := range cats {
		n += len(c.Sessions)
	}
	out := make([]Entry, 0, n)
	var ends []int
	for _, c := range cats {
		if len(c.Sessions) == 0 {
			continue
		}
		start := len(out)
		for _, s := range c.Sessions {
			out = append(out, Entry{Session: s, Source: c.Source, Layout: c.Layout, Project: c.Project})
		}
		if run := out[start:]; !slices.IsSortedFunc(run, compareEntries) {
			slices.SortFunc(run, compareEntries)
		}
		ends = append(ends, len(out))
	}
	if len(ends) <= 1 {
		return out
	}
	// Bottom-up: merge neighbouring runs pairwise until one is left.
	buf := make([]Entry, n)
	src, dst := out, buf
	for len(ends) > 1 {
		merged := ends[:0]
		start := 0
		for i := 0; i < len(ends); i += 2 {
			if i+1 == len(ends) {
				copy(dst[start:ends[i]], src[start:ends[i]])
				merged = append(merged, ends[i])
				break
			}
			mergeRuns(dst[start:ends[i+1]], src[start:ends[i]], src[ends[i]:ends[i+1]])
			start = ends[i+1]
			merged = append(merged, ends[i+1])
		}
		ends = merged
		src, dst = dst, src
	}
	return src
}

// mergeRuns merges the sorted a and b into dst (len(a)+len(b) long).
func mergeRuns(dst, a, b []Entry) {
	k := 0
	for len(a) > 0 && len(b) > 0 {
		if compareEntries(b[0], a[0]) < 0 {
			dst[k] = b[0]
			b = b[1:]
		} else {
			dst[k] = a[0]
			a = a[1:]
		}
		k++
	}
	k += copy(dst[k:], a)
	copy(dst[k:], b)
}

// Entries returns every session of the source as a listing entry, unsorted and
// not copied: for a caller that is done with the indexer (list without a
// daemon lists what Load read).
func (ix *Indexer) Entries() []Entry {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := make([]Entry, 0, len(ix.units))
	for _, u := range ix.units {
		for _, s := range u.sessions {
			out = append(out, Entry{Session: s, Source: ix.opt.Source, Layout: ix.layout.Name(), Project: s.Project})
		}
	}
	return out
}

// SortEntries orders entries newest first (ties by id, source, file and project:
// a total order, so the listing is the same whatever order the catalogs were read).
func SortEntries(es []Entry) { slices.SortFunc(es, compareEntries) }

func compareEntries(a, b Entry) int {
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

// MaxAmbiguous is how many candidates an ambiguity error lists before "and N more".
const MaxAmbiguous = 10

// RefRow is what a REF can name in one listed row: its id and its file.
type RefRow struct {
	ID   string
	File string
	// Note tells rows with the same id apart in an ambiguity error (an
	// archive's journal action id, which picks it).
	Note string
}

// RefOptions says how a REF is read.
type RefOptions struct {
	// Numbers: the rows are numbered 1..N as they were listed, and a decimal REF in
	// that range names a row.
	Numbers bool
	// Destructive: a number that is also the start of another session's id is
	// refused (ErrAmbiguous naming both) instead of taking the row. A command that
	// deletes or moves files never guesses.
	Destructive bool
	// Scope names the listed scope in a not-found message: "this project" (the
	// default) or, for --all, "any project".
	Scope string
}

// ResolveRows finds the row a REF names among rows, the listed scope (SPEC §6), and
// returns its index. In order: a REF holding "/" or ".." must be the path of a
// row's file (else ErrBadRef); an exact id; a decimal number 1..N (with
// o.Numbers); a unique id prefix; else ErrNotFound. It never looks beyond rows.
func ResolveRows(rows []RefRow, ref string, o RefOptions) (int, error) {
	if ref == "" {
		return -1, fmt.Errorf("%w: empty reference", ErrBadRef)
	}
	scope := o.Scope
	if scope == "" {
		scope = "this project"
	}
	if strings.ContainsRune(ref, '/') || strings.Contains(ref, "..") || strings.ContainsRune(ref, filepath.Separator) {
		abs, err := filepath.Abs(ref)
		var at []int
		if err == nil {
			for i, r := range rows {
				if r.File == abs {
					at = append(at, i)
				}
			}
		}
		switch len(at) {
		case 0:
			return -1, fmt.Errorf("%w: %s is not a session file of %s", ErrBadRef, ref, scope)
		case 1:
			return at[0], nil
		}
		return -1, ambiguous(rows, at, ref+" holds several sessions; give the id")
	}
	var exact []int
	for i, r := range rows {
		if r.ID == ref {
			exact = append(exact, i)
		}
	}
	switch len(exact) {
	case 1:
		return exact[0], nil
	case 0:
	default:
		// One id in two places (two sources, or archived twice).
		return -1, ambiguous(rows, exact, ref+" names several sessions; give the file path or the row number")
	}
	var prefixed []int
	for i, r := range rows {
		if strings.HasPrefix(r.ID, ref) {
			prefixed = append(prefixed, i)
		}
	}
	if n, ok := rowNumber(ref, len(rows)); o.Numbers && ok {
		row := n - 1
		if !o.Destructive || len(prefixed) == 0 || (len(prefixed) == 1 && prefixed[0] == row) {
			return row, nil
		}
		cands := append([]int{row}, slices.DeleteFunc(prefixed, func(i int) bool { return i == row })...)
		return -1, ambiguous(rows, cands, fmt.Sprintf("%s is row %d (%s) and also the start of another id; give the full id", ref, n, rows[row].ID))
	}
	switch len(prefixed) {
	case 0:
		return -1, fmt.Errorf("%w for %s: %s", ErrNotFound, scope, ref)
	case 1:
		return prefixed[0], nil
	}
	return -1, ambiguous(rows, prefixed, fmt.Sprintf("%s starts %d ids; give more characters", ref, len(prefixed)))
}

// rowNumber reads ref as a list number 1..n written plainly ("3", not "03" or "+3").
func rowNumber(ref string, n int) (int, bool) {
	if ref[0] < '1' || ref[0] > '9' || len(ref) > 9 {
		return 0, false
	}
	v, err := strconv.Atoi(ref)
	return v, err == nil && v >= 1 && v <= n
}

// ambiguous is ErrAmbiguous with what, then the candidates one per line (at most
// MaxAmbiguous, then "and N more"); an id that appears twice is told apart by its file.
func ambiguous(rows []RefRow, idx []int, what string) error {
	count := map[string]int{}
	for _, i := range idx {
		count[rows[i].ID]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", ErrAmbiguous.Error(), what)
	for k, i := range idx {
		if k == MaxAmbiguous {
			fmt.Fprintf(&b, "\nand %d more", len(idx)-k)
			break
		}
		b.WriteString("\n")
		b.WriteString(rows[i].ID)
		if count[rows[i].ID] > 1 {
			b.WriteString("  " + rows[i].File)
			if rows[i].Note != "" {
				b.WriteString("  " + rows[i].Note)
			}
		}
	}
	return &refError{msg: b.String(), sentinel: ErrAmbiguous}
}

// refError is a message of its own that still matches its sentinel with errors.Is.
type refError struct {
	msg      string
	sentinel error
}

func (e *refError) Error() string { return e.msg }
func (e *refError) Unwrap() error { return e.sentinel }

// Resolve finds the session a REF names among entries, as listed (numbered from 1);
// see ResolveRows.
func Resolve(entries []Entry, ref string) (Entry, error) {
	return resolveEntries(entries, ref, RefOptions{Numbers: true})
}

// ResolveDestructive is Resolve for a command that changes files: a number that is
// also another session's id prefix is refused.
func ResolveDestructive(entries []Entry, ref string) (Entry, error) {
	return resolveEntries(entries, ref, RefOptions{Numbers: true, Destructive: true})
}

// ResolveID is Resolve without list numbers: exact id, unique id prefix or path.
func ResolveID(entries []Entry, ref string) (Entry, error) {
	return resolveEntries(entries, ref, RefOptions{})
}

// ResolveEntries is Resolve with explicit options.
func ResolveEntries(entries []Entry, ref string, o RefOptions) (Entry, error) {
	return resolveEntries(entries, ref, o)
}

func resolveEntries(entries []Entry, ref string, o RefOptions) (Entry, error) {
	rows := make([]RefRow, len(entries))
	for i, e := range entries {
		rows[i] = RefRow{ID: e.ID, File: e.File}
	}
	i, err := ResolveRows(rows, ref, o)
	if err != nil {
		return Entry{}, err
	}
	return entries[i], nil
}
