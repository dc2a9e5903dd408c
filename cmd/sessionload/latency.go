package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// tracker measures append-to-index latency: each append is registered with the
// catalog that must show it and its unique timestamp; the tracker watches the
// catalog directories with fsnotify and, whenever a catalog is replaced, reads it
// and marks every pending append whose session now shows a lastActiveAt at or past
// the append's timestamp as seen.
type tracker struct {
	w *fsnotify.Watcher

	mu      sync.Mutex
	pending map[string]map[string][]pend // catalog path → session id → appends, oldest first
	n       int                          // appends pending
	lat     []time.Duration
	late    int // appends found by the periodic sweep rather than by an event
}

type pend struct {
	ts   string // lastActiveAt the catalog will show
	sent time.Time
}

func newTracker(dirs []string) (*tracker, error) {
	w, err := fsnotify.NewBufferedWatcher(1 << 14)
	if err != nil {
		return nil, err
	}
	t := &tracker{w: w, pending: map[string]map[string][]pend{}}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			w.Close()
			return nil, err
		}
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	go t.loop()
	return t, nil
}

func (t *tracker) close() { t.w.Close() }

// add registers an append whose session's catalog is catalog.
func (t *tracker) add(catalog, id string, ts time.Time, sent time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.pending[catalog]
	if m == nil {
		m = map[string][]pend{}
		t.pending[catalog] = m
	}
	m[id] = append(m[id], pend{ts: indexer.FormatTime(ts), sent: sent})
	t.n++
}

func (t *tracker) loop() {
	sweep := time.NewTicker(250 * time.Millisecond)
	defer sweep.Stop()
	for {
		select {
		case ev, ok := <-t.w.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == indexer.CatalogName && ev.Op&(fsnotify.Create|fsnotify.Write) != 0 {
				t.check(ev.Name, time.Now(), false)
			}
		case err, ok := <-t.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				t.sweep()
			}
		case <-sweep.C:
			t.sweep()
		}
	}
}

// sweep checks every catalog with pending appends: a safety net for an event that
// came before its append was registered. Appends found this way count as late.
func (t *tracker) sweep() {
	t.mu.Lock()
	var cats []string
	for c := range t.pending {
		cats = append(cats, c)
	}
	t.mu.Unlock()
	for _, c := range cats {
		t.check(c, time.Now(), true)
	}
}

var (
	idKey     = []byte(`"id":"`)
	activeKey = []byte(`"lastActiveAt":"`)
)

// check reads a catalog (one session per line) and settles the appends it shows.
func (t *tracker) check(catalog string, now time.Time, late bool) {
	t.mu.Lock()
	m := t.pending[catalog]
	t.mu.Unlock()
	if len(m) == 0 {
		return
	}
	data, err := os.ReadFile(catalog)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m = t.pending[catalog]
	for len(data) > 0 && len(m) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		id := field(line, idKey)
		ps, ok := m[string(id)]
		if !ok {
			continue
		}
		shown := string(field(line, activeKey))
		k := 0
		for k < len(ps) && ps[k].ts <= shown {
			t.lat = append(t.lat, now.Sub(ps[k].sent))
			k++
		}
		if k > 0 {
			t.n -= k
			if late {
				t.late += k
			}
			if k == len(ps) {
				delete(m, string(id))
			} else {
				m[string(id)] = ps[k:]
			}
		}
	}
	if len(m) == 0 {
		delete(t.pending, catalog)
	}
}

// field returns the string value after key in line (no unescaping: ids and times
// hold no escapes).
func field(line, key []byte) []byte {
	i := bytes.Index(line, key)
	if i < 0 {
		return nil
	}
	v := line[i+len(key):]
	if j := bytes.IndexByte(v, '"'); j >= 0 {
		return v[:j]
	}
	return nil
}

// wait blocks until no append is pending or timeout passes; it returns how many
// are still pending.
func (t *tracker) wait(timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		t.mu.Lock()
		n := t.n
		t.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// take returns the latencies measured since the last take, and the late count,
// and forgets whatever is still pending.
func (t *tracker) take() (lat []time.Duration, late, lost int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lat, late, lost = t.lat, t.late, t.n
	t.lat, t.late, t.n = nil, 0, 0
	clear(t.pending)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, late, lost
}

// quantile of sorted durations (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}
