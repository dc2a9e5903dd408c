package usage

// Where the ledger files its records: the filings they share, and each
// record's part in the totals and among its session's units.

// canonFiling makes r's filing the ledger's one of the same source, root, type
// and project (a record read from a file comes with its own, or its file's; a
// record changed makes one of its own).
func (l *Ledger) canonFiling(r *unitRec) {
	if r.filed == nil {
		return
	}
	f, added := l.filings.canon(r.filed)
	if added {
		// Its strings, shared too (a record's own filing may hold a part of a
		// longer string: a path's root).
		*f = filing{l.intern(f.source), l.intern(f.root), l.intern(f.typ), l.intern(f.project), f.devHi}
	}
	r.filed = f
}

// filingOf is the ledger's filing equal to f (made if there is none, its
// strings shared): canonFiling without a filing made first, when the ledger
// has it already (most of the time: a few per project).
func (l *Ledger) filingOf(f filing) *filing {
	if x := l.filings.get(f); x != nil {
		return x
	}
	x := new(filing)
	*x = f
	x, _ = l.filings.canon(x)
	*x = filing{l.intern(x.source), l.intern(x.root), l.intern(x.typ), l.intern(x.project), x.devHi}
	return x
}

// fileAs files r's session under typ and project.
func (l *Ledger) fileAs(r *unitRec, typ, project string) {
	f := r.filing()
	f.typ, f.project = typ, project
	r.filed = l.filingOf(f)
}

// file adds (sign 1) or takes away (sign -1) a record's part in the totals: its
// buckets in the B rows and its place among its session's units. Every change to
// where a record is filed (source, project, session, type) or to its being in the
// ledger at all goes through file(-1), the change, file(1).
func (l *Ledger) file(r *unitRec, sign int) {
	g := r.group()
	l.markGroup(g)
	if sign > 0 {
		l.addMember(r)
	} else {
		l.dropMember(r)
	}
	for _, b := range l.accOf(r).Buckets {
		l.addRow(rowKey{b.Q, r.source(), r.project(), b.Model}, b.T, sign)
	}
}

// addMember files r under its session id.
func (l *Ledger) addMember(r *unitRec) {
	r.next = l.members.push(r)
}

// dropMember takes r from under its session id.
func (l *Ledger) dropMember(r *unitRec) {
	sid := r.sid()
	head := l.members.get("", sid)
	switch {
	case head == r && r.next != nil:
		l.members.put(r.next)
	case head == r:
		l.members.del("", sid)
	default:
		for x := head; x != nil; x = x.next {
			if x.next == r {
				x.next = r.next
				break
			}
		}
	}
	r.next = nil
}

// markGroup notes that session g is about to change, keeping its S rows as they
// were (what the summary holds) on its first change since the last write.
func (l *Ledger) markGroup(g groupKey) {
	if l.dirtyGroups[g] {
		return
	}
	if rows := l.groupRows(g); rows != nil {
		l.before[g] = rows // none (a new session's) is what a missing key reads
	}
	l.dirtyGroups[g] = true
}

// fileAll files every record (after a load).
func (l *Ledger) fileAll() {
	l.warmAll()
	for r := range l.units.all() {
		l.file(r, 1)
	}
	for _, rs := range l.retired {
		for _, r := range rs {
			l.file(r, 1)
		}
	}
}
