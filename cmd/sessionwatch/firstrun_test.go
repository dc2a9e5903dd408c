package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/janitor"
)

// The README's first step on a machine where sessionwatch never ran archives
// nothing: it previews, and says how to apply it.
func TestRunOnceOnANewMachinePreviews(t *testing.T) {
	e := newEnv(t)
	var old []string
	for _, id := range []string{idOld, idYoung, idLocked} {
		old = append(old, e.agedSession("/work/first", id, 20*24*time.Hour))
	}
	_, errs, code := e.cli("run", "--once")
	if code != 0 {
		t.Fatalf("run --once = %d:\n%s", code, errs)
	}
	for _, p := range old {
		if !fileExists(p) {
			t.Errorf("first run --once archived %s", p)
		}
	}
	if ars, _ := janitor.ListArchives(e.archiveDir(), nil); len(ars) != 0 {
		t.Errorf("first run --once wrote %d archives", len(ars))
	}
	if !strings.Contains(errs, "preview") || !strings.Contains(errs, "sessionwatch clean") || strings.Count(errs, "would be archived") != 3 {
		t.Errorf("first run --once did not report the preview and how to apply it:\n%s", errs)
	}
	st, err := readStatusFile(e.state)
	if err != nil || st.Janitor == nil || !st.Janitor.Preview || st.Janitor.Archived != 3 {
		t.Errorf("status after the preview = %+v, %v", st, err)
	}
	out, _, _ := e.cli("status")
	if !strings.Contains(out, "preview") {
		t.Errorf("status does not say the last pass was a preview:\n%s", out)
	}

	_, errs, code = e.cli("run", "--once")
	if code != 0 {
		t.Fatalf("second run --once = %d:\n%s", code, errs)
	}
	for _, p := range old {
		if fileExists(p) {
			t.Errorf("second run --once kept %s", p)
		}
	}
	if !strings.Contains(errs, "sessionwatch list --archived") || !strings.Contains(errs, "sessionwatch restore") {
		t.Errorf("a pass that archived does not say how to see and undo it:\n%s", errs)
	}
}

func TestRunOnceFirstRunApply(t *testing.T) {
	e := newEnv(t)
	e.janitorConfig(`{"run_at_start":false,"schedule":"off","first_run":"apply"}`, "")
	old := e.agedSession("/work/first", idOld, 20*24*time.Hour)
	if _, errs, code := e.cli("run", "--once"); code != 0 || fileExists(old) || strings.Contains(errs, "preview") {
		t.Errorf("run --once with first_run apply = %d, kept %v:\n%s", code, fileExists(old), errs)
	}
	e.janitorConfig(`{"first_run":"soon"}`, "")
	if _, errs, code := e.cli("config", "check"); code != 2 || !strings.Contains(errs, `janitor.first_run: must be preview or apply (got "soon")`) {
		t.Errorf("config check with first_run soon = %d:\n%s", code, errs)
	}
}

// The marker and the journal both mean "ran before": either one is enough.
func TestFirstRunMarkerOrJournal(t *testing.T) {
	for _, name := range []string{janitor.FirstRunMarker, janitor.JournalName} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			old := e.agedSession("/work/first", idOld, 20*24*time.Hour)
			os.MkdirAll(e.state, 0o700)
			if err := os.WriteFile(filepath.Join(e.state, name), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, errs, code := e.cli("run", "--once"); code != 0 || fileExists(old) {
				t.Errorf("run --once with %s present = %d, kept %v:\n%s", name, code, fileExists(old), errs)
			}
		})
	}
}

func TestCleanJSONSaysPreviewOnlyForAutoPasses(t *testing.T) {
	e := newEnv(t)
	old := e.agedSession("/work/first", idOld, 20*24*time.Hour)
	out, errs, code := e.cli("clean", "--json")
	var rep janitor.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Preview || rep.Archived != 1 || fileExists(old) {
		t.Errorf("clean on a new machine = %d, %+v, kept %v:\n%s", code, rep, fileExists(old), errs)
	}
}
