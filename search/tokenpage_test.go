//go:build linux

package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestCountTermsPageEnd: a message whose string ends at the end of a page
// whose next page cannot be read (PROT_NONE), its slice's capacity ending
// there too, is counted (the block tokenizer's assembly and Go loops, AVX2
// on and off) without a read past it, as refCounted counts it: strings of
// every length up to a few blocks' and longer, ending in a word, a long word,
// an escape, separators.
func TestCountTermsPageEnd(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var texts []string
	for range 6 {
		s := salad(r, 200)
		texts = append(texts, string(s[1:len(s)-1]))
	}
	texts = append(texts, strings.Repeat("abcdefgh ", 100), strings.Repeat("x", 200), strings.Repeat("Ab1 ", 90)+"\\n",
		strings.Repeat("lock the goroutine ", 30)+strings.Repeat("q", 70), strings.Repeat("東京 ab ", 40))
	defer func(a, v bool) { useCountAsm, useAVX2 = a, v }(useCountAsm, useAVX2)
	for _, text := range texts {
		for k := 0; k <= len(text) && k <= page-2; k++ {
			// The string's last k bytes of text, quoted, ending at the page's end.
			raw := mem[page-k-2 : page : page]
			raw[0] = '"'
			copy(raw[1:], text[len(text)-k:])
			raw[k+1] = '"'
			want := refCounted([][][]byte{{raw}})
			for _, asm := range []bool{false, useCountAsm} {
				for _, avx := range []bool{false, useAVX2} {
					useCountAsm, useAVX2 = asm, avx
					p := new(preparedLines)
					p.message(0, 0, "user", 0, &textParts{raw: [][]byte{raw}})
					if got := countedTerms(p); !slices.Equal(got, want) {
						t.Fatalf("asm %v avx2 %v: %q at a page's end counted\n%q\nwant\n%q", asm, avx, raw, got, want)
					}
				}
			}
		}
	}
}
