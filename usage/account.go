package usage

import (
	"hash/fnv"
	"sort"
)

// QuarterMillis is the ledger's time resolution: every UTC offset in use is a
// multiple of 15 minutes, so quarter-hour buckets group into local days exactly in
// any time zone.
const QuarterMillis = 15 * 60 * 1000

// Quarter is the quarter-hour (since the Unix epoch, UTC) holding unix ms at.
func Quarter(at int64) int32 {
	q := at / QuarterMillis
	if at < 0 && at%QuarterMillis != 0 {
		q--
	}
	return int32(q)
}

// WindowSize is how many distinct message ids of a unit are remembered to match
// repeats against. Streamed copies of a message are written next to each other
// (docs/usage.md); the window bounds the memory a long transcript needs.
const WindowSize = 8

// Bucket is a unit's usage in one quarter hour for one model.
type Bucket struct {
	Q     int32
	Model string
	T     Tokens
}

// winEntry is a remembered message: its ids (hashed), where it was counted and
// what it counted, so a better copy can replace it.
type winEntry struct {
	ID      uint64
	OrigReq uint64 // requestId of the copy first counted (0: none)
	Req     uint64 // requestId of the copy counted now (0: none)
	Side    bool
	Q       int32
	Model   string
	T       Tokens
}

// account is the usage derived from one unit: buckets sorted by (Q, Model), and the
// window of recent messages.
type account struct {
	Buckets []Bucket
	Win     []winEntry
}

func hashID(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	v := h.Sum64()
	if v == 0 {
		v = 1 // 0 means "no id"
	}
	return v
}

// observer is told every change credit makes to an account's buckets, so the
// ledger can keep its totals without adding the buckets up again.
type observer func(q int32, model string, t Tokens, sign int)

// add counts one event.
func (a *account) add(ev Event, intern func(string) string, obs observer) {
	q := Quarter(ev.At)
	model := intern(ev.Model)
	switch ev.Dedupe {
	case DedupeClaude:
		id := hashID(ev.ID)
		var req uint64
		if ev.HasReq {
			req = hashID(ev.Req)
		}
		if i := a.claudeMatch(id, req, ev.HasReq, ev.Sidechain); i >= 0 {
			e := &a.Win[i]
			if claudeReplaces(ev.Sidechain, ev.T, e.Side, e.T) {
				a.credit(e.Q, e.Model, e.T, -1, obs)
				a.credit(q, model, ev.T, 1, obs)
				e.Req, e.Side, e.Q, e.Model, e.T = req, ev.Sidechain, q, model, ev.T
			}
			return
		}
		a.credit(q, model, ev.T, 1, obs)
		a.remember(winEntry{ID: id, OrigReq: req, Req: req, Side: ev.Sidechain, Q: q, Model: model, T: ev.T})
	case DedupeLast:
		id := hashID(ev.ID)
		for i := range a.Win {
			if e := &a.Win[i]; e.ID == id {
				a.credit(e.Q, e.Model, e.T, -1, obs)
				a.credit(q, model, ev.T, 1, obs)
				e.Q, e.Model, e.T = q, model, ev.T
				return
			}
		}
		a.credit(q, model, ev.T, 1, obs)
		a.remember(winEntry{ID: id, Q: q, Model: model, T: ev.T})
	default:
		a.credit(q, model, ev.T, 1, obs)
	}
}

// claudeMatch finds the remembered copy a Claude event repeats, as ccusage does: the
// same message id and requestId (an entry is found under the requestId it was first
// counted with, and must still carry the same one); failing that, the same message
// id when either copy is a sidechain one (sub-agent logs replay parent messages
// with new request ids). -1 if none.
func (a *account) claudeMatch(id, req uint64, hasReq, side bool) int {
	for i, e := range a.Win {
		if e.ID == id && e.Req == req && (e.OrigReq == req || !hasReq) {
			return i
		}
	}
	for i, e := range a.Win {
		if e.ID == id && (side || e.Side) {
			return i
		}
	}
	return -1
}

// claudeReplaces says whether a repeat replaces the copy counted: a main-chain copy
// beats a sidechain one; otherwise the larger total wins (a streamed message's last
// copy carries its final output count).
func claudeReplaces(side bool, t Tokens, oldSide bool, old Tokens) bool {
	if side != oldSide {
		return oldSide
	}
	return t.Total() > old.Total()
}

func (a *account) remember(e winEntry) {
	if len(a.Win) >= WindowSize {
		copy(a.Win, a.Win[1:])
		a.Win = a.Win[:len(a.Win)-1]
	}
	a.Win = append(a.Win, e)
}

// credit adds (sign 1) or removes (sign -1) t at (q, model); a bucket that comes to
// zero is dropped, so an account depends only on what it counts, not on how. obs
// (if not nil) is told.
func (a *account) credit(q int32, model string, t Tokens, sign int, obs observer) {
	if t.IsZero() {
		return
	}
	if obs != nil {
		obs(q, model, t, sign)
	}
	i := sort.Search(len(a.Buckets), func(i int) bool {
		b := a.Buckets[i]
		return b.Q > q || (b.Q == q && b.Model >= model)
	})
	if i == len(a.Buckets) || a.Buckets[i].Q != q || a.Buckets[i].Model != model {
		a.Buckets = append(a.Buckets, Bucket{})
		copy(a.Buckets[i+1:], a.Buckets[i:])
		a.Buckets[i] = Bucket{Q: q, Model: model}
	}
	if sign > 0 {
		a.Buckets[i].T.Add(t)
	} else {
		a.Buckets[i].T.Sub(t)
	}
	if a.Buckets[i].T.IsZero() {
		a.Buckets = append(a.Buckets[:i], a.Buckets[i+1:]...)
	}
}

// total is the sum of every bucket.
func (a *account) total() Tokens {
	var t Tokens
	for _, b := range a.Buckets {
		t.Add(b.T)
	}
	return t
}
