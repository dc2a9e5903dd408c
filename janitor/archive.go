package janitor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// Archive formats (ArchiveMeta.Format).
const (
	FormatGzip = "gzip" // one file, gzipped: <name>.gz
	FormatTar  = "tar"  // a session with companions or a directory session: <name>.tar.gz
)

// ArchiveVersion is the version of the metadata written into every archive.
const ArchiveVersion = 1

// ErrExists is returned by a restore that would overwrite an existing path.
var ErrExists = errors.New("already exists")

// errChanged means a session's files changed while they were being archived or
// just before removal: the originals are kept.
var errChanged = errors.New("changed during the pass")

// ArchiveMeta describes an archived session. It is stored as JSON in the gzip
// header's extra field (subfield "SW", RFC 1952 §2.3.1.1), so an archive needs
// nothing else to be restored. The header's name field also holds the original
// absolute transcript path and its comment a one-line summary, for `gzip -l`
// and humans, when they fit gzip's Latin-1 strings (Go's reader takes at most
// 511 bytes each, which is why the metadata is not in the comment).
type ArchiveMeta struct {
	Version    int    `json:"v"`
	ID         string `json:"id"`
	Source     string `json:"source"`
	Layout     string `json:"layout"`
	Project    string `json:"project"`
	Type       string `json:"type"`
	Root       string `json:"root"` // the source root every path is relative to
	File       string `json:"file"` // the transcript, absolute
	Format     string `json:"format"`
	ArchivedAt string `json:"archivedAt"`
	// ActionID is the journal action that wrote the archive (`restore` takes
	// it to pick one of several archives of a session).
	ActionID string `json:"actionId,omitempty"`
	// Files are the session's paths: for FormatGzip the one file; for FormatTar
	// the top-level paths (transcript or session directory, companions), whose
	// content the tar entries hold.
	Files []ArchivedFile `json:"files"`
	// Reason is why it was archived, as journaled; Summary the session as the
	// catalog listed it (`list --archived`). Archives written before they were
	// recorded have neither.
	Reason  string          `json:"reason,omitempty"`
	Summary *ArchiveSummary `json:"summary,omitempty"`
}

// ArchivedFile is one path of an archived session.
type ArchivedFile struct {
	Rel    string `json:"rel"`              // slash-separated, relative to Root
	RelRaw []byte `json:"relRaw,omitempty"` // the exact bytes, when Rel is not valid UTF-8
	Dir    bool   `json:"dir,omitempty"`
	Mode   uint32 `json:"mode"` // permission bits
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtime"` // unix nanoseconds
}

func (f ArchivedFile) rel() string {
	if f.RelRaw != nil {
		return string(f.RelRaw)
	}
	return f.Rel
}

// Archived is one archive file found in the archive directory.
type Archived struct {
	Path       string
	Meta       ArchiveMeta
	Size       int64     // bytes of the archive file (of the record, for a record)
	ArchivedAt time.Time // the archive file's mtime (the record's retiredAt)
	// Record is set for a record archived in records.jsonl (Path); Meta.File
	// is then the store file it came from.
	Record *ArchivedRecord
}

// entry is one path to archive, as it looked just before archiving.
type entry struct {
	abs  string
	rel  string // slash-separated, relative to the root
	info fs.FileInfo
	top  bool // one of the session's paths (not something inside one)
	// f, when set, is the file held open (and leased) by a retirement: it is
	// read through f, since opening the file again would break the lease.
	f      *os.File
	leased bool
}

// collect lists every path under paths (without following symlinks), parents
// before children, relative to root. A symlink or special file is an error.
func collect(root string, paths []string) ([]entry, error) {
	var out []entry
	for _, p := range paths {
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if !info.Mode().IsRegular() && !info.IsDir() {
				return fmt.Errorf("%s is not a regular file or directory", q)
			}
			rel, err := filepath.Rel(root, q)
			if err != nil || !filepath.IsLocal(rel) {
				return fmt.Errorf("%s is outside %s", q, root)
			}
			out = append(out, entry{abs: q, rel: filepath.ToSlash(rel), info: info, top: q == p})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unchanged reports whether every collected path still looks as it did: same
// inode, size and mtime (directories: still there, same inode).
func unchanged(es []entry) error {
	for _, e := range es {
		fi, err := os.Lstat(e.abs)
		if err != nil {
			return fmt.Errorf("%s: %w", e.abs, errChanged)
		}
		_, ino1 := identity(fi)
		_, ino2 := identity(e.info)
		if ino1 != ino2 || fi.Mode().Type() != e.info.Mode().Type() {
			return fmt.Errorf("%s was replaced: %w", e.abs, errChanged)
		}
		if e.info.Mode().IsRegular() && (fi.Size() != e.info.Size() || !fi.ModTime().Equal(e.info.ModTime())) {
			return fmt.Errorf("%s was modified: %w", e.abs, errChanged)
		}
	}
	return nil
}

func identity(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// writeArchive writes the entries into one archive in dir, named after base,
// atomically (temp file, fsync, link into place, directory fsync; 0600 files,
// 0700 directories). It fails with errChanged when a file changed meanwhile. It
// returns the archive's path and size; an existing archive is never replaced.
func writeArchive(dir, base string, meta ArchiveMeta, es []entry) (string, int64, error) {
	if len(es) == 0 {
		return "", 0, errors.New("nothing to archive")
	}
	meta.Version = ArchiveVersion
	meta.Format = FormatTar
	ext := ".tar.gz"
	if len(es) == 1 && es[0].info.Mode().IsRegular() {
		meta.Format = FormatGzip
		ext = ".gz"
	}
	meta.Files = nil
	for _, e := range es {
		if meta.Format == FormatTar && !e.top {
			continue
		}
		af := ArchivedFile{Rel: e.rel, Dir: e.info.IsDir(), Mode: uint32(e.info.Mode().Perm()), Mtime: e.info.ModTime().UnixNano()}
		if !af.Dir {
			af.Size = e.info.Size()
		}
		if !utf8.ValidString(e.rel) {
			af.Rel = strings.ToValidUTF8(e.rel, "\uFFFD")
			af.RelRaw = []byte(e.rel)
		}
		meta.Files = append(meta.Files, af)
	}
	extra, err := metaExtra(meta)
	if err != nil {
		return "", 0, err
	}
	if err := mkdirAllSynced(dir); err != nil {
		return "", 0, err
	}
	pattern := indexer.TempPrefix + "archive-*"
	if meta.ActionID != "" {
		// Recovery finds the temp file of an interrupted action by its id.
		pattern = indexer.TempPrefix + "archive-" + meta.ActionID + "-*"
	}
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", 0, fmt.Errorf("create archive in %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return "", 0, fmt.Errorf("create archive: %w", err)
	}
	gz, _ := gzip.NewWriterLevel(tmp, gzip.DefaultCompression)
	gz.Extra = extra
	gz.Comment = headerString(fmt.Sprintf("sessionwatch archive of %s session %s", meta.Source, meta.ID))
	gz.OS = 3 // Unix
	gz.Name = headerString(meta.File)
	gz.ModTime = es[0].info.ModTime()
	if meta.Format == FormatGzip {
		err = copyFile(gz, es[0])
	} else {
		err = writeTar(gz, es)
	}
	if err != nil {
		return "", 0, err
	}
	if err := gz.Close(); err != nil {
		return "", 0, fmt.Errorf("write archive: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("sync archive: %w", err)
	}
	size, _ := tmp.Seek(0, io.SeekCurrent)
	if err := tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("write archive: %w", err)
	}
	if err := unchanged(es); err != nil {
		return "", 0, err
	}
	final, err := linkNew(tmp.Name(), filepath.Join(dir, base), ext)
	if err != nil {
		return "", 0, err
	}
	ok = true
	os.Remove(tmp.Name())
	if err := indexer.SyncDir(dir); err != nil {
		return "", 0, err
	}
	return final, size, nil
}

// linkNew gives the file at tmp the first free name of base+ext, base.1+ext, …
// without ever replacing an existing file (link(2) fails on an existing name).
func linkNew(tmp, base, ext string) (string, error) {
	for i := 0; i < 1000; i++ {
		name := base + ext
		if i > 0 {
			name = base + "." + strconv.Itoa(i) + ext
		}
		err := os.Link(tmp, name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("link archive %s: %w", name, err)
		}
	}
	return "", fmt.Errorf("no free archive name for %s%s", base, ext)
}

// copyFile copies one regular file into w, checking it is still the file
// collected. A held file is read through its descriptor, and a leased one is
// given up as soon as someone starts to open it (errChanged: the session is
// kept and the opener waits no longer than a chunk).
func copyFile(w io.Writer, e entry) error {
	f := e.f
	if f == nil {
		var err error
		f, err = os.OpenFile(e.abs, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", e.abs, err)
		}
		defer f.Close()
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", e.abs, err)
	}
	_, ino := identity(fi)
	_, want := identity(e.info)
	if ino != want || fi.Size() != e.info.Size() {
		return fmt.Errorf("%s: %w", e.abs, errChanged)
	}
	r := io.NewSectionReader(f, 0, e.info.Size())
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			if _, err := w.Write(buf[:k]); err != nil {
				return fmt.Errorf("archive %s: %w", e.abs, err)
			}
			n += int64(k)
		}
		if e.leased && leaseBroken(f) {
			return fmt.Errorf("%s is being opened: %w", e.abs, errChanged)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read %s: %w", e.abs, rerr)
		}
	}
	if n != e.info.Size() {
		return fmt.Errorf("%s: %w", e.abs, errChanged)
	}
	if k, _ := f.ReadAt(buf[:1], n); k > 0 {
		return fmt.Errorf("%s grew: %w", e.abs, errChanged)
	}
	return nil
}

// writeTar writes the entries as a PAX tar (nanosecond mtimes, any name length).
func writeTar(w io.Writer, es []entry) error {
	tw := tar.NewWriter(w)
	for _, e := range es {
		h := &tar.Header{Name: e.rel, Mode: int64(e.info.Mode().Perm()), ModTime: e.info.ModTime(), Format: tar.FormatPAX}
		if e.info.IsDir() {
			h.Typeflag, h.Name = tar.TypeDir, e.rel+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, e.info.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("archive %s: %w", e.abs, err)
		}
		if e.info.IsDir() {
			continue
		}
		if err := copyFile(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

// maxHeaderString is the longest gzip name or comment written: Go's reader
// rejects strings of 512 bytes or more.
const maxHeaderString = 500

// headerString returns s when it can be a gzip header string (valid UTF-8 of
// runes 1..255, which gzip stores as Latin-1, and short enough), else "".
func headerString(s string) string {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxHeaderString {
		return ""
	}
	for _, r := range s {
		if r == 0 || r > 0xff {
			return ""
		}
	}
	return s
}

// Gzip extra subfield holding the metadata: SI1 'S', SI2 'W'.
const (
	extraSI1 = 'S'
	extraSI2 = 'W'
	// maxExtra is the most data one subfield holds (the field is at most 65535
	// bytes, 4 of them the subfield header).
	maxExtra = 65535 - 4
)

// metaExtra encodes the metadata as the gzip extra field.
func metaExtra(m ArchiveMeta) ([]byte, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode archive metadata: %w", err)
	}
	if len(data) > maxExtra {
		return nil, fmt.Errorf("archive metadata of session %s is too large (%d bytes)", m.ID, len(data))
	}
	out := []byte{extraSI1, extraSI2, byte(len(data)), byte(len(data) >> 8)}
	return append(out, data...), nil
}

// extraMeta finds and decodes the metadata subfield of a gzip extra field.
func extraMeta(extra []byte) (ArchiveMeta, bool) {
	for len(extra) >= 4 {
		n := int(extra[2]) | int(extra[3])<<8
		if len(extra) < 4+n {
			break
		}
		if extra[0] == extraSI1 && extra[1] == extraSI2 {
			var m ArchiveMeta
			if json.Unmarshal(extra[4:4+n], &m) == nil {
				return m, true
			}
		}
		extra = extra[4+n:]
	}
	return ArchiveMeta{}, false
}

// mkdirAllSynced creates dir (0700) and makes each new directory durable.
func mkdirAllSynced(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, d := range missing {
		if err := indexer.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// ReadArchive reads an archive's metadata from its gzip header (a few hundred
// bytes; the content is not decompressed).
func ReadArchive(path string) (Archived, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return Archived{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Archived{}, err
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		return Archived{}, fmt.Errorf("read archive %s: %w", path, err)
	}
	m, ok := extraMeta(gz.Extra)
	if !ok || m.Version != ArchiveVersion || m.ID == "" || len(m.Files) == 0 {
		return Archived{}, fmt.Errorf("read archive %s: not a sessionwatch archive", path)
	}
	return Archived{Path: path, Meta: m, Size: fi.Size(), ArchivedAt: fi.ModTime()}, nil
}

// ListArchives reads the metadata of every archive under archiveDir (only the
// given sources' subdirectories when sources is non-empty), newest first:
// the .gz and .tar.gz files, and the restorable records of each source's
// records.jsonl. Unreadable files are skipped.
func ListArchives(archiveDir string, sources []string) ([]Archived, error) {
	var dirs []string
	if len(sources) == 0 {
		ents, err := os.ReadDir(archiveDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read archives: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				sources = append(sources, e.Name())
			}
		}
	}
	for _, s := range sources {
		dirs = append(dirs, filepath.Join(archiveDir, s))
	}
	var out []Archived
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*", "*.gz"))
		for _, f := range files {
			if strings.HasPrefix(filepath.Base(f), indexer.TempPrefix) {
				continue
			}
			if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			a, err := ReadArchive(f)
			if err != nil {
				continue
			}
			out = append(out, a)
		}
		out = append(out, listRecordArchives(filepath.Join(d, RecordsName))...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ArchivedAt.After(out[j].ArchivedAt) })
	return out, nil
}

// RecordsName is the archive of records retired from a store file that holds
// many sessions: <archive_dir>/<source>/records.jsonl, one RecordLine per line,
// appended (and fsync'd) before the record leaves its store. HyperYOLO records
// retired by retention go there, and so do collab terminal records whose tmux
// session is gone, so nothing a pass removes is ever lost.
const RecordsName = "records.jsonl"

// FormatRecord is the ArchiveMeta.Format of a record listed from records.jsonl.
const FormatRecord = "record"

// RecordLine is one line of records.jsonl:
//
//	{"v":1,"source":"hyperyolo","layout":"hyperyolo","id":"hyper_0a1b2c3d",
//	 "file":"/home/u/.config/hyperyolo/sessions.json","retiredAt":"2026-11-22T12:00:00.000Z",
//	 "reason":"inactive 40d (retention 30d)","record":{"backend":"claude",…}}
//
// id is the record's key in a HyperYOLO store, or the id of a collab terminal
// record; file is the store file it was removed from; record is its value as
// it was stored, with only the whitespace between tokens removed (strings and
// number literals are kept byte for byte).
type RecordLine struct {
	Version   int             `json:"v"`
	Source    string          `json:"source"`
	Layout    string          `json:"layout"`
	ID        string          `json:"id"`
	File      string          `json:"file"`
	RetiredAt string          `json:"retiredAt"`
	Reason    string          `json:"reason"`
	Record    json.RawMessage `json:"record"`
}

// ArchivedRecord is a record listed from records.jsonl: the parsed line and
// its exact bytes (without the newline), which restore removes from the file.
type ArchivedRecord struct {
	RecordLine
	Line []byte
}

// newRecordLine makes the archive line of one record; raw is compacted.
func newRecordLine(source, layout, id, file, reason string, raw json.RawMessage, at time.Time) (RecordLine, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return RecordLine{}, fmt.Errorf("archive record %s: %w", id, err)
	}
	return RecordLine{Version: ArchiveVersion, Source: source, Layout: layout, ID: id, File: file,
		RetiredAt: indexer.FormatTime(at), Reason: reason, Record: b.Bytes()}, nil
}

// appendRecords appends lines to <dir>/records.jsonl in one write and makes them
// durable (file fsync, and the directory's when the file is new). A partial last
// line left by a crash is terminated first, so it cannot swallow the next one.
func appendRecords(dir string, lines []RecordLine) (string, error) {
	path := filepath.Join(dir, RecordsName)
	if len(lines) == 0 {
		return path, nil
	}
	var buf bytes.Buffer
	for _, l := range lines {
		data, err := json.Marshal(l)
		if err != nil {
			return "", fmt.Errorf("archive record %s: %w", l.ID, err)
		}
		buf.Write(data)
		buf.WriteByte('\n')
	}
	if err := mkdirAllSynced(dir); err != nil {
		return "", err
	}
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	out := buf.Bytes()
	if n := fi.Size(); n > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, n-1); err == nil && last[0] != '\n' {
			out = append([]byte{'\n'}, out...)
		}
	}
	if _, err := f.Write(out); err != nil {
		return "", fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("sync %s: %w", path, err)
	}
	if created {
		if err := indexer.SyncDir(dir); err != nil {
			return "", err
		}
	}
	return path, nil
}

// readRecords parses records.jsonl; lines that do not parse are skipped (and
// kept by every rewrite). A missing file has no records.
func readRecords(path string) ([]ArchivedRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ArchivedRecord
	for _, line := range splitLines(data) {
		var l RecordLine
		if json.Unmarshal(line, &l) != nil || l.ID == "" || len(l.Record) == 0 {
			continue
		}
		out = append(out, ArchivedRecord{RecordLine: l, Line: line})
	}
	return out, nil
}

// rewriteRecords replaces records.jsonl atomically, leaving out the lines for
// which drop returns true; a file left with no line is removed. It reports how
// many lines went.
func rewriteRecords(path string, drop func(line []byte) bool) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var keep bytes.Buffer
	n := 0
	for _, line := range splitLines(data) {
		if drop(line) {
			n++
			continue
		}
		keep.Write(line)
		keep.WriteByte('\n')
	}
	if n == 0 {
		return 0, nil
	}
	if keep.Len() == 0 {
		if err := removeQuiet(path); err != nil {
			return 0, err
		}
		return n, indexer.SyncDir(filepath.Dir(path))
	}
	return n, indexer.WriteFileAtomic(path, keep.Bytes())
}

// listRecordArchives lists the restorable records of records.jsonl: HyperYOLO
// records (a collab terminal record names a tmux session that is gone, so
// putting it back would only have it removed again). When one key was retired
// more than once, the latest line stands for it.
func listRecordArchives(path string) []Archived {
	recs, err := readRecords(path)
	if err != nil {
		return nil
	}
	latest := map[string]int{}
	for i, r := range recs {
		if r.Layout == config.LayoutHyperyolo && filepath.IsAbs(r.File) {
			latest[r.Source+"\x00"+r.ID] = i
		}
	}
	var out []Archived
	for i, r := range recs {
		if j, ok := latest[r.Source+"\x00"+r.ID]; !ok || j != i {
			continue
		}
		r := r
		out = append(out, Archived{Path: path, Size: int64(len(r.Record)), ArchivedAt: indexer.ParseTime(r.RetiredAt), Record: &r,
			Meta: ArchiveMeta{Version: ArchiveVersion, ID: r.ID, Source: r.Source, Layout: r.Layout, Type: indexer.TypeMain,
				Root: filepath.Dir(r.File), File: r.File, Format: FormatRecord, ArchivedAt: r.RetiredAt}})
	}
	return out
}
