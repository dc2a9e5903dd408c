package main

import (
	"strings"
	"testing"
	"time"
)

// TestPairsMedians: the cold rows judge the ratio of the medians of alternating
// runs, so one slow run of either side moves neither median, and each pair's own
// ratio is listed in run order.
func TestPairsMedians(t *testing.T) {
	run := func(wall time.Duration) scaleRun {
		return scaleRun{wall: wall, cpu: wall / 2, maxRSS: int64(wall / time.Millisecond)}
	}
	var p pairs
	p.add(run(2*time.Second), run(4*time.Second))
	p.add(run(9*time.Second), run(5*time.Second)) // a cat slowed by a neighbour
	p.add(run(2200*time.Millisecond), run(30*time.Second))
	cat, re, x := p.medians()
	if cat.wall != 2200*time.Millisecond || re.wall != 5*time.Second {
		t.Errorf("medians: cat %v, reindex %v; want 2.2s and 5s", cat.wall, re.wall)
	}
	if cat.cpu != 1100*time.Millisecond || re.cpu != 2500*time.Millisecond || re.maxRSS != 5000 {
		t.Errorf("medians of CPU and RSS: cat %v, reindex %v, %d; want 1.1s, 2.5s, 5000", cat.cpu, re.cpu, re.maxRSS)
	}
	if want := 5 / 2.2; x < want-1e-9 || x > want+1e-9 {
		t.Errorf("ratio of the medians = %v, want %v", x, want)
	}
	if got, want := p.each(), "2.00×, 0.56×, 13.64×"; got != want {
		t.Errorf("each pair = %q, want %q", got, want)
	}
	if p.a[1].wall != 9*time.Second || p.b[2].wall != 30*time.Second {
		t.Errorf("medians reordered the runs: %v %v", p.a, p.b)
	}
}

// TestUsageDailyVerdict: met needs both the ratio to ccusage and the memory bound;
// without a ccusage run only memory is judged, and the verdict says so.
func TestUsageDailyVerdict(t *testing.T) {
	daily := scaleRun{wall: 8 * time.Millisecond, maxRSS: 10 << 20}
	for _, c := range []struct {
		name  string
		daily scaleRun
		cc    *scaleRun
		want  string
	}{
		{"fast and small", daily, &scaleRun{wall: 2 * time.Second}, "**met**"},
		{"exactly 250x", daily, &scaleRun{wall: 250 * 8 * time.Millisecond}, "**met**"},
		{"too slow", daily, &scaleRun{wall: time.Second}, "**missed**"},
		{"too big", scaleRun{wall: 8 * time.Millisecond, maxRSS: 61 << 20}, &scaleRun{wall: 10 * time.Second}, "**missed**"},
		{"no RSS known", scaleRun{wall: 8 * time.Millisecond}, &scaleRun{wall: 10 * time.Second}, "**missed**"},
		{"no ccusage, small", daily, nil, "**met on memory only** (no ccusage: speed not judged)"},
		{"no ccusage, big", scaleRun{wall: time.Millisecond, maxRSS: 100 << 20}, nil, "**missed** (memory; no ccusage: speed not judged)"},
	} {
		if got := usageDailyVerdict(c.daily, c.cc); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if c.cc == nil && !strings.Contains(usageDailyVerdict(c.daily, c.cc), "not judged") {
			t.Errorf("%s: a verdict without ccusage does not say speed was not judged", c.name)
		}
	}
}
