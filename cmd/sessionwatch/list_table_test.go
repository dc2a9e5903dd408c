package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
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
