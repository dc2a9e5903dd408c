package usage

import (
	"strconv"
	"sync"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The JSON a layout's line parser reads: the members of an object, and the
// values it takes from them.

// fields collects the top-level members of a JSON object; nil if it is not one.
//
// The members are kept in a slice, not a map: a map and a string per key for
// every line read was most of what a cold pass of the ledger allocated.
//
// The objects of one line are cut from the scanner's one buffer (a line's
// parse allocates none of them once the buffer has grown); an object stays valid
// after the next is cut, until the scanner is reset.
func (sc *scanner) fields(raw []byte) object {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	if sc.buf == nil {
		sc.buf = make([]field, 0, 64)
	}
	start := len(sc.buf)
	if sc.mem.ObjectFields(raw, func(k, v []byte) { sc.buf = append(sc.buf, field{k, v}) }) != nil {
		sc.buf = sc.buf[:start]
		return nil
	}
	return sc.buf[start:len(sc.buf):len(sc.buf)]
}

// scanner holds the members of the objects of the line being parsed, and the
// line's members if they were scanned already (nil: fields scans).
type scanner struct {
	buf []field
	mem *indexer.Members
}

// reset forgets the line's objects (and the line: nothing of it is kept).
func (sc *scanner) reset() {
	clear(sc.buf)
	sc.buf = sc.buf[:0]
	sc.mem = nil
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}

// field is one member of an object: its key (unescaped) and its raw value.
type field struct{ k, v []byte }

// object is the members of a JSON object in their order (non-nil for {}).
type object []field

// lookup is the raw value of the member key; a key given twice is its last
// value, as encoding/json reads it.
func (o object) lookup(key string) ([]byte, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if string(o[i].k) == key {
			return o[i].v, true
		}
	}
	return nil, false
}

// get is lookup without the second result (nil: no such member).
func (o object) get(key string) []byte {
	v, _ := o.lookup(key)
	return v
}

// str decodes a JSON string; ok is false for anything else (null included).
func str(raw []byte) (string, bool) { return indexer.JSONString(raw) }

// count decodes a non-negative integer token count. Anything else (a fraction, a
// negative number, a string) is not a count: ok is false, as a typed reader
// (ccusage's u64) rejects the line.
func count(raw []byte) (int64, bool) {
	if len(raw) == 0 || raw[0] < '0' || raw[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// optCount is count for an optional field: absent is 0; present must be a count.
func optCount(m object, key string) (int64, bool) {
	raw, ok := m.lookup(key)
	if !ok {
		return 0, true
	}
	return count(raw)
}

// looseCount is for layouts read by lenient readers: anything but a count is 0.
func looseCount(m object, key string) int64 {
	n, _ := count(m.get(key))
	return n
}

func parseTime(raw []byte) (int64, bool) {
	s, ok := str(raw)
	if !ok {
		return 0, false
	}
	t, ok := indexer.ParseRFC3339(s)
	if !ok {
		return 0, false
	}
	return t.UnixMilli(), true
}
