package indexer

import (
	"regexp"
	"sync"
)

// lazyRE compiles a regular expression on first use rather than at package
// init: every command pays for the init of every package it links, and most
// never use a given expression (`usage --statusline` runs in a few ms).
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
