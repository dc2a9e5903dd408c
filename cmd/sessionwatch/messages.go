package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/search"
)

// sessionMessages reads a session's conversation from its files: text messages
// and tool text (folded to one line when printed).
func sessionMessages(en indexer.Entry) ([]search.Message, error) {
	if !search.Indexes(en.Layout) {
		return nil, fmt.Errorf("%s sessions hold no conversation text", en.Layout)
	}
	path := en.File
	if en.Layout == "mogzi" {
		path = filepath.Join(en.File, "session.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if en.Layout == "mogzi" || en.Layout == "hyperyolo" {
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		var out []search.Message
		for _, m := range search.ExtractDocument(en.Layout, data, true) {
			if en.Layout == "mogzi" || m.Session == en.ID {
				out = append(out, m)
			}
		}
		return out, nil
	}
	var out []search.Message
	br := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			out = search.ExtractLine(out, en.Layout, off, line[:len(line)-1], true)
		}
		off += int64(len(line))
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// printMessages prints the conversation: role and time, then the text indented;
// tool text folded to one line. With a grep query only the matching messages are
// printed, each with the message before and after it for context.
func printMessages(w io.Writer, en indexer.Entry, grep string, color bool) error {
	var q search.Query
	if grep != "" {
		var err error
		if q, err = search.ParseQuery(grep); err != nil {
			return usageErr(`example: sessionwatch show 1 --messages --grep "flaky test"`, "show: %v", err)
		}
	}
	msgs, err := sessionMessages(en)
	if err != nil {
		return failErr("", "show --messages: %v", err)
	}
	show := make([]bool, len(msgs))
	hit := make([]bool, len(msgs))
	for i, m := range msgs {
		if grep == "" {
			show[i] = true
			continue
		}
		if m.Part == search.PartText && search.MatchesMessage(m.Text, q) {
			hit[i] = true
			for j := max(0, i-1); j <= min(len(msgs)-1, i+1); j++ {
				show[j] = true
			}
		}
	}
	var b strings.Builder
	prev := -1
	for i, m := range msgs {
		if !show[i] {
			continue
		}
		if grep != "" && prev >= 0 && i > prev+1 {
			b.WriteString("--\n")
		}
		prev = i
		when := "-"
		if m.Time > 0 {
			when = time.UnixMilli(m.Time).Local().Format("2006-01-02 15:04:05")
		}
		if m.Part == search.PartTool {
			fmt.Fprintf(&b, "  [tool] %s\n", termSafe(cell(m.Text, 100)))
			continue
		}
		mark := ""
		if hit[i] {
			mark = "  *"
		}
		fmt.Fprintf(&b, "%s  %s%s\n", m.Role, when, mark)
		for _, l := range strings.Split(strings.TrimRight(m.Text, "\n"), "\n") {
			if hit[i] {
				_, spans := search.Snippet(l, q, 1<<30)
				fmt.Fprintf(&b, "    %s\n", highlight(strings.Join(strings.Fields(l), " "), spans, color))
			} else {
				fmt.Fprintf(&b, "    %s\n", termSafe(l))
			}
		}
	}
	if grep != "" && prev < 0 {
		return failErr("", "show: no message matches %q", grep)
	}
	_, err = io.WriteString(w, b.String())
	return err
}
