package usage

import (
	"fmt"
	"os"
)

// EndColdBuild ends a cold build: the units file and the summary, appended to a
// source at a time, are compacted now where due (after a reindex of several
// sources most of both are batches), so that the next open (the daemon's first
// start) reads the units from their index and the summary from its base, not
// the batches the long way. Then the ledger compacts as ever.
//
// When both are due and nothing changed since the last Sync (a reindex's end),
// the two compactions run side by side (the indexers are done: the ledger has
// the cores), and the files end as the serial order leaves them: the units
// file compacted, its stamp of the summary as the batches left it, the summary
// compacted, its stamp. A crash in between leaves a stamp that names no
// summary on disk, which an open repairs (stamp.go), as after a crash between
// the serial writes.
//
// The records stay in memory after the compaction of the units file, not read
// back from the index it writes (recool): a reindex ends here, and reading
// 100k records back only to drop them cost a quarter of its time. A
// ledger used on holds them until its next compaction.
func (l *Ledger) EndColdBuild() error {
	l.mu.Lock()
	l.bulk = false
	l.resident = true
	defer func() {
		l.mu.Lock()
		l.resident = false
		l.mu.Unlock()
	}()
	if l.bothCompactionsDue() {
		// Under the same lock as the check: nothing changes in between.
		defer l.mu.Unlock()
		return l.endColdBuildTogetherLocked()
	}
	l.mu.Unlock()
	return l.endColdBuildSerial()
}

// endColdBuildSerial is EndColdBuild one file after the other: a Sync, which
// compacts the units file where due, then the summary's compaction where due.
func (l *Ledger) endColdBuildSerial() error {
	if err := l.Sync(nil); err != nil { // writeUnits compacts what is due
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir == "" || l.err != nil || l.summaryFile.base == 0 || !l.compactionDue(&l.summaryFile, summaryRatio, summaryMin) {
		return nil
	}
	if err := l.compactSummary(); err != nil {
		return err
	}
	return l.writeStamp()
}

// bothCompactionsDue reports whether a Sync now would compact the units file
// and write nothing else, after which the summary's compaction is due: what
// endColdBuildTogetherLocked does.
func (l *Ledger) bothCompactionsDue() bool {
	return l.dir != "" && l.err == nil && len(l.dirtyUnits) == 0 && len(l.dirtyRows) == 0 && len(l.dirtyDays) == 0 &&
		len(l.dirtyGroups) == 0 && l.reading == 0 && len(l.v1) == 0 &&
		l.unitsFile.base > 0 && !l.unitsFile.compact && l.compactionDue(&l.unitsFile, unitsRatio, unitsMin) &&
		l.summaryFile.base > 0 && !l.summaryFile.compact && l.compactionDue(&l.summaryFile, summaryRatio, summaryMin)
}

// endColdBuildTogetherLocked is EndColdBuild's Sync (which compacts the units file
// and appends nothing to the summary), its stamp, and the summary's compaction
// and its stamp, with the summary read and rewritten on a goroutine of its own
// meanwhile: that reads the totals (rows, columns, days), which the units
// file's compaction does not change, and writes only the summary's state.
// l.mu is held.
func (l *Ledger) endColdBuildTogetherLocked() error {
	before := l.summaryStamp() // what the Sync's stamp names
	h, err := os.Open(l.summaryFile.path)
	if err != nil {
		return fmt.Errorf("read usage summary: %w", err)
	}
	type result struct {
		read bool // the summary was what this ledger wrote (readForCompaction)
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer h.Close()
		m, ok := l.readForCompaction(h)
		if !ok {
			done <- result{}
			return
		}
		done <- result{true, l.rewriteCompacted(m)}
	}()
	uerr := l.writeUnits()
	res := <-done
	if uerr != nil {
		return uerr
	}
	if l.err != nil { // an account read back while writing
		return fmt.Errorf("%w (run 'sessionwatch reindex')", l.err)
	}
	if err := l.writeStampOf(before); err != nil {
		return err
	}
	l.evictLocked()
	if !res.read {
		// Not what a summary this ledger wrote holds: add it up from the units.
		l.summaryFile.compact = true
		if err := l.writeSummary(); err != nil {
			return err
		}
	} else if res.err != nil {
		return res.err
	}
	return l.writeStamp()
}
