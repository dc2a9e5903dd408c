package indexer

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzFileNameMatchers holds each written-out file-name test of Classify to the
// regular expression it replaces; the seeds run as a normal test.
func FuzzFileNameMatchers(f *testing.F) {
	const id = "0123abcd-ABCD-4ef0-89ab-cdef01234567"
	for _, s := range []string{
		"", id, id + ".jsonl", "subagent-" + id + ".jsonl", "subagent-" + id, "subagent-.jsonl",
		"subagent-subagent-" + id + ".jsonl", id + ".jsonl\n", id + ".json", "x" + id + ".jsonl",
		"0123abcd-ABCD-4ef0-89ab-cdef0123456g.jsonl", "0123abcd_ABCD-4ef0-89ab-cdef01234567.jsonl",
		"rollout-2025-01-02T03-04-05-" + id + ".jsonl", "rollout-2025-01-02T03-04-05-" + id + ".jsonl.tmp",
		"rollout-2025-1-02T03-04-05-" + id + ".jsonl", "rollout-2025-01-02t03-04-05-" + id + ".jsonl",
		"rollout-2025-01-02T03-04-05" + id + ".jsonl", "rollout-２025-01-02T03-04-05-" + id + ".jsonl",
		"rollout-", "rollout-2025-01-02T03-04-05-.jsonl",
		"session-a.jsonl", "session-.jsonl", "session-a_b-C9.jsonl", "session-a.b.jsonl", "session-é.jsonl",
		"session-a.jsonl/", "session-a.jsonlx", "xsession-a.jsonl", "session-" + id + ".jsonl",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, c := range []struct {
			what  string
			match func(string) bool
			re    func() interface{ MatchString(string) bool }
		}{
			{"wave", waveFileName, func() interface{ MatchString(string) bool } { return waveFileRE() }},
			{"codex", codexFileName, func() interface{ MatchString(string) bool } { return codexFileRE() }},
			{"llxprt", llxprtFileName, func() interface{ MatchString(string) bool } { return llxprtFileRE() }},
		} {
			if got, want := c.match(name), c.re().MatchString(name); got != want {
				t.Errorf("%s: %q: matcher says %v, the expression %v", c.what, name, got, want)
			}
		}
	})
}

// FuzzIsClean holds isClean to filepath.Clean.
func FuzzIsClean(f *testing.F) {
	for _, s := range []string{"", ".", "..", "/", "//", "a", "a/b", "a//b", "a/./b", "a/../b", "../a", "a/", "/a", "//a",
		"a/.", "a/..", "./a", ".a/b..", "a/.b/c", "/..", "/.", "a/b/c.jsonl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := isClean(p), filepath.Clean(p) == p; got != want {
			t.Errorf("isClean(%q) = %v, Clean gives %q", p, got, filepath.Clean(p))
		}
	})
}

// FuzzParseInt holds parseUint and parseInt to strconv on what tailLite gives
// them.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"", "-", "0", "-0", "007", "18446744073709551615", "18446744073709551616",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"+1", "1a", " 1", "99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := parseUint([]byte(s))
		wu, err := strconv.ParseUint(s, 10, 64)
		if ok != (err == nil) || ok && u != wu {
			t.Errorf("parseUint(%q) = %d, %v; strconv: %d, %v", s, u, ok, wu, err)
		}
		digits := strings.TrimPrefix(s, "-")
		if strings.HasPrefix(digits, "+") || strings.HasPrefix(digits, "-") {
			return // tailLite never passes a sign but one leading '-'
		}
		i, ok := parseInt([]byte(s))
		wi, err := strconv.ParseInt(s, 10, 64)
		if ok != (err == nil) || ok && i != wi {
			t.Errorf("parseInt(%q) = %d, %v; strconv: %d, %v", s, i, ok, wi, err)
		}
	})
}
