package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// tabwriterTable is how `list` laid out its table before printTable was written
// by hand.
func tabwriterTable(rows []listed) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(listHeader[:], "\t"))
	for _, r := range rows {
		title := r.Title
		if title == "" {
			title = r.FirstPrompt
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.N, short(r.ID, 8), r.Source,
			localTime(r.CreatedAt), localTime(r.LastActiveAt), dash(r.Model), r.MessageCount, humanSize(r.SizeBytes), cell(title, 60))
	}
	tw.Flush()
	return b.String()
}

func TestPrintTableMatchesTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	words := []string{"", "fix", "the", "build", "héllo", "日本語", "✓", "a very long prompt that goes on and on past sixty characters for sure", "x\ty", "two\nlines"}
	text := func() string {
		var parts []string
		for range r.IntN(12) {
			parts = append(parts, words[r.IntN(len(words))])
		}
		return strings.Join(parts, " ")
	}
	for _, n := range []int{0, 1, 3, 50, 2000} {
		rows := make([]listed, n)
		for i := range rows {
			rows[i] = listed{N: i + 1, ID: fmt.Sprintf("%x", r.Uint64()), Source: []string{"wave", "claude", "llxprt-legacy"}[r.IntN(3)],
				CreatedAt: fmt.Sprintf("2026-%02d-%02dT10:%02d:00Z", 1+r.IntN(12), 1+r.IntN(28), r.IntN(60)), LastActiveAt: []string{"", "garbage", "2026-11-22T08:00:00.5Z"}[r.IntN(3)],
				Model: []string{"", "glm-5", "claude-opus-4-7", "ü-model"}[r.IntN(4)], MessageCount: r.IntN(100000), SizeBytes: r.Int64N(1 << 34),
				Title: []string{"", text()}[r.IntN(2)], FirstPrompt: text()}
		}
		var got bytes.Buffer
		printTable(&got, rows, 0)
		if want := tabwriterTable(rows); got.String() != want {
			t.Fatalf("%d rows: table differs from tabwriter's\n got:\n%s\nwant:\n%s", n, got.String(), want)
		}
	}
}

// An invalid byte that is the last character to fit is one byte long, not
// utf8.RuneLen(RuneError)'s three: cell panicked on it (a title from a transcript).
func TestCellInvalidLastByte(t *testing.T) {
	if got, want := cell("ab\xff", 3), "ab\uFFFD"; got != want {
		t.Fatalf("cell = %q, want %q", got, want)
	}
	if got, want := safeCell("ab\xff", 3), "ab\uFFFD"; got != want {
		t.Fatalf("safeCell = %q, want %q", got, want)
	}
}

// parseUTCSeconds accepts only what indexer.ParseTime reads, and reads it to the
// same second; localTime is the same either way.
func TestParseUTCSecondsIsParseTime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := []string{"", "garbage", "2026-11-22T08:00:00Z", "2026-11-22T08:00:00.5Z", "2026-11-22T08:00:00.123456789Z",
		"2026-11-22T08:00:00.1234567891Z", "2026-02-31T08:00:00Z", "2024-02-29T23:59:59Z", "2023-02-29T00:00:00Z",
		"2026-11-22T24:00:00Z", "2026-11-22T08:60:00Z", "2026-11-22T08:00:60Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
		"0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "2026-11-22t08:00:00Z", "2026-11-22T08:00:00.Z", "2026-11-22T08:00:00+02:00",
		"2026-11-22T08:00:00.5+02:00", "2026-1-22T08:00:00Z", "+026-11-22T08:00:00Z", "2026-11-22T08:00:00ZZ", "2026-11-22T08:0a:00Z"}
	digits := "0123456789"
	for range 5000 {
		b := []byte("2026-11-22T08:00:00.000Z")
		for range 1 + r.IntN(3) {
			i := r.IntN(len(b))
			b[i] = digits[r.IntN(10)]
		}
		cases = append(cases, string(b), string(b[:19])+"Z")
	}
	for _, ts := range cases {
		want := indexer.ParseTime(ts)
		got, ok := parseUTCSeconds(ts)
		if !ok {
			continue
		}
		if want.IsZero() && !got.IsZero() || !got.Equal(want.Truncate(time.Second)) {
			t.Fatalf("%q: parseUTCSeconds %v, ParseTime %v", ts, got, want)
		}
		if a, b := localTime(ts), oldLocalTime(ts); a != b {
			t.Fatalf("%q: localTime %q, want %q", ts, a, b)
		}
	}
	for _, ts := range []string{"2026-11-22T08:00:00Z", "2026-11-22T08:00:00.999Z", "0000-01-01T00:00:00Z", "0999-12-31T23:59:00Z"} {
		if a, b := localTime(ts), oldLocalTime(ts); a != b {
			t.Fatalf("%q: localTime %q, want %q", ts, a, b)
		}
	}
}

func oldLocalTime(ts string) string {
	t := indexer.ParseTime(ts)
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// slowSafeCell is safeCell as it was before appendSafeCell checked as it went:
// cut, then escape and cut again if the cut held anything termSafe changes.
func slowSafeCell(s string, n int) string {
	c := cell(s, n)
	if termSafe(c) == c {
		return c
	}
	return cell(termSafe(oneLine(s)), n)
}

func TestAppendSafeCellIsSlowWay(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"a", "b", "Z", " ", "  ", "\t", "\n", "\r\n", "\x00", "\x1b[31m", "\x7f", "\xff", "\xc3", "é", "日本", "✓",
		"\u0085", "\u00a0", "\u009b", "\u2003", "\u202e", "\u2066", "\ufffd", "…", "🚀", "x"}
	cases := []string{"", " ", "ab\xff", "abc", "ab ", " ab", "a\x1bb", "\u202eevil", strings.Repeat("word ", 30)}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		for _, n := range []int{1, 2, 3, 5, 16, 60} {
			if got, want := safeCell(s, n), slowSafeCell(s, n); got != want {
				t.Fatalf("safeCell(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
}

func FuzzSafeCell(f *testing.F) {
	for _, s := range []string{"", "ab\xff", "a\x1bb \u202e c", "日本語 ✓ \u0085x", strings.Repeat("ab ", 30)} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 1 + (n&0xff)%80
		if got, want := safeCell(s, n), slowSafeCell(s, n); got != want {
			t.Fatalf("safeCell(%q, %d) = %q, want %q", s, n, got, want)
		}
	})
}

// The time formatter's arithmetic gives what time.Time's Format gives, in zones
// with DST, half-hour offsets, offsets in seconds (LMT) and none.
func TestTimeFormatterIsFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, name := range []string{"UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Dublin", "Pacific/Chatham", "America/St_Johns", "Asia/Kathmandu", "Africa/Monrovia"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Logf("skip zone %s: %v", name, err)
			continue
		}
		tf := timeFormatter{loc: loc}
		var stamps []string
		for range 20000 {
			sec := r.Int64N(int64(2100-1800)*365*86400) + time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
			ts := time.Unix(sec, int64(r.IntN(1e9))).UTC().Format("2006-01-02T15:04:05.999Z")
			if r.IntN(2) == 0 {
				ts = time.Unix(sec, 0).UTC().Format("2006-01-02T15:04:05Z")
			}
			stamps = append(stamps, ts)
		}
		// Runs of nearby times (as a listing has) and the edges of the range.
		base := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
		for i := range 3000 {
			stamps = append(stamps, base.Add(time.Duration(i)*17*time.Minute).Format(time.RFC3339))
		}
		stamps = append(stamps, "0000-01-01T00:00:00Z", "0999-12-31T23:59:00Z", "1000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2024-02-29T12:00:00Z", "garbage", "")
		for _, ts := range stamps {
			want := "-"
			if tt := indexer.ParseTime(ts); !tt.IsZero() {
				want = tt.In(loc).Format("2006-01-02 15:04")
			}
			if got := string(tf.append(nil, ts)); got != want {
				t.Fatalf("%s: %q = %q, want %q", name, ts, got, want)
			}
		}
	}
}

// A narrow terminal's TITLE is the maxTitle cell cut again, which must be the
// cell safeCell makes at the narrower width.
func TestSafeCellRecut(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	pieces := []string{"a", "bc", "Z", " ", "  ", "\t", "\n", "\x00", "\x1b[31m", "\x7f", "\xff", "é", "日本", "✓",
		"\u0085", "\u00a0", "\u009b", "\u2003", "\u202e", "…", "🚀", "word"}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		var tb table
		at := tb.add(&tableRow{Title: s}, nil)
		cells, _, _ := tb.row(at)
		full := cells[colTitle-1]
		if string(full) != safeCell(s, maxTitle) {
			t.Fatalf("title cell of %q = %q, want %q", s, full, safeCell(s, maxTitle))
		}
		for w := 1; w < maxTitle; w++ {
			if got, want := string(tb.narrowTitle(nil, at, full, w)), safeCell(s, w); got != want {
				t.Fatalf("narrowTitle(%q, %d) = %q, want %q", s, w, got, want)
			}
		}
	}
}

// Rows added one after another are found again by walking from the first,
// across the arena's chunks, with their extra bytes, a row larger than a chunk
// included.
func TestTableRowWalk(t *testing.T) {
	// Rows 0–2999 in one table, the rest in another joined to it.
	var tb, more table
	var at []arenaPos
	for i := range 5000 {
		model := "m"
		if i == 2500 || i == 4000 {
			model = strings.Repeat("x", 2*arenaChunk)
		}
		add := &tb
		if i >= 3000 {
			add = &more
		}
		at = append(at, add.add(&tableRow{ID: fmt.Sprint(i), Model: model, Title: "t"}, []byte(fmt.Sprint("extra", i))))
	}
	chunks := int32(len(tb.cells.chunks))
	for i := 3000; i < len(at); i++ {
		at[i].chunk += chunks
	}
	tb.join(&more)
	if len(tb.cells.chunks) < 3 {
		t.Fatalf("%d chunks: the walk never crossed one", len(tb.cells.chunks))
	}
	pos := arenaPos{}
	for i := range tb.rows() {
		if pos != at[i] {
			t.Fatalf("row %d: walked to %v, added at %v", i, pos, at[i])
		}
		cells, extra, next := tb.row(pos)
		if string(cells[colID-1]) != fmt.Sprint(i) || string(extra) != fmt.Sprint("extra", i) {
			t.Fatalf("row %d: id %q, extra %q", i, cells[colID-1], extra)
		}
		pos = next
	}
}
