package indexer

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// Consumer is fed by the indexer's reads, so that what is built beside the catalog
// (the full-text search index, the usage ledger) sees every appended byte without
// reading it again (STYLE 16: one reader, many consumers). The indexer knows no
// consumer by name; the daemon attaches them with Group.AddConsumer.
//
// Every method is called while the indexer's lock is held, so the calls for one
// source come to a consumer one at a time; a consumer attached to several sources
// must lock itself. This holds when a full pass reads new units on worker
// goroutines (prefetch.go): the workers only buffer a unit's lines, and the walk
// has them handed over, in order, in the same sequence of calls as a pass without
// workers (a Preparer's pure per-line work is the one part done on the workers),
// each consumer's on a goroutine of its own (feed.go). Two consumers may thus be
// called at once, by the same pass (feed.go; Sync, syncEach), never one consumer.
//
// Crash safety: Sync is called at every flush before any catalog of that flush is
// written, so a consumer's durable state is never behind the offsets in the catalogs.
// After a crash the indexer may hand over lines again from an older catalog offset;
// a consumer ignores lines below the offset it reported from Resume (it has them).
type Consumer interface {
	// Resume reports how far the consumer has consumed a line unit of this identity
	// (u.Dev, u.Ino): the offset after the last line it took, and the fingerprint it
	// was given for that offset by Done. ok is false when it holds nothing of this
	// unit (never seen, or another identity): the unit is then handed over from 0.
	Resume(u UnitRef) (offset int64, fp string, ok bool)
	// Reset drops everything the consumer derived from the unit: it was replaced,
	// truncated or rewritten, and is read again from offset 0.
	Reset(u UnitRef)
	// Line hands over one complete line (starting with '{', not yet validated) that
	// starts at byte offset off of the unit.
	Line(u UnitRef, off int64, line []byte)
	// Done says a read of the unit ended: every line before offset has been handed
	// over; fp is Fingerprint(file, offset), to be returned by Resume.
	Done(u UnitRef, offset int64, fp string)
	// Document hands over the whole content of a document unit each time it changed
	// and parsed; sessions are what the layout made of it.
	Document(u UnitRef, data []byte, sessions []*Session)
	// Remove says the unit's file left the store (deleted, retired or moved away).
	Remove(u UnitRef)
	// Sync makes what was handed over durable. sessions are the current sessions of
	// the units that changed since the last Sync, with their projects resolved.
	// The consumers of a flush sync at once, each on its own goroutine; sessions
	// is shared by them and read only.
	Sync(sessions []SessionRef) error
}

// Preparer is implemented by a consumer whose work on a line splits into a pure
// part (decoding, tokenizing) and an insert into its state. A full pass that reads
// new units on worker goroutines (prefetch.go) has the pure part done there, off
// the indexer's lock and on every core, and only the insert under the lock.
//
// The contract of Consumer holds unchanged: for a unit read on a worker, the
// consumer is Reset, then handed the prepared lines by one LinesPrepared call in
// place of the Line calls a read on the walk would make (the same lines, in the
// same order, each unit's in walk order, under the lock), then Done. A consumer
// must end up exactly as after those Line calls (tests compare the two).
type Preparer interface {
	// Prepare starts the pure part of reading unit u from offset 0. It is called
	// on a read worker, concurrently with every other method: neither it nor the
	// Prepared it returns may touch the consumer's state. nil: the unit's lines
	// are handed over by Line as usual.
	Prepare(u UnitRef) Prepared
	// LinesPrepared hands over, under the indexer's lock and right after Reset(u),
	// every line p was given, as that many Line calls in order would. p is not
	// used after it returns (the consumer may use its buffers again).
	LinesPrepared(u UnitRef, p Prepared)
}

// Prepared is the pure part of a consumer's work on one unit's lines, done on a
// read worker.
type Prepared interface {
	// Line takes one line as Consumer.Line would (same offset, same bytes); the
	// slice is only valid during the call.
	Line(off int64, line []byte)
	// Size is about how many bytes the result holds, counted against the bound on
	// what the read workers hold for the walk.
	Size() int64
}

// MembersPrepared is a Prepared that can take a line from its members scanned
// once (Members) by the read worker, as Line would take m.Line().
type MembersPrepared interface {
	LineMembers(off int64, m *Members)
}

// UnitRef identifies a unit to a consumer.
type UnitRef struct {
	Source string // source name
	Layout string // layout name
	Unit   string // unit path relative to the source's unit directory, slash-separated
	Path   string // absolute path of the unit's file
	Dev    uint64 // identity of the file (0 for a removed unit)
	Ino    uint64
}

// SessionRef is a session as a consumer needs it: which unit it comes from and the
// project it is filed under.
type SessionRef struct {
	UnitRef
	ID       string
	Type     string
	ParentID string
	File     string
	Project  string
	Title    string
	Created  string
	Last     string
}

// AddConsumer attaches a consumer to every indexer of the group. It must be called
// before the first pass that reads (Load reads only catalogs and may come first).
func (g *Group) AddConsumer(c Consumer) {
	for _, ix := range g.indexers {
		ix.mu.Lock()
		ix.consumers = append(ix.consumers, c)
		ix.mu.Unlock()
	}
}

func (ix *Indexer) unitRef(u *unit) UnitRef {
	return UnitRef{
		Source: ix.opt.Source,
		Layout: ix.layout.Name(),
		Unit:   u.rel,
		Path:   ix.unitPath(u.rel),
		Dev:    u.tail.Dev,
		Ino:    u.tail.Ino,
	}
}

// consumersBehindLocked reports whether a consumer has not yet been handed a line
// unit up to its current offset (a consumer attached after the unit was indexed).
func (ix *Indexer) consumersBehindLocked(u *unit) bool {
	if len(ix.consumers) == 0 {
		return false
	}
	ix.drainFeedsLocked()
	ref := ix.unitRef(u)
	for _, c := range ix.consumers {
		off, fp, ok := c.Resume(ref)
		if !ok || off != u.tail.Offset || !u.tail.fpIs(fp) {
			return true
		}
	}
	return false
}

// syncConsumersLocked hands the consumers the sessions of the units that changed
// and has them make their state durable.
func (ix *Indexer) syncConsumersLocked() error {
	if len(ix.consumers) == 0 {
		clear(ix.touched)
		return nil
	}
	if len(ix.touched) == 0 {
		return nil
	}
	ix.drainFeedsLocked()
	if err := syncEach(ix.consumers, ix.touchedRefsLocked()); err != nil {
		return err // touched stays: the next flush hands the same sessions again
	}
	clear(ix.touched)
	return nil
}

// syncEach has every consumer make its state durable, each on a goroutine of
// its own (they share nothing: the search index and the usage ledger write their
// own files), and returns the error of the first one, in their order, that
// failed. A consumer after a failed one is synced too: a consumer ahead of the
// catalogs is one the contract allows (Resume), and the next flush hands every
// consumer the same sessions again.
func syncEach(cs []Consumer, refs []SessionRef) error {
	if len(cs) == 1 {
		return cs[0].Sync(refs)
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = c.Sync(refs)
		}()
	}
	errs[0] = cs[0].Sync(refs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// catchUpConsumersLocked prepares the consumers for a read of line unit u that goes
// on from u.tail.Offset (0 after a reset). A consumer that holds less of the unit
// than the indexer (attached later, or its state was lost) is first handed the
// lines it lacks; one that holds more (a crash between its Sync and the catalog
// write) skips what it has. A consumer whose position no longer matches the file's
// bytes starts over. It returns the function that hands each line of the read on.
func (ix *Indexer) catchUpConsumersLocked(f *os.File, u *unit, reset bool) (func(off int64, line []byte), error) {
	if len(ix.consumers) == 0 {
		return func(int64, []byte) {}, nil
	}
	ix.drainFeedsLocked()
	ref := ix.unitRef(u)
	from := make([]int64, len(ix.consumers)) // the offset each consumer needs lines from
	lowest := u.tail.Offset
	for i, c := range ix.consumers {
		if reset {
			c.Reset(ref)
			continue
		}
		off, fp, ok := c.Resume(ref)
		switch {
		case !ok:
			c.Reset(ref)
		case off == u.tail.Offset && u.tail.fpIs(fp):
			from[i] = off
		default:
			got, n, err := Fingerprint(f, off)
			ix.stats.BytesRead += n
			if err != nil {
				return nil, err
			}
			if got == fp {
				from[i] = off
			} else {
				c.Reset(ref)
			}
		}
		lowest = min(lowest, from[i])
	}
	feed := func(off int64, line []byte) {
		for i, c := range ix.consumers {
			if off >= from[i] {
				c.Line(ref, off, line)
			}
		}
	}
	if lowest < u.tail.Offset {
		// Only the consumers get these lines: the accumulator has them already.
		t := Tail{Offset: lowest}
		st, err := readLines(io.NewSectionReader(f, 0, u.tail.Offset), &t, func(off int64, line []byte) {
			line = bytes.TrimSpace(line)
			if len(line) > 0 && line[0] == '{' {
				feed(off, line)
			}
		})
		ix.stats.BytesRead += st.BytesRead
		if err != nil {
			return nil, err
		}
	}
	return feed, nil
}

// unitRefsLocked lists the units the indexer knows, for a reload to compare.
func (ix *Indexer) unitRefsLocked() map[string]UnitRef {
	if len(ix.consumers) == 0 {
		return nil
	}
	refs := make(map[string]UnitRef, ix.units.len())
	for u := range ix.units.all() {
		refs[u.rel] = ix.unitRef(u)
	}
	return refs
}

// removeGoneFromConsumersLocked tells the consumers about units that another
// writer removed while this indexer was not looking (a CLI delete while the daemon
// runs: the daemon reloads the catalogs, in which the unit no longer is), and has
// them make it durable.
func (ix *Indexer) removeGoneFromConsumersLocked(before map[string]UnitRef) error {
	ix.drainFeedsLocked()
	gone := false
	for urel, ref := range before {
		if ix.units.get(urel) != nil {
			continue
		}
		for _, c := range ix.consumers {
			c.Remove(ref)
		}
		ix.touched[urel] = true
		gone = true
	}
	if !gone {
		return nil
	}
	return ix.syncConsumersLocked()
}
