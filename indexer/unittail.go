package indexer

// unitTail is a unit's Tail as the indexer keeps it in memory, for every unit
// of a source at once: the fixed fields only (the state and the own project are
// the sessions'), with the fingerprints held as their 64-bit values instead of
// the 16 hex digits a catalog's Tail carries, and the rare strings (a
// dependency stamp, a fingerprint of another form) behind a pointer, so a
// parked unit costs no string beside its path. get and set convert; the
// catalogs and resume files are unchanged.
type unitTail struct {
	Dev    uint64
	Ino    uint64
	Offset int64
	Mtime  int64
	Size   int64
	fp     uint64
	hfp    uint64
	// rare holds Dep and the fingerprints not of a form Fingerprint writes (a
	// catalog edited by hand or by another tool), as read: nil when there are
	// none (every line unit's tail, as a rule).
	rare     *tailRare
	LongLine bool
	fpk      fpKind
	hfpk     fpKind
}

// tailRare is what a unitTail holds as strings.
type tailRare struct {
	dep, fp, hfp string // fp, hfp: set for an fpOdd fingerprint only
}

// fpKind says what a fingerprint string was.
type fpKind uint8

const (
	fpNone  fpKind = iota // "": nothing consumed
	fpHex                 // 16 lower-case hex digits (fingerprintBytes)
	fpShort               // "short": the file no longer reached the offset
	fpOdd                 // anything else, kept as read in odd
)

// parseFp is the value and kind of fingerprint s.
func parseFp(s string) (uint64, fpKind) {
	switch {
	case s == "":
		return 0, fpNone
	case s == "short":
		return 0, fpShort
	case len(s) != 16:
		return 0, fpOdd
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
			return 0, fpOdd
		}
		v = v<<4 | uint64(c)
	}
	return v, fpHex
}

// fpString is the fingerprint string of v and k (odd: the string kept for fpOdd).
func fpString(v uint64, k fpKind, odd string) string {
	switch k {
	case fpHex:
		const digits = "0123456789abcdef"
		var b [16]byte
		for i := 15; i >= 0; i-- {
			b[i] = digits[v&0xf]
			v >>= 4
		}
		return string(b[:])
	case fpShort:
		return "short"
	case fpOdd:
		return odd
	}
	return ""
}

// Fp is the tail fingerprint as Tail.Fp holds it.
func (t *unitTail) Fp() string { return fpString(t.fp, t.fpk, t.oddFp()) }

// Hfp is the head fingerprint as Tail.Hfp holds it.
func (t *unitTail) Hfp() string { return fpString(t.hfp, t.hfpk, t.oddHfp()) }

// Dep is the dependency stamp (Tail.Dep).
func (t *unitTail) Dep() string {
	if t.rare == nil {
		return ""
	}
	return t.rare.dep
}

func (t *unitTail) oddFp() string {
	if t.rare == nil {
		return ""
	}
	return t.rare.fp
}

func (t *unitTail) oddHfp() string {
	if t.rare == nil {
		return ""
	}
	return t.rare.hfp
}

// fpIs reports whether the tail fingerprint is s, without making a string.
func (t *unitTail) fpIs(s string) bool {
	v, k := parseFp(s)
	if k == fpOdd || t.fpk == fpOdd {
		return k == t.fpk && s == t.oddFp()
	}
	return k == t.fpk && v == t.fp
}

// hfpIs reports whether the head fingerprint is s.
func (t *unitTail) hfpIs(s string) bool {
	v, k := parseFp(s)
	if k == fpOdd || t.hfpk == fpOdd {
		return k == t.hfpk && s == t.oddHfp()
	}
	return k == t.hfpk && v == t.hfp
}

// SetFp sets the tail fingerprint from its string.
func (t *unitTail) SetFp(s string) { t.setFps(s, t.Hfp()) }

// SetHfp sets the head fingerprint from its string.
func (t *unitTail) SetHfp(s string) { t.setFps(t.Fp(), s) }

func (t *unitTail) setFps(fp, hfp string) { t.setStrings(fp, hfp, t.Dep()) }

// setStrings sets the fingerprints and the dependency stamp.
func (t *unitTail) setStrings(fp, hfp, dep string) {
	t.fp, t.fpk = parseFp(fp)
	t.hfp, t.hfpk = parseFp(hfp)
	t.rare = nil
	if t.fpk == fpOdd || t.hfpk == fpOdd || dep != "" {
		r := &tailRare{dep: dep}
		if t.fpk == fpOdd {
			r.fp = fp
		}
		if t.hfpk == fpOdd {
			r.hfp = hfp
		}
		t.rare = r
	}
}

// set makes t x's fixed fields.
func (t *unitTail) set(x *Tail) {
	*t = unitTail{Dev: x.Dev, Ino: x.Ino, Offset: x.Offset, Mtime: x.Mtime, Size: x.Size, LongLine: x.LongLine}
	t.setStrings(x.Fp, x.Hfp, x.Dep)
}

// get is t as a Tail (no State, no OwnProject).
func (t *unitTail) get() Tail {
	return Tail{Dev: t.Dev, Ino: t.Ino, Offset: t.Offset, Mtime: t.Mtime, Size: t.Size, LongLine: t.LongLine,
		Fp: t.Fp(), Hfp: t.Hfp(), Dep: t.Dep()}
}

// same reports whether a session's tail x is the unit's position (the state it
// holds was encoded at that position): the fixed fields but Dep.
func (t *unitTail) same(x *Tail) bool {
	return x != nil && x.Dev == t.Dev && x.Ino == t.Ino && x.Offset == t.Offset && x.Size == t.Size &&
		x.Mtime == t.Mtime && x.LongLine == t.LongLine && t.fpIs(x.Fp) && t.hfpIs(x.Hfp)
}

// newUnitTail is a tail of a file of identity dev and ino, nothing consumed.
func newUnitTail(dev, ino uint64) unitTail { return unitTail{Dev: dev, Ino: ino} }
