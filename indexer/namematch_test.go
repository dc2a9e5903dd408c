package indexer

import "testing"

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
