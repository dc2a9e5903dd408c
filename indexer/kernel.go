package indexer

import (
	"strconv"
	"strings"
)

// kernelAtLeast reports whether a Linux release string ("6.8.0-45-generic",
// "5.10.102.1-microsoft-standard-WSL2") names version major.minor or later. A
// string it cannot read is not.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err := strconv.Atoi(parts[0])
	if err != nil {
		return false
	}
	mi := parts[1]
	if i := strings.IndexFunc(mi, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mi = mi[:i]
	}
	n, err := strconv.Atoi(mi)
	if err != nil {
		return false
	}
	return ma > major || ma == major && n >= minor
}
