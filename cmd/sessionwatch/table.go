package main

import (
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// listHeader is the table's header row.
var listHeader = [...]string{"#", "ID", "AGENT", "STARTED", "LAST ACTIVE", "MODEL", "MSGS", "SIZE", "TITLE"}

const (
	// maxTitle is the widest a TITLE cell gets, terminal or not.
	maxTitle = 60
	// minTitle is the narrowest TITLE a narrow terminal shrinks it to before
	// MODEL shrinks too.
	minTitle = 16
	// minModel is the narrowest MODEL cell.
	minModel = 8
)

// tableRow is what one row of the table shows, borrowed from a listed row or an
// entry (no copy of the strings).
type tableRow struct {
	N                                                              int
	ID, Source, CreatedAt, LastActiveAt, Model, Title, FirstPrompt string
	MessageCount                                                   int
	SizeBytes                                                      int64
	Hidden                                                         bool
}

func (r *tableRow) title() string {
	t := r.Title
	if t == "" {
		t = r.FirstPrompt
	}
	if r.Hidden {
		t = "(hidden) " + t
	}
	return t
}

// printTable writes the rows as text/tabwriter (padding 2) would lay them out:
// every column but the last as wide as its widest cell (in runes) plus two spaces.
// Within width columns (0: no limit) the TITLE column shrinks first, then MODEL,
// then STARTED is left out.
// It is written by hand because tabwriter was a quarter of `list --all` at 10,000
// rows; TestPrintTableMatchesTabwriter keeps the two identical.
func printTable(w io.Writer, rows []listed, width int) {
	var t table
	order := make([]arenaPos, len(rows))
	for i := range rows {
		r := &rows[i]
		order[i] = t.add(&tableRow{ID: r.ID, Source: r.Source, CreatedAt: r.CreatedAt, LastActiveAt: r.LastActiveAt, Model: r.Model,
			Title: r.Title, FirstPrompt: r.FirstPrompt, MessageCount: r.MessageCount, SizeBytes: r.SizeBytes, Hidden: r.Hidden}, nil)
	}
	t.write(w, order, func(k int) int { return rows[k].N }, width)
}

// printEntries is printTable of the entries numbered from 1, without building
// their listed rows (the table shows neither in-use nor stale).
func printEntries(w io.Writer, entries []indexer.Entry, width int) {
	var t table
	order := make([]arenaPos, len(entries))
	for i := range entries {
		order[i] = t.add(entryRow(&entries[i]), nil)
	}
	t.write(w, order, func(k int) int { return k + 1 }, width)
}

// entryRow is what the table shows of an entry.
func entryRow(en *indexer.Entry) *tableRow {
	return &tableRow{ID: en.ID, Source: en.Source, CreatedAt: en.CreatedAt, LastActiveAt: en.LastActiveAt, Model: en.Model,
		Title: en.Title, FirstPrompt: en.FirstPrompt, MessageCount: en.MessageCount, SizeBytes: en.SizeBytes, Hidden: en.Hidden}
}

// Columns of the table, by index in listHeader.
const (
	colN, colID, colSource, colStarted, colLast, colModel, colMsgs, colSize, colTitle = 0, 1, 2, 3, 4, 5, 6, 7, len(listHeader) - 1
	// rowCells is how many cells of a row are rendered when it is added: all
	// but #, which is known only when the rows are written.
	rowCells = len(listHeader) - 1
)

// table lays out the table in two steps. add renders every cell of a row but
// its number once and measures the columns; write copies the cells out with
// their padding. A row's strings are not kept: a caller may add a row whose
// strings are about to change (printCatalogs).
//
// A row is kept in one arena, nothing beside it: the lengths of its cells and
// of the caller's extra bytes (uvarints), then the cells, then the extra. A
// listing collects no garbage, and a slice per field of the rows, grown by
// append, would leave its old copies behind: at 100,000 rows those were a
// third of `list --all`'s memory.
type table struct {
	colw    [len(listHeader)]int
	cells   arena
	scratch []byte // the row being rendered
	n       int    // rows added
	tf      timeFormatter
	// Rows of one source and model come in runs.
	sources, models lastCell
	ready           bool
	// escaped holds the titles of the rows whose TITLE cell was escaped: a
	// narrower cell is made from the title again (cutting the escaped cell
	// would not give it). Other cells are cut again as they are.
	escaped map[arenaPos]string
}

func (t *table) init() {
	if !t.ready {
		for i, h := range listHeader {
			t.colw[i] = utf8.RuneCountInString(h)
		}
		t.models.orDash = true
		t.ready = true
	}
}

// add renders a row and keeps extra (which may be nil) beside it; it returns
// where the row is.
func (t *table) add(r *tableRow, extra []byte) arenaPos {
	t.init()
	t.n++
	var lens [rowCells + 1]int
	b := t.scratch[:0]
	escaped := ""
	for col := colID; col <= colTitle; col++ {
		before := len(b)
		switch col {
		case colID:
			b = append(b, termSafe(short(r.ID, 8))...)
		case colSource:
			b = t.sources.append(b, r.Source)
		case colStarted:
			b = t.tf.append(b, r.CreatedAt)
		case colLast:
			b = t.tf.append(b, r.LastActiveAt)
		case colModel:
			b = t.models.append(b, r.Model)
		case colMsgs:
			b = strconv.AppendInt(b, int64(r.MessageCount), 10)
		case colSize:
			b = appendHumanSize(b, r.SizeBytes)
		case colTitle:
			title := r.title()
			var ok bool
			if b, ok = appendPlainCell(b, title, maxTitle); !ok {
				b = appendCell(b, termSafe(oneLine(title)), maxTitle)
				escaped = strings.Clone(title)
			}
		}
		lens[col-1] = len(b) - before
		t.colw[col] = max(t.colw[col], runeCount(b[before:]))
	}
	t.scratch = b
	lens[rowCells] = len(extra)
	at, chunk := t.cells.room(len(lens)*binary.MaxVarintLen64 + len(b) + len(extra))
	c := *chunk
	for _, n := range lens {
		c = binary.AppendUvarint(c, uint64(n))
	}
	*chunk = append(append(c, b...), extra...)
	if escaped != "" {
		if t.escaped == nil {
			t.escaped = map[arenaPos]string{}
		}
		t.escaped[at] = escaped
	}
	return at
}

// join adds u's rows after t's, as if they had been added to t (u is not used
// again).
func (t *table) join(u *table) {
	t.init()
	if u.n == 0 {
		return
	}
	off := int32(len(t.cells.chunks))
	t.cells.chunks = append(t.cells.chunks, u.cells.chunks...)
	for i := range t.colw {
		t.colw[i] = max(t.colw[i], u.colw[i])
	}
	t.n += u.n
	for at, title := range u.escaped {
		if t.escaped == nil {
			t.escaped = map[arenaPos]string{}
		}
		t.escaped[arenaPos{at.chunk + off, at.off}] = title
	}
}

// rows is how many rows were added.
func (t *table) rows() int { return t.n }

// row returns the cells and the extra bytes of the row at, and where the row
// added after it is (if there is one).
func (t *table) row(at arenaPos) (cells [rowCells][]byte, extra []byte, next arenaPos) {
	chunk := t.cells.chunks[at.chunk]
	b := chunk[at.off:]
	var lens [rowCells + 1]int
	for i := range lens {
		if b[0] < 0x80 { // most lengths are under 128
			lens[i], b = int(b[0]), b[1:]
			continue
		}
		n, k := binary.Uvarint(b)
		lens[i], b = int(n), b[k:]
	}
	for i := range rowCells {
		cells[i], b = b[:lens[i]], b[lens[i]:]
	}
	extra = b[:lens[rowCells]]
	next = arenaPos{at.chunk, int32(len(chunk) - len(b) + lens[rowCells])}
	if int(next.off) == len(chunk) {
		next = arenaPos{at.chunk + 1, 0}
	}
	return cells, extra, next
}

// arena is memory appended to in chunks that never move.
type arena struct{ chunks [][]byte }

// arenaPos is a place in an arena: a chunk and an offset in it.
type arenaPos struct{ chunk, off int32 }

const arenaChunk = 256 << 10

// room returns where the next byte goes and the chunk to append it to, which
// has room for n bytes (appending more would move it).
func (a *arena) room(n int) (arenaPos, *[]byte) {
	if k := len(a.chunks); k == 0 || cap(a.chunks[k-1])-len(a.chunks[k-1]) < n {
		a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, n)))
	}
	k := len(a.chunks) - 1
	return arenaPos{int32(k), int32(len(a.chunks[k]))}, &a.chunks[k]
}

// narrowTitle appends the TITLE cell of the row at at width w < maxTitle, c
// being its cell at maxTitle: the same as safeCell of its title at w
// (TestSafeCellRecut).
func (t *table) narrowTitle(b []byte, at arenaPos, c []byte, w int) []byte {
	if title, ok := t.escaped[at]; ok {
		return appendSafeCell(b, title, w)
	}
	return appendCell(b, string(c), w)
}

// write writes the header and the rows at the places add returned, in order,
// the k-th numbered number(k).
func (t *table) write(w io.Writer, order []arenaPos, number func(k int) int, width int) {
	t.init()
	colw := t.colw
	for k := range order {
		colw[colN] = max(colw[colN], digits(number(k)))
	}
	drop := -1  // a column left out of a narrow terminal
	modelW := 0 // MODEL cells cut to this many characters (0: not cut)
	titleW := maxTitle
	if width > 0 {
		used := 0 // every column but TITLE, with its padding
		for i := range colTitle {
			used += colw[i] + 2
		}
		if colw[colTitle] > width-used {
			if width-used < minTitle && colw[colModel] > minModel {
				// TITLE alone cannot give enough: MODEL shrinks too.
				modelW = max(minModel, colw[colModel]-(minTitle-(width-used)))
				used -= colw[colModel] - modelW
				colw[colModel] = modelW
			}
			if width-used < minTitle {
				// Still too narrow (an 80-column terminal): STARTED goes; LAST
				// ACTIVE is what sorts the list.
				drop = colStarted
				used -= colw[colStarted] + 2
			}
			titleW = max(width-used, minTitle)
		}
	}
	const spaces = "                                                                "
	pad := func(b []byte, col, used int) []byte {
		for p := colw[col] + 2 - used; p > 0; {
			k := min(p, len(spaces))
			b = append(b, spaces[:k]...)
			p -= k
		}
		return b
	}
	b := make([]byte, 0, 64<<10)
	for i, h := range listHeader[:colTitle] {
		if i != drop {
			b = append(b, h...)
			b = pad(b, i, utf8.RuneCountInString(h))
		}
	}
	b = append(b, listHeader[colTitle]...)
	b = append(b, '\n')
	for k, at := range order {
		start := len(b)
		b = strconv.AppendInt(b, int64(number(k)), 10)
		b = pad(b, colN, len(b)-start)
		cells, _, _ := t.row(at)
		for col := colID; col <= colTitle; col++ {
			c := cells[col-1]
			switch {
			case col == drop:
			case col == colTitle:
				if titleW < maxTitle {
					b = t.narrowTitle(b, at, c, titleW)
				} else {
					b = append(b, c...)
				}
			case col == colModel && modelW > 0:
				start := len(b)
				b = appendCell(b, string(c), modelW)
				b = pad(b, colModel, utf8.RuneCount(b[start:]))
			default:
				b = append(b, c...)
				b = pad(b, col, runeCount(c))
			}
		}
		b = append(b, '\n')
		if len(b) > 60<<10 {
			if _, err := w.Write(b); err != nil {
				return
			}
			b = b[:0]
		}
	}
	w.Write(b)
}

// runeCount is utf8.RuneCount, quicker for the ASCII most cells are.
func runeCount(b []byte) int {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.RuneCount(b)
		}
	}
	return len(b)
}

// lastCell is the SOURCE or MODEL cell of the last value asked for,
// termSafe(oneCell(v)), remembered; orDash: "-" for "". Both are copied: a
// row's strings may be about to change (printCatalogs's point into a buffer
// read over for the next catalog).
type lastCell struct {
	in, out    []byte
	ok, orDash bool
}

// append appends the cell of v to b.
func (c *lastCell) append(b []byte, v string) []byte {
	if !c.ok || v != string(c.in) {
		out := v
		if c.orDash {
			out = dash(v)
		}
		c.in = append(c.in[:0], v...)
		c.out = append(c.out[:0], termSafe(oneCell(out))...)
		c.ok = true
	}
	return append(b, c.out...)
}

// digits is how many characters strconv.Itoa(n) has.
func digits(n int) int {
	d := 1
	if n < 0 {
		d++
	}
	for n >= 10 || n <= -10 {
		n /= 10
		d++
	}
	return d
}

// safeCell is cell(s, n) of text from outside: whitespace runs collapsed, control
// characters escaped (termSafe) before it is cut to n characters.
func safeCell(s string, n int) string { return string(appendSafeCell(nil, s, n)) }

// appendSafeCell appends safeCell(s, n) to b. It is appendCell, checking as it
// goes that each character it appends is one termSafe leaves alone (the common
// case); at the first that is not, it starts again the slow way, escaping first.
// A listing makes one per row, and appendCell then termSafeBytes was a sixth of
// `list --all`. TestAppendSafeCellIsSlowWay keeps it equal to the slow way.
func appendSafeCell(b []byte, s string, n int) []byte {
	if b, ok := appendPlainCell(b, s, n); ok {
		return b
	}
	return appendCell(b, termSafe(oneLine(s)), n)
}

// appendPlainCell is appendCell(b, s, n) when termSafe would leave that cell as
// it is; else it appends nothing and ok is false.
func appendPlainCell(b []byte, s string, n int) (_ []byte, ok bool) {
	start := len(b)
	count, space := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		r, size := rune(c), 1
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				space = count > 0
				i++
				continue
			}
		} else {
			r, size = utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) {
				space = count > 0
				i += size
				continue
			}
		}
		need := 1
		if space {
			need = 2
		}
		last := false
		if count+need > n-1 {
			// No room left beside a "…": only a last character that fits exactly.
			if count+need != n || strings.TrimSpace(s[i+size:]) != "" {
				return append(b, "…"...), true
			}
			last = true
		}
		// r is appended as utf8.AppendRune writes it (an invalid byte as U+FFFD,
		// which termSafe leaves alone).
		if r < 0x20 || r == 0x7f || unsafeRune(r, utf8.RuneLen(r)) {
			return b[:start], false
		}
		if space {
			b = append(b, ' ')
			count++
			space = false
		}
		if r < utf8.RuneSelf {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, r)
		}
		if last {
			return b, true
		}
		count++
		i += size
		// The rest of a word of printable ASCII, as the loop would append it,
		// at once (leaving room for a "…").
		j, lim := i, min(len(s), i+n-1-count)
		for j < lim && s[j] > ' ' && s[j] < 0x7f {
			j++
		}
		b = append(b, s[i:j]...)
		count += j - i
		i = j
	}
	return b, true
}

// asciiSpace is unicode.IsSpace of the ASCII bytes.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// oneCell keeps a cell on one line: tabs and newlines would break the table.
func oneCell(s string) string {
	if strings.ContainsAny(s, "\t\n\r") {
		return oneLine(s)
	}
	return s
}

// short is the first n characters of s (not bytes: a cut never splits a character).
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine collapses every whitespace run of s to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell renders s on one line (whitespace runs become one space) in at most n
// characters, the last one "…" when s is longer; it stops reading once full.
func cell(s string, n int) string { return string(appendCell(nil, s, n)) }

// appendCell appends cell(s, n) to b.
func appendCell(b []byte, s string, n int) []byte {
	count, space := 0, false
	for i, r := range s {
		if unicode.IsSpace(r) {
			space = count > 0
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if count+need > n-1 {
			// No room left beside a "…": only a last character that fits exactly.
			_, size := utf8.DecodeRuneInString(s[i:]) // not RuneLen(r): an invalid byte is one byte
			if count+need == n && strings.TrimSpace(s[i+size:]) == "" {
				if space {
					b = append(b, ' ')
				}
				return utf8.AppendRune(b, r)
			}
			return append(b, "…"...)
		}
		if space {
			b = append(b, ' ')
			count++
			space = false
		}
		b = utf8.AppendRune(b, r)
		count++
	}
	return b
}

// humanSize renders bytes as B, KB or MB (decimal, as `list` shows).
func humanSize(n int64) string { return string(appendHumanSize(nil, n)) }

// appendHumanSize appends humanSize(n) to b.
func appendHumanSize(b []byte, n int64) []byte {
	switch {
	case n < 1000:
		return append(strconv.AppendInt(b, n, 10), 'B')
	case n < 1000*1000:
		return append(strconv.AppendFloat(b, float64(n)/1000, 'f', 1, 64), "KB"...)
	default:
		return append(strconv.AppendFloat(b, float64(n)/1000/1000, 'f', 1, 64), "MB"...)
	}
}
