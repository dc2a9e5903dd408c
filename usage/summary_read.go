package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// ---- reading ----

// ReadSummary reads what w asks of the ledger's summary in stateDir (an empty
// summary if there is none yet). When w asks for part of it, only that part is
// read (summary_seek.go).
func ReadSummary(stateDir string, w Want) (*Summary, error) {
	f, err := os.Open(filepath.Join(stateDir, DirName, SummaryName))
	if errors.Is(err, fs.ErrNotExist) {
		return &Summary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read usage summary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read usage summary: %w", err)
	}
	if w.NoSessions || w.Session != "" || w.NoRows || w.From != 0 || w.Days != nil {
		if s, ok := readSummaryParts(f, fi.Size(), w); ok {
			return s, nil
		}
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, fi.Size()), data); err != nil {
		return nil, fmt.Errorf("read usage summary: %w", err)
	}
	return ParseSummary(data, w)
}

// ParseSummary reads what w asks of a summary file.
func ParseSummary(data []byte, w Want) (*Summary, error) {
	s, _, err := parseSummary(data, w)
	return s, err
}

type parsed struct {
	base  int64 // bytes of the base
	clean bool  // nothing after the last commit line
}

type summaryReader struct {
	strs map[string]string
	f    [12][]byte
}

func (p *summaryReader) str(b []byte) string {
	if bytes.IndexByte(b, '\\') >= 0 {
		var u []byte
		for i := 0; i < len(b); i++ {
			if b[i] == '\\' && i+1 < len(b) {
				i++
				switch b[i] {
				case 't':
					u = append(u, '\t')
				case 'n':
					u = append(u, '\n')
				case 'r':
					u = append(u, '\r')
				default:
					u = append(u, b[i])
				}
				continue
			}
			u = append(u, b[i])
		}
		b = u
	}
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	p.strs[s] = s
	return s
}

// split cuts a row (after its tag) into n tab-led fields.
func (p *summaryReader) split(row []byte, n int) bool {
	for i := 0; i < n; i++ {
		if len(row) == 0 || row[0] != '\t' {
			return false
		}
		row = row[1:]
		end := bytes.IndexByte(row, '\t')
		if i == n-1 {
			end = len(row)
		} else if end < 0 {
			return false
		}
		p.f[i], row = row[:end], row[end:]
	}
	return len(row) == 0
}

func num(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *summaryReader) nums(from int, out []int64) bool {
	for i := range out {
		v, ok := num(p.f[from+i])
		if !ok {
			return false
		}
		out[i] = v
	}
	return true
}

func (p *summaryReader) session(row []byte) (SessionRow, bool) {
	var r SessionRow
	var n [6]int64
	if len(row) == 0 || row[0] != 'S' || !p.split(row[1:], 11) || !p.nums(5, n[:]) {
		return r, false
	}
	r.Session, r.Source, r.Project, r.Type, r.Model = p.str(p.f[0]), p.str(p.f[1]), p.str(p.f[2]), p.str(p.f[3]), p.str(p.f[4])
	r.First, r.Last, r.T = int32(n[0]), int32(n[1]), Tokens{n[2], n[3], n[4], n[5]}
	return r, true
}

func (p *summaryReader) row(line []byte) (Row, bool) {
	var r Row
	var q [1]int64
	var n [4]int64
	if len(line) == 0 || line[0] != 'B' || !p.split(line[1:], 8) || !p.nums(0, q[:]) || !p.nums(4, n[:]) {
		return r, false
	}
	r.Q, r.Source, r.Project, r.Model = int32(q[0]), p.str(p.f[1]), p.str(p.f[2]), p.str(p.f[3])
	r.T = Tokens{n[0], n[1], n[2], n[3]}
	return r, true
}

// rowQ is the quarter hour of a B row, parsed no further.
func rowQ(line []byte) (int32, bool) {
	if len(line) < 3 || line[0] != 'B' || line[1] != '\t' {
		return 0, false
	}
	end := bytes.IndexByte(line[2:], '\t')
	if end < 0 {
		return 0, false
	}
	q, ok := num(line[2 : 2+end])
	return int32(q), ok
}

// sessPrefix is how the S rows of a session start.
func sessPrefix(sid string) []byte { return append(appendField([]byte("S"), sid), '\t') }

// rowBefore reports whether a well-formed B row is of a quarter hour before from.
func rowBefore(line []byte, from int32) bool {
	q, ok := rowQ(line)
	return ok && q < from
}

// lineAt is the line that starts at or after offset i of sec (sec ends with '\n').
func lineStart(sec []byte, i int) int {
	if i == 0 {
		return 0
	}
	j := bytes.IndexByte(sec[i-1:], '\n')
	if j < 0 {
		return len(sec)
	}
	return i + j
}

func parseSummary(data []byte, w Want) (*Summary, parsed, error) {
	var p parsed
	h, start, err := parseSummaryHeader(data)
	if err != nil {
		return nil, p, err
	}
	if n := int64(len(data)); h.Days > n || h.Sessions > n || h.Rows > n || start+h.Days+h.Sessions+h.Rows > n {
		return nil, p, fmt.Errorf("usage summary: line 1: sections beyond the end of the file")
	}
	sStart := start + h.Days
	bStart := sStart + h.Sessions
	p.base = bStart + h.Rows
	dsec, ssec, bsec, tail := data[start:sStart], data[sStart:bStart], data[bStart:p.base], data[p.base:]
	lineNo := func(rest []byte) int { return 1 + bytes.Count(data[:len(data)-len(rest)], []byte{'\n'}) }
	days := h.Version >= 3 && (w.Days != nil || w.AllDays || w == Want{})
	s, clean, err := parseSections(dsec, days, ssec, bsec, tail, w, lineNo)
	p.clean = clean
	return s, p, err
}

// parseSummaryHeader reads a summary's first line; start is the offset after it.
// data need hold no more than that line.
func parseSummaryHeader(data []byte) (h summaryHeader, start int64, err error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return h, 0, fmt.Errorf("usage summary: no header line")
	}
	if err := json.Unmarshal(data[:nl], &h); err != nil {
		return h, 0, fmt.Errorf("usage summary: line 1: %w", err)
	}
	if h.Version != SummaryVersion && h.Version != 2 {
		return h, 0, fmt.Errorf("usage summary: version %d, want %d (run 'sessionwatch reindex')", h.Version, SummaryVersion)
	}
	if h.Version == 2 {
		h.Days = 0 // no D section: it reads as one that never answers (a writer rewrites it)
	}
	if h.Days < 0 || h.Sessions < 0 || h.Rows < 0 {
		return h, 0, fmt.Errorf("usage summary: line 1: sections beyond the end of the file")
	}
	return h, int64(nl + 1), nil
}

// parseSections reads what w asks of a summary's D section (when days is set),
// S section, B section and the batches after them. Each section starts at a
// line start; ssec and bsec may be trimmed to the lines w asks for
// (readSummaryParts). lineNo numbers the line that rest starts for errors.
// clean reports that nothing follows the last commit line. With w.Days set and
// D rows that are days of that zone, the B rows are not read (FromDays).
func parseSections(dsec []byte, days bool, ssec, bsec, tail []byte, w Want, lineNo func(rest []byte) int) (_ *Summary, clean bool, _ error) {
	var p parsed
	rd := &summaryReader{strs: map[string]string{}}

	// The batches appended after the base replace rows of the base by key.
	tailS := map[sessKey]SessionRow{}
	tailB := map[rowKey]Tokens{}
	tailD := map[dayKey]DayRow{}
	var pendS []SessionRow
	var pendB []Row
	var pendD []DayRow
	p.clean = true
	for rest := tail; len(rest) > 0; {
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			p.clean = false // a torn batch: left out
			break
		}
		line := rest[:end]
		switch {
		case len(line) == 1 && line[0] == 'C':
			for _, r := range pendS {
				tailS[sessKeyOf(&r)] = r
			}
			for _, r := range pendB {
				tailB[rowKey{r.Q, r.Source, r.Project, r.Model}] = r.T
			}
			for _, r := range pendD {
				tailD[dayKey{r.S, r.Source, r.Model}] = r
			}
			pendS, pendB, pendD = pendS[:0], pendB[:0], pendD[:0]
		case len(line) > 0 && line[0] == 'S' && (w.NoSessions || w.Session != "" && !bytes.HasPrefix(line, sessPrefix(w.Session))):
			// Not asked for: skipped unparsed.
		case len(line) > 0 && line[0] == 'B' && (w.NoRows || w.From != 0 && rowBefore(line, w.From)):
		case len(line) > 0 && line[0] == 'D' && !days:
		case len(line) > 0 && line[0] == 'D':
			r, ok := rd.dayRow(line)
			if !ok {
				return nil, false, fmt.Errorf("usage summary: line %d: malformed day row", lineNo(rest))
			}
			pendD = append(pendD, r)
		case len(line) > 0 && line[0] == 'S':
			r, ok := rd.session(line)
			if !ok {
				return nil, false, fmt.Errorf("usage summary: line %d: malformed session row", lineNo(rest))
			}
			pendS = append(pendS, r)
		case len(line) > 0 && line[0] == 'B':
			r, ok := rd.row(line)
			if !ok {
				return nil, false, fmt.Errorf("usage summary: line %d: malformed row", lineNo(rest))
			}
			pendB = append(pendB, r)
		default:
			return nil, false, fmt.Errorf("usage summary: line %d: unknown row", lineNo(rest))
		}
		rest = rest[end+1:]
	}
	if len(pendS)+len(pendB)+len(pendD) > 0 {
		p.clean = false
	}

	s := &Summary{}
	if days {
		for rest := dsec; len(rest) > 0; {
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				return nil, false, fmt.Errorf("usage summary: line %d: not terminated", lineNo(rest))
			}
			r, ok := rd.dayRow(rest[:end])
			if !ok {
				return nil, false, fmt.Errorf("usage summary: line %d: malformed day row", lineNo(rest))
			}
			if _, replaced := tailD[dayKey{r.S, r.Source, r.Model}]; !replaced {
				s.Days = append(s.Days, r)
			}
			rest = rest[end+1:]
		}
		n := len(s.Days)
		for _, r := range tailD {
			if !r.T.IsZero() {
				s.Days = append(s.Days, r)
			}
		}
		if len(s.Days) > n {
			sortDays(s.Days)
		}
		if w.Days != nil {
			if s.FromDays = daysValid(s.Days, w.Days); !s.FromDays {
				s.Days = nil // not of that zone: the B rows answer
			}
		}
	}
	if !w.NoSessions {
		sec := ssec
		if w.Session != "" {
			// The S rows are sorted by session: find the first of this one.
			key := appendField(nil, w.Session)[1:]
			lo, hi := 0, len(sec)
			for hi-lo > 256 {
				mid := lineStart(sec, (lo+hi)/2)
				if mid >= hi {
					break
				}
				e := bytes.IndexByte(sec[mid:], '\n')
				f := sec[mid+2 : mid+e]
				if t := bytes.IndexByte(f, '\t'); t >= 0 {
					f = f[:t]
				}
				if bytes.Compare(f, key) < 0 {
					lo = mid + e + 1
				} else {
					hi = mid
				}
			}
			sec = sec[lo:]
		}
		for rest := sec; len(rest) > 0; {
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				return nil, false, fmt.Errorf("usage summary: line %d: not terminated", lineNo(rest))
			}
			if w.Session != "" {
				key := appendField(nil, w.Session)[1:]
				f := rest[min(2, end):end]
				if t := bytes.IndexByte(f, '\t'); t >= 0 {
					f = f[:t]
				}
				if c := bytes.Compare(f, key); c > 0 {
					break
				} else if c < 0 {
					rest = rest[end+1:]
					continue
				}
			}
			r, ok := rd.session(rest[:end])
			if !ok {
				return nil, false, fmt.Errorf("usage summary: line %d: malformed session row", lineNo(rest))
			}
			if _, replaced := tailS[sessKeyOf(&r)]; !replaced {
				s.Sessions = append(s.Sessions, r)
			}
			rest = rest[end+1:]
		}
		for _, r := range tailS {
			if !r.T.IsZero() && (w.Session == "" || r.Session == w.Session) {
				s.Sessions = append(s.Sessions, r)
			}
		}
	}
	if !w.NoRows && !s.FromDays {
		sec := bsec
		if w.From != 0 {
			// The B rows are sorted by quarter hour: start at the first from w.From.
			lo, hi := 0, len(sec)
			for hi-lo > 256 {
				mid := lineStart(sec, (lo+hi)/2)
				if mid >= hi {
					break
				}
				e := bytes.IndexByte(sec[mid:], '\n')
				q, ok := rowQ(sec[mid : mid+e])
				if !ok {
					return nil, false, fmt.Errorf("usage summary: line %d: malformed row", lineNo(sec[mid:]))
				}
				if q < w.From {
					lo = mid + e + 1
				} else {
					hi = mid
				}
			}
			sec = sec[lo:]
		}
		s.Rows = make([]Row, 0, bytes.Count(sec, []byte{'\n'})+len(tailB))
		for rest := sec; len(rest) > 0; {
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				return nil, false, fmt.Errorf("usage summary: line %d: not terminated", lineNo(rest))
			}
			r, ok := rd.row(rest[:end])
			if !ok {
				return nil, false, fmt.Errorf("usage summary: line %d: malformed row", lineNo(rest))
			}
			rest = rest[end+1:]
			if r.Q < w.From {
				continue
			}
			if _, replaced := tailB[rowKey{r.Q, r.Source, r.Project, r.Model}]; !replaced {
				s.Rows = append(s.Rows, r)
			}
		}
		// The batches' rows, sorted, merged into the base's (sorted by quarter hour).
		var extra []Row
		for k, t := range tailB {
			if !t.IsZero() && k.q >= w.From {
				extra = append(extra, Row{k.q, k.src, k.proj, k.model, t})
			}
		}
		if len(extra) > 0 {
			less := func(a, b *Row) bool {
				return rowKey{a.Q, a.Source, a.Project, a.Model}.less(rowKey{b.Q, b.Source, b.Project, b.Model})
			}
			sort.Slice(extra, func(i, j int) bool { return less(&extra[i], &extra[j]) })
			base := s.Rows
			merged := make([]Row, 0, len(base)+len(extra))
			i, j := 0, 0
			for i < len(base) || j < len(extra) {
				if j == len(extra) || i < len(base) && less(&base[i], &extra[j]) {
					merged = append(merged, base[i])
					i++
				} else {
					merged = append(merged, extra[j])
					j++
				}
			}
			s.Rows = merged
		}
		if len(s.Rows) == 0 {
			s.Rows = nil
		}
	}
	return s, p.clean, nil
}
