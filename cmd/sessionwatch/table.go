package main

import (
	"io"
	"strconv"
	"strings"
	"time"
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
	printRows(w, len(rows), func(i int) tableRow {
		r := &rows[i]
		return tableRow{N: r.N, ID: r.ID, Source: r.Source, CreatedAt: r.CreatedAt, LastActiveAt: r.LastActiveAt, Model: r.Model,
			Title: r.Title, FirstPrompt: r.FirstPrompt, MessageCount: r.MessageCount, SizeBytes: r.SizeBytes, Hidden: r.Hidden}
	}, width)
}

// printEntries is printTable of the entries numbered from 1, without building
// their listed rows (the table shows neither in-use nor stale).
func printEntries(w io.Writer, entries []indexer.Entry, width int) {
	printRows(w, len(entries), func(i int) tableRow {
		en := &entries[i]
		return tableRow{N: i + 1, ID: en.ID, Source: en.Source, CreatedAt: en.CreatedAt, LastActiveAt: en.LastActiveAt, Model: en.Model,
			Title: en.Title, FirstPrompt: en.FirstPrompt, MessageCount: en.MessageCount, SizeBytes: en.SizeBytes, Hidden: en.Hidden}
	}, width)
}

// printRows lays out n rows in two passes, the first measuring the columns, the
// second appending each cell straight into one output buffer: no string per
// cell. The formatted times, the costliest cells to make, are kept from the
// first pass in one byte arena.
func printRows(w io.Writer, n int, row func(int) tableRow, width int) {
	const id, source, started, last, model, msgs, size, title = 1, 2, 3, 4, 5, 6, 7, len(listHeader) - 1
	var colw [len(listHeader)]int
	for i, h := range listHeader {
		colw[i] = utf8.RuneCountInString(h)
	}
	times := make([]byte, 0, 32*n)
	timeEnd := make([]int32, 0, 2*n) // where each row's STARTED and LAST ACTIVE cells end in times
	var scratch []byte
	// Rows of one source and model come in runs.
	sources, models := lastCell{}, lastCell{orDash: true}
	for i := range n {
		r := row(i)
		colw[0] = max(colw[0], digits(r.N))
		colw[id] = max(colw[id], utf8.RuneCountInString(termSafe(short(r.ID, 8))))
		colw[source] = max(colw[source], utf8.RuneCountInString(sources.get(r.Source)))
		for k, ts := range [2]string{r.CreatedAt, r.LastActiveAt} {
			before := len(times)
			times = appendLocalTime(times, ts)
			timeEnd = append(timeEnd, int32(len(times)))
			colw[started+k] = max(colw[started+k], utf8.RuneCount(times[before:]))
		}
		colw[model] = max(colw[model], utf8.RuneCountInString(models.get(r.Model)))
		colw[msgs] = max(colw[msgs], digits(r.MessageCount))
		scratch = appendHumanSize(scratch[:0], r.SizeBytes)
		colw[size] = max(colw[size], len(scratch))
		scratch = appendSafeCell(scratch[:0], r.title(), maxTitle)
		colw[title] = max(colw[title], utf8.RuneCount(scratch))
	}
	drop := -1  // a column left out of a narrow terminal
	modelW := 0 // MODEL cells cut to this many characters (0: not cut)
	titleW := maxTitle
	if width > 0 {
		used := 0 // every column but TITLE, with its padding
		for i := range title {
			used += colw[i] + 2
		}
		if colw[title] > width-used {
			if width-used < minTitle && colw[model] > minModel {
				// TITLE alone cannot give enough: MODEL shrinks too.
				modelW = max(minModel, colw[model]-(minTitle-(width-used)))
				used -= colw[model] - modelW
				colw[model] = modelW
			}
			if width-used < minTitle {
				// Still too narrow (an 80-column terminal): STARTED goes; LAST
				// ACTIVE is what sorts the list.
				drop = started
				used -= colw[started] + 2
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
	for i, h := range listHeader[:title] {
		if i != drop {
			b = append(b, h...)
			b = pad(b, i, utf8.RuneCountInString(h))
		}
	}
	b = append(b, listHeader[title]...)
	b = append(b, '\n')
	prev := int32(0)
	for i := range n {
		r := row(i)
		start := len(b)
		b = strconv.AppendInt(b, int64(r.N), 10)
		b = pad(b, 0, len(b)-start)
		s := termSafe(short(r.ID, 8))
		b = append(b, s...)
		b = pad(b, id, utf8.RuneCountInString(s))
		s = sources.get(r.Source)
		b = append(b, s...)
		b = pad(b, source, utf8.RuneCountInString(s))
		for k := range 2 {
			end := timeEnd[2*i+k]
			if started+k != drop {
				c := times[prev:end]
				b = append(b, c...)
				b = pad(b, started+k, utf8.RuneCount(c))
			}
			prev = end
		}
		s = models.get(r.Model)
		if modelW > 0 {
			start = len(b)
			b = appendCell(b, s, modelW)
			b = pad(b, model, utf8.RuneCount(b[start:]))
		} else {
			b = append(b, s...)
			b = pad(b, model, utf8.RuneCountInString(s))
		}
		start = len(b)
		b = strconv.AppendInt(b, int64(r.MessageCount), 10)
		b = pad(b, msgs, len(b)-start)
		start = len(b)
		b = appendHumanSize(b, r.SizeBytes)
		b = pad(b, size, len(b)-start)
		b = appendSafeCell(b, r.title(), titleW)
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

// lastCell is the SOURCE or MODEL cell of the last value asked for,
// termSafe(oneCell(v)), remembered; orDash: "-" for "".
type lastCell struct {
	in, out    string
	ok, orDash bool
}

func (c *lastCell) get(v string) string {
	if !c.ok || v != c.in {
		out := v
		if c.orDash {
			out = dash(v)
		}
		c.in, c.out, c.ok = v, termSafe(oneCell(out)), true
	}
	return c.out
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

// appendSafeCell appends safeCell(s, n) to b.
func appendSafeCell(b []byte, s string, n int) []byte {
	start := len(b)
	b = appendCell(b, s, n)
	if termSafeBytes(b[start:]) {
		return b
	}
	return appendCell(b[:start], termSafe(oneLine(s)), n)
}

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

func localTime(ts string) string { return string(appendLocalTime(nil, ts)) }

// appendLocalTime appends localTime(ts) to b.
func appendLocalTime(b []byte, ts string) []byte {
	t, ok := parseUTCSeconds(ts)
	if !ok {
		t = indexer.ParseTime(ts)
	}
	if t.IsZero() {
		return append(b, '-')
	}
	t = t.Local()
	y, mo, d := t.Date()
	if y < 1000 || y > 9999 {
		return t.AppendFormat(b, "2006-01-02 15:04")
	}
	h, mi, _ := t.Clock()
	two := func(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
	b = two(two(b, y/100), y%100)
	b = two(append(b, '-'), int(mo))
	b = two(append(b, '-'), d)
	b = two(append(b, ' '), h)
	return two(append(b, ':'), mi)
}

// parseUTCSeconds reads the common form of a timestamp, "2006-01-02T15:04:05Z"
// with an optional fraction of 1 to 9 digits, to the second; ok is false for
// anything else (indexer.ParseTime then reads it). For every string it accepts it
// gives ParseTime's time but the fraction (TestParseUTCSecondsIsParseTime): a
// listing parses two per row, and time.Parse was a tenth of `list --all`.
func parseUTCSeconds(ts string) (time.Time, bool) {
	n := len(ts)
	if n < 20 || ts[n-1] != 'Z' || ts[4] != '-' || ts[7] != '-' || ts[10] != 'T' || ts[13] != ':' || ts[16] != ':' {
		return time.Time{}, false
	}
	if n > 20 {
		if ts[19] != '.' || n < 22 || n > 30 {
			return time.Time{}, false
		}
		for i := 20; i < n-1; i++ {
			if ts[i] < '0' || ts[i] > '9' {
				return time.Time{}, false
			}
		}
	}
	num := func(i, w int) int {
		v := 0
		for _, c := range []byte(ts[i : i+w]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	if t.Day() != d {
		return time.Time{}, false // the 31st of a shorter month
	}
	return t, true
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
