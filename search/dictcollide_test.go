package search

import (
	"fmt"
	"testing"
)

// TestTermDictFullKeyCollision: two terms longer than 8 bytes with the same first
// 8 bytes, the same length and the same 24 bits of hash (found by search under
// this process's seed) are told apart by their bytes; bytes ≥0x80 and terms of
// exactly 8 and 9 bytes too.
func TestTermDictFullKeyCollision(t *testing.T) {
	seen := map[uint32]string{}
	var a, b string
	for i := 0; i < 1<<22 && a == ""; i++ {
		w := fmt.Sprintf("prefix\xc3\xa9%08x", i) // 8 shared bytes (one ≥0x80), 16 in all
		_, lh := termKey([]byte(w))
		if o, ok := seen[lh]; ok {
			a, b = o, w
		}
		seen[lh] = w
	}
	if a == "" {
		t.Fatal("no collision found")
	}
	ka, la := termKey([]byte(a))
	kb, lb := termKey([]byte(b))
	if ka != kb || la != lb {
		t.Fatalf("not a collision: %x/%x %x/%x", ka, la, kb, lb)
	}
	var d termDict
	words := []string{a, b, "prefix\xc3\xa9", "prefix\xc3\xa9x", "prefix\xc3", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7"}
	for round := range 2 {
		for i, w := range words {
			buf := append([]byte(w), "\x05zzzzzzzz"...)
			id, added := d.id(buf[:len(w)])
			if id != uint32(i) || added != (round == 0) {
				t.Fatalf("round %d: id(%q) = %d, %v; want %d, %v", round, w, id, added, i, round == 0)
			}
		}
	}
	for i, w := range words {
		if got := string(d.name(uint32(i))); got != w {
			t.Fatalf("name(%d) = %q, want %q", i, got, w)
		}
	}
}
