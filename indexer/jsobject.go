package indexer

import (
	"bytes"
	"encoding/json"
)

// The members and values of the JSON the Gemini and llxprt layouts read, as
// encoding/json's RawMessage maps would give them.

// jsNonEmptyArray reports whether raw is a JSON array with at least one element.
func jsNonEmptyArray(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return false
	}
	return len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
}

// jsObject splits raw, which must be a JSON object, into its members (null and
// other values are errors). The values alias raw: use them before raw changes.
func jsObject(raw []byte) (map[string]json.RawMessage, error) { return jsObjectOf(raw, nil) }

// jsObjectOf is jsObject with the members of raw from mem when mem is the scan of
// the line raw is, or is a member of (Members.ObjectFields).
func jsObjectOf(raw []byte, mem *Members) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if err := mem.ObjectFields(raw, func(k, v []byte) { m[string(k)] = v }); err != nil {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] != '{' {
			return nil, errJSNotObject
		}
		return nil, err
	}
	return m, nil
}

// jsFieldsOf is jsObjectOf calling fn with each member instead of making a map
// of them (the same error).
func jsFieldsOf(raw []byte, mem *Members, fn func(k, v []byte)) error {
	if err := mem.ObjectFields(raw, fn); err != nil {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] != '{' {
			return errJSNotObject
		}
		return err
	}
	return nil
}

// jsString decodes raw if it is a JSON string.
func jsString(raw json.RawMessage) (string, bool) {
	return JSONString(bytes.TrimSpace(raw))
}

// jsStr is jsString without the flag: "" for anything but a string.
func jsStr(raw json.RawMessage) string {
	s, _ := jsString(raw)
	return s
}

func jsNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}
