package indexer

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeJSONString decodes a raw JSON string (quotes included, JSON whitespace
// around it allowed) as encoding/json does, without its reflection and
// validation passes: the escapes of RFC 8259, a lone or reversed surrogate and
// each byte that is not UTF-8 becoming U+FFFD. ok is false, with "", where
// encoding/json fails: anything that is not a string, a malformed escape, a
// quote or control byte inside.
func DecodeJSONString(raw []byte) (string, bool) {
	raw = TrimJSONSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	i := plainRun(in, 0)
	if i == len(in) {
		return string(in), true
	}
	// A Builder hands its bytes over as the string, without a copy.
	var out strings.Builder
	out.Grow(len(in))
	out.Write(in[:i])
	for i < len(in) {
		c := in[i]
		switch {
		case c == '\\':
			if i+1 >= len(in) {
				return "", false
			}
			switch e := in[i+1]; e {
			case '"', '\\', '/':
				out.WriteByte(e)
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r, ok := Hex4(in[i+2:]) // i+1 < len(in): in[i+2:] is at most empty
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if r2, ok := Hex4(in[i+2:]); ok {
							if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
								out.WriteRune(d)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				out.WriteRune(r)
				continue
			default:
				return "", false
			}
			i += 2
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			j := plainRun(in, i+1) // a run of plain ASCII at once
			out.Write(in[i:j])
			i = j
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				out.WriteRune(utf8.RuneError)
			} else {
				out.Write(in[i : i+n])
			}
			i += n
		}
	}
	return out.String(), true
}

// plainASCII marks the bytes unquote copies as they are: ASCII but for the quote,
// the backslash and the control bytes.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainRun returns the index of the first byte of b at or after i that is not
// plain ASCII (plainASCII), or len(b).
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := swarSpecialMask(x) | x&swarHi; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && plainASCII[b[i]] {
		i++
	}
	return i
}

// Hex4 decodes the four hex digits at the start of b (false if they are not).
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
