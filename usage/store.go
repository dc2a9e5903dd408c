package usage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// UnitsName is the file the writer keeps the units in: a base of one record per
// unit, then the batches appended since (docs/usage.md).
const UnitsName = "units.jsonl"

// The batches appended to a file are folded into a rewritten base once they are
// larger than the base divided by the ratio and than the minimum (variables so
// tests can make compaction frequent).
var (
	unitsRatio, unitsMin     int64 = 1, 1 << 20
	summaryRatio, summaryMin int64 = 4, 256 << 10
)

// logFile is one of the ledger's two files: a base written whole (atomically), then
// batches appended, each closed by a commit line.
type logFile struct {
	path    string
	base    int64  // bytes of the base (0: no file yet)
	tail    int64  // bytes appended after it
	compact bool   // rewrite it whole at the next Sync
	crc     uint32 // CRC-32C of the whole file as written (stamp.go)
}

// due says whether the appended batches have outgrown the base (or min): the file
// is then rewritten whole. Rewriting once the tail is as large as the base keeps
// the bytes written per change within a constant factor of the change.
func (f *logFile) due(ratio, min int64) bool {
	return f.compact || f.base == 0 || f.tail > max(f.base/ratio, min)
}

// appendBatch appends data (a batch closed by its commit line), and fsyncs it when
// durable is set. It returns the offset the batch starts at.
func (f *logFile) appendBatch(data []byte, durable bool) (int64, error) {
	return f.appendBatchWith(func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	}, durable)
}

// batchWriters are appendBatchWith's buffers: a flush under load appends a
// batch to the ledger every few milliseconds, and a new 64 KiB buffer for each
// was a tenth of what the daemon allocated.
var batchWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// appendBatchWith appends what fill writes, streamed rather than built in memory
// (the start-up pass's batch holds every unit).
func (f *logFile) appendBatchWith(fill func(w *bufio.Writer) error, durable bool) (int64, error) {
	h, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		// Nothing written, but the caller may have let go of what the batch
		// held (the summary's sets of what changed): the next Sync rewrites
		// the file whole.
		f.compact = true
		return 0, fmt.Errorf("append to %s: %w", f.path, err)
	}
	cw := &countWriter{w: h, crc: f.crc}
	at, err := h.Seek(0, io.SeekEnd)
	if err == nil {
		w := batchWriters.Get().(*bufio.Writer)
		w.Reset(cw)
		if err = fill(w); err == nil {
			err = w.Flush()
		}
		w.Reset(nil)
		batchWriters.Put(w)
	}
	if err == nil && durable {
		err = h.Sync()
	}
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The batch may be half there: the next Sync rewrites the file whole.
		f.compact = true
		return 0, fmt.Errorf("append to %s: %w", f.path, err)
	}
	f.tail += cw.n
	f.crc = cw.crc
	return at, nil
}

func (f *logFile) rewrite(data []byte) error {
	return f.rewriteWith(func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// rewriteWith writes the file whole, atomically (temp file, fsync, rename,
// directory fsync), streaming what fill writes rather than building it in memory.
func (f *logFile) rewriteWith(fill func(w *bufio.Writer) error) error {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	h, err := os.CreateTemp(dir, indexer.TempPrefix+filepath.Base(f.path)+"-*")
	if err != nil {
		return fmt.Errorf("write usage ledger: %w", err)
	}
	tmp := h.Name()
	cw := &countWriter{w: h}
	w := bufio.NewWriterSize(cw, 256<<10)
	err = h.Chmod(0o600)
	if err == nil {
		err = fill(w)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = h.Sync()
	}
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write usage ledger %s: %w", f.path, err)
	}
	// The new file is in place: what the ledger holds of the file follows it
	// whether or not the rename is durable.
	f.base, f.tail, f.compact, f.crc = cw.n, 0, false, cw.crc
	if err := syncDir(dir); err != nil {
		// A crash may still bring the old file back: the next Sync writes the
		// file whole again, and until a rewrite is durable every Sync fails,
		// so that no catalog moves past what the old file holds.
		f.compact = true
		return fmt.Errorf("%w: %w", errNotDurable, err)
	}
	return nil
}

// errNotDurable is rewriteWith's error when the new file replaced the old one but
// its directory could not be fsynced: the caller's view of the file must follow
// the new one, and the Sync still fails.
var errNotDurable = errors.New("usage ledger rewritten but not durable")

// syncDir is indexer.SyncDir; a var so that tests can make it fail.
var syncDir = indexer.SyncDir

// countWriter counts the bytes written through it and keeps their CRC-32C
// (continuing crc, that of the bytes before them).
type countWriter struct {
	w   interface{ Write([]byte) (int, error) }
	n   int64
	crc uint32
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, castagnoli(), p[:n])
	return n, err
}

// ---- units file ----

type unitsHeader struct {
	Version   int    `json:"version"`
	Generator string `json:"generator"`
}

// wireKey is the state of one (source, unit): its live record and what it left
// retired. A batch's wireKey replaces the key's earlier state; one with neither
// drops the key.
type wireKey struct {
	K       [2]string  `json:"k"`
	Live    *wireUnit  `json:"live,omitempty"`
	Retired []wireUnit `json:"retired,omitempty"`
	Commit  bool       `json:"commit,omitempty"`
	Summary *[2]int64  `json:"summary,omitempty"` // a stamp's (stamp.go)
}

var commitLine = []byte("{\"commit\":true}\n")

// appendKey appends k's line: its live record and what it left retired (an
// evicted account is read back to be written again).
func (l *Ledger) appendKey(b *bytes.Buffer, k ukey) error {
	line, ok, err := l.appendKeyFast(b.AvailableBuffer(), k)
	if err != nil {
		return err
	}
	if ok {
		b.Write(line)
		return nil
	}
	return l.appendKeyJSON(b, k)
}

// appendKeyJSON is appendKey by encoding/json (appendKeyFast's reference).
func (l *Ledger) appendKeyJSON(b *bytes.Buffer, k ukey) error {
	w := wireKey{K: [2]string{k.source, k.unit}}
	if r := l.units.get(k.source, k.unit); r != nil {
		b, err := l.peekBody(r)
		if err != nil {
			return err
		}
		u := toWire(r, b)
		w.Live = &u
	}
	for _, r := range l.retired[k] {
		b, err := l.peekBody(r)
		if err != nil {
			return err
		}
		w.Retired = append(w.Retired, toWire(r, b))
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return fmt.Errorf("encode usage ledger: %w", err)
	}
	return nil
}

func sortedKeys(m map[ukey]bool) []ukey {
	ks := make([]ukey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return sortKeys(ks)
}

// sortKeys sorts keys, each there once, by source, then unit.
func sortKeys(ks []ukey) []ukey {
	slices.SortFunc(ks, func(a, b ukey) int {
		if c := strings.Compare(a.source, b.source); c != 0 {
			return c
		}
		return strings.Compare(a.unit, b.unit)
	})
	return ks
}

// writeUnits appends the changed units' records, or rewrites the file whole when
// it is due.
func (l *Ledger) writeUnits() error {
	f := &l.unitsFile
	if !l.compactionDue(f, unitsRatio, unitsMin) && len(l.dirtyUnits) == 0 {
		return nil
	}
	// A compaction waits for the reads in progress (it writes every record).
	if l.compactionDue(f, unitsRatio, unitsMin) && (l.reading == 0 || f.base == 0 || f.compact) {
		var ps []placed
		err := f.rewriteWith(func(w *bufio.Writer) error {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(unitsHeader{Version: LedgerVersion, Generator: "sessionwatch"}); err != nil {
				return err
			}
			l.warmAll() // every record is written: resident until the index is
			if l.err != nil {
				// A record the index could not give back would be left out
				// of the file: it is not written.
				return l.err
			}
			// Every key once (a slice, not a set: 100k keys at a reindex's end).
			keys := make([]ukey, 0, l.units.len()+len(l.retired))
			for r := range l.units.all() {
				keys = append(keys, ukey{r.source(), r.Unit})
			}
			for k := range l.retired {
				if l.units.get(k.source, k.unit) == nil {
					keys = append(keys, k)
				}
			}
			sortKeys(keys)
			pos := int64(0)
			var lines lineBlock
			for _, k := range keys {
				if _, err := w.Write(b.Bytes()); err != nil {
					return err
				}
				pos += int64(b.Len())
				b.Reset()
				// A key written before and not changed since is copied as it is.
				if s, ok := l.cleanSpan(k); ok {
					line, err := l.readLineIn(&lines, s)
					if err != nil {
						return err
					}
					b.Write(line)
				} else if err := l.appendKey(&b, k); err != nil {
					return err
				}
				ps = l.keyRecs(k, ps, span{pos, int64(b.Len())})
			}
			b.Write(commitLine)
			_, err := w.Write(b.Bytes())
			return err
		})
		if err != nil && !errors.Is(err, errNotDurable) {
			return err
		}
		// The new file is in place (durable or not): the records follow it.
		l.resetReader()
		// The index the load found named the base just replaced: only one
		// naming the new base (recool's check) takes the records back.
		l.indexed = false
		l.applyPlaced(ps)
		recs := make([]*unitRec, len(ps))
		for i, p := range ps {
			recs[i] = p.r
		}
		l.writeIndex(recs)
		l.dirtyUnits = map[ukey]bool{}
		l.recool(l.unitsFile.base, l.unitsFile.crc)
		if err != nil {
			return err // not durable: the old files stay until a rewrite is
		}
		for _, p := range l.v1 {
			os.Remove(p)
		}
		l.v1 = nil
		return nil
	}
	if len(l.dirtyUnits) == 0 {
		return nil
	}
	ub, err := l.appendUnits()
	if err != nil {
		return err
	}
	l.placeAppended(ub)
	if l.compactionDue(f, unitsRatio, unitsMin) && l.reading == 0 {
		return l.writeUnits()
	}
	return nil
}

// load reads the units file: its base and every complete batch (a torn last batch
// is left out and the file marked for a rewrite). A ledger of the first version
// (64 shards) is read and marked for a rewrite in this one. With live unset only
// the retired part is kept. With headers set the records' accounts are not read
// but left on their lines (evicted, resident.go). It returns the stamp of the
// last complete batch, if that is a stamp (stamp.go).
func (l *Ledger) load(wantLive, headers bool) (*stamp, error) {
	fh, err := os.Open(l.unitsFile.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, l.loadV1(wantLive)
	}
	if err != nil {
		return nil, fmt.Errorf("read usage ledger: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("read usage ledger: %w", err)
	}
	return l.loadFile(fh, fi.Size(), wantLive, headers)
}

// loadFile is load of the units file open as fh, up to byte size (what a
// writer appended after is not read).
func (l *Ledger) loadFile(fh *os.File, size int64, wantLive, headers bool) (*stamp, error) {
	// The base from its index (unitindex.go) when it has one: then only the
	// batches after it are read here.
	start := int64(0)
	if wantLive && headers {
		start = l.loadIndex(fh, size)
	}
	l.indexed, l.fromIndex = start > 0, start > 0
	baseCRC := uint32(0) // of the base, when read here
	type pend struct {
		fk *fastKey // read by decodeKeyFast, or else w by encoding/json
		w  wireKey
		s  span
	}
	var pending []pend
	good := start   // bytes up to the last commit line (the indexed base is whole)
	var last *stamp // the stamp of the last complete batch
	// Streamed, not read whole: the file can be tens of megabytes.
	if _, err := fh.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read usage ledger: %w", err)
	}
	sc := bufio.NewScanner(bufio.NewReaderSize(fh, 256<<10))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	lineNo, pos := 0, start
	first := start == 0
	l.unitsFile.base = start
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		pos += int64(len(line)) + 1
		if pos > size {
			break // no newline: a torn line
		}
		if l.unitsFile.base == 0 {
			baseCRC = crc32.Update(crc32.Update(baseCRC, castagnoli(), line), castagnoli(), []byte{'\n'})
		}
		if first {
			first = false
			var h unitsHeader
			if err := json.Unmarshal(line, &h); err != nil || h.Version != LedgerVersion {
				return nil, fmt.Errorf("usage ledger %s: line 1: not a version %d header", l.unitsFile.path, LedgerVersion)
			}
			continue
		}
		var w wireKey
		fk, fast := decodeKey(line, l.intern, headers)
		if fast {
			w.Commit = fk.commit
		} else {
			d := json.NewDecoder(bytes.NewReader(line))
			d.UseNumber()
			if err := d.Decode(&w); err != nil {
				if sc.Scan() { // not the last line: the file is damaged, not torn
					return nil, fmt.Errorf("usage ledger %s: line %d: %w", l.unitsFile.path, linesBefore(fh, start)+lineNo, err)
				}
				break
			}
		}
		if !w.Commit {
			n := int64(len(line)) + 1
			p := pend{w: w, s: span{pos - n, n}}
			if fast {
				p.fk = &fk
			}
			pending = append(pending, p)
			continue
		}
		last = nil
		if len(pending) == 0 {
			if fast {
				last = fk.stamp
			} else {
				last = stampOf(&w)
			}
		}
		for _, p := range pending {
			var k ukey
			var live *unitRec
			var retired []*unitRec
			if p.fk != nil {
				k, live, retired = p.fk.k, p.fk.live, p.fk.retired
				if live != nil {
					live.setSpan(p.s)
					live.idx = -1
				}
				for i, r := range retired {
					r.setSpan(p.s)
					r.idx = int32(i)
				}
			} else {
				w := p.w
				k = ukey{l.intern(w.K[0]), w.K[1]}
				if w.Live != nil {
					r, err := fromWire(*w.Live, l.intern)
					if err != nil {
						return nil, fmt.Errorf("usage ledger %s: unit %s: %w", l.unitsFile.path, w.K[1], err)
					}
					r.setSpan(p.s)
					r.idx = -1
					live = r
				}
				for i, wu := range w.Retired {
					r, err := fromWire(wu, l.intern)
					if err != nil {
						return nil, fmt.Errorf("usage ledger %s: unit %s: %w", l.unitsFile.path, w.K[1], err)
					}
					r.setSpan(p.s)
					r.idx = int32(i)
					retired = append(retired, r)
				}
			}
			if live != nil {
				l.canonFiling(live)
			}
			for _, r := range retired {
				l.canonFiling(r)
			}
			// A later batch's line of a key replaces the earlier one.
			l.coldDrop(k.source, k.unit)
			old, oldRetired := l.units.get(k.source, k.unit), l.retired[k]
			if live != nil && wantLive {
				l.units.put(live)
				l.loaded = append(l.loaded, live)
			} else {
				l.units.del(k.source, k.unit)
			}
			if len(retired) > 0 {
				l.retired[k] = retired
				l.loaded = append(l.loaded, retired...)
			} else {
				delete(l.retired, k)
			}
			// What it replaced is forgotten: a record of the index stays in
			// its slab, and must not keep the arena of names it was cut from
			// (decodeIndex).
			if old != nil {
				*old = unitRec{}
			}
			for _, r := range oldRetired {
				*r = unitRec{}
			}
		}
		pending = pending[:0]
		if l.unitsFile.base == 0 {
			l.unitsFile.base = pos
		}
		good = pos
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read usage ledger %s: %w", l.unitsFile.path, err)
	}
	if l.unitsFile.base == 0 {
		return nil, fmt.Errorf("usage ledger %s: no complete base", l.unitsFile.path)
	}
	l.unitsFile.tail = good - l.unitsFile.base
	if good != size {
		l.unitsFile.compact = true // a torn batch: the units it held are read again
	}
	if !l.indexed && wantLive {
		// A base without its index (a ledger of an older build, a crash between
		// the rewrites of the two files) is rewritten with one.
		l.indexed = l.indexOf(l.unitsFile.base, baseCRC)
		if !l.indexed {
			l.unitsFile.compact = true
		}
	}
	for r := range l.units.all() {
		if !r.evicted() {
			l.hot = append(l.hot, r)
		}
	}
	for _, rs := range l.retired {
		for _, r := range rs {
			if !r.evicted() {
				l.hot = append(l.hot, r)
			}
		}
	}
	return last, nil
}

// loadV1 reads a ledger of the first version (units-00.json … units-63.json), to
// be rewritten in this one; the old files are removed once it is.
func (l *Ledger) loadV1(live bool) error {
	paths, _ := filepath.Glob(filepath.Join(l.dir, "units-[0-9][0-9].json"))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read usage ledger: %w", err)
		}
		lv, rt, err := decodeShard(data, l.intern)
		if err != nil {
			return fmt.Errorf("usage ledger %s: %w", path, err)
		}
		if live {
			for _, r := range lv {
				l.canonFiling(r)
				l.units.put(r)
				l.hot = append(l.hot, r)
			}
		}
		for _, r := range rt {
			l.canonFiling(r)
			k := ukey{r.source(), r.Unit}
			l.retired[k] = append(l.retired[k], r)
			l.hot = append(l.hot, r)
		}
	}
	l.v1 = paths
	return nil
}

// linesBefore counts the lines of f before byte at (the base an index stood
// for, not read by load), so that an error names its line of the file.
func linesBefore(f *os.File, at int64) int {
	n := 0
	buf := make([]byte, 64<<10)
	r := io.NewSectionReader(f, 0, at)
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			return n
		}
	}
}
