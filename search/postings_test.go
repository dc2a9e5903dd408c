package search

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestTermListAdd: the postings add writes (one- and two-byte cases apart) are
// the uvarints of the gap and tf, at every size boundary, and decode back.
func TestTermListAdd(t *testing.T) {
	var tl termList
	var want []byte
	var docs, tfs []uint32
	doc := uint32(0)
	for i, gap := range []uint32{0, 1, 62, 63, 64, 65, 127, 128, 1 << 13, 1<<14 - 1, 1 << 20, 5, 0x3f, 0x40} {
		for _, tf := range []uint32{1, 2, 127, 128, 300} {
			if i > 0 || tf > 1 {
				doc += gap + 1
			}
			d := uint64(doc-tl.last) << 1
			if tl.n == 0 {
				d = uint64(doc) << 1
			}
			if tf == 1 {
				want = binary.AppendUvarint(want, d|1)
			} else {
				want = binary.AppendUvarint(binary.AppendUvarint(want, d), uint64(tf))
			}
			tl.add(doc, tf)
			docs, tfs = append(docs, doc), append(tfs, tf)
		}
	}
	if !bytes.Equal(tl.buf, want) {
		t.Fatalf("add wrote %x, want %x", tl.buf, want)
	}
	i := 0
	if err := decodePostings(tl.buf, func(d, tf uint32) {
		if i >= len(docs) || d != docs[i] || tf != tfs[i] {
			t.Fatalf("posting %d decodes to (%d, %d)", i, d, tf)
		}
		i++
	}); err != nil || i != len(docs) {
		t.Fatalf("decoded %d of %d postings: %v", i, len(docs), err)
	}
}
