package indexer

// Readers that look into the objects nested in a line (a message, its content
// blocks) take them from the scan's records with these, rather than crossing
// their bytes again; what they give is what scanning the bytes would.

// Nested calls fn with the members of the object raw, exactly as ObjectFields(raw,
// fn) would for a valid object, and returns true, when raw is exactly the bytes,
// in place, of an object nested in the line m last scanned that the scan crossed
// whole. Otherwise (m nil, raw not such an object) it calls nothing and returns
// false.
func (m *Members) Nested(raw []byte, fn func(key, val []byte)) bool {
	if m == nil || len(raw) == 0 || len(m.line) == 0 {
		return false
	}
	o, ok := m.nested(raw)
	if !ok {
		return false
	}
	for e := o.first; e >= 0; e = m.sub[e].next {
		r := &m.sub[e]
		if r.kStart >= 0 {
			fn(m.line[r.kStart:r.kEnd], m.line[r.vStart:r.vEnd])
		} else {
			fn(m.keys[-r.kStart-1], m.line[r.vStart:r.vEnd])
		}
	}
	return true
}

// ObjectLen returns the length of the object that starts where b does, when b is
// in place in the line m last scanned and the scan crossed that object whole
// (it then lies in b); false otherwise.
func (m *Members) ObjectLen(b []byte) (int, bool) {
	if m == nil || len(b) == 0 || b[0] != '{' || len(m.line) == 0 || len(m.objs) == 0 {
		return 0, false
	}
	off := cap(m.line) - cap(b)
	if off <= 0 || off >= len(m.line) || &m.line[off] != &b[0] {
		return 0, false
	}
	lo, hi := 0, len(m.objs)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if int(m.objs[h].start) < off {
			lo = h + 1
		} else {
			hi = h
		}
	}
	if lo == len(m.objs) || int(m.objs[lo].start) != off {
		return 0, false
	}
	n := int(m.objs[lo].end) - off
	if n <= 0 || n > len(b) {
		return 0, false // not scanned whole, or running past b
	}
	return n, true
}
