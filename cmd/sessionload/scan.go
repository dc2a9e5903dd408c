package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// liteWindow is how much of each end of a transcript the agents' lite readers read
// (Claude Code's LITE_READ_BUF_SIZE, formats.md §1.5).
const liteWindow = 64 << 10

// The two ways agents list sessions without an index.
const (
	modeHeadTail = "headtail" // first and last 64 KiB of each file, the lines found there parsed
	modeFull     = "full"     // every line of every file parsed
)

// How a scanner parses the lines it reads.
const (
	parseJSON = "json" // a full JSON decode of each line, then the layout's fold
	parseFold = "fold" // the layout's fold only
)

func cmdScan(args []string, out, stderr io.Writer) error {
	fs := newFlags("scan", "sessionload scan [--layout L] [--mode headtail|full] [--parse json|fold] ROOT\n\nLists the main sessions under ROOT as an agent without an index does.\nexample: sessionload scan --layout wave --mode headtail ~/.wave/projects", stderr)
	layout := fs.String("layout", "wave", "store layout")
	mode := fs.String("mode", modeHeadTail, "headtail (first and last 64 KiB of each file) or full (every line)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "files read in parallel")
	parser := fs.String("parse", parseJSON, "json: decode every line read with encoding/json (as the agents' JSON.parse does), then summarize; fold: only sessionwatch's layout parser (the cheapest possible lister)")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if *mode != modeHeadTail && *mode != modeFull {
		return usagef("scan: --mode must be headtail or full (got %q)", *mode)
	}
	if *parser != parseJSON && *parser != parseFold {
		return usagef("scan: --parse must be json or fold (got %q)", *parser)
	}
	l, err := indexer.LookupLayout(*layout)
	if err != nil {
		return usageError{err}
	}
	ll, ok := l.(indexer.LineLayout)
	if !ok {
		return usagef("scan: layout %s is not a JSONL layout", *layout)
	}
	ss, err := scanStore(ll, pos[0], *mode, *parser == parseJSON, *workers)
	if err != nil {
		return err
	}
	return printSessions(out, ss)
}

// scanStore lists the main sessions under root the way an agent without an index
// does: walk the tree, read each transcript (its ends, or all of it), parse the
// lines read (decodeJSON: decode each fully, as JSON.parse does) and summarize them
// with the layout parser sessionwatch uses. Files are read by workers goroutines,
// as the agents read several at once.
func scanStore(l indexer.LineLayout, root, mode string, decodeJSON bool, workers int) ([]*indexer.Session, error) {
	var units []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && l.SkipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if u, k := l.Classify(rel); k == indexer.UnitLines && u == rel && !subagentPath(l.Name(), rel) {
			units = append(units, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", root, err)
	}
	out := make([]*indexer.Session, len(units))
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2*liteWindow)
			for i := range work {
				s, err := summarize(l, root, units[i], mode, decodeJSON, buf)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					continue
				}
				out[i] = s
			}
		}()
	}
	for i := range units {
		work <- i
	}
	close(work)
	wg.Wait()
	kept := out[:0]
	for _, s := range out {
		if s != nil && s.Type == indexer.TypeMain {
			kept = append(kept, s)
		}
	}
	indexer.SortSessions(kept)
	return kept, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// subagentPath reports whether a file is a subagent's by its path alone, so the
// listers skip it unread as the agents do.
func subagentPath(layout, rel string) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	switch layout {
	case "wave":
		return strings.HasPrefix(base, "subagent-")
	case "claude":
		return strings.Contains(rel, "/subagents/") || strings.HasPrefix(base, "agent-")
	case "gemini":
		return strings.Count(rel, "/") >= 3
	}
	return false
}

func summarize(l indexer.LineLayout, root, rel, mode string, decodeJSON bool, buf []byte) (*indexer.Session, error) {
	path := filepath.Join(root, filepath.FromSlash(rel))
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	acc := l.NewAccumulator(rel)
	feed := func(line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			return
		}
		if decodeJSON {
			var v any
			if json.Unmarshal(line, &v) != nil {
				return // the agents skip a line JSON.parse rejects
			}
		}
		acc.Line(line)
	}
	size := fi.Size()
	switch {
	case mode == modeFull:
		var t indexer.Tail
		if _, err := indexer.ReadLines(f, &t, feed); err != nil {
			return nil, err
		}
	case size <= 2*liteWindow:
		n, err := io.ReadFull(f, buf[:size])
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, err
		}
		eachLine(buf[:n], feed)
	default:
		head := buf[:liteWindow]
		if _, err := f.ReadAt(head, 0); err != nil {
			return nil, err
		}
		if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
			eachLine(head[:i+1], feed)
		}
		tail := buf[liteWindow : 2*liteWindow]
		if _, err := f.ReadAt(tail, size-liteWindow); err != nil && err != io.EOF {
			return nil, err
		}
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			eachLine(tail[i+1:], feed)
		}
	}
	s := &indexer.Session{File: path, SizeBytes: size, Tail: &indexer.Tail{}}
	acc.Summarize(s, indexer.FileFacts{Root: root, Unit: rel, Path: path, Size: size, Mtime: fi.ModTime()})
	return s, nil
}

// eachLine calls fn with every '\n'-terminated line of b.
func eachLine(b []byte, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		fn(b[:i])
		b = b[i+1:]
	}
}

// printSessions prints a table like `sessionwatch list`.
func printSessions(w io.Writer, ss []*indexer.Session) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "#\tID\tSTARTED\tLAST ACTIVE\tMSGS\tSIZE\tTITLE")
	for i, s := range ss {
		title := s.Title
		if title == "" {
			title = s.FirstPrompt
		}
		id := s.ID
		if len(id) > 8 {
			id = id[:8]
		}
		fmt.Fprintf(bw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", i+1, id, short(s.CreatedAt), short(s.LastActiveAt), s.MessageCount, human(s.SizeBytes), title)
	}
	return bw.Flush()
}

func short(ts string) string {
	t := indexer.ParseTime(ts)
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}
