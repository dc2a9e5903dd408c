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
