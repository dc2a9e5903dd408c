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

// compareSessions must be sessKey.less as a three-way comparison, and
// sortRows must order the B rows by rowKey.less: the summary's order.
func TestSortOrdersAsLess(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	row := func() SessionRow {
		return SessionRow{Session: pick("a", "a\tb", "a\\", "ab", "b", ""), Source: pick("claude", "codex"),
			Project: pick("/p", "/p/q", "/p\tq"), Type: pick("main", "subagent"), Model: pick("m", "m2", "")}
	}
	for i := 0; i < 100000; i++ {
		a, b := row(), row()
		want := 0
		switch {
		case sessKeyOf(&a).less(sessKeyOf(&b)):
			want = -1
		case sessKeyOf(&b).less(sessKeyOf(&a)):
			want = 1
		}
		if got := compareSessions(&a, &b); got != want {
			t.Fatalf("compareSessions(%+v, %+v) = %d, want %d", a, b, got, want)
		}
	}
	l := newLedger("")
	var ids []rowID
	seen := map[rowID]bool{}
	for i := 0; i < 2000; i++ {
		id := l.rowIDOf(rowKey{int32(rng.Intn(5)), pick("claude", "codex", "c"), pick("/p", "/p/q", "/p\tq", ""), pick("m", "m2", "")})
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	l.sortRows(ids)
	for i := 1; i < len(ids); i++ {
		if !l.rowKeyOf(ids[i-1]).less(l.rowKeyOf(ids[i])) {
			t.Fatalf("sortRows: %v before %v", l.rowKeyOf(ids[i-1]), l.rowKeyOf(ids[i]))
		}
	}
}
