package search

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// appendTermsJSON is appendTerms of the JSON string raw (quotes included)
// decoded as jstr decodes it, read from its escaped bytes: a read worker's
// tokenizer, which does not copy a message's text out of its line. A part that
// does not decode (a control byte, a malformed escape: not on a validated line)
// is decoded and tokenized as jstr gives it.
func appendTermsJSON(dst []byte, raw []byte) ([]byte, int) {
	raw = indexer.TrimJSONSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, 0 // jstr gives ""
	}
	start := len(dst)
	dst, n, ok := appendTermsEscaped(dst, raw[1:len(raw)-1])
	if ok {
		return dst, n
	}
	return appendTerms(dst[:start], jstr(raw))
}

// appendTermsEscaped is appendTermsJSON of a string's bytes between its quotes;
// false if they do not decode.
//
// An escape decodes to one character: \", \\, \/, \b, \f, \n, \r and \t to
// separators, \uXXXX (a pair of them for a character past U+FFFF; a surrogate
// that is not half of one U+FFFD) to any. A byte that is not UTF-8 is U+FFFD
// decoded, a separator either way. So the terms of the escaped bytes are those
// of the decoded text, read as appendTerms reads it.
func appendTermsEscaped(dst []byte, in []byte) ([]byte, int, bool) {
	n := 0
	inWord, full, prevCJK := false, false, false
	w := 0 // where the current word's length byte is in dst
	var prev rune
	have := false // prev is a CJK character whose run has not ended
	for i := 0; i < len(in); {
		c := in[i]
		if asciiFold[c] != 0 {
			// A run of ASCII letters and digits, 8 bytes at a time.
			prevCJK = false
			if !inWord {
				if have { // a CJK run's last character comes before the word
					dst, n, have = appendRuneTerm(dst, prev), n+1, false
				}
				w = len(dst)
				dst = append(dst, 0)
				inWord = true
			}
			for {
				v := load8(in, i)
				k := min(bits.TrailingZeros64(nonWord(v))/8, len(in)-i)
				if !full {
					take := k
					if room := MaxTermBytes - (len(dst) - w - 1); take > room {
						take, full = room, true // the rest of the word is ignored
					}
					at := len(dst)
					dst = slices.Grow(dst, 8)
					binary.LittleEndian.PutUint64(dst[at:at+8], v|0x2020202020202020) // lower case
					dst = dst[:at+take]
				}
				i += k
				if k < 8 {
					break
				}
			}
			if i < len(in) && plainSep[in[i]] {
				// The word ends at a plain separator (most do): at once.
				dst[w] = byte(len(dst) - w - 1)
				n++
				inWord, full = false, false
				i++
			}
			continue
		}
		var r rune
		switch {
		case c >= utf8.RuneSelf:
			var size int
			r, size = utf8.DecodeRune(in[i:])
			i += size
		case c == '\\' && i+1 < len(in) && in[i+1] == 'u':
			var ok bool
			if r, ok = indexer.Hex4(in[i+2:]); !ok {
				return dst, n, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+1 < len(in) && in[i] == '\\' && in[i+1] == 'u' {
					r2, ok = indexer.Hex4(in[i+2:])
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r, i = d, i+6
				} else {
					r = utf8.RuneError
				}
			}
			if r < utf8.RuneSelf && asciiWord[r] != 0 {
				// One ASCII letter or digit, as a run of one.
				prevCJK = false
				if !inWord {
					if have {
						dst, n, have = appendRuneTerm(dst, prev), n+1, false
					}
					w = len(dst)
					dst = append(dst, 0)
					inWord = true
				}
				if !full {
					if len(dst)-w-1 == MaxTermBytes {
						full = true
					} else {
						dst = append(dst, asciiWord[r])
					}
				}
				continue
			}
		case c == '\\':
			if i+1 >= len(in) {
				return dst, n, false
			}
			switch in[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return dst, n, false
			}
			i += 2 // a separator
		case c == '"' || c < 0x20:
			return dst, n, false
		default:
			i++ // an ASCII separator
		}
		cls := 0
		if r >= utf8.RuneSelf {
			cls = runeClass(r)
		}
		switch cls {
		case 1:
			prevCJK = false
			if !inWord {
				if have {
					dst, n, have = appendRuneTerm(dst, prev), n+1, false
				}
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
				if have {
					dst, n = appendRuneTerm(dst, prev), n+1
				}
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
	if have {
		dst, n = appendRuneTerm(dst, prev), n+1
	}
	return dst, n, true
}

// plainSep marks the ASCII bytes that are separators as they are in a JSON
// string: not letters or digits, not the backslash, the quote or a control byte.
var plainSep = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = asciiFold[c] == 0 && c != '\\' && c != '"'
	}
	return t
}()

// appendRuneTerm appends the term of one CJK character, the last of its run.
func appendRuneTerm(dst []byte, r rune) []byte {
	dst = append(dst, 0)
	k := len(dst)
	dst = utf8.AppendRune(dst, r)
	dst[k-1] = byte(len(dst) - k)
	return dst
}

// load8 reads the 8 bytes of b from i on, little-endian, as far as b's capacity
// holds them (a string's bytes in its line: those after it are read too), else
// padded with zeros.
func load8(b []byte, i int) uint64 {
	if cap(b)-i >= 8 {
		return binary.LittleEndian.Uint64(b[i : i+8])
	}
	var v [8]byte
	copy(v[:], b[i:])
	return binary.LittleEndian.Uint64(v[:])
}

// nonWord sets the high bit of each byte of v that is not an ASCII letter or
// digit (and clears the other bits), 8 bytes at once: each range test adds to
// the 7 low bits so that the high bit is set from the bound on, no byte carrying
// into the next.
func nonWord(v uint64) uint64 {
	const hi, lo7, each = 0x8080808080808080, 0x7f7f7f7f7f7f7f7f, 0x0101010101010101
	x := v & lo7
	l := x | 0x20*each // a letter lower case
	letter := (l + (0x80-'a')*each) &^ (l + (0x7f-'z')*each)
	digit := (x + (0x80-'0')*each) &^ (x + (0x7f-'9')*each)
	return ^((letter | digit) &^ v) & hi
}
