package main

import (
	"encoding/json"
	"os"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
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
}

// writeStatus refreshes the status file (errors are ignored: status is advisory).
func (d *daemon) writeStatus(g *indexer.Group, w *watcher.Watcher, running bool) {
	st := statusFile{Running: running, PID: os.Getpid(), StartedAt: indexer.FormatTime(d.started), UpdatedAt: indexer.FormatTime(time.Now()), LastError: d.lastErr}
	if g != nil {
		for _, ix := range g.Indexers() {
			s := ix.Stats()
			_, err := os.Stat(ix.Root())
			o := ix.Options()
			st.Sources = append(st.Sources, sourceStatus{Name: o.Source, Layout: o.Layout, Root: o.Root, Present: err == nil,
				Projects: s.Projects, Sessions: s.Sessions, Bytes: s.Bytes, Rescans: s.Reconciles, BytesRead: s.BytesRead})
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
