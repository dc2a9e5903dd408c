package indexer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAll runs ReadLines on path with tail t and returns the lines it produced.
func readAll(t *testing.T, path string, tl *Tail) ([]string, LineStats) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	st, err := ReadLines(f, tl, func(l []byte) { lines = append(lines, string(l)) })
	if err != nil {
		t.Fatal(err)
	}
	return lines, st
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestReadLinesAppendAndPartial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, "a\nb\npart")
	var tl Tail
	lines, st := readAll(t, path, &tl)
	if strings.Join(lines, ",") != "a,b" || tl.Offset != 4 || st.BytesRead != 8 {
		t.Fatalf("first read = %q offset %d read %d, want a,b offset 4 read 8", lines, tl.Offset, st.BytesRead)
	}
	lines, _ = readAll(t, path, &tl)
	if len(lines) != 0 || tl.Offset != 4 {
		t.Fatalf("re-read of partial = %q offset %d, want nothing at 4", lines, tl.Offset)
	}
	appendFile(t, path, "ial\nc\n")
	lines, st = readAll(t, path, &tl)
	if strings.Join(lines, ",") != "partial,c" || tl.Offset != 14 || st.BytesRead != 10 {
		t.Fatalf("after completion = %q offset %d read %d, want partial,c offset 14 read 10", lines, tl.Offset, st.BytesRead)
	}
}

func TestReadLinesGiantLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	giant := bytes.Repeat([]byte("x"), MaxLineBytes+10)
	appendFile(t, path, "a\n")
	appendFile(t, path, string(giant[:MaxLineBytes/2]))
	var tl Tail
	lines, _ := readAll(t, path, &tl)
	if strings.Join(lines, ",") != "a" || tl.LongLine || tl.Offset != 2 {
		t.Fatalf("half giant: lines %q longLine %v offset %d", lines, tl.LongLine, tl.Offset)
	}
	appendFile(t, path, string(giant[MaxLineBytes/2:]))
	lines, st := readAll(t, path, &tl)
	if len(lines) != 0 || !tl.LongLine || tl.Offset != int64(2+len(giant)) {
		t.Fatalf("whole giant without newline: lines %d longLine %v offset %d", len(lines), tl.LongLine, tl.Offset)
	}
	appendFile(t, path, "tail\nb\n")
	lines, st = readAll(t, path, &tl)
	if strings.Join(lines, ",") != "b" || st.Long != 1 || tl.LongLine {
		t.Fatalf("after giant newline: lines %q long %d longLine %v", lines, st.Long, tl.LongLine)
	}
	if st.BytesRead != int64(len("tail\nb\n")) {
		t.Fatalf("bytes read after giant = %d, want only the appended %d", st.BytesRead, len("tail\nb\n"))
	}
	// A complete giant line read in one go is skipped and counted too.
	var fresh Tail
	lines, st = readAll(t, path, &fresh)
	if strings.Join(lines, ",") != "a,b" || st.Long != 1 {
		t.Fatalf("fresh read: lines %q long %d, want a,b and 1", lines, st.Long)
	}
}

func TestReadLinesBinaryGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, "\x00\x01\xff\xfe\n{\"a\":1}\n\x00\x00")
	var tl Tail
	lines, _ := readAll(t, path, &tl)
	if len(lines) != 2 || lines[1] != `{"a":1}` {
		t.Fatalf("lines = %q, want garbage then object", lines)
	}
}
