package indexer

import (
	"bytes"
	"strings"
	"unicode/utf16"
)

// Claude Code's first prompt, as @anthropic-ai/claude-agent-sdk's listSessions
// derives it (docs/fidelity.md): for each user line that is not isMeta, not
// isCompactSummary and holds no tool_result, each text (the string content, or
// every text block in order) has its newlines turned into spaces and is trimmed;
// then, in order:
//   - a text naming a slash command (<command-name>/x</command-name>) is remembered
//     as the fallback prompt (the first one wins) and skipped;
//   - a text holding <bash-input>cmd</bash-input> is the prompt "! cmd";
//   - a text that starts with a tag (<ide_opened_file>, <system-reminder>, …) or is
//     "[Request interrupted by user…]" is skipped;
//   - any other text is the prompt, cut to 200 UTF-16 code units, trimmed, plus "…".

// claudeMaxPromptUnits is the SDK's cut, in UTF-16 code units.
const claudeMaxPromptUnits = 200

var (
	claudeCommandRE = lazyRE(`<command-name>(.*?)</command-name>`)
	claudeBashRE    = lazyRE(`(?s)<bash-input>(.*?)</bash-input>`)
	// claudeSkipRE is the SDK's /^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])/.
	claudeSkipRE = lazyRE(`^(?:[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]*<[a-z][A-Za-z0-9_-]*[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}>]|\[Request interrupted by user[^\]]*\])`)
)

// claudeUserPrompt is what one user message's content contributes: the prompt
// (ok) or, failing that, a slash command seen in it.
func claudeUserPrompt(content []byte) (prompt, command string, ok bool) {
	content = bytes.TrimSpace(content)
	if len(content) == 0 {
		return "", "", false
	}
	var texts []string
	switch content[0] {
	case '"':
		s, _ := JSONString(content)
		texts = []string{s}
	case '[':
		var blocks []claudeBlock
		if decodeTolerant(content, &blocks) != nil {
			return "", "", false
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				return "", "", false
			case "text":
				texts = append(texts, b.Text)
			}
		}
	default:
		return "", "", false
	}
	for _, t := range texts {
		c := jsTrim(strings.ReplaceAll(t, "\n", " "))
		if c == "" {
			continue
		}
		if m := claudeCommandRE().FindStringSubmatch(c); m != nil && !strings.ContainsAny(m[1], "\r\u2028\u2029") {
			if command == "" {
				command = m[1]
			}
			continue
		}
		if m := claudeBashRE().FindStringSubmatch(c); m != nil {
			return "! " + jsTrim(m[1]), command, true
		}
		if claudeSkipRE().MatchString(c) {
			continue
		}
		return claudeCut(c), command, true
	}
	return "", command, false
}

// claudeCut cuts s to claudeMaxPromptUnits UTF-16 code units (never splitting a
// surrogate pair), trims the result and appends "…"; shorter text is returned as is.
func claudeCut(s string) string {
	if utf16Len(s) <= claudeMaxPromptUnits {
		return s
	}
	units := 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1 // U+FFFD stands in for it
		}
		if units+n > claudeMaxPromptUnits {
			return jsTrim(s[:i]) + "…"
		}
		units += n
	}
	return s
}

// utf16Len counts s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xFFFF {
			n++
		}
		n++
	}
	return n
}

// jsTrim is JavaScript's String.prototype.trim: it strips white space and line
// terminators as ECMAScript defines them (which differs from unicode.IsSpace:
// U+0085 is kept, U+FEFF is stripped).
func jsTrim(s string) string {
	return strings.TrimFunc(s, jsSpace)
}

func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// claudeMedia names an attachment-only first message as the SDK titles it: a user
// line (not isMeta, no tool_result) holding an image block is "Image", else one
// holding a document block is "Document"; "" otherwise. The SDK tests the line's
// text, so a line naming both is "Image". m, if not nil, is the scan of the
// line, which tells where the text is without reading the line (KeyText).
func claudeMedia(line []byte, m *Members) string {
	has := func(after string) bool {
		if found, known := m.KeyText(line, "type", after); known {
			return found
		}
		return bytes.Contains(line, []byte(`"type"`+after))
	}
	switch {
	case has(`:"image"`) || has(`: "image"`):
		return "Image"
	case has(`:"document"`) || has(`: "document"`):
		return "Document"
	}
	return ""
}
