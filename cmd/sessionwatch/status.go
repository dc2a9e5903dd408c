package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
	"github.com/sessionwatch/sessionwatch/watcher"
)

// statusFile is what the daemon keeps fresh in <state_dir>/status.json.
type statusFile struct {
	Running   bool           `json:"running"`
	PID       int            `json:"pid"`
	StartedAt string         `json:"startedAt"`
	UpdatedAt string         `json:"updatedAt"`
	Sources   []sourceStatus `json:"sources"`
	Watches   int            `json:"watches"`
	Unwatched int            `json:"unwatched"`
	Rescans   int            `json:"rescans"`
	Reasons   map[string]int `json:"rescanReasons,omitempty"`
	WatchErr  string         `json:"watchError,omitempty"`
	LastError string         `json:"lastError,omitempty"`
	// Janitor is the last janitor pass (nil before the first one).
	Janitor *janitorStatus `json:"janitor,omitempty"`
	// Warnings are the last pass's warnings (projects over warn_size or warn_count).
	Warnings []string `json:"warnings,omitempty"`
}

// janitorStatus is the last janitor pass as `status --json` shows it (SPEC §6).
type janitorStatus struct {
	LastRun      string `json:"lastRun"`
	Retired      int    `json:"retired"`
	Archived     int    `json:"archived"`
	Deleted      int    `json:"deleted"`
	SkippedInUse int    `json:"skippedInUse"`
	BytesFreed   int64  `json:"bytesFreed"`
	DryRun       bool   `json:"dryRun,omitempty"`
	Preview      bool   `json:"preview,omitempty"` // a first-run preview: nothing changed
	Errors       int    `json:"errors,omitempty"`
}

// setJanitor keeps a pass's report for the status file.
func (d *daemon) setJanitor(r janitor.Report) {
	d.janitor = &janitorStatus{LastRun: indexer.FormatTime(r.Time), Retired: r.Retired, Archived: r.Archived, Deleted: r.Deleted,
		SkippedInUse: r.SkippedInUse, BytesFreed: r.BytesFreed, DryRun: r.DryRun, Preview: r.Preview, Errors: len(r.Errors)}
	d.warnings = d.warnings[:0]
	for _, w := range r.Warnings {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: %s (hint: %s)", w.Source, w.Message, w.Hint))
	}
}

type sourceStatus struct {
	Name      string `json:"name"`
	Layout    string `json:"layout"`
	Root      string `json:"root"`
	Present   bool   `json:"present"`
	Projects  int    `json:"projects"`
	Sessions  int    `json:"sessions"`
	Bytes     int64  `json:"bytes"`
	Watches   int    `json:"watches"`
	Rescans   int    `json:"rescans"`
	BytesRead int64  `json:"bytesRead"`
	// WriteFailures counts failed catalog and native index writes (each is
	// retried with backoff until it succeeds).
	WriteFailures int `json:"writeFailures,omitempty"`
}

// statusMinGap is the least time between two writes of the status file that
// changes prompt (at most four a second), so `status` follows the daemon within
// a second without an fsync per appended line.
const statusMinGap = 250 * time.Millisecond

// statusSig is what the status file shows that a flush or a rescan changes:
// per source its sessions, projects, bytes and rescans; the watches; the last
// error. Two equal signatures need no new write.
func (d *daemon) statusSig(g *indexer.Group, w *watcher.Watcher) string {
	b := make([]byte, 0, 128)
	for _, ix := range g.Indexers() {
		s := ix.Stats()
		b = fmt.Appendf(b, "%d/%d/%d/%d;", s.Sessions, s.Projects, s.Bytes, s.Reconciles)
	}
	if w != nil {
		ws := w.Stats()
		b = fmt.Appendf(b, "%d/%d/%d;", ws.Watches, ws.Unwatched, ws.Rescans)
	}
	return string(append(b, d.lastErr...))
}

// statusChanged writes the status file when what it shows changed: at once,
// or, within statusMinGap of the last write, when statusDue fires.
func (d *daemon) statusChanged(g *indexer.Group, w *watcher.Watcher) {
	if d.statusDue != nil || d.statusSig(g, w) == d.sig {
		return
	}
	if wait := statusMinGap - time.Since(d.lastStatus); wait > 0 {
		d.statusDue = time.After(wait)
		return
	}
	d.writeStatus(g, w, true)
}

// writeStatus refreshes the status file (errors are ignored: status is advisory).
func (d *daemon) writeStatus(g *indexer.Group, w *watcher.Watcher, running bool) {
	d.statusDue, d.lastStatus = nil, time.Now()
	if g != nil {
		d.sig = d.statusSig(g, w)
	}
	st := statusFile{Running: running, PID: os.Getpid(), StartedAt: indexer.FormatTime(d.started), UpdatedAt: indexer.FormatTime(time.Now()), LastError: d.lastErr,
		Janitor: d.janitor, Warnings: d.warnings}
	if g != nil {
		for _, ix := range g.Indexers() {
			s := ix.Stats()
			_, err := os.Stat(ix.Root())
			o := ix.Options()
			st.Sources = append(st.Sources, sourceStatus{Name: o.Source, Layout: o.Layout, Root: o.Root, Present: err == nil,
				Projects: s.Projects, Sessions: s.Sessions, Bytes: s.Bytes, Rescans: s.Reconciles, BytesRead: s.BytesRead, WriteFailures: s.WriteFailures})
		}
	}
	if w != nil {
		ws := w.Stats()
		for i := range st.Sources {
			st.Sources[i].Watches = ws.RootWatches[st.Sources[i].Root]
		}
		st.Watches, st.Unwatched, st.Rescans, st.Reasons, st.WatchErr = ws.Watches, ws.Unwatched, ws.Rescans, ws.RescanReasons, ws.WatchError
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return
	}
	indexer.WriteFileAtomic(d.statePath, append(data, '\n'))
}
