package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCountCutWordsEveryLength: the block tokenizer's words cut before they
// are looked up (blockWords) count what the scratch path counts for words of
// every length from 1 to 64 bytes starting at every offset of a block, each new
// to the dict where it first occurs and known after, in runs of plain text
// longer than blockWords holds (its words are then counted in several runs),
// alone and after other docs.
func TestCountCutWordsEveryLength(t *testing.T) {
	var all [][][]byte
	for k := 1; k <= 64; k++ {
		word := strings.Repeat("aB3xYz9QrS", 7)[:k]
		for lead := range 64 {
			// The word at offset lead, then again at every other offset
			// (k+1 bytes on), among short words known and new.
			var b strings.Builder
			b.WriteString(`"` + strings.Repeat(" ", lead))
			for i := range 6 {
				fmt.Fprintf(&b, "%s %s x%d the ", word, strings.ToUpper(word), i%3)
			}
			b.WriteString(`"`)
			msg := [][]byte{[]byte(b.String())}
			checkCountTerms(t, [][][]byte{msg})
			all = append(all, msg)
		}
	}
	checkCountTerms(t, all)

	// Runs of more words than blockWords holds: one-letter words (32 a block),
	// and words of every length.
	var many, mixed strings.Builder
	for i := range 1200 {
		many.WriteByte(byte('a' + i*7%26))
		many.WriteByte(' ')
		mixed.WriteString(strings.Repeat("q", 1+i%11) + "  ")
	}
	for _, s := range []string{many.String(), mixed.String()} {
		for shift := range 8 {
			checkCountTerms(t, [][][]byte{{[]byte(`"` + strings.Repeat(".", shift) + s + `"`)}})
		}
	}
	p := new(preparedLines)
	in := []byte(many.String())
	if _, n, _, _ := p.countBlocks(in, 0, 1, nil); n < 3*len(p.cut.lh) {
		t.Fatalf("countBlocks counted %d words of %d", n, len(in)/2)
	}
}

// TestCountCutSlots: blockWords.count finds a term in its first slot or the
// next (also past the table's last slot, wrapping to its first), leaves one
// further on to the calls, and tells a term of 8 bytes from the longer terms
// that begin with it (their keys are of another form).
func TestCountCutSlots(t *testing.T) {
	// Words whose first slot is the last of the first table (256 slots,
	// until the unit has 64 terms) and words whose first slot is slot 7:
	// each group fills its slot and the ones after it, in order.
	var last, seven []string
	for i := 0; len(last) < 4 || len(seven) < 4; i++ {
		w := fmt.Sprintf("w%d", i)
		_, lh := termKey([]byte(w + "\x00\x00\x00\x00\x00\x00\x00\x00")[:len(w)])
		switch lh >> 8 & 255 {
		case 255:
			last = append(last, w)
		case 7:
			seven = append(seven, w)
		}
	}
	last, seven = last[:4], seven[:4]
	var msgs [][][]byte
	for _, words := range [][]string{last, seven} {
		var b strings.Builder
		b.WriteString(`"`)
		for r := range 40 {
			for i := range words {
				// Every order, words repeated: each found in its first,
				// second, third or fourth slot many times.
				b.WriteString(words[(i*(r%3+1)+r)%len(words)] + " ")
			}
		}
		b.WriteString(`"`)
		msgs = append(msgs, [][]byte{[]byte(b.String())})
	}
	for _, m := range msgs {
		checkCountTerms(t, [][][]byte{m})
	}
	checkCountTerms(t, msgs)
	p := new(preparedLines)
	p.message(0, 0, "user", 0, &textParts{raw: msgs[0]})
	if len(p.dict.table) != 256 {
		t.Fatalf("table of %d slots, want the first (256)", len(p.dict.table))
	}
	for i, w := range last {
		if e := p.dict.find([]byte(w)); e != &p.dict.table[(255+i)&255] {
			t.Fatalf("%q not in slot %d", w, (255+i)&255)
		}
	}
	fields := strings.Fields(strings.Trim(string(msgs[0][0]), `"`))
	var order []string
	tf := map[string]int{}
	for _, w := range fields {
		if tf[w] == 0 {
			order = append(order, w)
		}
		tf[w]++
	}
	want := []string{fmt.Sprintf("n=%d:", len(fields))}
	for _, w := range order {
		want[0] += fmt.Sprintf(" %q×%d", w, tf[w])
	}
	if got := countedTerms(p); !slices.Equal(got, want) {
		t.Fatalf("counted %q, want %q", got, want)
	}

	// The words of the last slots, cut and counted in one run: each is
	// found in its first slot or the next (past the last, the first; upper
	// case too), the third word left to the calls, by the assembly and by
	// the Go.
	for doc, asm := range []bool{true, false} {
		if asm && !useCountAsm {
			continue
		}
		doc := uint32(doc) + 2 // the message above was doc 1
		func() {
			defer func(was bool) { useCountAsm = was }(useCountAsm)
			useCountAsm = asm
			in := []byte(strings.Repeat(last[0]+" "+strings.ToUpper(last[1])+" "+last[2]+" ", 4) + strings.Repeat(" ", blockSpan))
			w, _ := classify64(in)
			var cw blockWords
			nw := cw.cutRun((*[blockSpan]byte)(in), w&(1<<63-1), 0, 0)
			cw.lh[nw] = 0
			pairs := make([]termTF, 0, nw)
			j, pairs := cw.countRun(0, doc, p.dict.table, pairs)
			if j != 2 || len(pairs) != 2 {
				t.Fatalf("asm %v: countRun stopped at word %d of %d with %d pairs, want at the third (in slot 1)", asm, j, nw, len(pairs))
			}
			j, pairs = cw.countRun(3, doc, p.dict.table, pairs)
			if j != 5 || len(pairs) != 2 || pairs[0].tf != 2 || pairs[1].tf != 2 {
				t.Fatalf("asm %v: countRun from word 3 stopped at %d with pairs %v, want at 5, two of tf 2", asm, j, pairs)
			}
		}()
	}

	// A term of 8 bytes and the longer ones it begins, one of them in the
	// first slot of the 8 bytes' term (found under this process's seed).
	short := []byte("abcdefgh")
	_, slh := termKey(short)
	var long string
	for i := 0; long == ""; i++ {
		w := fmt.Sprintf("abcdefghx%d", i)
		if _, lh := termKey([]byte(w)); lh>>8&255 == slh>>8&255 {
			long = w
		}
	}
	s := `"` + long + " " + strings.Repeat("abcdefgh abcdefghi ABCDEFGH abcdefghij abcdefgh1 abcdefg ", 30) + `"`
	checkCountTerms(t, [][][]byte{{[]byte(s)}})
	p = new(preparedLines)
	p.message(0, 0, "user", 0, &textParts{raw: [][]byte{[]byte(s)}})
	want = []string{fmt.Sprintf(`n=181: %q×1 "abcdefgh"×60 "abcdefghi"×30 "abcdefghij"×30 "abcdefgh1"×30 "abcdefg"×30`, long)}
	if got := countedTerms(p); !slices.Equal(got, want) {
		t.Fatalf("counted %q, want %q", got, want)
	}
}

// TestCountCutPairsRoom: whatever room pairs has left when a run of words is
// counted (none, a few, one short of the run's words), the counts are the
// scratch path's.
func TestCountCutPairsRoom(t *testing.T) {
	text := []byte(`"` + strings.Repeat("the quick brown fox jumps over the lazy dog 12345678 ", 12) + `"`)
	want := new(preparedLines)
	if n := want.countScratch(1, &textParts{raw: [][]byte{text}}); n > 0 {
		want.addDoc(0, 0, "user", 0, n)
	}
	for room := range 80 {
		for _, used := range []int{0, 1, 5} {
			p := new(preparedLines)
			p.pairs = make([]termTF, used, used+room)
			p.docs = append(p.docs, preparedDoc{pairsEnd: used})
			for i := range used {
				p.pairs[i] = termTF{p.dict.find([]byte(fmt.Sprintf("z%d", i))).id - 1, 1}
			}
			p.message(0, 0, "user", 0, &textParts{raw: [][]byte{text}})
			got, w := countedTerms(p), countedTerms(want)
			if len(got) != 2 || got[1] != w[0] {
				t.Fatalf("room %d, %d pairs used: counted %q, want %q", room, used, got, w)
			}
		}
	}
}
