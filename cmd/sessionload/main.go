// Command sessionload generates synthetic agent session stores, appends to them at
// a given rate, and benchmarks sessionwatch against the agents' own ways of listing
// sessions.
//
//	sessionload gen    [store flags] ROOT          write a store
//	sessionload write  [store flags] [writer flags] ROOT   append to a store written by gen
//	sessionload scan   --mode headtail|full [--layout L] ROOT   list sessions as the agents do
//	sessionload bench  [bench flags]               the side-by-side benchmark (BENCHMARKS.md)
//
// Every store is deterministic for a seed. Run `sessionload COMMAND -h` for flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
