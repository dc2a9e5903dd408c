package indexer

import (
	"regexp"
	"strings"
	"testing"
)

// llxprtSafeID is the regexp it replaced, written out.
func TestLlxprtSafeIDIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
	cases := []string{"", "a", "A-z_9", "a b", "a\n", "ü", "a.b", strings.Repeat("x", 256), strings.Repeat("x", 257), "../x", "-_-"}
	for _, c := range cases {
		if got, want := llxprtSafeID(c), re.MatchString(c); got != want {
			t.Errorf("llxprtSafeID(%q) = %v, the regexp says %v", c, got, want)
		}
	}
}
