package indexer

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// geminiPromptWhole is geminiPrompt as it was before long strings were clipped:
// the whole text joined, then rendered.
func geminiPromptWhole(raw json.RawMessage, m *Members) string {
	text := geminiText(raw, m)
	if text == "" || geminiIgnored(text) {
		return ""
	}
	return Prompt(text)
}

// geminiContentMembers scans {"content":content} and returns the content's raw
// value from the scan, with the scan (nil if the line is not valid JSON).
func geminiContentMembers(content string) (json.RawMessage, *Members) {
	var m Members
	m.Scan([]byte(`{"content":` + content + `}`))
	var raw json.RawMessage
	if m.ObjectFields(m.Line(), func(k, v []byte) {
		if string(k) == "content" {
			raw = v
		}
	}) != nil {
		return nil, nil
	}
	return raw, &m
}

// checkGeminiPrompt compares geminiPrompt with geminiPromptWhole on content, with
// the line's scan and without.
func checkGeminiPrompt(t *testing.T, content string) {
	t.Helper()
	raw, m := geminiContentMembers(content)
	if m == nil {
		return
	}
	for _, mm := range []*Members{m, nil} {
		if got, want := geminiPrompt(raw, mm), geminiPromptWhole(raw, mm); got != want {
			t.Fatalf("content %.300q (members %v):\n got %q\nwant %q", content, mm != nil, got, want)
		}
	}
}

// geminiWords makes text of n bytes or so from words, escapes and characters
// that a cut must not split.
func geminiWords(r *rand.Rand, n int) string {
	pieces := []string{"word", "go", "if err != nil {", `\n`, `\"quoted\"`, `\\`, `\/`, `\t`, `\u00e9`, `\ud83d\ude00`,
		`\ud83d`, "é", "日本語", "\u2028", "  ", " ", `\u0020`, `\u00a0`, "\u3000", "/", "?", "<state_snapshot>", "\xff", "\xe6\x97"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[r.Intn(len(pieces))])
		if r.Intn(3) > 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func TestGeminiPromptClipMatchesWhole(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	long := strings.Repeat("word ", 1000)
	fixed := []string{
		`"` + long + `"`,
		`"` + strings.Repeat(" ", 3000) + `/help ` + long + `"`, // ignored after a long run of space
		`"` + strings.Repeat(" ", 1500) + `/help ` + long + `"`, // clipped inside the space, then the prefix
		`"` + strings.Repeat(`\n`, 700) + `?` + long + `"`,
		`"` + strings.Repeat("x", 5000) + `"`, // no space to cut at
		`"` + strings.Repeat("x ", 150) + `"`, // short
		`[{"text":"` + long + `"},{"text":"tail"}]`,
		`[{"text":"short "},"` + long + `",{"text":"more"}]`,
		`[{"text":"` + strings.Repeat("\xff ", 1200) + `"}]`, // invalid UTF-8: dropped by Prompt
		`[{"text":"` + strings.Repeat(`\u00a0 `, 800) + `"},{"text":"/x ` + long + `"}]`,
		`[{"functionCall":{}},{"text":"<state_snapshot>` + long + `"}]`,
		`[{"text": "` + long + `" }, ["nested ` + long + `"]]`,
	}
	for _, c := range fixed {
		checkGeminiPrompt(t, c)
	}
	for i := 0; i < 3000; i++ {
		var parts []string
		for k := r.Intn(3) + 1; k > 0; k-- {
			text := geminiWords(r, []int{10, 300, 1500, 2100, 4000, 9000}[r.Intn(6)])
			if r.Intn(4) == 0 {
				text = strings.Repeat(" ", r.Intn(2500)) + text
			}
			switch r.Intn(3) {
			case 0:
				parts = append(parts, `"`+text+`"`)
			default:
				parts = append(parts, `{"text":"`+text+`"}`)
			}
		}
		content := parts[0]
		if len(parts) > 1 || r.Intn(2) == 0 {
			content = "[" + strings.Join(parts, ",") + "]"
		}
		checkGeminiPrompt(t, content)
	}
}

// TestGeminiTextClipIsPrefix: a clipped text is the start of the whole one, and a
// long text with spaces is clipped (the path geminiPrompt takes for most user
// messages).
func TestGeminiTextClipIsPrefix(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		content := `[{"text":"` + geminiWords(r, 50+r.Intn(6000)) + `"},"` + geminiWords(r, r.Intn(3000)) + `"]`
		raw, m := geminiContentMembers(content)
		if m == nil {
			t.Fatalf("invalid test content %q", content)
		}
		whole, _ := geminiTextClip(raw, m, 0)
		clip, clipped := geminiTextClip(raw, m, geminiPromptClip)
		if !strings.HasPrefix(whole, clip) {
			t.Fatalf("clipped text is not a prefix of the whole text\nclip  %q\nwhole %q", clip, whole)
		}
		if clipped != (clip != whole) {
			t.Fatalf("clipped %v, but the texts are %v", clipped, clip != whole)
		}
	}
	raw, m := geminiContentMembers(`[{"text":"` + strings.Repeat("word ", 1000) + `"}]`)
	clip, clipped := geminiTextClip(raw, m, geminiPromptClip)
	if !clipped || len(clip) > geminiPromptClip {
		t.Fatalf("a long text was not clipped: %v, %d bytes", clipped, len(clip))
	}
	if p, cut := promptCut(clip); !cut || p != Prompt(strings.Repeat("word ", 1000)) {
		t.Fatalf("the clipped text's prompt %q (cut %v)", p, cut)
	}
}

// FuzzGeminiPrompt: geminiPrompt, which reads the start of a long text first, is
// the prompt of the whole text.
func FuzzGeminiPrompt(f *testing.F) {
	f.Add("word ", 500, 0, uint8(0))
	f.Add(`/help \n`, 400, 700, uint8(1))
	f.Add(`\u00e9 \ud83d\ude00 `, 300, 100, uint8(2))
	f.Add("\xff \u3000", 900, 2000, uint8(3))
	f.Add(`x\"y `, 600, 0, uint8(1))
	f.Fuzz(func(t *testing.T, unit string, reps, spaces int, shape uint8) {
		if reps < 0 || reps > 3000 || spaces < 0 || spaces > 4000 || len(unit) > 64 {
			return
		}
		text := strings.Repeat(" ", spaces) + strings.Repeat(unit, reps)
		content := `"` + text + `"`
		switch shape % 4 {
		case 1:
			content = `[{"text":"` + text + `"},{"text":"` + unit + `"}]`
		case 2:
			content = `["` + unit + `",{"text":"` + text + `"}]`
		case 3:
			content = `{"text":"` + text + `"}`
		}
		checkGeminiPrompt(t, content)
	})
}

// TestGeminiTextLastTextWins: of a part's text members the last is its text, as
// in a map of the members.
func TestGeminiTextLastTextWins(t *testing.T) {
	for content, want := range map[string]string{
		`[{"text":"a","text":"b"}]`:             "b",
		`[{"text":"a","text":7}]`:               "",
		`{"text":"a","x":1,"text":" c "}`:       "c",
		`[{"text":"a"},{"text":"b","text":""}]`: "a",
		`[{"text":"a"} , "b" ]`:                 "ab",
		`[{"text":"a"},"b",]`:                   "",
	} {
		raw, m := geminiContentMembers(content)
		if m == nil {
			if want != "" {
				t.Fatalf("invalid test content %s", content)
			}
			continue
		}
		for _, mm := range []*Members{m, nil} {
			if got := geminiText(raw, mm); got != want {
				t.Errorf("geminiText(%s) = %q, want %q", content, got, want)
			}
		}
	}
}
