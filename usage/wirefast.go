package usage

import (
	"strconv"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// A fast reader of the units file's key lines: Open reads one line per unit
// (100k lines, tens of megabytes, at a daemon's start), and encoding/json's
// reflection was most of that. It reads the lines the ledger writes — exact field
// names, integers, arrays of the lengths toWire makes — into the same records
// fromWire makes; anything else (another spelling, a null, a fraction, a missing
// or extra element) makes it give up, and the line is read by encoding/json
// (decodeKeyJSON), which also words the error of a bad line.

// fastKey is a key line read by decodeKeyFast: the records fromWire would make.
type fastKey struct {
	k       ukey
	live    *unitRec
	retired []*unitRec
	commit  bool
	stamp   *stamp // a commit line's stamp of the summary (stamp.go)
}

// decodeKeyFast reads one key line; ok is false when the line is not one it reads.
func decodeKeyFast(line []byte, intern func(string) string) (fastKey, bool) {
	return decodeKey(line, intern, false)
}

// decodeKeyHeaders is decodeKeyFast but for the records' windows and buckets,
// which it skips (Open reads the accounts back when they are needed: resident.go).
func decodeKeyHeaders(line []byte, intern func(string) string) (fastKey, bool) {
	return decodeKey(line, intern, true)
}

func decodeKey(line []byte, intern func(string) string, headers bool) (fk fastKey, ok bool) {
	ok = true
	eachField(line, &ok, func(key, val []byte) {
		switch string(key) {
		case "k":
			var ks []string
			ks, ok = stringArray(val)
			if ok && len(ks) == 2 {
				fk.k = ukey{ks[0], ks[1]}
			} else {
				ok = false
			}
		case "live":
			fk.live, ok = decodeUnitFast(val, intern, headers)
		case "retired":
			var els [][]byte
			if els, ok = splitArray(val); !ok {
				return
			}
			fk.retired = make([]*unitRec, 0, len(els))
			for _, e := range els {
				r, good := decodeUnitFast(e, intern, headers)
				if !good {
					ok = false
					return
				}
				fk.retired = append(fk.retired, r)
			}
		case "commit":
			switch string(val) {
			case "true":
				fk.commit = true
			case "false":
				fk.commit = false
			default:
				ok = false
			}
		case "summary":
			var n []int64
			if n, ok = intArray(val); ok && len(n) == 2 && n[0] >= 0 && n[1] >= 0 && n[1] <= 0xffffffff {
				fk.stamp = &stamp{size: n[0], crc: uint32(n[1])}
			} else {
				ok = false
			}
		default:
			ok = false
		}
	})
	// The records' unit is the key's (one string, not one per record and key),
	// and their session a part of it where it can be.
	for i := -1; i < len(fk.retired); i++ {
		r := fk.live
		if i >= 0 {
			r = fk.retired[i]
		}
		if r != nil && r.Unit == fk.k.unit {
			r.Unit = fk.k.unit // the session, a part of it, is where it was
		}
	}
	fk.k.source = intern(fk.k.source)
	return fk, ok
}

// decodeUnitFast reads one record object (a wireUnit) into the record fromWire
// makes, with headers set without its window and buckets.
func decodeUnitFast(raw []byte, intern func(string) string, headers bool) (*unitRec, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	r := &unitRec{}
	var b unitBody
	var path, sess, typ, proj string
	ok := true
	str := func(val []byte) string {
		s, good := indexer.JSONString(val)
		ok = ok && good
		return s
	}
	eachField(raw, &ok, func(key, val []byte) {
		switch string(key) {
		case "source":
			r.setSource(intern(str(val)))
		case "unit":
			r.Unit = str(val)
		case "layout":
			b.Layout = intern(str(val))
		case "path":
			path = str(val)
		case "dev":
			var dev uint64
			dev, ok = uintOf(val)
			r.setDev(dev)
		case "ino":
			r.Ino, ok = uintOf(val)
		case "offset":
			r.Off, ok = intOf(val)
		case "fp":
			r.setFp(str(val))
		case "session":
			sess = str(val)
		case "type":
			typ = intern(str(val))
		case "project":
			proj = intern(str(val))
		case "retired":
			b.Retired = str(val)
		case "state":
			b.St, ok = stateOf(val)
		case "seen":
			var n []int64
			if n, ok = intArray(val); ok && len(n) == 4 {
				b.Seen = &Tokens{n[0], n[1], n[2], n[3]}
			} else {
				ok = false
			}
		case "window":
			if !headers {
				b.acc.Win, ok = windowOf(val, intern)
			}
		case "buckets":
			if !headers {
				b.acc.Buckets, ok = bucketsOf(val, intern)
			}
		default:
			ok = false
		}
	})
	// Unit, whose suffix of the path is not kept and which may hold the
	// session, is read by now.
	r.setPath(path)
	r.setSession(sess)
	r.setFiling(typ, proj)
	if !headers {
		r.unitBody = &b
	}
	return r, ok
}

func stateOf(raw []byte) (ParseState, bool) {
	var st ParseState
	if len(raw) == 0 || raw[0] != '{' {
		return st, false
	}
	ok := true
	eachField(raw, &ok, func(key, val []byte) {
		switch string(key) {
		case "model":
			st.Model, ok = indexer.JSONString(val)
		case "prev":
			var n []int64
			if n, ok = intArray(val); ok && len(n) == 5 {
				st.Prev = &[5]int64{n[0], n[1], n[2], n[3], n[4]}
			} else {
				ok = false
			}
		default:
			ok = false
		}
	})
	return st, ok
}

// rowsOf reads an array of arrays of n fields each, one row of out per array.
func rowsOf[T any](raw []byte, n int, row func(f [][]byte) (T, bool)) ([]T, bool) {
	els, ok := splitArray(raw)
	if !ok {
		return nil, false
	}
	out := make([]T, 0, len(els))
	for _, el := range els {
		f, ok := splitArray(el)
		if !ok || len(f) != n {
			return nil, false
		}
		r, ok := row(f)
		if !ok {
			return nil, false
		}
		out = append(out, r)
	}
	return out, true
}

// windowOf reads [[id, origReq, req, sidechain, q, model, in, out, cw, cr], …].
func windowOf(raw []byte, intern func(string) string) ([]winEntry, bool) {
	return rowsOf(raw, 10, func(f [][]byte) (winEntry, bool) {
		var e winEntry
		var ids [3]uint64
		for i := range ids {
			s, ok := indexer.JSONString(f[i])
			if !ok {
				return e, false
			}
			v, err := strconv.ParseUint(s, 16, 64)
			if err != nil {
				return e, false
			}
			ids[i] = v
		}
		e.ID, e.OrigReq, e.Req = ids[0], ids[1], ids[2]
		switch string(f[3]) {
		case "true":
			e.Side = true
		case "false":
		default:
			return e, false
		}
		var ok bool
		e.Q, e.Model, e.T, ok = bucketFields(f[4:], intern)
		return e, ok
	})
}

// bucketsOf reads [[q, model, in, out, cw, cr], …].
func bucketsOf(raw []byte, intern func(string) string) ([]Bucket, bool) {
	return rowsOf(raw, 6, func(f [][]byte) (Bucket, bool) {
		var b Bucket
		var ok bool
		b.Q, b.Model, b.T, ok = bucketFields(f, intern)
		return b, ok
	})
}

// bucketFields is qModelTokens on raw fields.
func bucketFields(f [][]byte, intern func(string) string) (int32, string, Tokens, bool) {
	var n [5]int64
	for i, j := range [5]int{0, 2, 3, 4, 5} {
		v, ok := intOf(f[j])
		if !ok {
			return 0, "", Tokens{}, false
		}
		n[i] = v
	}
	m, ok := indexer.JSONString(f[1])
	if !ok {
		return 0, "", Tokens{}, false
	}
	return int32(n[0]), intern(m), Tokens{n[1], n[2], n[3], n[4]}, true
}

// isInt reports whether raw is a JSON integer: an optional minus and digits.
func isInt(raw []byte) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func intOf(raw []byte) (int64, bool) {
	if !isInt(raw) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}

func uintOf(raw []byte) (uint64, bool) {
	if !isInt(raw) || raw[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	return v, err == nil
}

func intArray(raw []byte) ([]int64, bool) {
	els, ok := splitArray(raw)
	if !ok {
		return nil, false
	}
	out := make([]int64, len(els))
	for i, e := range els {
		if out[i], ok = intOf(e); !ok {
			return nil, false
		}
	}
	return out, true
}

func stringArray(raw []byte) ([]string, bool) {
	els, ok := splitArray(raw)
	if !ok {
		return nil, false
	}
	out := make([]string, len(els))
	for i, e := range els {
		if out[i], ok = indexer.JSONString(e); !ok {
			return nil, false
		}
	}
	return out, true
}

// splitArray splits a JSON array that ObjectFields has validated (as part of its
// line) into its elements, each trimmed of white space.
func splitArray(raw []byte) ([][]byte, bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	var out [][]byte
	depth, start, inStr := 0, 1, false
	for i := 1; i < len(raw)-1; i++ {
		c := raw[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, indexer.TrimJSONSpace(raw[start:i]))
				start = i + 1
			}
		}
	}
	if last := indexer.TrimJSONSpace(raw[start : len(raw)-1]); len(last) > 0 || len(out) > 0 {
		if len(last) == 0 {
			return nil, false
		}
		out = append(out, last)
	}
	return out, true
}

// fieldSet is the field names met in one object (encoding/json merges a repeated
// object field into the first, so a line that repeats one is left to it).
// eachField calls fn for each member of the JSON object raw while *ok holds; a
// key met twice, too many keys or a malformed object set it false, and so may fn.
func eachField(raw []byte, ok *bool, fn func(key, val []byte)) {
	var seen fieldSet
	err := indexer.ObjectFields(raw, func(key, val []byte) {
		if !*ok || !seen.add(key) {
			*ok = false
			return
		}
		fn(key, val)
	})
	if err != nil {
		*ok = false
	}
}

type fieldSet struct {
	names [16]string
	n     int
}

// add records key; false if it was met before or the object has too many fields.
func (f *fieldSet) add(key []byte) bool {
	for _, k := range f.names[:f.n] {
		if k == string(key) {
			return false
		}
	}
	if f.n == len(f.names) {
		return false
	}
	f.names[f.n] = string(key)
	f.n++
	return true
}
