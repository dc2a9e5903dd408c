//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

import "os"

// ttyWidth: no terminal size query on this platform; $COLUMNS still applies.
func ttyWidth(*os.File) int { return 0 }
