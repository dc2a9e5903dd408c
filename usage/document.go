package usage

import "github.com/sessionwatch/sessionwatch/indexer"

// isDocument reports whether b is a document unit's (Mogzi's running total).
func isDocument(b *unitBody) bool { return b.Seen != nil }

// Document counts a changed document unit (indexer.Consumer). Mogzi's usageMetrics
// is a running total: what it grew by since the last look is counted, at its
// lastUpdated time. A total that went down (the session was reset) counts anew.
func (l *Ledger) Document(u indexer.UnitRef, data []byte, sessions []*indexer.Session) {
	if u.Layout != "mogzi" {
		return
	}
	t, at, ok := MogziTotals(data)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := keyOf(u)
	r := l.recLocked(u)
	l.bodyOf(r)
	l.fileNow(r)
	var seen Tokens
	if r.Seen != nil {
		seen = *r.Seen
	}
	if t.Input < seen.Input || t.Output < seen.Output || t.CacheWrite < seen.CacheWrite || t.CacheRead < seen.CacheRead {
		// The total went down: the session was reset. What was counted stays, in
		// the retired part; the unit counts from zero again, so its live usage is
		// always its current total (what a rebuild finds).
		if len(l.accOf(r).Buckets) > 0 {
			l.file(r, -1)
			old, ob := *r, *r.unitBody
			old.unitBody, old.next = &ob, nil
			old.Retired, old.Seen, old.acc.Win, old.reading = indexer.FormatTime(l.now()), nil, nil, false
			l.hot = append(l.hot, &old)
			l.retired[k] = append(l.retired[k], &old)
			l.file(&old, 1)
			r.acc = account{}
			l.file(r, 1)
		}
		seen = Tokens{}
	}
	d := t
	d.Sub(seen)
	r.Seen = &t
	if at == 0 {
		at = l.now().UnixMilli()
	}
	model := ""
	if len(sessions) > 0 {
		model = sessions[0].Model
	}
	l.accOf(r).credit(Quarter(at), l.intern(model), d, 1, l.observe(r))
	l.touch(k)
}
