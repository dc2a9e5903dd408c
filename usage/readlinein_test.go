package usage

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// readLineIn gives every line readLine gives, whatever the order asked and
// wherever the lines fall in its blocks (across a block's end, longer than a
// block), and fails rather than give part of a line when the file was cut
// short under it.
func TestReadLineInReadsWhatReadLineReads(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var data []byte
	var spans []span
	for i := 0; i < 400; i++ {
		n := 1 + rng.Intn(20000)
		switch i % 97 {
		case 5:
			n = lineBlockSize/4 + 1 // read alone
		case 6:
			n = lineBlockSize + 3 // longer than a block
		case 7:
			n = lineBlockSize / 4 // the longest read through a block
		}
		line := bytes.Repeat([]byte{byte('a' + i%26)}, n-1)
		line = append(line, '\n')
		spans = append(spans, span{int64(len(data)), int64(n)})
		data = append(data, line...)
	}
	l := newLedger(t.TempDir())
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l.unitsFile.path = filepath.Join(l.dir, UnitsName)
	if err := os.WriteFile(l.unitsFile.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.resetReader)
	var blk lineBlock
	order := rng.Perm(len(spans))
	// Mostly in the file's order, as a compaction asks.
	for i := 0; i < len(order); i += 1 + rng.Intn(3) {
		j := i + rng.Intn(min(5, len(order)-i))
		order[i], order[j] = order[j], order[i]
	}
	for k := range spans {
		i := k
		if k%4 == 0 {
			i = order[k]
		}
		s := spans[i]
		got, err := l.readLineIn(&blk, s)
		if err != nil {
			t.Fatalf("line %d at %d (%d bytes): %v", i, s.off, s.n, err)
		}
		if !bytes.Equal(got, data[s.off:s.off+s.n]) {
			t.Fatalf("line %d at %d (%d bytes): got %d bytes, not the line", i, s.off, s.n, len(got))
		}
	}
	// The file cut short under the reader, in the middle of a line: its
	// line is not given, whether it was read ahead or not.
	last := spans[len(spans)-1]
	if err := os.Truncate(l.unitsFile.path, last.off+last.n/2); err != nil {
		t.Fatal(err)
	}
	var fresh lineBlock
	if got, err := l.readLineIn(&fresh, last); err == nil {
		t.Fatalf("a line cut short read as %d bytes", len(got))
	}
}
