package search

import "github.com/sessionwatch/sessionwatch/indexer"

// unquote decodes a raw JSON string (quotes included) as encoding/json does,
// without its reflection and validation passes: the escapes of RFC 8259, a lone
// or reversed surrogate and each byte that is not UTF-8 becoming U+FFFD. Anything
// that is not a string, or a malformed escape, gives "" (the line was validated
// as a whole before, so that does not happen on indexed lines).
func unquote(raw []byte) string {
	s, _ := indexer.DecodeJSONString(raw)
	return s
}
