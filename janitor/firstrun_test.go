package janitor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFirstAutoPassPreviews(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	old := f.session("/proj/a", idOld, 30*day)
	f.index()
	j := f.janitor()
	rep, err := j.RunOnce(context.Background(), Overrides{Auto: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Preview || !rep.DryRun || rep.Archived != 1 || !exists(old) {
		t.Fatalf("first auto pass = preview %v dry %v archived %d, file kept %v; want a preview that would archive 1 and keeps it",
			rep.Preview, rep.DryRun, rep.Archived, exists(old))
	}
	if ars, _ := ListArchives(f.archive, nil); len(ars) != 0 {
		t.Errorf("preview wrote %d archives", len(ars))
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "preview") || !strings.Contains(logs, "sessionwatch clean") {
		t.Errorf("preview log does not say how to apply it:\n%s", logs)
	}
	if _, err := os.Lstat(filepath.Join(f.state, FirstRunMarker)); err != nil {
		t.Errorf("no first-run marker after the preview: %v", err)
	}
	p, ok, err := LastPass(f.state)
	if err != nil || !ok || !p.Preview || p.Retired != 1 || p.Archived != 1 {
		t.Errorf("LastPass after the preview = %+v, %v, %v", p, ok, err)
	}
	// The preview changed nothing, so it journaled no action: only its pass line.
	entries, err := ReadJournal(filepath.Join(f.state, JournalName))
	if err != nil || len(entries) != 1 || entries[0].Action != KindPass {
		t.Errorf("journal after the preview = %+v, %v; want one pass line", entries, err)
	}

	rep, err = j.RunOnce(context.Background(), Overrides{Auto: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Preview || rep.Archived != 1 || exists(old) {
		t.Fatalf("second auto pass = preview %v archived %d, file kept %v; want it archived", rep.Preview, rep.Archived, exists(old))
	}
	if logs := f.logs.String(); !strings.Contains(logs, "list --archived") || !strings.Contains(logs, "sessionwatch restore") {
		t.Errorf("a pass that archived does not say how to see and undo it:\n%s", logs)
	}
	if p, ok, _ := LastPass(f.state); !ok || p.Preview || p.Archived != 1 {
		t.Errorf("LastPass after the second pass = %+v, %v", p, ok)
	}
}

func TestFirstRunApplyAndExplicitPasses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		janitor string
		o       Overrides
	}{
		{"first_run apply", `{"run_at_start":false,"schedule":"off","first_run":"apply"}`, Overrides{Auto: true}},
		{"clean applies on a new machine", `{"run_at_start":false,"schedule":"off"}`, Overrides{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.janitor, "")
			old := f.session("/proj/a", idOld, 30*day)
			f.index()
			rep, err := f.janitor().RunOnce(context.Background(), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Preview || rep.Archived != 1 || exists(old) {
				t.Errorf("first pass = preview %v archived %d, file kept %v; want it archived", rep.Preview, rep.Archived, exists(old))
			}
		})
	}
}

func TestDryRunDoesNotEndTheFirstRun(t *testing.T) {
	f := newFixture(t, `{"run_at_start":false,"schedule":"off"}`, "")
	old := f.session("/proj/a", idOld, 30*day)
	f.index()
	j := f.janitor()
	if _, err := j.RunOnce(context.Background(), Overrides{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(f.state, JournalName)); err == nil {
		t.Errorf("a dry run wrote the journal")
	}
	rep, err := j.RunOnce(context.Background(), Overrides{Auto: true})
	if err != nil || !rep.Preview || !exists(old) {
		t.Errorf("auto pass after a dry run = preview %v, file kept %v, %v; want a preview", rep.Preview, exists(old), err)
	}
}

func TestLastPassReadsTheEnd(t *testing.T) {
	state := t.TempDir()
	if _, ok, err := LastPass(state); ok || err != nil {
		t.Errorf("LastPass without a journal = %v, %v", ok, err)
	}
	var b strings.Builder
	b.WriteString(`{"time":"2026-01-01T00:00:00Z","action":"pass","source":"","id":"","file":"","bytes":0,"reason":"","retired":1,"archived":1}` + "\n")
	pad := `{"time":"2026-01-02T00:00:00Z","action":"archive","actionId":"x","phase":"intent","source":"wave","id":"` + strings.Repeat("p", 200) + `","file":"f","bytes":1,"reason":"r"}` + "\n"
	for b.Len() < 3*lastPassTail {
		b.WriteString(pad)
	}
	path := filepath.Join(state, JournalName)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// The only pass line is far before the tail LastPass reads first.
	p, ok, err := LastPass(state)
	if err != nil || !ok || p.Archived != 1 || p.Time != "2026-01-01T00:00:00Z" {
		t.Fatalf("LastPass = %+v, %v, %v", p, ok, err)
	}
	// A newer pass line with fields we do not know, then a torn last line.
	fd, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fd.WriteString(`{"time":"2026-02-01T00:00:00Z","action":"pass","actionId":"y","extra":{"a":1},"source":"","id":"","file":"","bytes":5,"reason":"","retired":2,"deleted":2}` + "\n" + `{"time":"2026-03-01T00:00:00Z","action":"pa`)
	fd.Close()
	p, ok, err = LastPass(state)
	if err != nil || !ok || p.Deleted != 2 || p.Bytes != 5 {
		t.Errorf("LastPass after a newer line = %+v, %v, %v", p, ok, err)
	}
}

// withoutPasses leaves out the lines that end passes (PassEntry).
func withoutPasses(js []JournalEntry) []JournalEntry {
	var out []JournalEntry
	for _, e := range js {
		if e.Action != KindPass {
			out = append(out, e)
		}
	}
	return out
}
