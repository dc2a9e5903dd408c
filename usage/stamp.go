package usage

import (
	"bytes"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// A stamp ties the summary to the units file, so an Open of an unchanged ledger
// need not add the totals up again from every unit's account to learn whether a
// crash fell between the two files' writes (docs/usage.md, "Crash safety").
//
// After a Sync that wrote either file, once every record in memory is on disk as
// it is (no unit's write deferred by a read in progress), the writer appends to
// the units file an empty batch whose commit line names the summary's size and
// CRC-32C as they are then: {"commit":true,"summary":[size,crc]}. Open trusts
// the summary, and reads its totals from it, only when the last complete batch
// of the units file is such a stamp and the summary is, byte for byte, what it
// names. A crash after a units batch and before its stamp leaves a batch without
// one; a summary whose last batch was lost or torn has another size or checksum;
// either way the totals are added up from the units and the summary rewritten,
// as before. The stamp is not fsynced: a lost one costs that recompute.

// stamp is the summary's size and CRC-32C.
type stamp struct {
	size int64
	crc  uint32
}

var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// summaryStamp is the summary's stamp as the writer last wrote it.
func (l *Ledger) summaryStamp() stamp {
	return stamp{l.summaryFile.base + l.summaryFile.tail, l.summaryFile.crc}
}

// writeStamp appends the summary's stamp to the units file, if it is due and
// true: both files are written, and every record is on disk as it is in memory.
func (l *Ledger) writeStamp() error {
	if l.summaryFile.compact || l.summaryFile.base == 0 {
		return nil
	}
	return l.writeStampOf(l.summaryStamp())
}

// writeStampOf is writeStamp of a summary whose stamp is st (EndColdBuild's,
// of the summary as it was before its compaction, which runs meanwhile).
func (l *Ledger) writeStampOf(st stamp) error {
	if l.dir == "" || l.err != nil || len(l.dirtyUnits) > 0 || l.unitsFile.compact ||
		l.unitsFile.base == 0 || (l.stampAt.units == l.unitsFile.base+l.unitsFile.tail && l.stampAt.sum == st) {
		return nil
	}
	line := []byte(`{"commit":true,"summary":[`)
	line = strconv.AppendInt(line, st.size, 10)
	line = append(line, ',')
	line = strconv.AppendUint(line, uint64(st.crc), 10)
	line = append(line, "]}\n"...)
	if _, err := l.unitsFile.appendBatch(line, false); err != nil {
		return err
	}
	l.stampAt.units, l.stampAt.sum = l.unitsFile.base+l.unitsFile.tail, st
	return nil
}

// trustSummary reads the B rows of the summary into the totals if the summary is
// what st names (the last complete batch of the units file is st): it then holds
// what the units add up to. Otherwise it leaves the totals empty and returns false.
func (l *Ledger) trustSummary(st *stamp) bool {
	if st == nil {
		return false
	}
	f, err := os.Open(l.summaryFile.path)
	if err != nil {
		return false
	}
	defer f.Close()
	// Checked whole, streamed; then only what the totals need is read: the S
	// section, most of the file, is not (it was a transient as large as the
	// rest of the open's).
	fi, err := f.Stat()
	if err != nil || fi.Size() != st.size || !baseIs(f, st.size, st.crc) {
		return false
	}
	s, p, ok := readTotals(f, st.size)
	if !ok || !p.clean {
		return false
	}
	l.rows.reserve(len(s.Rows))
	for _, r := range s.Rows {
		if !r.T.IsZero() {
			rk := rowKey{r.Q, l.intern(r.Source), l.intern(r.Project), l.intern(r.Model)}
			l.rows.set(l.rowIDOf(rk), r.T)
			l.addDay(rk, r.T, 1)
		}
	}
	// The D rows must be the B rows' days in this writer's zone: a summary of
	// an older version (no D rows) or written in another zone is not trusted,
	// and the eager open that follows rewrites it.
	if !l.sameDays(s) {
		return false
	}
	sf := &l.summaryFile
	sf.base, sf.tail, sf.crc = p.base, st.size-p.base, st.crc
	l.stampAt.units, l.stampAt.sum = l.unitsFile.base+l.unitsFile.tail, *st
	return true
}

// readTotals reads what a writer's totals need of a summary of size bytes: its
// D and B sections and the batches after them, not the S section, as
// parseSummary would with Want{NoSessions: true, AllDays: true}.
func readTotals(r io.ReaderAt, size int64) (*Summary, parsed, bool) {
	head, ok := readAt(r, 0, min(size, 4<<10)) // the header line is ~100 bytes
	if !ok {
		return nil, parsed{}, false
	}
	h, start, err := parseSummaryHeader(head)
	if err != nil || h.Days > size || h.Sessions > size || h.Rows > size || start+h.Days+h.Sessions+h.Rows > size {
		return nil, parsed{}, false
	}
	sStart := start + h.Days
	bStart := sStart + h.Sessions
	base := bStart + h.Rows
	dsec, ok1 := readAt(r, start, h.Days)
	bsec, ok2 := readAt(r, bStart, h.Rows)
	tail, ok3 := readAt(r, base, size-base)
	if !ok1 || !ok2 || !ok3 {
		return nil, parsed{}, false
	}
	s, clean, err := parseSections(dsec, h.Version >= 3, nil, bsec, tail, Want{NoSessions: true, AllDays: true}, func([]byte) int { return 0 })
	if err != nil {
		return nil, parsed{}, false
	}
	return s, parsed{base: base, clean: clean}, true
}

// stampOf reads a JSON commit line's stamp (decodeKeyFast reads the ledger's own).
func stampOf(w *wireKey) *stamp {
	if w.Summary == nil || w.Summary[0] < 0 || w.Summary[1] < 0 || w.Summary[1] > 0xffffffff {
		return nil
	}
	return &stamp{w.Summary[0], uint32(w.Summary[1])}
}

// Stamped reports whether the ledger of stateDir is settled: the last line of
// its units file is a stamp (stamp.go) and its summary is byte for byte what the
// stamp names, so the summary is what the units add up to. It reads the units
// file's last line and the summary, and writes nothing. A command without a
// daemon that proves every catalog current (the ledger is synced before the
// catalogs, so it is never behind them) need not open the ledger then.
func Stamped(stateDir string) bool {
	dir := filepath.Join(stateDir, DirName)
	if behind(dir) {
		return false // the catalogs may have moved without the ledger (behind.go)
	}
	f, err := os.Open(filepath.Join(dir, UnitsName))
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	const most = 128 // a stamp line is under 64 bytes
	n := min(fi.Size(), most)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, fi.Size()-n); err != nil {
		return false
	}
	if len(tail) == 0 || tail[len(tail)-1] != '\n' {
		return false
	}
	line := tail[:len(tail)-1]
	i := bytes.LastIndexByte(line, '\n')
	if i < 0 && n == most {
		return false
	}
	fk, ok := decodeKeyFast(line[i+1:], func(s string) string { return s })
	if !ok || !fk.commit || fk.stamp == nil || fk.k != (ukey{}) || fk.live != nil || fk.retired != nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join(dir, SummaryName))
	return err == nil && int64(len(data)) == fk.stamp.size && crc32.Checksum(data, castagnoli()) == fk.stamp.crc
}
