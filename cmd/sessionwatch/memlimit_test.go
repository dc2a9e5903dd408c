package main

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestSoftLimit(t *testing.T) {
	const limit = 50 << 20
	tests := []struct {
		name string
		live uint64
		over int
		want int64
	}{
		{"empty heap", 0, 0, limit},
		{"small heap", 20 << 20, 0, limit},
		{"at the headroom", 40 << 20, 0, limit},
		{"past the headroom once: a burst, the limit holds", 40<<20 + 1, 1, limit},
		{"past the headroom twice", 200 << 20, stepAsideAfter - 1, limit},
		{"past the headroom for good: the limit steps aside", 40<<20 + 1, stepAsideAfter, math.MaxInt64},
		{"heap far above the limit", 200 << 20, stepAsideAfter + 5, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := softLimit(limit, tt.live, tt.over); got != tt.want {
			t.Errorf("%s: softLimit(%d, %d, %d) = %d, want %d", tt.name, limit, tt.live, tt.over, got, tt.want)
		}
	}
}

// The governor sets the limit after every collection until stopped, and never
// after.
func TestMemGovernorFollowsCollections(t *testing.T) {
	var calls atomic.Int64
	var last atomic.Int64
	g := newMemGovernor(1<<40, func(v int64) int64 {
		calls.Add(1)
		last.Store(v)
		return 0
	})
	g.arm()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("governor called %d times after collections, want at least 3", calls.Load())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := last.Load(); got != 1<<40 {
		t.Errorf("limit set = %d, want the configured %d (the test's heap is far below it)", got, int64(1<<40))
	}
	g.stop()
	runtime.GC() // runs a finalizer armed before the stop, which must not re-arm
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	n := calls.Load()
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if got := calls.Load(); got != n {
		t.Errorf("governor called %d times after stop, want 0", got-n)
	}
	if got := last.Load(); got != math.MaxInt64 {
		t.Errorf("limit after stop = %d, want none (%d)", got, int64(math.MaxInt64))
	}
}
