//go:build !unix

package search

// processCPU: no CPU time here (benchmarks report 0).
func processCPU() int64 { return 0 }
