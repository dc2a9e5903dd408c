package search

import "encoding/binary"

// termList is one term's postings while a segment is written: doc numbers
// ascending, each with its term frequency, encoded as (delta<<1 | tf==1) and tf
// when above 1.
type termList struct {
	buf  []byte
	last uint32
	n    uint32 // doc frequency
	// While a buffer is filled, the doc being counted and its count so far (count
	// adds it to buf when the next doc starts; flush at the end).
	cur, curTF uint32
}

// count counts one occurrence of the term in doc (docs come in ascending order)
// and returns how many bytes buf grew by.
func (t *termList) count(doc uint32) int {
	if t.curTF > 0 && t.cur == doc {
		t.curTF++
		return 0
	}
	before := len(t.buf)
	t.flush()
	t.cur, t.curTF = doc, 1
	return len(t.buf) - before + 2 // + the pending entry, about
}

// flush adds the pending doc to buf.
func (t *termList) flush() {
	if t.curTF > 0 {
		t.add(t.cur, t.curTF)
		t.curTF = 0
	}
}

func (t *termList) add(doc uint32, tf uint32) {
	d := uint64(doc-t.last) << 1
	if t.n == 0 {
		d = uint64(doc) << 1
	}
	t.last = doc
	t.n++
	switch {
	case tf == 1 && d < 0x80:
		t.buf = append(t.buf, byte(d|1)) // most postings: one byte
	case tf == 1:
		t.buf = binary.AppendUvarint(t.buf, d|1)
	case d < 0x80 && tf < 0x80:
		t.buf = append(t.buf, byte(d), byte(tf))
	default:
		t.buf = binary.AppendUvarint(t.buf, d)
		t.buf = binary.AppendUvarint(t.buf, uint64(tf))
	}
}

// decodePostings calls fn for each (doc, tf) of an encoded list.
func decodePostings(b []byte, fn func(doc uint32, tf uint32)) error {
	var doc uint64
	first := true
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return errCorrupt
		}
		b = b[n:]
		tf := uint64(1)
		if v&1 == 0 {
			tf, n = binary.Uvarint(b)
			if n <= 0 {
				return errCorrupt
			}
			b = b[n:]
		}
		if first {
			doc, first = v>>1, false
		} else {
			doc += v >> 1
		}
		fn(uint32(doc), uint32(tf))
	}
	return nil
}
