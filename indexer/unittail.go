package indexer

// unitTail is a unit's Tail as the indexer keeps it in memory, for every unit
// of a source at once: the fixed fields only (the state and the own project are
// the sessions'), with the fingerprints held as their 64-bit values instead of
// the 16 hex digits a catalog's Tail carries, and the rare strings (a
// dependency stamp, LongLine, a fingerprint of another form) behind a pointer,
// so a parked unit costs no string beside its path. get and set convert; the
// catalogs and resume files are unchanged.
type unitTail struct {
	Dev    uint64
	Ino    uint64
	Offset int64
	Mtime  int64
	Size   int64
	// fp and hfp are the fingerprints' values when they are 16 hex digits
	// (fingerprintBytes), not all zero; 0 otherwise: "" when rare is nil or
	// does not have it, else rare's string.
	fp  uint64
	hfp uint64
	// rare holds what most tails lack: Dep, LongLine, and the fingerprints of
	// another form ("short", one edited by hand or by another tool), as read;
	// nil when there is none of them (every line unit's tail, as a rule).
	rare *tailRare
}

// tailRare is what a unitTail holds beyond its numbers.
type tailRare struct {
	dep           string
	fp, hfp       string // with fpSet, hfpSet: a fingerprint that is not a value
	fpSet, hfpSet bool
	longLine      bool
	// skipped, sskip: the unit's skipped lines and its parked sessions'
	// (skips.go), kept by setRare.
	skipped, sskip int32
}

// parseFp is the value of fingerprint s, and whether it has one (16 lower-case
// hex digits, not all zero).
func parseFp(s string) (uint64, bool) {
	if len(s) != 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, v != 0
}

// fpHex is the fingerprint string of value v, as fingerprintBytes writes it.
func fpHex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

// Fp is the tail fingerprint as Tail.Fp holds it.
func (t *unitTail) Fp() string {
	switch {
	case t.fp != 0:
		return fpHex(t.fp)
	case t.rare != nil && t.rare.fpSet:
		return t.rare.fp
	}
	return ""
}

// Hfp is the head fingerprint as Tail.Hfp holds it.
func (t *unitTail) Hfp() string {
	switch {
	case t.hfp != 0:
		return fpHex(t.hfp)
	case t.rare != nil && t.rare.hfpSet:
		return t.rare.hfp
	}
	return ""
}

// Dep is the dependency stamp (Tail.Dep).
func (t *unitTail) Dep() string {
	if t.rare == nil {
		return ""
	}
	return t.rare.dep
}

// LongLine is Tail.LongLine.
func (t *unitTail) LongLine() bool { return t.rare != nil && t.rare.longLine }

// fpIs reports whether the tail fingerprint is s, without making a string.
func (t *unitTail) fpIs(s string) bool {
	if v, ok := parseFp(s); ok {
		return v == t.fp
	}
	return t.fp == 0 && s == t.Fp()
}

// hfpIs reports whether the head fingerprint is s.
func (t *unitTail) hfpIs(s string) bool {
	if v, ok := parseFp(s); ok {
		return v == t.hfp
	}
	return t.hfp == 0 && s == t.Hfp()
}

// SetFp sets the tail fingerprint from its string.
func (t *unitTail) SetFp(s string) { t.setRare(s, t.Hfp(), t.Dep(), t.LongLine()) }

// SetHfp sets the head fingerprint from its string.
func (t *unitTail) SetHfp(s string) { t.setRare(t.Fp(), s, t.Dep(), t.LongLine()) }

// SetLongLine sets LongLine.
func (t *unitTail) SetLongLine(b bool) {
	if b != t.LongLine() {
		t.setRare(t.Fp(), t.Hfp(), t.Dep(), b)
	}
}

// setRare sets the fingerprints, the dependency stamp and LongLine.
func (t *unitTail) setRare(fp, hfp, dep string, longLine bool) {
	var fpOK, hfpOK bool
	t.fp, fpOK = parseFp(fp)
	t.hfp, hfpOK = parseFp(hfp)
	skipped, sskip := t.skippedN(), t.sskipN()
	t.rare = nil
	if (fpOK || fp == "") && (hfpOK || hfp == "") && dep == "" && !longLine && skipped == 0 && sskip == 0 {
		return
	}
	r := &tailRare{dep: dep, longLine: longLine, skipped: skipped, sskip: sskip}
	if !fpOK && fp != "" {
		r.fp, r.fpSet = fp, true
	}
	if !hfpOK && hfp != "" {
		r.hfp, r.hfpSet = hfp, true
	}
	t.rare = r
}

// set makes t x's fixed fields (and no skipped lines).
func (t *unitTail) set(x *Tail) {
	*t = unitTail{Dev: x.Dev, Ino: x.Ino, Offset: x.Offset, Mtime: x.Mtime, Size: x.Size}
	t.setRare(x.Fp, x.Hfp, x.Dep, x.LongLine)
}

// get is t as a Tail (no State, no OwnProject).
func (t *unitTail) get() Tail {
	return Tail{Dev: t.Dev, Ino: t.Ino, Offset: t.Offset, Mtime: t.Mtime, Size: t.Size, LongLine: t.LongLine(),
		Fp: t.Fp(), Hfp: t.Hfp(), Dep: t.Dep()}
}

// same reports whether a session's tail x is the unit's position (the state it
// holds was encoded at that position): the fixed fields but Dep.
func (t *unitTail) same(x *Tail) bool {
	return x != nil && x.Dev == t.Dev && x.Ino == t.Ino && x.Offset == t.Offset && x.Size == t.Size &&
		x.Mtime == t.Mtime && x.LongLine == t.LongLine() && t.fpIs(x.Fp) && t.hfpIs(x.Hfp)
}

// newUnitTail is a tail of a file of identity dev and ino, nothing consumed.
func newUnitTail(dev, ino uint64) unitTail { return unitTail{Dev: dev, Ino: ino} }
