package indexer

import "strings"

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
