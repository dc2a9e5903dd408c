package indexer

// A batched flush (reindex's full passes, BatchFullPasses) does not wait for the
// consumers' Sync before it renders its outputs: the syncs run in the
// background while the flush renders the native indexes and catalogs into
// their temp files, which nothing reads (the batch renames them into place
// only once their data is durable, batchwrite.go). Every place a flush would
// make an output visible or remove one waits for the syncs first
// (waitSyncLocked, from drainLocked and removeOutputLocked), and so does any
// call to a consumer; so, as in a flush that syncs first, no catalog is ever
// in place before the consumers' data it vouches for is durable. When a
// consumer fails, no output of the flush is put in place: the staged temp
// files are removed, the outputs stay to be written again (as after a failed
// write), the changed units stay to be synced again, and the flush returns the
// consumer's error as a flush that synced first does.

// bgSync is a batched flush's consumer syncs running in the background.
type bgSync struct {
	done    chan struct{}
	err     error           // the first failing consumer's, in their order; set before done closes
	touched map[string]bool // the units whose sessions were handed over
}

// startSyncLocked is syncConsumersLocked, the consumers' Syncs left to run on
// their own goroutines until waitSyncLocked.
func (ix *Indexer) startSyncLocked() {
	if len(ix.consumers) == 0 || len(ix.touched) == 0 {
		ix.syncConsumersLocked() // nothing to sync (no consumer: the touched are cleared)
		return
	}
	ix.drainFeedsLocked()
	refs := ix.touchedRefsLocked()
	s := &bgSync{done: make(chan struct{}), touched: ix.touched}
	// Units touched from here on (none, as a rule: rendering reads the units)
	// are handed to the next flush's syncs, as after a Sync that came first.
	ix.touched = map[string]bool{}
	cs := ix.consumers
	go func() {
		s.err = syncEach(cs, refs)
		close(s.done)
	}()
	ix.bgSync = s
}

// waitSyncLocked waits for the background syncs of the flush, if any; a
// failure is kept in ix.syncErr for the flush to return.
func (ix *Indexer) waitSyncLocked() {
	s := ix.bgSync
	if s == nil {
		return
	}
	<-s.done
	ix.bgSync = nil
	if s.err != nil {
		for urel := range s.touched {
			ix.touched[urel] = true // the next flush hands the same sessions again
		}
		ix.syncErr = s.err
	}
}

// touchedRefsLocked is the current sessions of the touched units, as the
// consumers' Sync takes them.
func (ix *Indexer) touchedRefsLocked() []SessionRef {
	refs := make([]SessionRef, 0, len(ix.touched)) // a session per unit, as a rule
	for urel := range ix.touched {
		u := ix.units.get(urel)
		if u == nil {
			continue
		}
		ref := ix.unitRef(u)
		for _, s := range u.sessions() {
			refs = append(refs, SessionRef{UnitRef: ref, ID: s.ID, Type: s.Type, ParentID: s.ParentID,
				File: s.File, Project: s.Project, Title: s.Title, Created: s.CreatedAt, Last: s.LastActiveAt})
		}
	}
	return refs
}
