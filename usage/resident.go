package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Resident units keep only their header in memory (identity, position, where
// they are filed; an idle unit's is in units.idx, cold.go); their body (the parser's state, the account's buckets and dedupe
// window, layout, Mogzi's running total) stays in the units file, on the line
// their key was last written to, and is read back when the unit is needed again
// (a line arrives, the unit is reset, refiled or retired). A unit's body is
// dropped from memory at the end of a Sync once it is on disk as it is in memory;
// a record whose header changed while its body was on disk (Done) is written with
// the body copied from its line.

// span is where a key's line lies in the units file.
type span struct{ off, n int64 }

// bodyOf makes r's body resident, reading it back from the units file if it was
// evicted, and returns it. Every change to a body goes through it.
func (l *Ledger) bodyOf(r *unitRec) *unitBody {
	if r.unitBody == nil {
		b, err := l.readBody(r)
		if err != nil && l.err == nil {
			// Not counted from here on: Sync reports it, and the next Open reads the
			// ledger again from its files.
			l.err = err
		}
		if b == nil {
			b = &unitBody{}
		}
		r.unitBody = b
		l.hot = append(l.hot, r)
	}
	return r.unitBody
}

// accOf is r's account, made resident (bodyOf).
func (l *Ledger) accOf(r *unitRec) *account { return &l.bodyOf(r).acc }

// peekBody is r's body without making it resident (to write it out again).
func (l *Ledger) peekBody(r *unitRec) (*unitBody, error) {
	if r.unitBody != nil {
		return r.unitBody, nil
	}
	// Read under peekMu: the units file's handle and the strings are the
	// ledger's, and syncSideBySide peeks from two goroutines.
	l.peekMu.Lock()
	defer l.peekMu.Unlock()
	return l.readBody(r)
}

// readLine reads the line at s from the units file.
func (l *Ledger) readLine(s span) ([]byte, error) {
	if l.rd == nil {
		f, err := os.Open(l.unitsFile.path)
		if err != nil {
			return nil, fmt.Errorf("read usage ledger: %w", err)
		}
		l.rd = f
	}
	buf := make([]byte, s.n)
	if _, err := l.rd.ReadAt(buf, s.off); err != nil {
		return nil, fmt.Errorf("read usage ledger %s at %d: %w", l.unitsFile.path, s.off, err)
	}
	return buf, nil
}

// lineBlock is a block of the units file read ahead by readLineIn.
type lineBlock struct {
	at   int64
	data []byte
}

// lineBlockSize is how much readLineIn reads at once.
const lineBlockSize = 1 << 20

// readLineIn is readLine through blk: a compaction copies the lines of the
// units file in the order of their keys, which is mostly the file's (a cold
// build appends each source's keys in order), so a block read ahead holds the
// next lines (one read a megabyte, not one a line). The line returned is
// valid until the next call.
func (l *Ledger) readLineIn(blk *lineBlock, s span) ([]byte, error) {
	if s.off >= blk.at && s.off+s.n <= blk.at+int64(len(blk.data)) {
		return blk.data[s.off-blk.at : s.off-blk.at+s.n], nil
	}
	if s.n > lineBlockSize/4 {
		return l.readLine(s) // a long line: read alone
	}
	if l.rd == nil {
		f, err := os.Open(l.unitsFile.path)
		if err != nil {
			return nil, fmt.Errorf("read usage ledger: %w", err)
		}
		l.rd = f
	}
	if blk.data == nil {
		blk.data = make([]byte, lineBlockSize)
	}
	n, err := l.rd.ReadAt(blk.data[:cap(blk.data)], s.off)
	if int64(n) < s.n {
		blk.data = blk.data[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read usage ledger %s at %d: %w", l.unitsFile.path, s.off, err)
	}
	blk.at, blk.data = s.off, blk.data[:n]
	return blk.data[:s.n], nil
}

// readBody reads r's body back from the line its key was last written to.
func (l *Ledger) readBody(r *unitRec) (*unitBody, error) {
	line, err := l.readLine(r.span())
	if err != nil {
		return nil, err
	}
	var got *unitRec
	if fk, ok := decodeKeyFast(line, l.intern); ok {
		if fk.k != (ukey{r.source(), r.Unit}) {
			return nil, fmt.Errorf("usage ledger %s at %d: holds %s, not %s", l.unitsFile.path, r.span().off, fk.k.unit, r.Unit)
		}
		switch {
		case r.idx < 0 && fk.live != nil:
			got = fk.live
		case r.idx >= 0 && int(r.idx) < len(fk.retired):
			got = fk.retired[r.idx]
		default:
			return nil, fmt.Errorf("usage ledger %s at %d: no record %d of %s", l.unitsFile.path, r.span().off, r.idx, r.Unit)
		}
	} else {
		var w wireKey
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&w); err != nil {
			return nil, fmt.Errorf("usage ledger %s at %d: %w", l.unitsFile.path, r.span().off, err)
		}
		if w.K != [2]string{r.source(), r.Unit} {
			return nil, fmt.Errorf("usage ledger %s at %d: holds %s, not %s", l.unitsFile.path, r.span().off, w.K[1], r.Unit)
		}
		var wu *wireUnit
		switch {
		case r.idx < 0 && w.Live != nil:
			wu = w.Live
		case r.idx >= 0 && int(r.idx) < len(w.Retired):
			wu = &w.Retired[r.idx]
		default:
			return nil, fmt.Errorf("usage ledger %s at %d: no record %d of %s", l.unitsFile.path, r.span().off, r.idx, r.Unit)
		}
		if got, err = fromWire(*wu, l.intern); err != nil {
			return nil, fmt.Errorf("usage ledger %s: unit %s: %w", l.unitsFile.path, r.Unit, err)
		}
	}
	if got.unitBody == nil {
		return nil, fmt.Errorf("usage ledger %s at %d: no body of %s", l.unitsFile.path, r.span().off, r.Unit)
	}
	return got.unitBody, nil
}

// placed is where a record was just written: applied once the write succeeded.
type placed struct {
	r   *unitRec
	s   span
	idx int32
}

func (l *Ledger) applyPlaced(ps []placed) {
	for _, p := range ps {
		p.r.setSpan(p.s)
		p.r.idx = p.idx
	}
}

// keyRecs lists the records written on k's line, in the line's order (the live
// one first).
func (l *Ledger) keyRecs(k ukey, out []placed, s span) []placed {
	if r := l.units.get(k.source, k.unit); r != nil {
		out = append(out, placed{r, s, -1})
	}
	for i, r := range l.retired[k] {
		out = append(out, placed{r, s, int32(i)})
	}
	return out
}

// resetReader forgets the units file's read handle (the file was replaced).
func (l *Ledger) resetReader() {
	if l.rd != nil {
		l.rd.Close()
		l.rd = nil
	}
}

// evictLocked drops from memory the bodies that are on disk as they are: of
// records written and not changed since, and not in the middle of a read.
func (l *Ledger) evictLocked() {
	keep := l.hot[:0]
	for _, r := range l.hot {
		if r.evicted() || !l.holds(r) {
			continue // dropped records go with the list
		}
		if r.span().n == 0 || r.reading || l.dirtyUnits[ukey{r.source(), r.Unit}] {
			keep = append(keep, r)
			continue
		}
		r.unitBody = nil
	}
	clear(l.hot[len(keep):])
	l.hot = keep
}

// cleanSpan is the line k was last written to, if it holds k as it is: the key
// has not changed since, and every record of it is on that line, not in memory.
func (l *Ledger) cleanSpan(k ukey) (span, bool) {
	if l.dirtyUnits[k] {
		return span{}, false
	}
	var s span
	n := 0
	same := func(r *unitRec, idx int32) bool {
		if !r.evicted() || r.idx != idx || (n > 0 && r.span() != s) {
			return false
		}
		s = r.span()
		n++
		return true
	}
	if r := l.units.get(k.source, k.unit); r != nil && !same(r, -1) {
		return span{}, false
	}
	for i, r := range l.retired[k] {
		if !same(r, int32(i)) {
			return span{}, false
		}
	}
	return s, n > 0
}

// holds reports whether r is still one of the ledger's records.
func (l *Ledger) holds(r *unitRec) bool {
	k := ukey{r.source(), r.Unit}
	if l.units.get(k.source, k.unit) == r {
		return true
	}
	for _, x := range l.retired[k] {
		if x == r {
			return true
		}
	}
	return false
}
