package usage

import (
	"testing"

	"github.com/sessionwatch/sessionwatch/config"
)

func TestPricesLookup(t *testing.T) {
	if d := DefaultPrices(); d.Date == "" || len(d.Models) == 0 {
		t.Fatalf("embedded table %+v has no date or models", d)
	}
	p := NewPrices(map[string]config.Price{"glm-5": {Input: 1, Output: 2}, "gpt-5": {Input: 9}})
	tests := []struct {
		model string
		want  float64 // input price
		ok    bool
	}{
		{"claude-sonnet-4-5-20250929", 3, true},
		{"claude-opus-4-5", 5, true},
		{"claude-opus-4-20250514", 15, true},
		{"claude-sonnet-4-5-fast", 3, true},
		{"glm-5", 1, true},
		{"gpt-5", 9, true}, // the config wins
		{"gpt-5-codex", 1.25, true},
		{"mystery-model", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		pr, ok := p.Lookup(tc.model)
		if ok != tc.ok || pr.Input != tc.want {
			t.Errorf("Lookup(%q) = %+v, %v, want input %v, %v", tc.model, pr, ok, tc.want, tc.ok)
		}
	}
	if got := Cost(config.Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3}, Tokens{1e6, 1e6, 1e6, 1e6}); got != 22.05 {
		t.Errorf("Cost = %v, want 22.05", got)
	}
}
