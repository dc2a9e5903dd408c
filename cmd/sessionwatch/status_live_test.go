package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// mustConfig is a config of no sources in state.
func mustConfig(t *testing.T, state string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"sources":[]}`, state, filepath.Join(state, "archive"))))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// statusJSON runs `status --json`.
func (e *testEnv) statusJSON() statusOut {
	e.t.Helper()
	out, errs, code := e.cli("status", "--json")
	var st statusOut
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		e.t.Fatalf("status --json = %d:\n%s%s", code, out, errs)
	}
	return st
}

func (st statusOut) sessions() int {
	n := 0
	for _, s := range st.Sources {
		n += s.Sessions
	}
	return n
}

// A new session shows in `status` within a second, not at the next 10 s refresh.
func TestStatusFollowsChanges(t *testing.T) {
	e := newEnv(t)
	e.agedSession("/work/live", idYoung, time.Hour)
	e.startDaemon()
	if st := e.statusJSON(); !st.Running || st.sessions() != 1 {
		t.Fatalf("status before = running %v, %d sessions", st.Running, st.sessions())
	}
	for i, id := range []string{idOld, idLocked} {
		start := time.Now()
		e.agedSession("/work/live", id, time.Hour)
		// Well under statusEvery (10 s): only a write prompted by the change makes it.
		waitFor(t, 5*time.Second, "status to count the new session", func() bool { return e.statusJSON().sessions() == 2+i })
		t.Logf("new session in status after %s", time.Since(start).Round(time.Millisecond))
	}
}

// Changes closer than statusMinGap are written together: a few writes a second
// at most, and the last change is always written.
func TestStatusWritesArePaced(t *testing.T) {
	state := t.TempDir()
	g, err := indexer.NewGroup(mustConfig(t, state), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{statePath: filepath.Join(state, "status.json"), started: time.Now()}
	writes, last := 0, time.Time{}
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		d.lastErr = "change " + strconv.Itoa(i)
		d.statusChanged(g, nil)
		select {
		case <-d.statusDue:
			d.writeStatus(g, nil, true)
		default:
		}
		if d.lastStatus != last {
			writes++
			last = d.lastStatus
		}
		time.Sleep(time.Millisecond)
	}
	if max := int(time.Second/statusMinGap) + 2; writes < 2 || writes > max {
		t.Errorf("%d status writes in 1s of constant change, want 2..%d", writes, max)
	}
	if d.statusDue != nil {
		<-d.statusDue
		d.writeStatus(g, nil, true)
	}
	st, err := readStatusFile(state)
	if err != nil || !strings.HasPrefix(st.LastError, "change ") || st.LastError != d.lastErr {
		t.Errorf("status file after the last change = %+v, %v; want lastError %q", st, err, d.lastErr)
	}
}

// status's janitor line is the last pass by anyone: a `clean` run while the
// daemon runs, even one that changed nothing.
func TestStatusJanitorLineCoversClean(t *testing.T) {
	e := newEnv(t)
	e.agedSession("/work/st", idOld, 20*24*time.Hour)
	e.startDaemon()
	if out, _, _ := e.cli("status"); !strings.Contains(out, "janitor: no run yet") {
		t.Errorf("status before any pass:\n%s", out)
	}
	if out, errs, code := e.cli("clean"); code != 0 {
		t.Fatalf("clean = %d:\n%s%s", code, out, errs)
	}
	var j janitorStatus
	st := e.statusJSON()
	if json.Unmarshal(st.Janitor, &j) != nil || j.LastRun == "" || j.Archived != 1 || j.BytesFreed == 0 {
		t.Errorf("status --json janitor after clean = %s", st.Janitor)
	}
	if out, _, _ := e.cli("status"); !strings.Contains(out, "retired 1 (archived 1, deleted 0)") {
		t.Errorf("status after clean:\n%s", out)
	}
	if _, errs, code := e.cli("clean"); code != 0 {
		t.Fatal(errs)
	}
	st = e.statusJSON()
	j = janitorStatus{}
	if json.Unmarshal(st.Janitor, &j) != nil || j.LastRun == "" || j.Archived != 0 {
		t.Errorf("status --json janitor after a clean that retired nothing = %s", st.Janitor)
	}
}
