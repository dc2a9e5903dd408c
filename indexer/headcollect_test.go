package indexer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestHeadCollectorMatchesFile hands a headCollector the lines of random files
// (lines around and past the head window, the collection starting at a line
// boundary after 0 or past the window), as ReadLines would, and compares its
// fingerprint with the head fingerprint of the file's bytes.
func TestHeadCollectorMatchesFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 3000 {
		var file []byte
		var ends []int // where each line's newline ends
		for range rng.IntN(12) + 1 {
			n := []int{0, 1, 7, 100, 500, headWindow - 1, headWindow, headWindow + 1, 3000}[rng.IntN(9)]
			for range n {
				file = append(file, byte('a'+rng.IntN(26)))
			}
			file = append(file, '\n')
			ends = append(ends, len(file))
		}
		// The collector starts after k lines (k == 0: from the start).
		k := rng.IntN(len(ends))
		from := 0
		if k > 0 {
			from = ends[k-1]
		}
		h := headCollector{from: int64(from)}
		if from > 0 {
			h.sum = fingerprintBytes(file[:min(from, headWindow)])
		}
		start := from
		for _, end := range ends[k:] {
			h.line(file[start : end-1])
			start = end
		}
		offset := int64(len(file))
		got, ok := h.fingerprint(offset)
		want := fingerprintBytes(file[:min(len(file), headWindow)])
		if from > headWindow {
			// The head was done before the collection started: nothing to extend.
			continue
		}
		if !ok || got != want {
			t.Fatalf("round %d (from %d, %d bytes): %q %v, want %q", round, from, len(file), got, ok, want)
		}
		if len(h.buf) > headWindow-from {
			t.Fatalf("round %d: %d bytes kept, more than the window's %d", round, len(h.buf), headWindow-from)
		}
		if !bytes.Equal(h.buf, file[from:from+len(h.buf)]) {
			t.Fatalf("round %d: kept bytes are not the file's", round)
		}
	}
}

// TestMembersReleaseKeepsNothing: a Members put back in the pool keeps its
// records' room but nothing of the last line (no slice into a read buffer).
func TestMembersReleaseKeepsNothing(t *testing.T) {
	m := new(Members)
	m.Scan([]byte(`{"a":1,"b\u0041":{"c":[{"d":2}]},"e":"f"}`))
	if len(m.mem) != 3 || len(m.keys) == 0 && len(m.sub) == 0 {
		t.Fatalf("scan recorded %d members, %d keys, %d nested", len(m.mem), len(m.keys), len(m.sub))
	}
	m.release()
	if m.line != nil || len(m.mem)+len(m.objs)+len(m.sub)+len(m.keys) != 0 || m.err != nil {
		t.Fatalf("released Members holds %q, %d members, %d objects", m.line, len(m.mem), len(m.objs))
	}
	for _, e := range m.mem[:cap(m.mem)] {
		if e.key != nil || e.val != nil {
			t.Fatalf("released Members keeps member %q: %q", e.key, e.val)
		}
	}
	for _, k := range m.keys[:cap(m.keys)] {
		if k != nil {
			t.Fatalf("released Members keeps key %q", k)
		}
	}
}

// TestTailCollectorMatchesFingerprint hands a tailCollector the lines of random
// files, as ReadLines would, and compares its fingerprint with Fingerprint of
// the file at the offset after each line.
func TestTailCollectorMatchesFingerprint(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 3000 {
		var c tailCollector
		var file []byte
		if fp, ok := c.fingerprint(0); !ok || fp != "" {
			t.Fatalf("empty: %q %v", fp, ok)
		}
		for range rng.IntN(12) + 1 {
			n := []int{0, 1, 2, 30, fpWindow - 2, fpWindow - 1, fpWindow, fpWindow + 1, 2 * fpWindow, 500}[rng.IntN(10)]
			line := make([]byte, n)
			for i := range line {
				line[i] = byte('a' + rng.IntN(26))
			}
			c.line(line)
			file = append(append(file, line...), '\n')
			got, ok := c.fingerprint(int64(len(file)))
			want := fingerprintBytes(file[max(0, len(file)-fpWindow):])
			if !ok || got != want {
				t.Fatalf("round %d, %d bytes: %q %v, want %q", round, len(file), got, ok, want)
			}
		}
	}
}

func TestHex16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 10000 {
		v := rng.Uint64() >> (i % 64)
		if got, want := hex16(v), fmt.Sprintf("%016x", v); got != want {
			t.Fatalf("hex16(%d) = %q, want %q", v, got, want)
		}
	}
}
