package indexer

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestCollectorsMatchReadLines runs readLines over random files (CRLF, no final
// newline, empty, lines across read chunks) and holds the collectors'
// fingerprints at the offset reached to those of the file's bytes.
func TestCollectorsMatchReadLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for round := range 400 {
		var file []byte
		for range rng.IntN(8) {
			n := []int{0, 1, 2, 62, 63, 64, 65, 1023, 1024, 1025, readChunk - 1, readChunk, readChunk + 1}[rng.IntN(13)]
			for range n {
				file = append(file, "ab\r\x00\xff{"[rng.IntN(6)])
			}
			if rng.IntN(5) > 0 {
				file = append(file, '\n')
			}
		}
		var tl Tail
		var head headCollector
		var tail tailCollector
		st, err := readLines(bytes.NewReader(file), &tl, func(_ int64, line []byte) {
			head.line(line)
			tail.line(line)
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Long != 0 || tl.LongLine {
			continue
		}
		off := tl.Offset
		fp, ok := tail.fingerprint(off)
		if want := fingerprintBytes(file[max(0, off-fpWindow):off]); off > 0 && (!ok || fp != want) {
			t.Fatalf("round %d: tail %q %v, want %q", round, fp, ok, want)
		}
		hfp, ok := head.fingerprint(off)
		if want := fingerprintBytes(file[:min(off, headWindow)]); off > 0 && (!ok || hfp != want) {
			t.Fatalf("round %d: head %q %v, want %q", round, hfp, ok, want)
		}
		if off == 0 && (fp != "" || hfp != "") {
			t.Fatalf("round %d: empty %q %q", round, fp, hfp)
		}
	}
}

// shortReader hands out at most n bytes a Read, so lines cross reads.
type shortReader struct {
	*bytes.Reader
	n int
}

func (r shortReader) Read(p []byte) (int, error) { return r.Reader.Read(p[:min(len(p), r.n)]) }

// FuzzCollectors: for any file read whole in reads of any size, the head and tail
// collectors' fingerprints at the offset reached are those of the file's bytes.
func FuzzCollectors(f *testing.F) {
	f.Add([]byte("a\r\nb\n\nc"), 3)
	f.Add(bytes.Repeat([]byte("x\n"), 700), 64)
	f.Fuzz(func(t *testing.T, file []byte, n int) {
		n = max(1, n%4096)
		var tl Tail
		var head headCollector
		head.buf = make([]byte, 0, headWindow)
		var tail tailCollector
		st, err := readLines(shortReader{bytes.NewReader(file), n}, &tl, func(_ int64, line []byte) {
			head.line(line)
			tail.line(line)
		})
		if err != nil || st.Long != 0 || tl.LongLine {
			t.Fatal(err, st)
		}
		off := tl.Offset
		if want := int64(bytes.LastIndexByte(file, '\n') + 1); off != want {
			t.Fatalf("offset %d, want %d", off, want)
		}
		wantFp, wantHfp := "", ""
		if off > 0 {
			wantFp, wantHfp = fingerprintBytes(file[max(0, off-fpWindow):off]), fingerprintBytes(file[:min(off, headWindow)])
		}
		if fp, ok := tail.fingerprint(off); !ok || fp != wantFp {
			t.Fatalf("tail %q %v, want %q", fp, ok, wantFp)
		}
		if hfp, ok := head.fingerprint(off); !ok || hfp != wantHfp {
			t.Fatalf("head %q %v, want %q", hfp, ok, wantHfp)
		}
	})
}
