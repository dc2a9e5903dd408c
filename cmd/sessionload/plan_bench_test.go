package main

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// BenchmarkJanitorPlan times the janitor's pure planner over the catalog of a
// generated store (it lives here, beside the generator, because janitor/ has its own
// owners): retention 14 days at a moment when about half the sessions are due.
//
//	go test -run '^$' -bench JanitorPlan ./cmd/sessionload/
func BenchmarkJanitorPlan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			home := b.TempDir()
			st, err := gen.Plan(gen.DefaultRoot("wave", home), gen.Spec{Layout: "wave", Projects: max(n/100, 1), Sessions: n, Lines: 2, LineSize: 200, Subagents: 0.1, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Write(); err != nil {
				b.Fatal(err)
			}
			ix, err := indexer.New(indexer.Options{Source: "wave", Layout: "wave", Root: st.Root, StateDir: filepath.Join(home, "state")})
			if err != nil {
				b.Fatal(err)
			}
			if err := ix.Reconcile(); err != nil {
				b.Fatal(err)
			}
			var cands []janitor.Candidate
			for _, s := range ix.Sessions() {
				cands = append(cands, janitor.Candidate{Session: s, Paths: []string{s.File}, Bytes: s.SizeBytes, Mtime: indexer.ParseTime(s.LastActiveAt)})
			}
			now := gen.DefaultStart.Add(75 * 24 * time.Hour)
			p := janitor.Policy{Source: "wave", Retention: 14 * 24 * time.Hour, Action: "archive", WarnSize: 1 << 30, WarnCount: 500, ActiveGrace: time.Hour}
			b.ResetTimer()
			for b.Loop() {
				if acts := janitor.Plan(now, cands, p); len(acts) == 0 {
					b.Fatal("nothing planned")
				}
			}
		})
	}
}
