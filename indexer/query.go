package indexer

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	files, err := catalogPaths(stateDir, sources, projects)
	if err != nil {
		return nil, err
	}
	var cats []*Catalog
	var errs []error
	want := wantProjects(projects)
	for _, f := range files {
		c, err := read(f)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				errs = append(errs, err)
			}
			continue
		}
		if want != nil && !want[c.Project] {
			continue
		}
		cats = append(cats, c)
	}
	return mergeCatalogs(cats), errors.Join(errs...)
}

// wantProjects is the set of projects, nil for none (every project).
func wantProjects(projects []string) map[string]bool {
	if len(projects) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, p := range projects {
		want[p] = true
	}
	return want
}

// catalogPaths names the catalog files ReadCatalogs reads: of the given sources
// (every source directory when nil), of the given projects (every project when
// empty). A path named may not exist.
func catalogPaths(stateDir string, sources []string, projects []string) ([]string, error) {
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
	var files []string
	for _, src := range sources {
		if len(projects) == 0 {
			files = append(files, catalogFiles(filepath.Join(root, src))...)
			continue
		}
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
	return files, nil
}

// catalogFiles names the catalog of every entry of a source's index directory,
// sorted, as filepath.Glob(dir/*/CatalogName) would, but without its lstat of each
// match: the read that follows finds out (a catalog that is not there is
// ErrNotExist, an entry that is no directory ENOTDIR).
func catalogFiles(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	slices.Sort(names)
	files := make([]string, len(names))
	for i, n := range names {
		files[i] = dir + string(filepath.Separator) + n + string(filepath.Separator) + CatalogName
	}
	return files
}

// mergeCatalogs lists the catalogs' sessions in SortEntries order, in one
// slice allocated once.
func mergeCatalogs(cats []*Catalog) []Entry {
	n := 0
	for _, c := range cats {
		n += len(c.Sessions)
	}
	out := make([]Entry, 0, n)
	for _, c := range cats {
		for _, s := range c.Sessions {
			out = append(out, Entry{Session: s, Source: c.Source, Layout: c.Layout, Project: c.Project})
		}
	}
	SortEntries(out)
	return out
}

// Entries returns every session of the source as a listing entry, unsorted and
// not copied: for a caller that is done with the indexer (list without a
// daemon lists what Load read).
func (ix *Indexer) Entries() []Entry {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.lite {
		// The same sessions as the units hold (LoadLite makes no unit but by
		// restoring one), without a walk of the map.
		out := make([]Entry, len(ix.restored))
		for i, s := range ix.restored {
			out[i] = Entry{Session: s, Source: ix.opt.Source, Layout: ix.layout.Name(), Project: s.Project}
		}
		return out
	}
	out := make([]Entry, 0, ix.units.len())
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			out = append(out, Entry{Session: s, Source: ix.opt.Source, Layout: ix.layout.Name(), Project: s.Project})
		}
	}
	// Parked sessions are read from their catalogs (written by the last flush).
	ix.parkedSessionsLocked(func(s *Session) {
		out = append(out, Entry{Session: s, Source: ix.opt.Source, Layout: ix.layout.Name(), Project: s.Project})
	})
	return out
}

// SortEntries orders entries newest first (ties by id, source, file and project:
// a total order, so the listing is the same whatever order the catalogs were read).
//
// It sorts keys, not entries: each entry's first 16 bytes of lastActiveAt packed
// in two integers beside its index, the entries consulted only on a tie. A
// comparison of entries follows two pointers (the session, then its string),
// and at 20,000 entries that was an eighth of `list --all`.
func SortEntries(es []Entry) {
	keys := make([]entryKey, len(es))
	for i := range es {
		k0, k1, k2 := TimeKey(es[i].LastActiveAt)
		keys[i] = entryKey{k0, k1, k2, int32(i)}
	}
	slices.SortFunc(keys, func(a, b entryKey) int {
		// Newest first: b before a.
		if c := cmp.Compare(b.k0, a.k0); c != 0 {
			return c
		}
		if c := cmp.Compare(b.k1, a.k1); c != 0 {
			return c
		}
		if c := cmp.Compare(b.k2, a.k2); c != 0 {
			return c
		}
		return compareEntries(es[a.i], es[b.i])
	})
	// Apply the permutation in place, cycle by cycle: position p takes what was
	// at keys[p].i.
	for p := range es {
		if int(keys[p].i) == p {
			continue
		}
		held, j := es[p], p
		for {
			from := int(keys[j].i)
			keys[j].i = int32(j)
			if from == p {
				es[j] = held
				break
			}
			es[j] = es[from]
			j = from
		}
	}
}

// entryKey is an entry's sort key: TimeKey of its lastActiveAt and the entry's
// index.
type entryKey struct {
	k0, k1, k2 uint64
	i          int32
}

// TimeKey is what SortEntries sorts by first, descending: a lastActiveAt's
// bytes 0–7, 8–15 and 16–23 big-endian (a shorter string padded with zero
// bytes, so two keys compare as the strings' first 24 bytes do, up to ties,
// which the whole strings then break). 24 bytes hold a time to the millisecond
// ("2026-11-22T08:00:00.123Z"): with only the first 16, to the minute, a store
// of 100,000 sessions had so many ties that breaking them was most of the sort.
func TimeKey(lastActiveAt string) (k0, k1, k2 uint64) {
	return prefixWord(lastActiveAt, 0), prefixWord(lastActiveAt, 8), prefixWord(lastActiveAt, 16)
}

// prefixWord is s[off:off+8] as a big-endian integer, zero bytes past its end.
func prefixWord(s string, off int) uint64 {
	if len(s) >= off+8 {
		s = s[off : off+8]
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	var w uint64
	for i := off; i < off+8; i++ {
		w <<= 8
		if i < len(s) {
			w |= uint64(s[i])
		}
	}
	return w
}

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
	i, err := ResolveIndex(entries, ref, o)
	if err != nil {
		return Entry{}, err
	}
	return entries[i], nil
}

// ResolveIndex is ResolveEntries giving the entry's index in entries: its row
// number, less one, when entries are the listed scope.
func ResolveIndex(entries []Entry, ref string, o RefOptions) (int, error) {
	rows := make([]RefRow, len(entries))
	for i, e := range entries {
		rows[i] = RefRow{ID: e.ID, File: e.File}
	}
	return ResolveRows(rows, ref, o)
}
