package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// shown is `show --json`: the list fields plus the layout's details.
type shown struct {
	listed
	ParentID     string          `json:"parentId,omitempty"`
	GitBranch    string          `json:"gitBranch,omitempty"`
	SkippedLines int             `json:"skippedLines"`
	Subagents    []string        `json:"subagents"`
	LockFiles    []string        `json:"lockFiles"`
	LockHolder   *lockHolder     `json:"lockHolder,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// lockHolder is who keeps a session in use.
type lockHolder struct {
	PID    int    `json:"pid"`
	Reason string `json:"reason"`
}

// existingLockFiles lists the session's lock files (the layout's and the generic
// <file>.lock sidecar) that exist now.
func existingLockFiles(en indexer.Entry) []string {
	paths := []string{en.File + ".lock"}
	if l, err := indexer.LookupLayout(en.Layout); err == nil {
		if lk, ok := l.(indexer.Locker); ok {
			paths = append(lk.LockFiles(en.Session), paths...)
		}
	}
	out := []string{}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func cmdShow(e *env, args []string) error {
	f := scopeFlags(e, "show", "sessionwatch show REF [--all] [--source S] [--type main|subagent|all] [--archived] [--json] [--messages [--grep QUERY]]   (example: sessionwatch show 1 --messages)")
	messages := f.fs.Bool("messages", false, "print the conversation (role, time, text; tool calls on one line)")
	grep := f.fs.String("grep", "", "only the messages matching QUERY, with context (implies --messages)")
	pos, err := parseFlags(f.fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("example: sessionwatch show 1", "show: want exactly one REF (got %d)", len(pos))
	}
	if *messages || *grep != "" {
		// The conversation is text only, read from the session file: refuse
		// what would otherwise be silently ignored.
		if f.json {
			return usageErr("drop --json to print the conversation, or --messages for the session's details as JSON", "show: --messages has no JSON output")
		}
		if f.archived {
			return usageErr("restore it first ('sessionwatch restore REF'), then run 'sessionwatch show REF --messages'", "show: --messages cannot read an archived session")
		}
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	sc, err := f.scope(cfg)
	if err != nil {
		return err
	}
	if f.archived {
		return showArchived(e, cfg, f.archivedScope(sc), pos[0], f.json)
	}
	refreshForListing(e, cfg, sc, nil)
	en, n, err := resolveRef(cfg, sc, pos[0], false)
	if err != nil {
		return err
	}
	if *messages || *grep != "" {
		return printMessages(e.stdout, en, *grep, isTerminal(e.stdout))
	}
	out := shown{listed: toListed(cfg, n, en, time.Now()), ParentID: en.ParentID, GitBranch: en.GitBranch, SkippedLines: en.SkippedLines, Subagents: []string{},
		LockFiles: existingLockFiles(en)}
	if h := janitor.NewLiveCheckerFor(cfg, 1).InUse(en); h.Held() {
		out.LockHolder = &lockHolder{PID: h.PID, Reason: h.Why}
	}
	// The layout's details (resume state) and the subagents live in the session's
	// own catalog (same project and source), read in full.
	if siblings, err := indexer.ReadCatalogsFull(cfg.StateDir, []string{en.Source}, []string{en.Project}); err == nil {
		for _, s := range siblings {
			if s.ParentID == en.ID {
				out.Subagents = append(out.Subagents, s.ID)
			}
			if s.ID == en.ID && s.File == en.File && s.Tail != nil {
				out.Details = s.Tail.State
			}
		}
	}
	if f.json {
		return writeJSON(e.stdout, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	// Every value goes through termSafe: titles, prompts, ids and paths come from
	// the transcripts and the file names.
	row := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%s\n", k, termSafe(fmt.Sprint(v))) }
	row("id", en.ID)
	row("agent", fmt.Sprintf("%s (%s)", en.Source, en.Layout))
	row("type", en.Type)
	if en.ParentID != "" {
		row("parent", en.ParentID)
	}
	row("project", dash(tildePath(en.Project)))
	row("file", tildePath(en.File))
	if en.Title != "" {
		row("title", en.Title)
	}
	row("first prompt", dash(en.FirstPrompt))
	row("started", localTime(en.CreatedAt))
	row("last active", localTime(en.LastActiveAt))
	row("messages", en.MessageCount)
	row("size", humanSize(en.SizeBytes))
	if en.Provider != "" {
		row("provider", en.Provider)
	}
	row("model", dash(en.Model))
	if en.GitBranch != "" {
		row("git branch", en.GitBranch)
	}
	if en.SkippedLines > 0 {
		row("skipped lines", en.SkippedLines)
	}
	if len(out.Subagents) > 0 {
		row("subagents", len(out.Subagents))
	}
	if out.LockHolder != nil {
		row("in use", fmt.Sprintf("by pid %d (%s)", out.LockHolder.PID, out.LockHolder.Reason))
	}
	for _, flag := range []struct {
		on   bool
		name string
	}{{out.Stale, "stale (past retention)"}, {en.Invalid, "invalid"}, {en.Corrupt, "corrupt"}} {
		if flag.on {
			row("status", flag.name)
		}
	}
	return tw.Flush()
}
