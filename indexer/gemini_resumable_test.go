package indexer

import "testing"

// TestGeminiResumableParts checks which chats are hidden against Gemini CLI
// 0.61's isResumableMessageRecord, which renders a message's content with
// partListUnionToString: non-text parts (an image, a function call or response,
// a thought, file data) render as "[Image: …]" and the like, so a message made of
// them alone is resumable content, and nested part lists are joined at any depth.
// Found by fidelity/'s run of `gemini --list-sessions`.
func TestGeminiResumableParts(t *testing.T) {
	h := gemHeader("")
	msg := func(typ, content string) string {
		return `{"id":"m","timestamp":"2026-03-01T10:00:01Z","type":"` + typ + `","content":` + content + `}`
	}
	tests := []struct {
		name   string
		line   string
		hidden bool
		prompt string
	}{
		{"an image alone", msg("user", `[{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]`), false, ""},
		{"an image as a single part", msg("user", `{"inlineData":{"mimeType":"image/png","data":"AAAA"}}`), false, ""},
		{"file data", msg("user", `[{"fileData":{"fileUri":"gs://x","mimeType":"application/pdf"}}]`), false, ""},
		{"a function response", msg("user", `[{"functionResponse":{"id":"c1","name":"read_file","response":{"output":"x"}}}]`), false, ""},
		{"nested part lists", msg("user", `[[{"inlineData":{"mimeType":"audio/wav","data":""}}]]`), false, ""},
		{"an image before text", msg("user", `[{"inlineData":{"mimeType":"image/png","data":""}},{"text":"what is this?"}]`), false, "what is this?"},
		{"a command before an image", msg("user", `[{"text":"/help"},{"inlineData":{"mimeType":"image/png","data":""}}]`), true, ""},
		{"blank text", msg("user", `[{"text":"  "},{"text":"\n"}]`), true, ""},
		{"a model function call in content", msg("gemini", `[{"functionCall":{"id":"c1","name":"ls","args":{}}}]`), false, ""},
		{"a model thought part", msg("gemini", `[{"thought":true,"text":""}]`), false, ""},
		{"an empty model message", msg("gemini", `[{"text":""}]`), true, ""},
		{"an unknown part", msg("user", `[{"someday":{}}]`), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, bad := foldGemini(t, gemUnit, h, tt.line)
			if bad != 0 {
				t.Fatalf("%d lines rejected", bad)
			}
			if s.Hidden != tt.hidden || s.FirstPrompt != tt.prompt {
				t.Errorf("hidden, first prompt = %v, %q; want %v, %q", s.Hidden, s.FirstPrompt, tt.hidden, tt.prompt)
			}
		})
	}
}
