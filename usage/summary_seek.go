package usage

import (
	"bytes"
	"io"
)

// Reading a summary without reading all of it. `usage --statusline` wants
// today's B rows (the end of the B section, which is sorted by quarter hour), one
// session's S rows (the S section is sorted by session) and the batches after
// them; at 20k sessions the summary is ~5 MB, and reading it whole was most of
// the statusline's time. The sections are searched in the file with small reads
// (pread), then only the lines asked for are read.

// seekWindow is the first read of a probe; a longer line doubles it. seekDone: a
// search stops once its range is this short; the parse skips the lines left
// before what it wants. (Variables: a test shrinks them to search small files.)
var seekWindow, seekDone int64 = 4 << 10, 16 << 10

// readSummaryParts reads what w asks of the summary in r (size bytes long) with
// reads of only the parts it needs. ok is false whenever the file is not as
// expected (the caller then reads it whole, which reports the error exactly).
func readSummaryParts(r io.ReaderAt, size int64, w Want) (_ *Summary, ok bool) {
	head, ok := readAt(r, 0, min(size, 4<<10)) // the header line is ~100 bytes
	if !ok {
		return nil, false
	}
	h, start, err := parseSummaryHeader(head)
	if err != nil {
		return nil, false
	}
	dEnd := start + h.Days
	sEnd := dEnd + h.Sessions
	bEnd := sEnd + h.Rows
	if h.Days > size || h.Sessions > size || h.Rows > size || bEnd > size {
		return nil, false
	}
	if w.Days != nil && h.Version >= 3 {
		// The D rows and the batches: enough when they are days of w.Days.
		dsec, ok := readAt(r, start, h.Days)
		if !ok {
			return nil, false
		}
		tail, ok := readAt(r, bEnd, size-bEnd)
		if !ok {
			return nil, false
		}
		if w.NoSessions {
			s, _, err := parseSections(dsec, true, nil, nil, tail, Want{NoSessions: true, NoRows: true, Days: w.Days}, func([]byte) int { return 0 })
			if err != nil {
				return nil, false
			}
			if s.FromDays {
				s.Rows = nil
				return s, true
			}
		}
		w.Days = nil // not days of that zone: the B rows
	}
	var ssec []byte
	switch {
	case w.NoSessions:
	case w.Session != "":
		key := appendField(nil, w.Session)[1:]
		lo, ok := seekLine(r, dEnd, sEnd, func(line []byte) (bool, bool) { return bytes.Compare(sessField(line), key) < 0, true })
		if !ok {
			return nil, false
		}
		hi, ok := endOfRun(r, lo, sEnd, key)
		if !ok {
			return nil, false
		}
		if ssec, ok = readAt(r, lo, hi-lo); !ok {
			return nil, false
		}
	default:
		if ssec, ok = readAt(r, dEnd, h.Sessions); !ok {
			return nil, false
		}
	}
	bLo := sEnd
	switch {
	case w.NoRows:
		bLo = bEnd
	case w.From != 0:
		if bLo, ok = seekLine(r, sEnd, bEnd, func(line []byte) (bool, bool) {
			q, ok := rowQ(line)
			return q < w.From, ok
		}); !ok {
			return nil, false
		}
	}
	rest, ok := readAt(r, bLo, size-bLo) // the B rows asked for, then the batches
	if !ok {
		return nil, false
	}
	s, _, err := parseSections(nil, false, ssec, rest[:bEnd-bLo], rest[bEnd-bLo:], w, func([]byte) int { return 0 })
	if err != nil {
		return nil, false
	}
	return s, true
}

// sessField is the session field of an S row (escaped as written).
func sessField(line []byte) []byte {
	f := line[min(2, len(line)):]
	if t := bytes.IndexByte(f, '\t'); t >= 0 {
		f = f[:t]
	}
	return f
}

// seekLine finds, in the lines of r from lo (a line start) to hi (a line end),
// a line start at or before the first line for which before is false, and after
// most lines for which it is true. ok is false when a line cannot be read or
// before says it is malformed (its second result false).
func seekLine(r io.ReaderAt, lo, hi int64, before func(line []byte) (bool, bool)) (int64, bool) {
	for hi-lo > seekDone {
		mid := lo + (hi-lo)/2
		// The first line that starts after mid-1, read whole.
		var line []byte
		ls := int64(0)
		for n := seekWindow; ; n *= 2 {
			buf, ok := readAt(r, mid-1, min(n, hi-(mid-1)))
			if !ok {
				return 0, false
			}
			j := bytes.IndexByte(buf, '\n')
			if j >= 0 {
				if e := bytes.IndexByte(buf[j+1:], '\n'); e >= 0 {
					ls, line = mid+int64(j), buf[j+1:j+1+e]
					break
				}
			}
			if mid-1+n >= hi {
				return lo, true // one line to the end: leave it to the parse
			}
		}
		b, ok := before(line)
		if !ok {
			return 0, false
		}
		if b {
			lo = ls + int64(len(line)) + 1
		} else {
			hi = ls
		}
	}
	return lo, true
}

// endOfRun is where the S rows of session key that start at or after lo end:
// the start of the first row of a later session, or hi.
func endOfRun(r io.ReaderAt, lo, hi int64, key []byte) (int64, bool) {
	for n := seekWindow; ; n *= 2 {
		buf, ok := readAt(r, lo, min(n, hi-lo))
		if !ok {
			return 0, false
		}
		for off := 0; ; {
			e := bytes.IndexByte(buf[off:], '\n')
			if e < 0 {
				break
			}
			if bytes.Compare(sessField(buf[off:off+e]), key) > 0 {
				return lo + int64(off), true
			}
			off += e + 1
		}
		if lo+n >= hi {
			return hi, true
		}
	}
}

// readAt reads n bytes at off, all of them or ok false.
func readAt(r io.ReaderAt, off, n int64) ([]byte, bool) {
	if n < 0 || off < 0 {
		return nil, false
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, off); err != nil && !(err == io.EOF && n == 0) {
		return nil, false
	}
	return buf, true
}
