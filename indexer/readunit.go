package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// statIdentity is a file's device and inode (0, 0 where the system gives none).
func statIdentity(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// updateUnitLocked brings one unit up to date with its file and, if that changed
// anything, re-reads the units related to it.
func (ix *Indexer) updateUnitLocked(urel string, kind UnitKind) error {
	changed, err := ix.readUnitLocked(urel, kind)
	if changed {
		if rerr := ix.relatedLocked(urel); err == nil {
			err = rerr
		}
	}
	return err
}

// relatedLocked force-re-reads the units related to urel (Relater).
func (ix *Indexer) relatedLocked(urel string) error {
	r, ok := ix.layout.(Relater)
	if !ok {
		return nil
	}
	var err error
	for _, rel := range r.Related(urel) {
		ix.forceLocked(rel)
		if _, k := ix.layout.Classify(rel); k != UnitNone {
			if _, rerr := ix.readUnitLocked(rel, k); rerr != nil && err == nil {
				err = rerr
			}
		}
	}
	return err
}

// readUnitLocked reads one unit; changed reports whether its sessions may differ.
func (ix *Indexer) readUnitLocked(urel string, kind UnitKind) (changed bool, err error) {
	path := ix.unitPath(urel)
	switch kind {
	case UnitLines:
		return ix.updateLinesLocked(urel, path)
	case UnitDocument:
		return ix.updateDocumentLocked(urel, path)
	}
	return false, nil
}

func (ix *Indexer) updateLinesLocked(urel, path string) (bool, error) {
	ll, ok := ix.layout.(LineLayout)
	if !ok {
		return false, fmt.Errorf("layout %s has no line parser", ix.layout.Name())
	}
	if ix.fetchedLocked(urel) {
		return true, nil // read and folded by a worker (prefetch.go)
	}
	if u := ix.units.get(urel); u != nil && u.hasState() && !ix.verifying {
		// Unchanged by its stat: one lstat, no open.
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == u.tail.Size && fi.ModTime().UnixNano() == u.tail.Mtime && fi.Size() >= u.tail.Offset {
			// A consumer behind the catalog (it was loaded from another
			// writer's flush: a restore or clean while the daemon runs) is
			// handed what it lacks below.
			if dev, ino := statIdentity(fi); dev == u.tail.Dev && ino == u.tail.Ino && !ix.consumersBehindLocked(u) {
				return false, nil
			}
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0) // a FIFO does not block: not regular, below
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return ix.removeUnitLocked(urel), nil
		}
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return ix.removeUnitLocked(urel), nil
	}
	dev, ino := statIdentity(fi)
	u := ix.units.get(urel)
	if u == nil {
		u = &unit{rel: urel, kind: UnitLines}
		ix.units.put(u)
	}
	mtime := fi.ModTime().UnixNano()
	same := u.hasState() && u.tail.Dev == dev && u.tail.Ino == ino && fi.Size() >= u.tail.Offset
	unchanged := same && u.tail.Size == fi.Size() && u.tail.Mtime == mtime
	if unchanged {
		if ix.verifying {
			// The periodic rescan also proves the consumed bytes unchanged at
			// their two ends: a rewrite that kept size and mtime is caught
			// within an hour.
			ok, err := ix.fingerprintsMatchLocked(f, u.tail.Offset, u.tail.Fp(), u.tail.Hfp())
			if err != nil {
				return false, fmt.Errorf("read %s: %w", path, err)
			}
			if !ok {
				same, unchanged = false, false
			}
		}
		if unchanged && !ix.consumersBehindLocked(u) {
			return false, nil // unchanged: stat only
		}
	}
	// The same size with another mtime is a rewrite in place, not an append.
	reset := !same || (!unchanged && fi.Size() == u.tail.Size)
	oldOffset := u.tail.Offset
	if !reset && oldOffset > 0 {
		// Same inode, grown: make sure the consumed bytes are still there (a
		// truncate-and-regrow between two looks leaves the size past the offset;
		// a rewrite of the start shows in the head).
		ok, err := ix.fingerprintsMatchLocked(f, u.tail.Offset, u.tail.Fp(), u.tail.Hfp())
		if err != nil {
			return false, fmt.Errorf("read %s: %w", path, err)
		}
		reset = !ok
	}
	if !reset && !ix.decodeStateLocked(u) {
		reset = true
	}
	if reset {
		// New, replaced, rewritten or truncated: read from the start.
		u.setAcc(ll.NewAccumulator(urel))
		u.setState(nil)
		u.parked = false
		ix.setLazyKey(u, "")
		sskip := u.sskip()
		u.tail = newUnitTail(dev, ino) // no skipped lines of its own
		u.setSSkip(sskip)              // the parked sessions' stay theirs
		oldOffset = 0
	}
	feed, err := ix.catchUpConsumersLocked(f, u, reset)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	acc := u.acc()
	head := headCollector{from: oldOffset, sum: u.tail.Hfp()}
	rt := Tail{Offset: u.tail.Offset, LongLine: u.tail.LongLine()}
	skipped := u.skipped() // counted here, set once: each set copies the tail's rare part
	st, err := readLines(f, &rt, func(off int64, line []byte) {
		head.line(line)
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		if line[0] != '{' {
			skipped++
			return
		}
		if acc.Line(line) != nil {
			skipped++
		}
		feed(off, line)
	})
	u.tail.Offset = rt.Offset
	u.tail.SetLongLine(rt.LongLine)
	ix.stats.BytesRead += st.BytesRead
	u.setSkipped(skipped + st.Long)
	if err != nil {
		return true, fmt.Errorf("read %s: %w", path, err)
	}
	size := fi.Size()
	if end := u.tail.Offset; end > size {
		size = end
	}
	u.tail.Size = size
	u.tail.Mtime = readMtime(f, fi, u.tail.Offset)
	fp, n, err := Fingerprint(f, u.tail.Offset)
	ix.stats.BytesRead += n
	if err != nil {
		return true, fmt.Errorf("read %s: %w", path, err)
	}
	u.tail.SetFp(fp)
	// The head changes only while the offset is inside it (it was just verified
	// otherwise); the lines just read continue its hash.
	if oldOffset < headWindow {
		hfp, ok := "", false
		if st.Long == 0 && !rt.LongLine {
			hfp, ok = head.fingerprint(u.tail.Offset)
		}
		if !ok {
			hfp, n, err = HeadFingerprint(f, u.tail.Offset)
			ix.stats.BytesRead += n
			if err != nil {
				return true, fmt.Errorf("read %s: %w", path, err)
			}
		}
		u.tail.SetHfp(hfp)
	}
	if len(ix.consumers) > 0 {
		ix.drainFeedsLocked()
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			c.Done(ref, u.tail.Offset, fp)
		}
	}
	ix.summarizeLinesLocked(u, path)
	return true, nil
}

// decodeStateLocked decodes a restored unit's accumulator state, once; false
// means it cannot be decoded (the unit must be re-read from the start).
func (ix *Indexer) decodeStateLocked(u *unit) bool {
	ix.unparkLocked(u)
	if !u.hasState() {
		return false // forced: read again from the start
	}
	if u.state() == nil {
		return true
	}
	st := u.state()
	u.setState(nil)
	if len(st) > 0 && json.Unmarshal(st, u.acc()) != nil {
		ix.log.Warn("catalog state unreadable, re-reading", "unit", u.rel)
		ix.forceLocked(u.rel)
		return false
	}
	return true
}

// fingerprintsMatchLocked reports whether the bytes before t.Offset still hold
// what was indexed, by the tail fingerprint and (where one was recorded: catalogs
// of older versions have none) the head fingerprint.
func (ix *Indexer) fingerprintsMatchLocked(f *os.File, offset int64, tfp, thfp string) (bool, error) {
	fp, n, err := Fingerprint(f, offset)
	ix.stats.BytesRead += n
	if err != nil || fp != tfp {
		return false, err
	}
	if thfp == "" {
		return true, nil
	}
	hfp, n, err := HeadFingerprint(f, offset)
	ix.stats.BytesRead += n
	return hfp == thfp, err
}

func (ix *Indexer) summarizeLinesLocked(u *unit, path string) {
	ix.setLinesSessionLocked(u, ix.linesSession(u, path))
}

// linesSession is the session a line unit's accumulator makes of it, before its
// project is known. It reads nothing of the indexer's but its root and layout: a
// read worker calls it for a unit not installed yet (prefetch.go).
func (ix *Indexer) linesSession(u *unit, path string) *Session {
	t := u.tail.get()
	s := &Session{File: path, SizeBytes: t.Size, SkippedLines: u.skipped(), Tail: &t}
	u.acc().Summarize(s, FileFacts{Root: ix.rootDir, Unit: u.rel, Path: path, Size: t.Size, Mtime: time.Unix(0, t.Mtime)})
	s.Dir = ix.layout.ProjectDir(u.rel)
	st, err := accState(u.acc())
	if err == nil && string(st) != "{}" {
		s.Tail.State = st
	}
	s.acc = u.acc()
	return s
}

// setLinesSessionLocked makes s, from linesSession, the unit's session, under
// the project its session or parked sessions had.
func (ix *Indexer) setLinesSessionLocked(u *unit, s *Session) {
	if len(u.sessions()) == 1 {
		s.Project = u.sessions()[0].Project
	} else if u.skey != 0 && u.nsess == 1 {
		s.Project = ix.parkedProject(u)
	}
	ix.setSessionsLocked(u, []*Session{s})
	ix.hot = append(ix.hot, u)
}

func (ix *Indexer) updateDocumentLocked(urel, path string) (bool, error) {
	dl, ok := ix.layout.(DocumentLayout)
	if !ok {
		return false, fmt.Errorf("layout %s has no document parser", ix.layout.Name())
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return ix.removeUnitLocked(urel), nil
		}
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	dev, ino := statIdentity(fi)
	mtime := fi.ModTime().UnixNano()
	dep := ""
	if ds, ok := ix.layout.(DependencyStamper); ok {
		dep = ds.DepStamp(ix.rootDir, urel)
	}
	u := ix.units.get(urel)
	unchanged := u != nil && u.tail.Dev == dev && u.tail.Ino == ino && u.tail.Size == fi.Size() && u.tail.Mtime == mtime && u.tail.Dep() == dep
	if unchanged && !ix.consumersBehindLocked(u) {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	ix.stats.BytesRead += int64(len(data))
	facts := FileFacts{Root: ix.rootDir, Unit: urel, Path: path, Size: int64(len(data)), Mtime: fi.ModTime()}
	ss, err := dl.ParseDocument(facts, data)
	if err != nil {
		// Keep what we had: a half-written document must not drop sessions.
		return false, fmt.Errorf("parse %s: %w", path, err)
	}
	if unchanged {
		// Only a consumer attached since is behind: hand it the document.
		ix.drainFeedsLocked()
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			if off, fp, ok := c.Resume(ref); !ok || off != u.tail.Offset || !u.tail.fpIs(fp) {
				c.Document(ref, data, ix.sessionsOfLocked(u))
				c.Done(ref, u.tail.Offset, u.tail.Fp())
			}
		}
		return false, nil
	}
	if u == nil {
		u = &unit{rel: urel, kind: UnitDocument}
		ix.units.put(u)
	}
	sskip := u.sskip()
	u.tail = unitTail{Dev: dev, Ino: ino, Size: int64(len(data)), Offset: int64(len(data)), Mtime: mtime}
	u.tail.setRare("", "", dep, false)
	u.setSSkip(sskip) // the parked sessions' until setSessionsLocked
	old := map[string]string{}
	for _, s := range u.sessions() {
		old[s.ID] = s.Project
	}
	parkedIn := "" // parked: every session was filed under this project
	if u.skey != 0 {
		parkedIn = ix.parkedProject(u)
	}
	for _, s := range ss {
		t := u.tail.get()
		if s.Tail != nil {
			t.State, t.OwnProject = s.Tail.State, s.Tail.OwnProject
		}
		s.Tail = &t
		if s.File == "" {
			s.File = path
		}
		if s.SizeBytes == 0 {
			s.SizeBytes = int64(len(data))
		}
		s.Project = old[s.ID]
		if parkedIn != "" {
			s.Project = parkedIn
		}
		s.Dir = ix.layout.ProjectDir(urel)
	}
	ix.setSessionsLocked(u, ss)
	if len(ix.consumers) > 0 {
		ix.drainFeedsLocked()
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			c.Document(ref, data, ss)
			c.Done(ref, u.tail.Offset, u.tail.Fp())
		}
	}
	return true, nil
}
