package usage

import (
	"bytes"
	"math/rand"
	"testing"
)

// escapedLess must order two strings exactly as their fields written by
// appendField compare: the summary's S rows are sorted by it and searched by
// the escaped bytes.
func TestEscapedLessOrdersAsWritten(t *testing.T) {
	alphabet := []byte{'\\', '\t', '\n', '\r', 'a', 'n', 't', 'r', '[', ']', 0, 1, '\\' + 1, 0xff, '-', '0'}
	rng := rand.New(rand.NewSource(7))
	word := func() string {
		b := make([]byte, rng.Intn(6))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 200000; i++ {
		a, b := word(), word()
		if i%3 == 0 {
			b = a + word() // a shared prefix
		}
		want := bytes.Compare(appendField(nil, a), appendField(nil, b)) < 0
		if got := escapedLess(a, b); got != want {
			t.Fatalf("escapedLess(%q, %q) = %v, the written fields compare %v", a, b, got, want)
		}
	}
}
