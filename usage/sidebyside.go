package usage

import (
	"bufio"
	"bytes"
)

// A cold build's Sync (reindex: one per source) writes the units file's batch
// and works out the summary's side by side (syncSideBySide).

// syncSideBySide is Sync's writes (writeUnits, then writeSummary) when both
// are appends (a cold build, after its first Sync): the summary's batch is
// worked out on a goroutine while the units' batch is encoded, written and
// fsynced, then appended after it, as ever. The two read the records and
// write apart: the units' side the units file's state, the summary's side the
// sets of what changed (settleGroups, appendChanged); a body read back from
// the units file is read under peekMu, and the records take their new places
// (placeAppended) once both are done.
func (l *Ledger) syncSideBySide() error {
	done := make(chan []byte, 1)
	go func() { done <- l.summaryBatch() }()
	ub, err := l.appendUnits()
	batch := <-done
	if err != nil {
		// The summary's batch, worked out, is not written: the next write
		// adds the summary up from the units.
		l.summaryFile.compact = true
		return err
	}
	l.placeAppended(ub)
	if l.compactionDue(&l.unitsFile, unitsRatio, unitsMin) && l.reading == 0 {
		if err := l.writeUnits(); err != nil {
			l.summaryFile.compact = true
			return err
		}
	}
	return l.appendSummaryBatch(batch)
}

// sideBySideWrites: false makes every Sync write one file after the other
// (tests compare the two).
var sideBySideWrites = true

// sideBySide reports whether Sync's writes are two appends syncSideBySide
// can make: a cold build's, to files of a base.
func (l *Ledger) sideBySide() bool {
	return sideBySideWrites && l.bulk && l.dir != "" && l.err == nil && len(l.dirtyUnits) > 0 &&
		l.unitsFile.base > 0 && !l.unitsFile.compact && !l.compactionDue(&l.unitsFile, unitsRatio, unitsMin) &&
		l.summaryFile.base > 0 && !l.summaryFile.compact
}

// unitsBatch is what appendUnits appended: where, the records it placed, and
// the keys left for a later batch (a read in progress).
type unitsBatch struct {
	at    int64
	ps    []placed
	later []ukey
}

// appendUnits appends the changed units' records as one batch, fsynced. It
// changes nothing in memory but the units file's state: placeAppended applies
// the batch (Ledger.syncSideBySide writes the summary's meanwhile).
func (l *Ledger) appendUnits() (unitsBatch, error) {
	var ub unitsBatch
	at, err := l.unitsFile.appendBatchWith(func(w *bufio.Writer) error {
		var b bytes.Buffer
		pos := int64(0)
		for _, k := range sortedKeys(l.dirtyUnits) {
			if r := l.units.get(k.source, k.unit); r != nil && r.isReading() {
				ub.later = append(ub.later, k) // written once its read is done
				continue
			}
			b.Reset()
			if err := l.appendKey(&b, k); err != nil {
				return err
			}
			ub.ps = l.keyRecs(k, ub.ps, span{pos, int64(b.Len())})
			pos += int64(b.Len())
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
		}
		_, err := w.Write(commitLine)
		return err
	}, true)
	ub.at = at
	return ub, err
}

// placeAppended notes where appendUnits wrote each record, and that the keys
// it wrote are written.
func (l *Ledger) placeAppended(ub unitsBatch) {
	for i := range ub.ps {
		ub.ps[i].s.off += ub.at
	}
	l.applyPlaced(ub.ps)
	l.dirtyUnits = make(map[ukey]bool, l.nextSize(len(l.dirtyUnits)))
	for _, k := range ub.later {
		l.dirtyUnits[k] = true
	}
}
