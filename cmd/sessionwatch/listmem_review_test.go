package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/config"
)

// list of one project without a daemon holds every session of the project
// once ProveProject proves it (its rows): the soft memory limit is raised by
// then, as before anything else that holds every session, or a large project
// makes the collector run without pause under listMemLimit.
func TestListProjectRaisesMemoryLimitWhileHeld(t *testing.T) {
	e := newEnv(t)
	st, err := gen.Plan(e.root, gen.Spec{Layout: "wave", Projects: 1, Sessions: 3, Lines: 2, LineSize: 100, Seed: 7, Home: filepath.Join(e.home, "u")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	proj := st.Sessions[0].Project
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d: %s", code, errs)
	}
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	prev := debug.SetMemoryLimit(listMemLimit) // as main sets it for list
	defer debug.SetMemoryLimit(prev)
	var errb bytes.Buffer
	fresh := refreshForListing(&env{stdout: io.Discard, stderr: &errb}, cfg, scope{}, nil)
	if fresh == nil || len(fresh.bySource["wave"]) != 3 {
		t.Fatalf("the project was not proven (%v): %s", fresh, errb.String())
	}
	if got := debug.SetMemoryLimit(-1); got < 256<<20 {
		t.Errorf("memory limit while the project's sessions are held = %d MiB, want at least 256", got>>20)
	}
}
