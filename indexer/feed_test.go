package indexer

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// gateLog is a callLog whose first Reset waits until another consumer has been
// handed done units (or a deadline passes, which it records).
type gateLog struct {
	callLog
	other    *countLog
	need     int32
	waited   bool
	timedOut bool
	got      int32 // the other's done units when the deadline passed
}

func (g *gateLog) Reset(u UnitRef) {
	if !g.waited {
		g.waited = true
		deadline := time.Now().Add(10 * time.Second)
		for g.other.done.Load() < g.need {
			if time.Now().After(deadline) {
				g.timedOut, g.got = true, g.other.done.Load()
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	g.callLog.Reset(u)
}

// countLog is a callLog that counts its Done calls for another goroutine.
type countLog struct {
	callLog
	done atomic.Int32
}

func (c *countLog) Done(u UnitRef, off int64, fp string) {
	c.callLog.Done(u, off, fp)
	c.done.Add(1)
}

// TestFeedsLetConsumersRunApart: in a pass read on workers, each consumer is
// called on a goroutine of its own, so one busy with a unit holds up neither
// the walk nor the other consumers (a walk that made every call itself, as
// before, never hands the second consumer a unit while the first is busy with
// the first unit). Each still sees every unit's calls, in walk order.
func TestFeedsLetConsumersRunApart(t *testing.T) {
	defer func(m, w int) { prefetchMin, prefetchWorkers = m, w }(prefetchMin, prefetchWorkers)
	prefetchMin, prefetchWorkers = 1, 2
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 40)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	counter := &countLog{}
	gate := &gateLog{other: counter, need: 20}
	ix.consumers = append(ix.consumers, gate, counter)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if ix.prefetched < 20 {
		t.Fatalf("%d units read on workers, want 20 or more", ix.prefetched)
	}
	if gate.timedOut {
		t.Fatalf("the second consumer got %d units while the first was busy with its first, want %d", gate.got, gate.need)
	}
	// Both saw the same calls but the syncs, in the same order.
	if len(gate.calls) != len(counter.calls) || len(gate.calls) == 0 {
		t.Fatalf("%d and %d calls", len(gate.calls), len(counter.calls))
	}
	for i := range gate.calls {
		if gate.calls[i] != counter.calls[i] {
			t.Fatalf("call %d: %.100q and %.100q", i, gate.calls[i], counter.calls[i])
		}
	}
	if got := ix.Stats().Sessions; got != 40 {
		t.Errorf("%d sessions indexed, want 40", got)
	}
}
