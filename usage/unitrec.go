package usage

import "path/filepath"

// unitRec is what the ledger holds of one unit: its position, the session it
// belongs to, and (in its body) the parser's state and the usage counted from it.
//
// An idle unit keeps only its header in memory (what Resume, filing and the check
// for gone files need); its body stays on the line of the units file its key was
// last written to and is read back when the unit is needed (resident.go).
type unitRec struct {
	Source, Unit string
	// The unit's path is pathDir followed by Unit (pathDir, interned, is the
	// source root the indexer joins Unit to: one string for every unit of a
	// root, not a path per unit), or pathDir alone when the path does not end
	// in Unit (pathWhole). path() and setPath are the only way to it.
	pathDir  string
	Dev, Ino uint64
	Off      int64
	// The fingerprint Done was given: the 16 hex digits the indexer makes as a
	// number (fpHex), anything else but "" as it is (fpOdd). Fp and setFp are
	// the way to it.
	fp                     uint64
	fpOdd                  *string
	Session, Type, Project string
	next                   *unitRec // the next unit filed under the same session id (Ledger.members)

	*unitBody // nil while evicted: on the span's line of the units file

	// Where the record was last written (resident.go): its key's line in the units
	// file and its place there (-1: the live record, i: the i-th retired one).
	span      span
	idx       int32
	pathWhole bool
	fpHex     bool
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
}

// evicted reports whether r's body is on disk only.
func (r *unitRec) evicted() bool { return r.unitBody == nil }

// isReading reports whether a read of r is in progress.
func (r *unitRec) isReading() bool { return r.unitBody != nil && r.reading }

// Fp is the fingerprint Done was given.
func (r *unitRec) Fp() string {
	if r.fpOdd != nil {
		return *r.fpOdd
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
	r.fp, r.fpOdd, r.fpHex = 0, nil, false
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
	r.fpOdd = &fp
}

// fpIs reports whether fp is the record's fingerprint (without making a string).
func (r *unitRec) fpIs(fp string) bool {
	var x unitRec
	x.setFp(fp)
	if r.fpOdd != nil || x.fpOdd != nil {
		return r.fpOdd != nil && x.fpOdd != nil && *r.fpOdd == *x.fpOdd
	}
	return x.fpHex == r.fpHex && x.fp == r.fp
}

// path is the unit's file.
func (r *unitRec) path() string {
	if r.pathWhole {
		return r.pathDir
	}
	return r.pathDir + filepath.FromSlash(r.Unit)
}

// pathIs reports whether p is the unit's file (without building its path).
func (r *unitRec) pathIs(p string) bool {
	if r.pathWhole {
		return p == r.pathDir
	}
	rel := filepath.FromSlash(r.Unit)
	return len(p) == len(r.pathDir)+len(rel) && p[:len(r.pathDir)] == r.pathDir && p[len(r.pathDir):] == rel
}

// setPath makes p the unit's file; r.Unit must be set.
func (r *unitRec) setPath(p string, intern func(string) string) {
	rel := filepath.FromSlash(r.Unit)
	if n := len(p) - len(rel); rel != "" && n > 0 && p[n-1] == filepath.Separator && p[n:] == rel {
		r.pathDir, r.pathWhole = intern(p[:n]), false
		return
	}
	r.pathDir, r.pathWhole = p, true
}

func (r *unitRec) group() groupKey {
	sid := r.Session
	if sid == "" {
		sid = r.Unit
	}
	return groupKey{r.Source, r.Project, sid, r.Type}
}
