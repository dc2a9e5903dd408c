//go:build long

package main

import (
	"testing"
	"time"
)

// TestCrashAndConvergeLong kills the daemon 300 times while 600 sessions are
// appended to and new projects appear. Run it with
//
//	go test -tags long -run CrashAndConvergeLong -timeout 30m ./cmd/sessionwatch
func TestCrashAndConvergeLong(t *testing.T) {
	for _, seed := range []uint64{11, 12, 13} {
		runCrash(t, crashPlan{sessions: 600, projects: 30, late: 150, kills: 300, maxUp: 1500 * time.Millisecond, rate: 500, seed: seed})
	}
}

// TestCrashDuringJanitorAndRestoreLong kills the daemon 900 times during
// janitor passes and `restore` 150 times while it writes. Run it with
//
//	go test -tags long -run CrashDuringJanitorAndRestoreLong -timeout 60m ./cmd/sessionwatch
func TestCrashDuringJanitorAndRestoreLong(t *testing.T) {
	runJanitorCrash(t, janitorCrashPlan{kills: 900, restores: 150, maxUp: 1200 * time.Millisecond, old: 60, perKill: 1, big: 4, live: 8, seed: 21})
}
