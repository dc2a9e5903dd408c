package main

import (
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// busyRecorder is a consumer with background work: it counts Busy holds and
// Settle calls.
type busyRecorder struct {
	indexer.Consumer // nil: only Busy and Settle are called
	held, settled    int
}

func (b *busyRecorder) Busy() func() {
	b.held++
	return func() { b.held-- }
}

func (b *busyRecorder) Settle() { b.settled++ }

// plainConsumer has no background work.
type plainConsumer struct{ indexer.Consumer }

// TestHoldBusyAndSettle: the daemon holds every consumer with background work
// busy while it handles a batch and releases it after; it settles them once;
// a consumer without background work is left alone.
func TestHoldBusyAndSettle(t *testing.T) {
	a, b := &busyRecorder{}, &busyRecorder{}
	cs := []indexer.Consumer{a, plainConsumer{}, b}
	release := holdBusy(cs)
	if a.held != 1 || b.held != 1 {
		t.Fatalf("while a batch is handled: held %d, %d; want 1, 1", a.held, b.held)
	}
	release()
	if a.held != 0 || b.held != 0 {
		t.Fatalf("after the batch: held %d, %d; want 0, 0", a.held, b.held)
	}
	settleConsumers(cs)
	if a.settled != 1 || b.settled != 1 {
		t.Fatalf("settled %d, %d; want 1, 1", a.settled, b.settled)
	}
}
