package usage

// A unit the ledger meets for the first time (Reset of a unit it holds nothing
// of: every unit of a cold build, a new file in the daemon) has no session
// yet: until the Sync that follows its read it would be filed under its own
// name, with no project or type, and that Sync would take it out of there and
// file it again under its session (Ledger.file twice over, its rows added,
// taken away and added again, every event of its read moving the rows and the
// session of a filing about to go). Such a record is pending instead: it is
// counted (its account, its position) but not filed, and the Sync files it
// once, where its session is (settlePending).
//
// What a Sync writes is what the filing and refiling wrote: a pending
// record's rows under no project, which the refiling would have changed and
// changed back, are marked changed all the same (a batch of the summary lists
// them, at their unchanged values), as are the rows and days of what its read
// counted and took back (a Claude message repeated in another quarter hour).
// Its filing under its own name would have marked that session changed too,
// but a session whose rows did not change writes nothing (settleGroups), so
// that is left out. Whatever else would meet the record as filed (a second
// Reset, Remove, Document) files it first (fileNow): from then on the record
// is what it would have been.

// pendingObserver is the observer of a pending record's account: nothing is
// filed, but the B and D rows of what its read takes back are marked changed,
// as filing it under its own name would have marked them.
func (l *Ledger) pendingObserver(r *unitRec) observer {
	return func(q int32, model string, _ Tokens, sign int) {
		if sign < 0 {
			l.markUnfiled(r.source(), q, model)
		}
	}
}

// markUnfiled marks the B row (q, src, no project, model) and its D row
// changed: what adding a bucket to it and taking it away again leaves.
func (l *Ledger) markUnfiled(src string, q int32, model string) {
	l.dirtyRows[l.rowIDOf(rowKey{q, src, "", model})] = true
	g := l.segFor(q)
	l.dirtyDays[l.rowIDOf(rowKey{g.s, src, "", model})] = true
}

// isPending reports whether r is counted but not yet filed.
func (r *unitRec) isPending() bool { return r.unitBody != nil && r.pending }

// fileNow files r if it is pending, where it is now (its own name, or the
// session Sync gave it), as if it had been filed under its own name from the
// start and moved there.
func (l *Ledger) fileNow(r *unitRec) {
	if !r.isPending() {
		return
	}
	r.pending = false
	if r.project() != "" {
		// Moved from no project: the rows it was filed under are marked
		// (the days are the same ones, marked by file).
		for _, b := range r.acc.Buckets {
			l.dirtyRows[l.rowIDOf(rowKey{b.Q, r.source(), "", b.Model})] = true
		}
	}
	l.file(r, 1)
}

// settlePending files every pending record where it is now.
func (l *Ledger) settlePending() {
	for _, r := range l.pending {
		l.fileNow(r) // one let go (letGo) has no body: not pending
	}
	clear(l.pending)
	l.pending = l.pending[:0]
}
