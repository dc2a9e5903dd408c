package search

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkSummarizeRuns: summarize against refSummarize (the summary before
// the one-pass merge) on 200,000 docs of 50 sessions whose docs come in runs
// of 1, 4, 40 and 4,000 (a session appended to across many flushes is in many
// short runs after merges), a third of them holding the term.
func BenchmarkSummarizeRuns(b *testing.B) {
	for _, runLen := range []int{1, 4, 40, 4000} {
		rng := rand.New(rand.NewPCG(3, 4))
		var w sumWriter
		var tl termList
		for d := range uint32(200_000) {
			ln := uint16(100 + rng.IntN(1000))
			w.doc(&docRec{Unit: d / uint32(runLen) % 50, Len: ln, Time: d})
			if rng.IntN(3) == 0 {
				tl.add(d, uint32(1+rng.IntN(int(ln)/50+1)))
			}
		}
		b.Run("new/"+strconv.Itoa(runLen), func(b *testing.B) {
			for range b.N {
				w.summarize(tl.buf, tl.n)
			}
		})
		b.Run("ref/"+strconv.Itoa(runLen), func(b *testing.B) {
			for range b.N {
				w.refSummarize(tl.buf, tl.n)
			}
		})
	}
}
