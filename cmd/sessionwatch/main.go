// Command sessionwatch keeps the session stores of AI coding agents indexed and
// tidy. See README.md for the commands; `sessionwatch help` lists them.
package main

import (
	"context"
	"os"
	"runtime/debug"
)

func main() {
	cmd := commandOf(os.Args[1:])
	if cmd == "list" || cmd == "show" || cmd == completeCmd {
		// A listing (or a completion) lives for milliseconds and frees nothing until it exits:
		// collecting garbage (an eighth of `list --all`) would cost more than it
		// saves. The soft limit bounds what it streams (a proof of the store,
		// the catalogs it prints); what holds every session in memory at
		// once raises it first (roomForSessions).
		tuneListGC()
	}
	if cmd == "reindex" {
		// A rebuild is a batch job whose live heap grows to the end of each
		// source (every session's accumulator, the ledger's and the search
		// index's records): collecting at 3× the live heap rather than 2× takes a
		// third of the collections (a fifth of its CPU at 100k sessions), and the
		// peak stays below what it was before each source's units were released
		// (BENCHMARKS.md, Scale).
		setGCPercent(200)
	}
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// envTunesGC says whether the environment sets GOGC or GOMEMLIMIT: the user's
// choice then wins over a command's own.
func envTunesGC() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}

// tuneListGC sets a listing's collector: off, under listMemLimit. A GOGC in the
// environment replaces the off, not the limit (GOGC=off alone would otherwise
// leave the listing with no bound at all); a GOMEMLIMIT replaces the limit and
// leaves the collector on (as GOGC, or Go's default, says), since the user's
// limit may be off.
func tuneListGC() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(listMemLimit)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
	}
}

// setGCPercent sets GOGC for this command, as debug.SetGCPercent does, unless the
// environment tunes the collector (envTunesGC); it returns what restores the
// value before.
func setGCPercent(p int) (restore func()) {
	if envTunesGC() {
		return func() {}
	}
	old := debug.SetGCPercent(p)
	return func() { debug.SetGCPercent(old) }
}

// commandOf names the command of a command line (its first word after the
// global flags, as run finds it: `sessionwatch --config F list` is a list);
// "" when there is none or the flags do not parse.
func commandOf(args []string) string {
	rest, err := (&env{}).globalFlags(args)
	if err != nil || len(rest) == 0 {
		return ""
	}
	return rest[0]
}
