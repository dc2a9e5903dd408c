package usage

import "github.com/sessionwatch/sessionwatch/indexer"

// The ledger is an indexer.Preparer: on a cold pass the indexer's read workers
// parse each line's usage (the JSON scanning), and LinesPrepared only credits the
// events to the unit's account, under the ledger's lock.

// preparedLines is one unit's lines, parsed on a read worker from the state a
// unit read from offset 0 starts with.
type preparedLines struct {
	layout  string
	st      ParseState // after the last line
	events  []preparedEvent
	last    int64 // offset of the last line handed over (-1: none)
	touched bool  // a line moved the parser's state or carried usage (Line touches the unit)
}

type preparedEvent struct {
	off int64
	ev  Event
}

// Prepare implements indexer.Preparer; it reads nothing of the ledger.
func (l *Ledger) Prepare(u indexer.UnitRef) indexer.Prepared {
	return &preparedLines{layout: u.Layout, last: -1}
}

// Line implements indexer.Prepared: what Ledger.Line does before it takes the lock.
func (p *preparedLines) Line(off int64, line []byte) {
	p.last = off
	p.took(ParseLine(p.layout, &p.st, line))
}

// LineMembers implements indexer.MembersPrepared.
func (p *preparedLines) LineMembers(off int64, m *indexer.Members) {
	p.last = off
	p.took(ParseLineMembers(p.layout, &p.st, m))
}

func (p *preparedLines) took(ev Event, ok bool) {
	if !ok {
		if p.st.Model != "" || p.st.Prev != nil {
			p.touched = true
		}
		return
	}
	p.events = append(p.events, preparedEvent{p.last, ev})
	p.touched = true
}

// Size implements indexer.Prepared.
func (p *preparedLines) Size() int64 { return int64(cap(p.events)) * 160 }

// LinesPrepared implements indexer.Preparer: it is called right after Reset, on a
// record that holds nothing of the unit (offset 0, nothing fed, a zero parser
// state), so the lines parse as they did on the worker, and the events are
// credited as Line would credit them one by one.
func (l *Ledger) LinesPrepared(u indexer.UnitRef, prep indexer.Prepared) {
	p := prep.(*preparedLines)
	if p.last < 0 {
		return // no line: Line would not have been called
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recLocked(u)
	l.bodyOf(r) // resident after Reset; made sure of
	if !r.reading {
		r.reading = true
		l.reading++
	}
	for i := range p.events {
		e := &p.events[i]
		if e.off < r.Off || e.off < r.fed {
			continue
		}
		l.accOf(r).add(e.ev, l.intern, l.observe(r))
	}
	r.fed = max(r.fed, p.last+1)
	r.St = p.st
	if p.touched {
		l.touchRec(r, u)
	}
}
