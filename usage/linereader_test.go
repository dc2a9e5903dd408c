package usage

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// The compaction's line reader hands over every line whole, with its newline,
// at and around its buffer's size and at several times it, and refuses a
// section whose last line has no newline; a second pass over the same reader
// reads the same.
func TestLineReaderAtBufferEdges(t *testing.T) {
	const buf = 64 << 10
	var lines []string
	for i, n := range []int{1, buf - 1, buf, buf + 1, 2 * buf, 2*buf + 1, 3, 5 * buf} {
		lines = append(lines, strings.Repeat(string(rune('a'+i)), n-1)+"\n")
	}
	data := []byte(strings.Join(lines, ""))
	var lr lineReader
	for pass := 0; pass < 2; pass++ {
		var got []string
		err := lr.each(io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), func(line []byte) error {
			got = append(got, string(line))
			return nil
		})
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if len(got) != len(lines) {
			t.Fatalf("pass %d: %d lines, want %d", pass, len(got), len(lines))
		}
		for i := range got {
			if got[i] != lines[i] {
				t.Fatalf("pass %d: line %d has %d bytes, want %d", pass, i, len(got[i]), len(lines[i]))
			}
		}
	}
	for _, cut := range []int{1, buf, buf + 1, 2 * buf} {
		torn := append(append([]byte{}, data[:len(lines[0])]...), strings.Repeat("x", cut)...)
		err := lr.each(io.NewSectionReader(bytes.NewReader(torn), 0, int64(len(torn))), func([]byte) error { return nil })
		if !errors.Is(err, errBadBase) {
			t.Fatalf("a last line of %d bytes without its newline: %v", cut, err)
		}
	}
}
