package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

func cmdRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "restore", "sessionwatch restore REF|ACTION-ID   (example: sessionwatch restore 0b5c3a4e)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("give the id (or a unique id prefix) of an archived session", "restore: want exactly one REF (got %d)", len(pos))
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	logger := quietLogger(cfg, e.stderr)
	g, err := loadGroup(cfg, logger, false, false)
	if err != nil {
		return err
	}
	j, err := janitor.New(cfg, g, logger, janitor.Options{})
	if err != nil {
		return failErr("", "restore: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, passLockWait)
	defer cancel()
	// A restore or retirement killed half-way is finished or undone first, so
	// the archives listed are the ones that stand.
	if _, err := j.Recover(ctx); err != nil {
		return janitorErr("restore", err)
	}
	archives, err := janitor.ListArchives(cfg.ArchiveDir, nil)
	if err != nil {
		return failErr("", "restore: %v", err)
	}
	// A journal action id picks one archive; anything else (session ids are
	// UUIDs too) resolves as a REF.
	ar, err := archiveByAction(archives, cfg.StateDir, pos[0])
	if errors.Is(err, errNoAction) {
		var projects []string
		if cwd, err := os.Getwd(); err == nil {
			projects = indexer.ProjectCandidates(cwd)
		}
		ar, err = resolveArchive(archives, pos[0], projects)
		if err != nil && isActionID(pos[0]) && errors.Is(err, indexer.ErrNotFound) {
			err = fmt.Errorf("%w: no archived session and no archive written by action %s", indexer.ErrNotFound, pos[0])
		}
	}
	if err != nil {
		return refErr(err)
	}
	rep, err := j.Restore(ctx, ar)
	if err != nil && ar.Record != nil && errors.Is(err, janitor.ErrExists) {
		return failErr("the store holds a record with that key again; 'sessionwatch delete "+ar.Meta.ID+"' first if the archived one should replace it",
			"restore: %v", err)
	}
	if err != nil {
		return janitorErr("restore", err)
	}
	m := ar.Meta
	if ar.Record != nil {
		fmt.Fprintf(e.stdout, "restored %s record %s to %s (%s)\n", m.Source, m.ID, quoteIfOdd(m.File), humanSize(rep.Actions[0].Bytes))
		return reportErrors(e, "restore", rep)
	}
	files := "1 file"
	if n := len(rep.Actions[0].Paths); n != 1 {
		files = fmt.Sprintf("%d files", n)
	}
	fmt.Fprintf(e.stdout, "restored %s session %s to %s (%s, %s)\n", m.Source, m.ID, quoteIfOdd(m.File), files, humanSize(rep.Actions[0].Bytes))
	return reportErrors(e, "restore", rep)
}

// isActionID reports whether ref is a journal action id (a UUID, 36 characters).
func isActionID(ref string) bool {
	if len(ref) != 36 {
		return false
	}
	_, err := uuid.Parse(ref)
	return err == nil
}

// archiveByAction finds the archive a journal action wrote: by the action id
// in its metadata, else by the archive path the journal recorded for it.
func archiveByAction(archives []janitor.Archived, stateDir, id string) (janitor.Archived, error) {
	if !isActionID(id) {
		return janitor.Archived{}, errNoAction
	}
	for _, a := range archives {
		if strings.EqualFold(a.Meta.ActionID, id) {
			return a, nil
		}
	}
	js, _ := janitor.ReadJournal(filepath.Join(stateDir, janitor.JournalName))
	for i := len(js) - 1; i >= 0; i-- {
		if !strings.EqualFold(js[i].ActionID, id) || js[i].Archive == "" {
			continue
		}
		for _, a := range archives {
			if a.Path == js[i].Archive && a.Meta.ID == js[i].ID {
				return a, nil
			}
		}
	}
	return janitor.Archived{}, errNoAction
}

// errNoAction: REF names no journal action that wrote an archive.
var errNoAction = errors.New("no archive written by that action")

// resolveArchive finds the archive REF names: an archive file path, an exact
// session id or a unique id prefix; among the current project's archives
// first, then among all. One session archived twice is ambiguous by id; the
// archive path then picks one.
func resolveArchive(archives []janitor.Archived, ref string, projects []string) (janitor.Archived, error) {
	if ref == "" {
		return janitor.Archived{}, fmt.Errorf("%w: empty reference", indexer.ErrBadRef)
	}
	if strings.ContainsRune(ref, '/') || strings.Contains(ref, "..") {
		abs, err := filepath.Abs(ref)
		if err == nil {
			var at []janitor.Archived
			for _, a := range archives {
				if a.Path == abs {
					at = append(at, a)
				}
			}
			switch {
			case len(at) == 1:
				return at[0], nil
			case len(at) > 1:
				// records.jsonl holds many records: the id picks one.
				var ids []string
				for _, a := range at {
					ids = append(ids, a.Meta.ID)
				}
				sort.Strings(ids)
				return janitor.Archived{}, fmt.Errorf("%w: %s holds %s: give the id", indexer.ErrAmbiguous, ref, strings.Join(ids, ", "))
			}
		}
		return janitor.Archived{}, fmt.Errorf("%w: %s is not an archive of a session", indexer.ErrBadRef, ref)
	}
	inProject := map[string]bool{}
	for _, p := range projects {
		inProject[p] = true
	}
	var here []janitor.Archived
	for _, a := range archives {
		if inProject[a.Meta.Project] {
			here = append(here, a)
		}
	}
	for _, set := range [][]janitor.Archived{here, archives} {
		a, err := matchArchive(set, ref)
		if err == nil || !strings.Contains(err.Error(), indexer.ErrNotFound.Error()) {
			return a, err
		}
	}
	return janitor.Archived{}, fmt.Errorf("%w: no archived session matches %s", indexer.ErrNotFound, ref)
}

// matchArchive matches REF against archives: exact ids first, then prefixes.
func matchArchive(archives []janitor.Archived, ref string) (janitor.Archived, error) {
	var exact, prefix []janitor.Archived
	for _, a := range archives {
		switch {
		case a.Meta.ID == ref:
			exact = append(exact, a)
		case strings.HasPrefix(a.Meta.ID, ref):
			prefix = append(prefix, a)
		}
	}
	matches := exact
	if len(matches) == 0 {
		matches = prefix
	}
	switch len(matches) {
	case 0:
		return janitor.Archived{}, indexer.ErrNotFound
	case 1:
		return matches[0], nil
	}
	ids := map[string]bool{}
	var names []string
	for _, m := range matches {
		if !ids[m.Meta.ID] {
			ids[m.Meta.ID] = true
			names = append(names, m.Meta.ID)
		}
	}
	if len(names) == 1 {
		// The same session archived more than once: name the archive files.
		names = names[:0]
		for _, m := range matches {
			if m.Meta.ActionID != "" {
				names = append(names, m.Path+" (action "+m.Meta.ActionID+")")
			} else {
				names = append(names, m.Path)
			}
		}
	}
	sort.Strings(names)
	return janitor.Archived{}, fmt.Errorf("%w: %s matches %s", indexer.ErrAmbiguous, ref, strings.Join(names, ", "))
}
