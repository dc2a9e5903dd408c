package search

import (
	"unicode"
	"unicode/utf8"
)

// MaxTermBytes caps a term: longer words (hashes, base64) are cut to this many
// bytes at a character boundary, in the index and in queries alike.
const MaxTermBytes = 64

// latinFold maps U+00C0…U+017F to their base letter, lower case ('.' for the two
// non-letters, '*' for the letters that fold to two, see latinWide).
const latinFold = "aaaaaa*ceeeeiiii" + "dnooooo.ouuuuy**" + "aaaaaa*ceeeeiiii" + "dnooooo.ouuuuy*y" +
	"aaaaaaccccccccdd" + "ddeeeeeeeeeegggg" + "gggghhhhiiiiiiii" + "ii**jjkkklllllll" +
	"lllnnnnnnnnnoooo" + "oo**rrrrrrssssss" + "ssttttttuuuuuuuu" + "uuuuwwyyyzzzzzzs"

// latinWide are the letters of the table that fold to two letters.
var latinWide = map[rune]string{'Æ': "ae", 'æ': "ae", 'Þ': "th", 'þ': "th", 'ß': "ss", 'Ĳ': "ij", 'ĳ': "ij", 'Œ': "oe", 'œ': "oe"}

// appendFolded appends the folded form of a word rune: lower case, Latin accents
// removed (a small NFD-like table: the precomposed letters of Latin-1 and Latin
// Extended-A), final sigma as sigma.
func appendFolded(b []byte, r rune) []byte {
	if r < 0x80 {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(b, byte(r))
	}
	if 0xC0 <= r && r <= 0x17F {
		switch c := latinFold[r-0xC0]; c {
		case '*':
			return append(b, latinWide[r]...)
		case '.':
		default:
			return append(b, c)
		}
	}
	if r == 'ς' {
		r = 'σ'
	}
	return utf8.AppendRune(b, unicode.ToLower(r))
}

// isCJK reports runes written without spaces between words: Han, Hiragana,
// Katakana (and the prolonged sound mark). They are indexed as overlapping bigrams.
func isCJK(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || r == 0x30FC)
}

// asciiWord maps an ASCII letter or digit to its folded byte, anything else to 0.
var asciiWord = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = c, c
	}
	return t
}()

// asciiFold is asciiWord over every byte value (0 for a byte of a multi-byte
// character).
var asciiFold = func() (t [256]byte) {
	copy(t[:], asciiWord[:])
	return t
}()

// runeClass: 0 separator, 1 word rune, 2 CJK, 3 combining mark (dropped: accents of
// decomposed text; it never starts or ends a word).
func runeClass(r rune) int {
	switch {
	case r < 0x80:
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return 1
		}
		return 0
	case isCJK(r):
		return 2
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return 1
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Mc, r):
		return 3
	}
	return 0
}

// Atom is one unit of normalized text: a folded word, or one CJK character.
// Joined is set on a CJK character that follows another in the same run.
type Atom struct {
	Text   string
	CJK    bool
	Joined bool
}

// scan walks text and calls word for each folded word and cjk for each CJK
// character (joined: it follows another CJK character directly). buf is scratch.
func scan(text string, buf []byte, word func(w []byte), cjk func(c rune, joined bool)) []byte {
	inWord, full, prevCJK := false, false, false
	buf = buf[:0]
	flush := func() {
		if inWord && len(buf) > 0 {
			word(buf)
		}
		buf = buf[:0]
		inWord, full = false, false
	}
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			// ASCII fast path: a run of letters and digits at once.
			if asciiWord[c] == 0 {
				flush()
				prevCJK = false
				i++
				continue
			}
			prevCJK = false
			inWord = true
			j := i
			for j < len(text) && text[j] < utf8.RuneSelf && asciiWord[text[j]] != 0 {
				j++
			}
			if !full {
				room := MaxTermBytes - len(buf)
				if j-i > room {
					full = true
				}
				for _, c := range []byte(text[i : i+min(j-i, room)]) {
					buf = append(buf, asciiWord[c])
				}
			}
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		switch runeClass(r) {
		case 1:
			prevCJK = false
			inWord = true
			if !full {
				k := len(buf)
				buf = appendFolded(buf, r)
				if len(buf) > MaxTermBytes {
					buf, full = buf[:k], true // the rest of the word is ignored
				}
			}
		case 2:
			flush()
			cjk(r, prevCJK)
			prevCJK = true
		case 3:
			// An accent belongs to the character before it: keep the word going.
		default:
			flush()
			prevCJK = false
		}
	}
	flush()
	return buf
}

// Normalize returns the atoms of text: what phrase matching compares.
func Normalize(text string) []Atom {
	var out []Atom
	scan(text, nil, func(w []byte) {
		out = append(out, Atom{Text: string(w)})
	}, func(c rune, joined bool) {
		out = append(out, Atom{Text: string(c), CJK: true, Joined: joined})
	})
	return out
}

// Terms calls fn for every index term of text, in order, with repeats: each word,
// and for each run of CJK characters its overlapping bigrams plus its last
// character alone (so that a single character is found as a prefix of a term).
// The slice passed to fn is only valid during the call.
func Terms(text string, buf []byte, fn func(term []byte)) []byte {
	var prev rune
	var cj [8]byte
	have := false
	endRun := func() {
		if have {
			fn(utf8.AppendRune(cj[:0], prev))
		}
		have = false
	}
	buf = scan(text, buf, func(w []byte) {
		endRun()
		fn(w)
	}, func(c rune, joined bool) {
		if !joined {
			endRun()
		} else if have {
			b := utf8.AppendRune(cj[:0], prev)
			fn(utf8.AppendRune(b, c))
		}
		prev, have = c, true
	})
	endRun()
	return buf
}

// MatchPhrase reports whether the atoms of q occur consecutively in text, a CJK
// character joined to the one before it in q matching only one joined in text.
func MatchPhrase(text, q []Atom) bool {
	if len(q) == 0 {
		return false
	}
outer:
	for i := 0; i+len(q) <= len(text); i++ {
		for j, a := range q {
			t := text[i+j]
			if t.Text != a.Text || t.CJK != a.CJK || (j > 0 && a.Joined && !t.Joined) {
				continue outer
			}
		}
		return true
	}
	return false
}

// appendTerms appends the terms of text to dst, each as its length byte and its
// bytes, in the order Terms gives them, and returns how many it appended. It is
// Terms without a call per term: a read worker's tokenizer (preparedLines), words
// written in place, ASCII runs folded by table.
func appendTerms(dst []byte, text string) ([]byte, int) {
	n := 0
	inWord, full, prevCJK := false, false, false
	w := 0 // where the current word's length byte is in dst
	var prev rune
	have := false // prev is a CJK character whose run has not ended
	endRun := func(dst []byte) []byte {
		if have {
			dst = append(dst, 0)
			k := len(dst)
			dst = utf8.AppendRune(dst, prev)
			dst[k-1] = byte(len(dst) - k)
			n++
			have = false
		}
		return dst
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf && asciiWord[c] == 0 {
			if inWord {
				dst[w] = byte(len(dst) - w - 1)
				n++
				inWord, full = false, false
			}
			prevCJK = false
			i++
			continue
		}
		if c < utf8.RuneSelf {
			// A run of ASCII letters and digits at once, folded as it is copied.
			prevCJK = false
			if !inWord {
				dst = endRun(dst) // a CJK run's last character comes before the word
				w = len(dst)
				dst = append(dst, 0)
				inWord = true
			}
			j := i
			if !full {
				room := MaxTermBytes - (len(dst) - w - 1)
				for ; j < len(text) && asciiFold[text[j]] != 0; j++ {
					if room == 0 {
						full = true // the rest of the word is ignored
						break
					}
					dst = append(dst, asciiFold[text[j]])
					room--
				}
			}
			for j < len(text) && asciiFold[text[j]] != 0 {
				j++
			}
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch runeClass(r) {
		case 1:
			prevCJK = false
			if !inWord {
				dst = endRun(dst)
				w = len(dst)
				dst = append(dst, 0)
				inWord = true
			}
			if !full {
				k := len(dst)
				dst = appendFolded(dst, r)
				if len(dst)-w-1 > MaxTermBytes {
					dst, full = dst[:k], true // the rest of the word is ignored
				}
			}
		case 2:
			if inWord {
				dst[w] = byte(len(dst) - w - 1)
				n++
				inWord, full = false, false
			}
			if !prevCJK {
				dst = endRun(dst)
			} else if have {
				dst = append(dst, 0)
				k := len(dst)
				dst = utf8.AppendRune(utf8.AppendRune(dst, prev), r)
				dst[k-1] = byte(len(dst) - k)
				n++
			}
			prev, have = r, true
			prevCJK = true
		case 3:
			// An accent belongs to the character before it: keep the word going.
		default:
			if inWord {
				dst[w] = byte(len(dst) - w - 1)
				n++
				inWord, full = false, false
			}
			prevCJK = false
		}
	}
	if inWord {
		dst[w] = byte(len(dst) - w - 1)
		n++
	}
	dst = endRun(dst)
	return dst, n
}
