package main

import (
	"io"
	"os"
	"strconv"
	"strings"
)

// termWidth is the width human tables fit in: $COLUMNS when set (also when
// piped: the user asked for it), else the terminal's width when w is one, else
// 0 (no limit beyond the fixed cuts, so a pipe gets what it always got).
func termWidth(w io.Writer) int {
	if c := strings.TrimSpace(os.Getenv("COLUMNS")); c != "" {
		if n, err := strconv.Atoi(c); err == nil && n > 0 {
			return n
		}
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	return ttyWidth(f)
}
