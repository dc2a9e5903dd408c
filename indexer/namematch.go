package indexer

import (
	"math"
	"path/filepath"
	"strings"
)

// The file-name tests of Classify, written out: Classify runs once per catalog
// session when a listing without a daemon loads the catalogs, and once per file
// a walk meets, and the regular expressions they replace cost a twentieth of
// such a listing. Each is held to its expression (waveFileRE, codexFileRE,
// llxprtFileRE) by FuzzFileNameMatchers; the expressions stay for what they
// capture.

// waveFileName: `^(subagent-)?<uuid>\.jsonl$`.
func waveFileName(name string) bool {
	name = strings.TrimPrefix(name, "subagent-")
	stem, ok := strings.CutSuffix(name, ".jsonl")
	return ok && claudeIsUUID(stem)
}

// codexFileName: `^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-<uuid>\.jsonl$`.
func codexFileName(name string) bool {
	const stamp = "dddd-dd-ddTdd-dd-dd-" // d: an ASCII digit; anything else: itself
	rest, ok := strings.CutPrefix(name, "rollout-")
	if !ok || len(rest) < len(stamp) {
		return false
	}
	for i := 0; i < len(stamp); i++ {
		c := rest[i]
		if stamp[i] == 'd' {
			if c < '0' || c > '9' {
				return false
			}
		} else if c != stamp[i] {
			return false
		}
	}
	stem, ok := strings.CutSuffix(rest[len(stamp):], ".jsonl")
	return ok && claudeIsUUID(stem)
}

// llxprtFileName: `^session-[A-Za-z0-9_-]+\.jsonl$`.
func llxprtFileName(name string) bool {
	rest, ok := strings.CutPrefix(name, "session-")
	if !ok {
		return false
	}
	stem, ok := strings.CutSuffix(rest, ".jsonl")
	if !ok || stem == "" {
		return false
	}
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isClean reports whether filepath.Clean(p) == p, without Clean's copy in the
// common case: a path with no empty, "." or ".." element and no trailing
// separator is its own clean form; anything else asks Clean.
func isClean(p string) bool {
	const sep = filepath.Separator
	if p == "" || p[len(p)-1] == sep || sep != '/' {
		return filepath.Clean(p) == p
	}
	start := 0
	if p[0] == sep {
		start = 1
	}
	for i := start; i <= len(p); i++ {
		if i < len(p) && p[i] != sep {
			continue
		}
		if el := p[start:i]; el == "" || el == "." || el == ".." {
			return filepath.Clean(p) == p
		}
		start = i + 1
	}
	return true
}

// parseUint is strconv.ParseUint(string(b), 10, 64) == nil for b of ASCII
// digits, without the string: false when b is empty, holds anything but
// digits, or overflows.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseInt is parseUint for an optional '-' and digits, within int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n, ok := parseUint(b)
	switch {
	case !ok:
		return 0, false
	case neg && n <= 1<<63:
		return -int64(n), true // -(1<<63) wraps to itself: MinInt64
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}
