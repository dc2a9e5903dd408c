// Command sessionwatch keeps the session stores of AI coding agents indexed and
// tidy. See README.md for the commands; `sessionwatch help` lists them.
package main

import (
	"context"
	"os"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}
