// Command sessionwatch keeps the session stores of AI coding agents indexed and
// tidy. See README.md for the commands; `sessionwatch help` lists them.
package main

import (
	"context"
	"os"
	"runtime/debug"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "list" || os.Args[1] == "show" || os.Args[1] == completeCmd) {
		// A listing (or a completion) lives for milliseconds and frees nothing until it exits:
		// collecting garbage (an eighth of `list --all`) would cost more than it
		// saves. The soft limit still bounds a listing of a huge store.
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(256 << 20)
	}
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}
