package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestMemBufMatchesMap counts random terms into a memBuf and into a map of lists
// by name (the buffer's former layout), and compares every list, the buffer's
// size and the order its terms are written in.
func TestMemBufMatchesMap(t *testing.T) {
	b := newMemBuf()
	ref := map[string]*termList{}
	refBytes := 0
	rng := rand.New(rand.NewPCG(3, 4))
	for doc := uint32(0); doc < 3000; doc++ {
		for range rng.IntN(40) {
			w := fmt.Sprintf("t%d", rng.IntN(5000))
			switch rng.IntN(6) {
			case 0:
				w = strings.Repeat("y", rng.IntN(MaxTermBytes)+1) // one byte apart
			case 1:
				w = fmt.Sprintf("abcdefgh%d", rng.IntN(80)) // the same first 8 bytes
			case 2:
				w = fmt.Sprintf("%c", 'a'+rng.IntN(26))
			}
			tb := append([]byte(w), "\x07zzzzzzzz"...)[:len(w)] // bytes past it, as the tokenizer's
			b.count(tb, doc)
			tl := ref[w]
			if tl == nil {
				tl = &termList{}
				ref[w] = tl
				refBytes += len(w) + 64
			}
			refBytes += tl.count(doc)
		}
	}
	if b.bytes != refBytes {
		t.Fatalf("bytes %d, want %d", b.bytes, refBytes)
	}
	names := make([]string, 0, len(ref))
	for w := range ref {
		names = append(names, w)
	}
	sort.Strings(names)
	ids := b.sortedTerms()
	if len(ids) != len(names) {
		t.Fatalf("%d terms, want %d", len(ids), len(names))
	}
	for i, id := range ids {
		if got := string(b.dict.name(id)); got != names[i] {
			t.Fatalf("term %d: %q, want %q", i, got, names[i])
		}
		got, want := &b.lists[id], ref[names[i]]
		got.flush()
		want.flush()
		if got.n != want.n || !slices.Equal(got.buf, want.buf) {
			t.Fatalf("term %q: df %d %x, want %d %x", names[i], got.n, got.buf, want.n, want.buf)
		}
	}
}
