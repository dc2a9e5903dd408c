package usage

import (
	"strings"
	"testing"
)

// fieldEscaper is appendField's escaping as a replacer: the oracle.
var fieldEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

func checkAppendField(t *testing.T, s string) {
	t.Helper()
	got := string(appendField([]byte("x"), s))
	if want := "x\t" + fieldEscaper.Replace(s); got != want {
		t.Fatalf("appendField(%q) = %q, want %q", s, got, want)
	}
}

// TestAppendFieldEscapes: every byte, alone and among others, at the start,
// the middle and the end of a field, escaped as the replacer escapes it.
func TestAppendFieldEscapes(t *testing.T) {
	for _, s := range []string{"", "plain", "a\tb", "\\", "end\r", "\nstart", "é\x00\x0b\x0c\x1f\\\\"} {
		checkAppendField(t, s)
	}
	for c := 0; c < 256; c++ {
		b := string([]byte{byte(c)})
		for _, s := range []string{b, "ab" + b, b + "cd", "ab" + b + "cd" + b} {
			checkAppendField(t, s)
		}
	}
}

func FuzzAppendField(f *testing.F) {
	for _, s := range []string{"", "/home/p", "a\tb\\c\nd\re", "\xff\x00"} {
		f.Add(s)
	}
	f.Fuzz(checkAppendField)
}
