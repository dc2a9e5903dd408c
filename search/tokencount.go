package search

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// countTermsJSON counts the terms of the JSON string raw (quotes included), as
// appendTermsJSON gives them and in that order, into doc (1 + its index): each
// term is looked up in the unit's dict and tallied in the doc's pairs as soon as
// it is cut, not written to a buffer of terms read again. A word of up to 7
// ASCII letters and digits that ends at a plain separator (most words) is
// tallied from the 8 bytes the tokenizer loaded, its key masked in a register.
// It returns how many terms it counted, and false if raw's escapes do not
// decode: what it counted of raw is then in the pairs and message undoes it.
func (p *preparedLines) countTermsJSON(raw []byte, doc uint32) (int, bool) {
	raw = indexer.TrimJSONSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return 0, true // jstr gives ""
	}
	return p.countEscaped(raw[1:len(raw)-1], doc)
}

// countEscaped is countTermsJSON of a string's bytes between its quotes: the
// loop of appendTermsEscaped, each term counted where that appends it. The
// scratch holds the word being cut (no length byte).
func (p *preparedLines) countEscaped(in []byte, doc uint32) (int, bool) {
	dst, pairs := p.scratch[:0], p.pairs
	n := 0
	inWord, full, prevCJK := false, false, false
	var prev rune
	have := false // prev is a CJK character whose run has not ended
	stuck := -1   // countBlocks stopped at in[stuck]: not before it is passed
	for i := 0; i < len(in); {
		c := in[i]
		if asciiFold[c] != 0 {
			// A run of ASCII letters and digits, 8 bytes at a time.
			prevCJK = false
			if !inWord && !have && i > stuck {
				j, k, pp, st := p.countBlocks(in, i, doc, pairs)
				// Not tried again within a block of where it was: text
				// whose words stop it every few bytes (\u escapes, accents)
				// would pay a block's classification for each.
				pairs, n, stuck = pp, n+k, max(st, i+63)
				if j != i {
					i = j
					continue
				}
			}
			v := load8(in, i)
			k := min(bits.TrailingZeros64(nonWord(v))/8, len(in)-i)
			if !inWord {
				if have { // a CJK run's last character comes before the word
					pairs = p.countRune(pairs, prev, 0, doc)
					n, have = n+1, false
				}
				if k < 8 {
					if end := i + k; end == len(in) || plainSep[in[end]] || sepEscape(in, end) {
						// The whole word is in v: counted from it, its key
						// masked in a register, its slot probed and its pair
						// tallied here (countShort and tally, inline).
						key := (v | 0x2020202020202020) & (1<<(8*k) - 1)
						lh := uint32(key*dictMul>>40)<<8 | uint32(k)
						var e *dictSlot
						if tb := p.dict.table; len(tb) > 0 {
							if s := &tb[lh>>8&uint32(len(tb)-1)]; s.key == key && s.lh == lh {
								e = s
							}
						}
						if e == nil {
							e = p.shortSlot(key, k, lh)
						}
						pairs = tally(pairs, e, doc)
						n++
						i = end + 1
						if end < len(in) && in[end] == '\\' {
							i++ // the escape's letter
						}
						continue
					}
				}
				dst = dst[:0]
				inWord = true
			}
			for {
				if !full {
					take := k
					if room := MaxTermBytes - len(dst); take > room {
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
				v = load8(in, i)
				k = min(bits.TrailingZeros64(nonWord(v))/8, len(in)-i)
			}
			if i < len(in) && (plainSep[in[i]] || sepEscape(in, i)) {
				// The word ends at a plain separator (most do) or an escaped
				// one: at once, the separator crossed.
				pairs = p.countTerm(pairs, dst, doc)
				n++
				inWord, full = false, false
				if in[i] == '\\' {
					i++
				}
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
				p.scratch, p.pairs = dst, pairs
				return n, false
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
						pairs = p.countRune(pairs, prev, 0, doc)
						n, have = n+1, false
					}
					dst = dst[:0]
					inWord = true
				}
				if !full {
					if len(dst) == MaxTermBytes {
						full = true
					} else {
						dst = append(dst, asciiWord[r])
					}
				}
				continue
			}
		case c == '\\':
			if i+1 >= len(in) {
				p.scratch, p.pairs = dst, pairs
				return n, false
			}
			switch in[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				p.scratch, p.pairs = dst, pairs
				return n, false
			}
			i += 2 // a separator
		case c == '"' || c < 0x20:
			p.scratch, p.pairs = dst, pairs
			return n, false
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
					pairs = p.countRune(pairs, prev, 0, doc)
					n, have = n+1, false
				}
				dst = dst[:0]
				inWord = true
			}
			if !full {
				k := len(dst)
				dst = appendFolded(dst, r)
				if len(dst) > MaxTermBytes {
					dst, full = dst[:k], true // the rest of the word is ignored
				}
			}
		case 2:
			if inWord {
				pairs = p.countTerm(pairs, dst, doc)
				n++
				inWord, full = false, false
			}
			if !prevCJK {
				if have {
					pairs = p.countRune(pairs, prev, 0, doc)
					n++
				}
			} else if have {
				pairs = p.countRune(pairs, prev, r, doc)
				n++
			}
			prev, have = r, true
			prevCJK = true
		case 3:
			// An accent belongs to the character before it: keep the word going.
		default:
			if inWord {
				pairs = p.countTerm(pairs, dst, doc)
				n++
				inWord, full = false, false
			}
			prevCJK = false
		}
	}
	if inWord {
		pairs = p.countTerm(pairs, dst, doc)
		n++
	}
	if have {
		pairs = p.countRune(pairs, prev, 0, doc)
		n++
	}
	p.scratch, p.pairs = dst, pairs
	return n, true
}

// sepEscape reports whether an escape that decodes to a separator (\n, \",
// \t and the like, not \u) is at in[i]: a word ends there as at a plain
// separator, and the escape is crossed as one.
func sepEscape(in []byte, i int) bool {
	return i+1 < len(in) && in[i] == '\\' && escSep[in[i+1]]
}

// escSep marks the letters of the escapes that decode to a separator.
var escSep = func() (t [256]bool) {
	for _, c := range `"\/bfnrt` {
		t[c] = true
	}
	return t
}()

// shortSlot is the slot of the term of k < 8 bytes whose key (its bytes,
// little-endian, zero-padded) is key, added if it is new.
func (p *preparedLines) shortSlot(key uint64, k int, lh uint32) *dictSlot {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], key)
	return p.dict.findKey(b[:k], key, lh)
}

// countRune counts the term of CJK character r, or of the bigram r, r2 if r2
// is not 0, into pairs.
func (p *preparedLines) countRune(pairs []termTF, r, r2 rune, doc uint32) []termTF {
	var b [8]byte
	t := utf8.AppendRune(b[:0], r)
	if r2 != 0 {
		t = utf8.AppendRune(t, r2)
	}
	return p.countTerm(pairs, t, doc)
}

// countTerm counts term t into pairs (its capacity may run past t: 8 bytes are
// then read at once).
func (p *preparedLines) countTerm(pairs []termTF, t []byte, doc uint32) []termTF {
	key, lh := termKey(t)
	if tb := p.dict.table; len(tb) > 0 && len(t) <= 8 {
		if s := &tb[lh>>8&uint32(len(tb)-1)]; s.key == key && s.lh == lh {
			return tally(pairs, s, doc)
		}
	}
	return tally(pairs, p.dict.findKey(t, key, lh), doc)
}

// tally counts one occurrence in doc of the term of slot e into pairs: a new
// pair if the term is new to the doc, else one more to its pair. Whether it is
// new is a coin toss: without a branch, a pair is written either way and kept
// only if it is.
func tally(pairs []termTF, e *dictSlot, doc uint32) []termTF {
	np := len(pairs)
	if np == cap(pairs) {
		pairs = append(pairs, termTF{})
	}
	pairs = pairs[:np+1]
	pairs[np] = termTF{e.id - 1, 0}
	at, keep := e.pair, 0
	if e.mark != doc {
		at, keep = uint32(np), 1
	}
	e.mark, e.pair = doc, at
	pairs[at].tf++
	return pairs[:np+keep]
}
