package main

import (
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// A daemon stopped (SIGTERM) while it waits for a writer that began before it
// exits at once and cleanly (0), without having opened the ledger or the
// search index, and leaves the writer's lock to the writer.
func TestDaemonStopsWhileWaitingForWriter(t *testing.T) {
	e, d, _ := daemonBehindWriter(t, nil)
	start := time.Now()
	code := d.stop()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the daemon took %v to stop", took)
	}
	if code != 0 {
		t.Fatalf("daemon stopped while waiting for a writer exits %d; stderr:\n%s", code, d.stderr)
	}
	if !indexer.WriterHeld(e.state) {
		t.Fatal("the writer's lock is not held after the daemon stopped")
	}
}
