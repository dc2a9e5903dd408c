package config

import (
	"math"
	"sort"
	"strconv"
)

// Price is what one model costs, in US dollars per million tokens (config
// "prices": {"<model>": {"input":3,"output":15,"cache_write":3.75,"cache_read":0.3}}).
// An absent field is 0.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"`
	CacheRead  float64 `json:"cache_read"`
}

// checkPrices reports a model without a name and every price that is negative or
// not finite.
func checkPrices(prices map[string]Price, add func(path, msg, got string)) {
	models := make([]string, 0, len(prices))
	for m := range prices {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		if m == "" {
			add("prices", "a model name must not be empty", `""`)
		}
		p := prices[m]
		for _, f := range []struct {
			name string
			v    float64
		}{{"input", p.Input}, {"output", p.Output}, {"cache_write", p.CacheWrite}, {"cache_read", p.CacheRead}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				add("prices."+strconv.Quote(m)+"."+f.name, "must be a non-negative number of dollars per million tokens", strconv.FormatFloat(f.v, 'g', -1, 64))
			}
		}
	}
}
