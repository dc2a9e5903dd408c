package usage

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/sessionwatch/sessionwatch/config"
)

//go:embed prices.json
var embeddedPrices []byte

// PriceTable is the embedded, dated default table of model prices (dollars per
// million tokens).
type PriceTable struct {
	Date   string                  `json:"date"`
	Source string                  `json:"source"`
	Models map[string]config.Price `json:"models"`
}

// DefaultPrices returns the embedded table, parsed once (its Models map is
// shared: read it, do not change it).
func DefaultPrices() PriceTable { return defaultPrices() }

var defaultPrices = sync.OnceValue(func() PriceTable {
	var t PriceTable
	if err := json.Unmarshal(embeddedPrices, &t); err != nil {
		panic(fmt.Sprintf("embedded prices.json: %v", err)) // a build defect, caught by the tests
	}
	return t
})

// Prices finds a model's price: the config's prices first, then the embedded table;
// a name is tried as is, then without a date suffix (-20250929) or "-fast", then by
// the longest table name it starts with ("claude-sonnet-4-5-…" → "claude-sonnet-4-5").
type Prices struct {
	over  map[string]config.Price
	table map[string]config.Price
}

// NewPrices combines the embedded table with the config's overrides.
func NewPrices(over map[string]config.Price) *Prices {
	return &Prices{over: over, table: DefaultPrices().Models}
}

var dateSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-\d{8}$`) }) // compiled on first use, not at init

// Lookup returns the price of model; ok is false if neither table names it.
func (p *Prices) Lookup(model string) (config.Price, bool) {
	if pr, ok := p.over[model]; ok {
		return pr, true
	}
	name := strings.TrimSuffix(dateSuffix().ReplaceAllString(model, ""), "-fast")
	for _, m := range []map[string]config.Price{p.over, p.table} {
		if pr, ok := m[name]; ok {
			return pr, true
		}
	}
	for _, m := range []map[string]config.Price{p.over, p.table} {
		best := ""
		for k := range m {
			if strings.HasPrefix(name, k+"-") && len(k) > len(best) {
				best = k
			}
		}
		if best != "" {
			return m[best], true
		}
	}
	return config.Price{}, false
}

// Cost is what t costs at price pr, in dollars.
func Cost(pr config.Price, t Tokens) float64 {
	return (float64(t.Input)*pr.Input + float64(t.Output)*pr.Output +
		float64(t.CacheWrite)*pr.CacheWrite + float64(t.CacheRead)*pr.CacheRead) / 1e6
}
