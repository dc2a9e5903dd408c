package search

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
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

// TestParseMillis: the milliseconds a read worker takes of a message's time are
// time.Parse's (RFC 3339), 0 for what does not parse, in indexer.TimeLayout
// (read without it) or not.
func TestParseMillis(t *testing.T) {
	for _, s := range []string{"", "2026-01-01T00:00:00.000Z", "2026-06-11T07:40:00.237Z", "2024-02-29T23:59:59.999Z",
		"2023-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-04-31T00:00:00.000Z", "2026-01-01T24:00:00.000Z",
		"2026-01-01T00:60:00.000Z", "2026-01-01T00:00:60.000Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.5+02:00",
		"2026-01-01T00:00:00.123456789Z", "2026-01-01 00:00:00.000Z", "1969-12-31T23:59:59.999Z", "x026-01-01T00:00:00.000Z"} {
		want := int64(0)
		if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
			want = tm.UnixMilli()
		}
		if got := parseMillis(s); got != want {
			t.Errorf("parseMillis(%q) = %d, want %d", s, got, want)
		}
	}
}
