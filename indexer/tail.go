package indexer

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
)

// fpWindow is how many bytes before the offset the fingerprint covers.
const fpWindow = 64

// headWindow is how many of a file's first bytes the head fingerprint covers: an
// append re-reads them to prove the start of the file is still what was indexed.
const headWindow = 1024

// Fingerprint hashes the (up to) fpWindow bytes before offset; it returns the
// fingerprint and the number of bytes read.
func Fingerprint(f io.ReaderAt, offset int64) (string, int64, error) {
	if offset <= 0 {
		return "", 0, nil
	}
	return fingerprintRange(f, max(offset-fpWindow, 0), offset)
}

// HeadFingerprint hashes the file's first min(headWindow, offset) bytes; it
// returns the fingerprint and the number of bytes read.
func HeadFingerprint(f io.ReaderAt, offset int64) (string, int64, error) {
	if offset <= 0 {
		return "", 0, nil
	}
	return fingerprintRange(f, 0, min(offset, headWindow))
}

func fingerprintRange(f io.ReaderAt, start, end int64) (string, int64, error) {
	buf := make([]byte, end-start)
	n, err := f.ReadAt(buf, start)
	if n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			return "short", int64(n), nil // the file no longer reaches end
		}
		return "", int64(n), err
	}
	return fingerprintBytes(buf), int64(n), nil
}

func fingerprintBytes(b []byte) string { return hex16(fnvAppend(fnvBasis, b)) }

// hex16 is fmt.Sprintf("%016x", v).
func hex16(v uint64) string {
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = "0123456789abcdef"[v&15]
		v >>= 4
	}
	return string(b[:])
}

// FNV-1a (64 bit), whose state is its digest, so a fingerprint can be extended.
const (
	fnvBasis = 14695981039346656037
	fnvPrime = 1099511628211
)

func fnvAppend(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// headCollector extends the head fingerprint with the complete lines ReadLines
// hands out from offset from, so neither a full read nor an append inside the
// head needs an extra read for it. sum is the head fingerprint of [0, from).
type headCollector struct {
	from int64
	sum  string
	buf  []byte
}

// line adds a line handed out (without its newline). Only the bytes up to
// headWindow are kept: the fingerprint covers no more.
func (h *headCollector) line(line []byte) {
	room := headWindow - h.from - int64(len(h.buf))
	if room <= 0 {
		return
	}
	if h.buf == nil {
		h.buf = make([]byte, 0, room)
	}
	if int64(len(line)) >= room {
		h.buf = append(h.buf, line[:room]...)
		return
	}
	h.buf = append(h.buf, line...)
	h.buf = append(h.buf, '\n')
}

// fingerprint returns the head fingerprint for a file consumed up to offset; ok
// is false when it cannot be derived from the lines (then read it from the file).
func (h *headCollector) fingerprint(offset int64) (fp string, ok bool) {
	end := min(offset, headWindow)
	if end <= 0 {
		return "", true
	}
	need := end - h.from
	if need < 0 || int64(len(h.buf)) < need {
		return "", false
	}
	sum := uint64(fnvBasis)
	if h.from > 0 {
		v, err := strconv.ParseUint(h.sum, 16, 64)
		if err != nil || len(h.sum) != 16 {
			return "", false // none recorded (an older catalog)
		}
		sum = v
	}
	return hex16(fnvAppend(sum, h.buf[:need])), true
}

// tailCollector keeps the last fpWindow bytes of the lines ReadLines hands out,
// each with its newline, so that the fingerprint of a file read whole from its
// start (every line handed out, none skipped as too long) needs no read of its
// own: the bytes before the offset are the last lines'.
type tailCollector struct {
	buf [2 * fpWindow]byte
	n   int // buf[:n] are the last n bytes handed out
}

func (c *tailCollector) line(line []byte) {
	if len(line)+1 >= fpWindow {
		copy(c.buf[:fpWindow-1], line[len(line)-(fpWindow-1):])
		c.buf[fpWindow-1] = '\n'
		c.n = fpWindow
		return
	}
	if c.n+len(line)+1 > len(c.buf) {
		keep := min(c.n, fpWindow-len(line)-1) // what the window still needs of the earlier lines
		copy(c.buf[:keep], c.buf[c.n-keep:c.n])
		c.n = keep
	}
	c.n += copy(c.buf[c.n:], line)
	c.buf[c.n] = '\n'
	c.n++
}

// fingerprint returns Fingerprint of the file at offset, the end of the last
// line handed out; ok is false when fewer bytes than it covers were collected.
func (c *tailCollector) fingerprint(offset int64) (string, bool) {
	if offset <= 0 {
		return "", true
	}
	k := int(min(offset, fpWindow))
	if c.n < k {
		return "", false
	}
	return fingerprintBytes(c.buf[c.n-k : c.n]), true
}

// MaxLineBytes is the longest line that is parsed; longer lines are skipped (and
// counted) without ever being held in memory whole.
const MaxLineBytes = 16 << 20

// readChunk is how much of a file is read per call.
const readChunk = 256 << 10

// chunkPool recycles read buffers: a cold index reads thousands of files.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// LineStats reports what one ReadLines call did.
type LineStats struct {
	BytesRead int64 // bytes read from the file
	Lines     int   // complete lines handed to the callback
	Long      int   // complete lines skipped for being longer than MaxLineBytes
}

// ReadLines reads f from t.Offset to end of file and calls fn with every complete
// '\n'-terminated line (without the '\n'). It advances t.Offset past the last
// complete line, so a trailing partial line is read again next time, unless that
// partial line is already longer than MaxLineBytes: then its bytes are consumed and
// t.LongLine set, and the line is counted as skipped when its newline arrives.
func ReadLines(f *os.File, t *Tail, fn func(line []byte)) (LineStats, error) {
	return readLines(f, t, func(_ int64, line []byte) { fn(line) })
}

// readLines is ReadLines over any seekable reader, handing fn each line's offset.
func readLines(f io.ReadSeeker, t *Tail, fn func(off int64, line []byte)) (LineStats, error) {
	return readLinesSized(f, t, -1, fn)
}

// readLinesSized is readLines of a file whose size an fstat just before gave
// (-1: none). A read that returns fewer bytes than asked has reached the end of
// the file at that moment; where that end is the size the stat gave, the read
// stops there, as the further read that returns nothing would have said, unless
// the file grew in between: the lines appended then are read by the next look,
// as those appended just after the end was seen always were. Every other end (a
// file grown since the stat, or cut) is read until a read returns nothing.
func readLinesSized(f io.ReadSeeker, t *Tail, size int64, fn func(off int64, line []byte)) (LineStats, error) {
	var st LineStats
	if _, err := f.Seek(t.Offset, io.SeekStart); err != nil {
		return st, err
	}
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	buf := *bp
	var pending []byte // start of a line that continues in the next chunk
	pos := t.Offset    // file position of buf[0]
	for {
		n, err := f.Read(buf)
		if n > 0 {
			st.BytesRead += int64(n)
			chunk := buf[:n]
			start := 0
			for start < len(chunk) {
				i := bytes.IndexByte(chunk[start:], '\n')
				if i < 0 {
					rest := chunk[start:]
					switch {
					case t.LongLine:
						// still inside a skipped line: drop the bytes
					case len(pending)+len(rest) > MaxLineBytes:
						pending = nil
						t.LongLine = true
					default:
						pending = append(pending, rest...)
					}
					break
				}
				end := start + i
				if t.LongLine {
					t.LongLine = false
					st.Long++
				} else if len(pending) > 0 {
					if len(pending)+i > MaxLineBytes {
						st.Long++
					} else {
						pending = append(pending, chunk[start:end]...)
						fn(t.Offset, pending)
						st.Lines++
					}
					pending = pending[:0]
				} else if i > MaxLineBytes {
					st.Long++
				} else {
					fn(pos+int64(start), chunk[start:end])
					st.Lines++
				}
				start = end + 1
				t.Offset = pos + int64(start)
			}
			pos += int64(n)
			if t.LongLine {
				t.Offset = pos
			}
			if err == nil && n < len(buf) && pos == size {
				return st, nil
			}
		}
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		if n == 0 {
			return st, nil
		}
	}
}
