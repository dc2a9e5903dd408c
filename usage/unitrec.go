package usage

import (
	"math"
	"path/filepath"
	"strings"
)

// unitRec is what the ledger holds of one unit: its position, the session it
// belongs to, and (in its body) the parser's state and the usage counted from it.
//
// An idle unit whose record is in units.idx keeps nothing in memory: the record
// is read from the index when the unit is needed (cold.go). A resident one
// keeps only its header in memory (what Resume, filing and the check for gone
// files need); its body stays on the line of the units file its key was last
// written to and is read back when the unit is needed (resident.go). The
// header is 96 bytes: the strings a unit shares with others (source, path root,
// type and project, and the high bits of its device) are behind one pointer,
// the ledger's filing of them (Ledger.canonFiling), 8 bytes, not 64; its session is a part of its Unit when
// its file is named after it, and what is rare (a fingerprint that is not 16
// hex digits, a session id not in the unit's name, a path that does not end in
// it) is behind odd.
type unitRec struct {
	Unit string
	Ino  uint64
	Off  int64
	// The fingerprint Done was given: the 16 hex digits the indexer makes as a
	// number (fpHex), anything else but "" in odd. Fp and setFp are the way to it.
	fp uint64
	// The unit's source, path root, and the type and project its session is
	// filed under (source, typ, project, setFiling, setPath): one filing for
	// every unit of the same, once the ledger holds the record
	// (Ledger.canonFiling). Never changed once made: a change makes another.
	filed *filing
	odd   *recOdd
	next  *unitRec // the next unit filed under the same session id (Ledger.members)

	*unitBody // nil while evicted: on the span's line of the units file

	// Where the record was last written (resident.go): its key's line in the units
	// file (span, setSpan: a line is at most 1 GiB, what the units file's reader
	// takes) and its place there (-1: the live record, i: the i-th retired one).
	spanOff int64
	spanN   uint32
	idx     int32
	// The low 32 bits of the unit's device (dev, setDev); the high ones, 0 on
	// any Linux, are in its filing.
	devLo uint32
	// The session id is Unit[sessAt:sessAt+sessLen] when sessLen > 0, else
	// odd's (session, setSession).
	sessAt, sessLen uint8
	// The unit's path is the filing's root followed by Unit (the source root
	// the indexer joins Unit to: one string for every unit of a root, not a
	// path per unit), or odd's path when it does not end in Unit (pathWhole).
	// path() and setPath are the only way to it.
	pathWhole bool
	fpHex     bool
}

// filing is what a record shares with others: its source, its path's root,
// and what its session is filed under beside its id.
type filing struct {
	source, root, typ, project string
	devHi                      uint32 // the high 32 bits of the units' device
}

// recOdd is what few records hold. It is never changed once made (a copy of a
// record shares it).
type recOdd struct {
	fp      string // the fingerprint, when not 16 hex digits
	session string // the session id, when not a part of Unit
	path    string // the unit's path, when it does not end in Unit (pathWhole)
}

func (r *unitRec) filing() filing {
	if r.filed == nil {
		return filing{}
	}
	return *r.filed
}

// refile makes f the record's filing (one of its own, until the ledger's
// canonFiling shares one).
func (r *unitRec) refile(f filing) {
	if r.filed == nil || *r.filed != f {
		r.filed = &f
	}
}

// dev is the unit's device (with Ino, its file's identity).
func (r *unitRec) dev() uint64 {
	if r.filed == nil {
		return uint64(r.devLo)
	}
	return uint64(r.filed.devHi)<<32 | uint64(r.devLo)
}

// setDev makes d the unit's device.
func (r *unitRec) setDev(d uint64) {
	r.devLo = uint32(d)
	if f := r.filing(); f.devHi != uint32(d>>32) {
		f.devHi = uint32(d >> 32)
		r.refile(f)
	}
}

// span is where the record was last written.
func (r *unitRec) span() span { return span{r.spanOff, int64(r.spanN)} }

func (r *unitRec) setSpan(s span) { r.spanOff, r.spanN = s.off, uint32(s.n) }

// source is the unit's source.
func (r *unitRec) source() string {
	if r.filed == nil {
		return ""
	}
	return r.filed.source
}

// setSource makes src the unit's source.
func (r *unitRec) setSource(src string) {
	f := r.filing()
	f.source = src
	r.refile(f)
}

// typ is the type of the unit's session.
func (r *unitRec) typ() string {
	return r.filing().typ
}

// project is the project the unit's session is filed under.
func (r *unitRec) project() string {
	return r.filing().project
}

// setFiling files the unit's session under typ and project (Ledger.fileAs
// shares the filing).
func (r *unitRec) setFiling(typ, project string) {
	f := r.filing()
	f.typ, f.project = typ, project
	r.refile(f)
}

// session is the unit's session id ("" none).
func (r *unitRec) session() string {
	if r.sessLen > 0 {
		return r.Unit[r.sessAt : int(r.sessAt)+int(r.sessLen)]
	}
	if r.odd != nil {
		return r.odd.session
	}
	return ""
}

// setSession makes sid the unit's session id; r.Unit must be set. An id that
// is a part of Unit (a Claude or Codex file is named after its session) costs
// nothing more.
func (r *unitRec) setSession(sid string) {
	r.sessAt, r.sessLen = 0, 0
	if i := strings.Index(r.Unit, sid); sid != "" && i >= 0 && i <= math.MaxUint8 && len(sid) <= math.MaxUint8 {
		r.sessAt, r.sessLen = uint8(i), uint8(len(sid))
		sid = ""
	}
	o := r.oddOf()
	o.session = sid
	r.setOdd(o)
}

// fpOddOf is the fingerprint odd holds ("" none).
func (r *unitRec) fpOddOf() string {
	if r.odd != nil {
		return r.odd.fp
	}
	return ""
}

func (r *unitRec) oddOf() recOdd {
	if r.odd != nil {
		return *r.odd
	}
	return recOdd{}
}

func (r *unitRec) setOdd(o recOdd) {
	if o == (recOdd{}) {
		r.odd = nil
		return
	}
	if r.odd == nil || *r.odd != o {
		r.odd = &o
	}
}

// unitBody is the part of a record an idle unit leaves on disk.
type unitBody struct {
	Layout  string
	St      ParseState
	Seen    *Tokens // Mogzi: the running total last seen
	Retired string  // when the unit left the store ("" while it is there)
	acc     account

	// In memory only: a read of the unit in progress (lines handed over, Done not
	// yet called) is not written, since its position would lag what it counted; fed
	// is one past the offset of the last line counted, so a read that failed half
	// way and is handed over again from Off counts nothing twice.
	reading bool
	fed     int64
	// Counted but not yet filed: a unit new to the ledger, until the Sync
	// that files it under its session (pending.go).
	pending bool
}

// evicted reports whether r's body is on disk only.
func (r *unitRec) evicted() bool { return r.unitBody == nil }

// isReading reports whether a read of r is in progress.
func (r *unitRec) isReading() bool { return r.unitBody != nil && r.reading }

// Fp is the fingerprint Done was given.
func (r *unitRec) Fp() string {
	if fp := r.fpOddOf(); fp != "" {
		return fp
	}
	if !r.fpHex {
		return ""
	}
	var b [16]byte
	const digits = "0123456789abcdef"
	for i, v := 15, r.fp; i >= 0; i, v = i-1, v>>4 {
		b[i] = digits[v&15]
	}
	return string(b[:])
}

// setFp makes fp the record's fingerprint.
func (r *unitRec) setFp(fp string) {
	r.fp, r.fpHex = 0, false
	o := r.oddOf()
	o.fp = ""
	r.setOdd(o)
	if fp == "" {
		return
	}
	if len(fp) == 16 {
		var v uint64
		ok := true
		for i := 0; i < 16 && ok; i++ {
			switch c := fp[i]; {
			case c >= '0' && c <= '9':
				v = v<<4 | uint64(c-'0')
			case c >= 'a' && c <= 'f':
				v = v<<4 | uint64(c-'a'+10)
			default:
				ok = false
			}
		}
		if ok {
			r.fp, r.fpHex = v, true
			return
		}
	}
	o.fp = fp
	r.setOdd(o)
}

// fpIs reports whether fp is the record's fingerprint (without making a string).
func (r *unitRec) fpIs(fp string) bool {
	var x unitRec
	x.setFp(fp)
	if a, b := r.fpOddOf(), x.fpOddOf(); a != "" || b != "" {
		return a == b
	}
	return x.fpHex == r.fpHex && x.fp == r.fp
}

// pathDir is the unit's path root, or its whole path (pathWhole).
func (r *unitRec) pathDir() string {
	if r.pathWhole {
		return r.oddOf().path
	}
	return r.filing().root
}

// path is the unit's file.
func (r *unitRec) path() string {
	if r.pathWhole {
		return r.pathDir()
	}
	return r.pathDir() + filepath.FromSlash(r.Unit)
}

// pathIs reports whether p is the unit's file (without building its path).
func (r *unitRec) pathIs(p string) bool {
	dir := r.pathDir()
	if r.pathWhole {
		return p == dir
	}
	rel := filepath.FromSlash(r.Unit)
	return len(p) == len(dir)+len(rel) && p[:len(dir)] == dir && p[len(dir):] == rel
}

// setPath makes p the unit's file; r.Unit must be set.
func (r *unitRec) setPath(p string) {
	if root, ok := rootOf(r.Unit, p); ok {
		r.setRoot(root, false)
		return
	}
	r.setRoot(p, true)
}

// rootOf is the root path p of unit is in (p is the root followed by unit),
// if it is.
func rootOf(unit, p string) (string, bool) {
	rel := filepath.FromSlash(unit)
	if n := len(p) - len(rel); rel != "" && n > 0 && p[n-1] == filepath.Separator && p[n:] == rel {
		return p[:n], true
	}
	return "", false
}

// setRoot makes dir the unit's path root (whole unset) or its whole path.
func (r *unitRec) setRoot(dir string, whole bool) {
	o := r.oddOf()
	o.path = ""
	if r.pathWhole = whole; whole {
		o.path = dir
	} else if f := r.filing(); f.root != dir {
		f.root = dir
		r.refile(f)
	}
	r.setOdd(o)
}

func (r *unitRec) group() groupKey {
	f := r.filing()
	return groupKey{f.source, f.project, r.sid(), f.typ}
}

// sid is the session id the unit is filed under: its session's, or its own
// name when it has none.
func (r *unitRec) sid() string {
	if sid := r.session(); sid != "" {
		return sid
	}
	return r.Unit
}
