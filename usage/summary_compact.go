package usage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// compactSummary folds the summary's batches into a new base. Its S rows come
// from the summary itself (it holds them current), not from the accounts, which
// idle units keep on disk.
//
// It is streamed: the D rows are rendered from the totals (a few hundred), the base's S rows are copied line by line, each replaced by
// the batches' row of the same session and model where there is one, and the
// batches' rows of new sessions merged in at their place; the B rows are written
// from the totals one by one. Only the S section and the batches are read (not
// the B rows), and no row is parsed into memory but the batches'. The S section
// is read through a small buffer, once to check it and once for each pass of
// merge, never held whole: at 100k sessions it is ~23 MB, and holding it (with
// the file rendered in memory before that) was the daemon's largest burst under
// load.
func (l *Ledger) compactSummary() error {
	f := &l.summaryFile
	h, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("read usage summary: %w", err)
	}
	defer h.Close()
	m, ok := l.readForCompaction(h)
	if !ok {
		// Not what a summary this ledger wrote holds: add it up from the units.
		f.compact = true
		return l.writeSummary()
	}
	return l.rewriteCompacted(m)
}

// rewriteCompacted writes the summary whole from m (its base and batches as
// read) and the totals. It reads the ledger's rows, columns and days, and
// writes only the summary file's state (EndColdBuild runs it beside the units
// file's compaction).
func (l *Ledger) rewriteCompacted(m *compaction) error {
	f := &l.summaryFile
	var row []byte
	rows := l.sortRows(l.rows.ids())
	var sizeB int64
	for _, id := range rows {
		row = appendRow(row[:0], l.rowKeyOf(id), l.rows.get(id))
		sizeB += int64(len(row))
	}
	var sizeS int64
	if err := m.merge(func(b []byte) error { sizeS += int64(len(b)); return nil }); err != nil {
		return fmt.Errorf("read usage summary %s: %w", f.path, err) // errBadBase names no file
	}
	days := l.renderDays(nil)
	hdr, _ := json.Marshal(summaryHeader{Version: SummaryVersion, Generator: "sessionwatch", Days: int64(len(days)), Sessions: sizeS, Rows: sizeB})
	return f.rewriteWith(func(w *bufio.Writer) error {
		if _, err := w.Write(append(hdr, '\n')); err != nil {
			return err
		}
		if _, err := w.Write(days); err != nil {
			return err
		}
		if err := m.merge(func(b []byte) error { _, err := w.Write(b); return err }); err != nil {
			if errors.Is(err, errBadBase) {
				return fmt.Errorf("read usage summary %s: %w", f.path, err)
			}
			return err
		}
		for _, id := range rows {
			row = appendRow(row[:0], l.rowKeyOf(id), l.rows.get(id))
			if _, err := w.Write(row); err != nil {
				return err
			}
		}
		return nil
	})
}

// tailRow is an S row of the batches: its key as the summary spells it (the
// escaped fields up to the model), and whether the base had a row of that key.
type tailRow struct {
	key  string
	r    SessionRow
	used bool
}

// compaction is what a compaction merges: the base's S section (read from the
// old file, which stays readable through its handle after the rename) and the
// batches' S rows (the last of each key), sorted as the base is.
type compaction struct {
	ssec  *io.SectionReader
	lr    lineReader
	tail  []tailRow
	index map[string]int // tail by key
	rd    summaryReader
	row   []byte
	a     []byte // unescaping scratch
}

// readForCompaction reads the header, the S section and the batches of the
// summary; ok is false for a summary that cannot be trusted (malformed, or a
// torn batch after its last commit line).
func (l *Ledger) readForCompaction(h *os.File) (*compaction, bool) {
	fi, err := h.Stat()
	if err != nil {
		return nil, false
	}
	head := make([]byte, min(fi.Size(), 4096))
	if _, err := io.ReadFull(io.NewSectionReader(h, 0, fi.Size()), head); err != nil {
		return nil, false
	}
	hd, start, err := parseSummaryHeader(head)
	if n := fi.Size(); err != nil || hd.Days > n || hd.Sessions > n || hd.Rows > n || start+hd.Days+hd.Sessions+hd.Rows > n {
		return nil, false
	}
	m := &compaction{ssec: io.NewSectionReader(h, start+hd.Days, hd.Sessions), index: map[string]int{}, rd: summaryReader{strs: map[string]string{}}}
	base := start + hd.Days + hd.Sessions + hd.Rows
	// The batches are read through the buffer too (they grow to the size of the
	// base before a compaction is due); only their rows are kept, the last of each
	// key.
	var pend []tailRow
	err = m.lr.each(io.NewSectionReader(h, base, fi.Size()-base), func(line []byte) error {
		line = line[:len(line)-1]
		switch {
		case len(line) == 1 && line[0] == 'C':
			for _, t := range pend {
				if i, ok := m.index[t.key]; ok {
					m.tail[i] = t
				} else {
					m.index[t.key] = len(m.tail)
					m.tail = append(m.tail, t)
				}
			}
			pend = pend[:0]
		case len(line) > 0 && (line[0] == 'B' || line[0] == 'D'):
			// The B and D rows are written from the totals.
		case len(line) > 0 && line[0] == 'S':
			r, ok := m.rd.session(line)
			k, kok := sessionKeyBytes(line)
			if !ok || !kok {
				return errBadBase
			}
			pend = append(pend, tailRow{key: string(k), r: r})
		default:
			return errBadBase
		}
		return nil
	})
	if err != nil {
		return nil, false // malformed, or a torn batch
	}
	if len(pend) > 0 {
		return nil, false // a batch with no commit line
	}
	// Each key once (m.index): any sort leaves them in the one order.
	slices.SortFunc(m.tail, func(a, b tailRow) int { return compareSessions(&a.r, &b.r) })
	for i := range m.tail {
		m.index[m.tail[i].key] = i
	}
	// Every base line is checked before anything is written.
	var n [6]int64
	err = m.baseLines(func(line []byte) error {
		if line[0] != 'S' || !m.rd.split(line[1:len(line)-1], 11) || !m.rd.nums(5, n[:]) {
			return errBadBase
		}
		return nil
	})
	if err != nil {
		return nil, false
	}
	return m, true
}

// errBadBase: a line of the summary that is not one.
var errBadBase = errors.New("usage summary: malformed line")

// baseLines hands fn the base's S lines in order (lineReader.each).
func (m *compaction) baseLines(fn func(line []byte) error) error {
	return m.lr.each(m.ssec, fn)
}

// lineReader reads a section of the summary line by line through one buffer.
type lineReader struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer
}

// each hands fn the lines of sr from its start, each with its newline and valid
// only during the call. A section that does not end with a newline, or that
// cannot be read to its end, is an error.
func (r *lineReader) each(sr *io.SectionReader, fn func(line []byte) error) error {
	if _, err := sr.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if r.br == nil {
		r.br = bufio.NewReaderSize(sr, 64<<10)
	} else {
		r.br.Reset(sr)
	}
	for {
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			r.long = append(r.long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = r.br.ReadSlice('\n')
				r.long = append(r.long, line...)
			}
			line = r.long
		}
		switch {
		case err == io.EOF && len(line) == 0:
			return nil
		case err == io.EOF:
			return errBadBase // a last line with no newline
		case err != nil:
			return err
		}
		if err := fn(line); err != nil {
			return err
		}
	}
}

// sessionKeyBytes is an S line up to its model field's end: the row's key as
// the summary spells it.
func sessionKeyBytes(line []byte) ([]byte, bool) {
	tabs := 0
	for i, c := range line {
		if c == '\t' {
			if tabs++; tabs == 6 {
				return line[:i], true
			}
		}
	}
	return nil, false
}

// merge hands emit the new base's S section, line by line (each slice valid
// only during the call). It can be run more than once.
func (m *compaction) merge(emit func([]byte) error) error {
	for i := range m.tail {
		m.tail[i].used = false
	}
	j := 0
	flush := func(upTo []byte) error { // the batches' new rows sorting before the base line upTo (nil: all)
		for ; j < len(m.tail); j++ {
			t := &m.tail[j]
			if t.used {
				continue
			}
			if upTo != nil && !m.before(&t.r, upTo) {
				return nil
			}
			t.used = true
			if !t.r.T.IsZero() {
				m.row = appendSession(m.row[:0], &t.r)
				if err := emit(m.row); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := m.baseLines(func(line []byte) error {
		k, _ := sessionKeyBytes(line)
		if err := flush(line); err != nil {
			return err
		}
		if i, ok := m.index[string(k)]; ok {
			t := &m.tail[i]
			t.used = true
			if !t.r.T.IsZero() {
				m.row = appendSession(m.row[:0], &t.r)
				return emit(m.row)
			}
			return nil
		}
		return emit(line)
	})
	if err != nil {
		return err
	}
	return flush(nil)
}

// before reports whether r sorts before the base's S line (sessKey.less).
func (m *compaction) before(r *SessionRow, line []byte) bool {
	m.rd.split(line[1:len(line)-1], 11) // checked when read
	for i, s := range [5]string{r.Session, r.Source, r.Project, r.Type, r.Model} {
		if i == 0 {
			// Sessions sort as written (escapedLess).
			m.a = appendField(m.a[:0], s)
			if c := bytes.Compare(m.a[1:], m.rd.f[0]); c != 0 {
				return c < 0
			}
			continue
		}
		m.a = unescapeField(m.a[:0], m.rd.f[i])
		if c := compareString(s, m.a); c != 0 {
			return c < 0
		}
	}
	return false
}

// unescapeField appends the field f (as appendField escapes it) to dst.
func unescapeField(dst, f []byte) []byte {
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '\\' && i+1 < len(f) {
			i++
			switch f[i] {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			default:
				c = f[i]
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// compareString compares s with b as strings compare.
func compareString(s string, b []byte) int {
	n := min(len(s), len(b))
	for i := 0; i < n; i++ {
		if s[i] != b[i] {
			if s[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(s) < len(b):
		return -1
	case len(s) > len(b):
		return 1
	}
	return 0
}
