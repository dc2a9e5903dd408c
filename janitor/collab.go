package janitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// claude-mermaid-collab terminal records (SPEC §3.8) are not retired by age:
// a record is alive while its tmux session is. The reconcile of a pass asks
// tmux which sessions live, then for every terminal-sessions.json of the
// source removes the records whose tmuxSession is gone (each appended to
// <archive_dir>/<source>/records.jsonl first), renumbers the order of the
// others 0..n-1, and rewrites the file atomically, keeping every unknown field
// and every other record. Live tmux sessions named mc-<session>-*, where
// <session> is the name of a collab session directory of the source, that no
// record names are orphans: reported, and killed only with kill_orphans.
//
// tmux is run with the daemon's environment, so TMUX_TMPDIR (and TMUX) pick
// the server as they do for the user's own tmux. "No server" is an empty list
// only when tmux says so; any other failure skips the reconcile.

// Tmux is how the janitor runs tmux.
type Tmux struct {
	// Path is the tmux binary; "" looks "tmux" up in PATH at every pass.
	Path string
	// Env is tmux's environment; nil is this process's.
	Env []string
}

// tmuxTimeout bounds one tmux command.
const tmuxTimeout = 10 * time.Second

// errNoTmux: tmux is not installed (not in PATH).
var errNoTmux = errors.New("tmux not found in PATH")

// collabOrphanPrefix starts the tmux session names claude-mermaid-collab
// gives its terminals: mc-<collab session>-<suffix>.
const collabOrphanPrefix = "mc-"

func (t Tmux) binary() (string, error) {
	if t.Path != "" {
		return t.Path, nil
	}
	p, err := exec.LookPath("tmux")
	if err != nil {
		return "", errNoTmux
	}
	return p, nil
}

// run runs one tmux command and returns its stdout; a failure carries the
// exit status and the first line tmux printed on stderr.
func (t Tmux) run(ctx context.Context, args ...string) (string, error) {
	bin, err := t.binary()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, tmuxTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = t.Env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		var ee *exec.ExitError
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w (%s)", errNoTmux, bin)
		}
		if errors.As(err, &ee) {
			return "", &tmuxError{args: args, code: ee.ExitCode(), msg: msg}
		}
		return "", fmt.Errorf("tmux %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// tmuxError is a tmux command that exited non-zero.
type tmuxError struct {
	args []string
	code int
	msg  string // first line of stderr
}

func (e *tmuxError) Error() string {
	return fmt.Sprintf("tmux %s: exit status %d: %s", e.args[0], e.code, e.msg)
}

// noServer reports whether tmux failed only because no server runs on its
// socket: "no server running on <socket>" (a socket nobody listens on), or
// "error connecting to <socket> (No such file or directory)" (no socket at
// all: tmux 3.x's wording for the same thing).
func noServer(err error) bool {
	var te *tmuxError
	if !errors.As(err, &te) || te.code != 1 {
		return false
	}
	return strings.HasPrefix(te.msg, "no server running on ") ||
		strings.HasPrefix(te.msg, "error connecting to ") && strings.HasSuffix(te.msg, "(No such file or directory)")
}

// listSessions returns the names of the live tmux sessions of the server the
// environment selects; none when no server runs.
func (t Tmux) listSessions(ctx context.Context) (map[string]bool, error) {
	out, err := t.run(ctx, "list-sessions", "-F", "#{session_name}")
	if noServer(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, name := range strings.Split(out, "\n") {
		if name = strings.TrimRight(name, "\r"); name != "" {
			live[name] = true
		}
	}
	return live, nil
}

// created returns when each live session was created (tmux's session_created);
// names tmux cannot say are missing.
func (t Tmux) created(ctx context.Context) map[string]time.Time {
	out, err := t.run(ctx, "list-sessions", "-F", "#{session_name}:#{session_created}")
	if err != nil {
		return nil
	}
	m := map[string]time.Time{}
	for _, line := range strings.Split(out, "\n") {
		// tmux never puts ':' in a session name, so the last one separates.
		i := strings.LastIndexByte(line, ':')
		if i < 0 {
			continue
		}
		if sec, err := strconv.ParseInt(strings.TrimSpace(line[i+1:]), 10, 64); err == nil && sec > 0 {
			m[line[:i]] = time.Unix(sec, 0)
		}
	}
	return m
}

// kill kills one session by its exact name.
func (t Tmux) kill(ctx context.Context, name string) error {
	_, err := t.run(ctx, "kill-session", "-t", "="+name)
	return err
}

// collabFile is one terminal-sessions.json as the reconcile read it.
type collabFile struct {
	path    string
	session string // the collab session: the name of the directory holding the file
	ok      bool   // read and parsed; otherwise its session's tmux names are left alone
	named   []string
}

// collab runs the pass over a collab-terminals source: the project warnings,
// then the tmux reconcile (not with --invalid-only: it asks for invalid
// sessions only, and terminal records are never marked invalid).
func (p *pass) collab(ix *indexer.Indexer, src config.Source, o Overrides) {
	pol := p.j.policy(src, o)
	// Terminal records leave by the reconcile only: retention, --older-than
	// and the count cap do not apply to them.
	pol.Retention, pol.OlderThan, pol.MaxSessions, pol.InvalidOnly = 0, 0, 0, false
	sessions := ix.Sessions()
	cands := make([]Candidate, len(sessions))
	for i, s := range sessions {
		cands[i] = Candidate{Session: s, Paths: []string{s.File}, Bytes: s.SizeBytes}
	}
	p.recordActions(Plan(p.now, cands, pol))
	if o.InvalidOnly || p.ctx.Err() != nil {
		return
	}
	p.reconcile(ix, src, sessions)
}

// tmuxNote logs why a source's reconcile was skipped, once until the reason
// changes, and reports it in the pass.
func (p *pass) tmuxNote(src config.Source, why string) {
	j := p.j
	changed := j.noteChanged("tmux\x00"+src.Name, why)
	if why == "" {
		return
	}
	if changed {
		j.log.Info("tmux reconcile skipped", "source", src.Name, "reason", why)
	}
	p.record(Action{Kind: KindSkip, Source: src.Name, File: filepath.Clean(src.Root), Reason: "tmux reconcile skipped: " + why})
}

// reconcile removes dead terminal records and finds orphans.
func (p *pass) reconcile(ix *indexer.Indexer, src config.Source, sessions []*indexer.Session) {
	j := p.j
	tmux := j.opt.Tmux
	files := map[string]bool{}
	for _, s := range sessions {
		files[s.File] = true
	}
	if _, err := tmux.binary(); err != nil {
		if len(files) > 0 {
			p.tmuxNote(src, "tmux is not installed (not found in PATH)")
		}
		return
	}
	live, err := tmux.listSessions(p.ctx)
	if err != nil {
		p.tmuxNote(src, err.Error())
		return
	}
	p.tmuxNote(src, "")

	// Files with no record are not in the catalog; their collab sessions
	// matter only when a live mc- session is not named by the catalog.
	named := catalogTmuxNames(sessions)
	for name := range live {
		if strings.HasPrefix(name, collabOrphanPrefix) && !named[name] {
			for _, f := range collabFilesOnDisk(ix) {
				files[f] = true
			}
			break
		}
	}
	paths := make([]string, 0, len(files))
	for f := range files {
		paths = append(paths, f)
	}
	sort.Strings(paths)

	g := newGatherer(p.now, ix, nil, nil, 0, nil)
	grace := enabledDur(j.cfg.Janitor.ActiveGrace)
	var read []collabFile
	var update []string
	for _, f := range paths {
		if p.ctx.Err() != nil {
			return
		}
		cf, changed := p.reconcileFile(g, src, f, live, grace)
		read = append(read, cf)
		if changed {
			update = append(update, f)
		}
	}
	if len(update) > 0 && !p.dry {
		if err := ix.Update(update); err != nil {
			p.fail("update catalog of "+src.Name, err)
		}
	}
	p.orphans(src, read, live)
}

// catalogTmuxNames are the tmux sessions the catalog's records name.
func catalogTmuxNames(sessions []*indexer.Session) map[string]bool {
	out := map[string]bool{}
	for _, s := range sessions {
		if s.Tail == nil || len(s.Tail.State) == 0 {
			continue
		}
		var st struct {
			TmuxSession string `json:"tmuxSession"`
		}
		if json.Unmarshal(s.Tail.State, &st) == nil && st.TmuxSession != "" {
			out[st.TmuxSession] = true
		}
	}
	return out
}

// collabFilesOnDisk lists the source's terminal-sessions.json files, walking
// only the directories the layout can hold them in (never following symlinks).
func collabFilesOnDisk(ix *indexer.Indexer) []string {
	root := filepath.Clean(ix.Root())
	l := ix.Layout()
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return
		}
		for _, e := range ents {
			r := path.Join(rel, e.Name())
			switch {
			case e.IsDir():
				if !l.SkipDir(r) {
					walk(r)
				}
			case e.Type().IsRegular():
				if _, kind := l.Classify(r); kind != indexer.UnitNone {
					out = append(out, filepath.Join(root, filepath.FromSlash(r)))
				}
			}
		}
	}
	walk("")
	return out
}

// reconcileFile removes the records of one file whose tmux session is gone.
// It reports what it read and whether it rewrote the file.
func (p *pass) reconcileFile(g *gatherer, src config.Source, file string, live map[string]bool, grace time.Duration) (collabFile, bool) {
	j := p.j
	cf := collabFile{path: file, session: filepath.Base(filepath.Dir(file))}
	skip := func(why string) (collabFile, bool) {
		p.record(Action{Kind: KindSkip, Source: src.Name, File: file, Reason: why})
		if j.noteChanged("file\x00"+file, why) {
			j.log.Warn("collab file left alone", "source", src.Name, "file", file, "reason", why)
		}
		return cf, false
	}
	if !g.inside(file) {
		return skip("outside the source root " + g.root)
	}
	if why := g.parentsSafe(file); why != "" {
		return skip(why)
	}
	sf, err := readStore(file)
	if err != nil {
		return skip("cannot be read: " + err.Error())
	}
	if sf.info == nil {
		return cf, true // gone: the catalog follows
	}
	doc, err := indexer.DecodeCollabFile(sf.data)
	var raws []json.RawMessage
	if err == nil {
		raws, err = collabRawRecords(sf.data)
	}
	if err == nil && len(raws) != len(doc.Sessions) {
		err = errors.New("records do not line up")
	}
	if err != nil {
		return skip("does not parse (" + err.Error() + "): its terminals are left alone")
	}
	cf.ok = true
	j.noteChanged("file\x00"+file, "")

	var kept []indexer.CollabRecord
	var keptRaw []json.RawMessage
	var gone []Action
	var lines []RecordLine
	for i, r := range doc.Sessions {
		if r.TmuxSession == "" || live[r.TmuxSession] {
			kept, keptRaw = append(kept, r), append(keptRaw, raws[i])
			if r.TmuxSession != "" {
				cf.named = append(cf.named, r.TmuxSession)
			}
			continue
		}
		reason := fmt.Sprintf("tmux session %s is gone", r.TmuxSession)
		created := indexer.ParseTime(r.Created)
		if created.IsZero() {
			created = sf.info.ModTime()
		}
		if grace > 0 && p.now.Sub(created) < grace {
			// The agent may have written the record before starting its session.
			kept, keptRaw = append(kept, r), append(keptRaw, raws[i])
			cf.named = append(cf.named, r.TmuxSession)
			p.record(Action{Kind: KindSkipInUse, Source: src.Name, ID: r.ID, File: file, Bytes: int64(len(raws[i])),
				Reason: fmt.Sprintf("created %s ago, within active_grace %s (due: %s)", ageString(p.now.Sub(created)), durString(grace), reason)})
			continue
		}
		l, err := newRecordLine(src.Name, src.Layout, r.ID, file, reason, raws[i], time.Now())
		if err != nil {
			kept, keptRaw = append(kept, r), append(keptRaw, raws[i])
			p.fail("archive terminal record "+r.ID, err)
			continue
		}
		lines = append(lines, l)
		gone = append(gone, Action{Kind: KindRemoveRecord, Source: src.Name, ID: r.ID, File: file, Bytes: int64(len(raws[i])),
			Reason: reason, Paths: []string{file}})
	}
	if len(gone) == 0 {
		return cf, false
	}
	renumber(kept)
	out, err := encodeCollab(sf.data, keptRaw, kept)
	if err != nil {
		p.fail("encode "+file, err)
		return cf, false
	}
	archive := filepath.Join(j.cfg.ArchiveDir, src.Name, RecordsName)
	if !p.dry {
		if _, err := appendRecords(filepath.Dir(archive), lines); err != nil {
			p.fail("archive terminal records of "+file, err)
			return cf, false
		}
		if err := replaceFile(sf, out); err != nil {
			p.fail("rewrite "+file, err)
			for _, a := range gone {
				a.Error, a.Archive, a.touched = err.Error(), archive, true
				p.record(a)
			}
			return cf, false
		}
	}
	for _, a := range gone {
		a.Archive = archive
		msg := "terminal record removed"
		if p.dry {
			msg = "dry run: terminal record would be removed"
		}
		j.log.Info(msg, "source", a.Source, "id", a.ID, "file", a.File, "reason", a.Reason)
		p.record(a)
	}
	return cf, !p.dry
}

// collabRawRecords returns the records of a terminal-sessions.json verbatim.
func collabRawRecords(data []byte) ([]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	var recs []json.RawMessage
	if raw := bytes.TrimSpace(top["sessions"]); len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &recs); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// encodeCollab renders a terminal-sessions.json whose records are now recs
// (their raw values, with orders from typed): every other byte of every value
// — top-level fields, record fields, string escapes, number literals — is kept;
// only an "order" value changes, and the layout is the tool's own
// (JSON.stringify(state, null, 2): two-space indent, no trailing newline).
func encodeCollab(data []byte, recs []json.RawMessage, typed []indexer.CollabRecord) ([]byte, error) {
	var arr bytes.Buffer
	arr.WriteByte('[')
	for i, raw := range recs {
		if i > 0 {
			arr.WriteByte(',')
		}
		order := []byte(strconv.Itoa(typed[i].Order))
		rec, found, err := replaceFields(raw, "order", order)
		if err != nil {
			return nil, err
		}
		if !found {
			// The tool always writes an order: add it last.
			rec = append(rec[:len(rec)-1], []byte(`,"order":`+string(order)+`}`)...)
			if len(rec) > 1 && string(rec[:2]) == "{," {
				rec = append([]byte{'{'}, rec[2:]...)
			}
		}
		arr.Write(rec)
	}
	arr.WriteByte(']')
	top, found, err := replaceFields(data, "sessions", arr.Bytes())
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errors.New("no sessions array")
	}
	var out bytes.Buffer
	if err := json.Indent(&out, top, "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// replaceFields returns the JSON object obj, compacted, with the value of
// every field named key replaced by val; every other key and value is kept
// byte for byte, in its order.
func replaceFields(obj []byte, key string, val []byte) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, fmt.Errorf("not a JSON object")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	found := false
	for n := 0; dec.More(); n++ {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		k, _ := tok.(string)
		// The key as written (re-encoding it could change its escapes).
		rawKey := bytes.TrimLeft(obj[start:dec.InputOffset()], " \t\r\n,")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(rawKey)
		b.WriteByte(':')
		if k == key {
			v, found = val, true
		}
		if err := json.Compact(&b, v); err != nil {
			return nil, false, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), found, nil
}

// renumber gives the records the orders 0..n-1, keeping their relative order
// (records without a numeric order come last, in file order). Their place in
// the file does not change.
func renumber(rs []indexer.CollabRecord) {
	idx := make([]int, len(rs))
	for i := range idx {
		idx[i] = i
	}
	key := func(i int) (bool, int) {
		_, wrong := rs[i].Extra["order"]
		return wrong, rs[i].Order
	}
	sort.SliceStable(idx, func(a, b int) bool {
		wa, oa := key(idx[a])
		wb, ob := key(idx[b])
		if wa != wb {
			return !wa
		}
		return oa < ob
	})
	for rank, i := range idx {
		delete(rs[i].Extra, "order")
		rs[i].Order = rank
	}
}

// replaceFile rewrites a file atomically, keeping its mode: a temp file in its
// directory, fsync, rename, fsync of the directory. A file that changed since
// it was read is left as it is (errChanged).
func replaceFile(sf storeFile, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(sf.path), indexer.TempPrefix+filepath.Base(sf.path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", sf.path, err)
	}
	return commitFile(f, sf, data, nil)
}

// orphans reports (and with kill_orphans kills) the live tmux sessions named
// mc-<session>-* for a collab session of the source that no record names. A
// session whose file could not be read protects every name it could own, and
// a name another collab source's catalog holds is no orphan.
func (p *pass) orphans(src config.Source, files []collabFile, live map[string]bool) {
	j := p.j
	named := map[string]bool{}
	for _, ix := range j.group.Indexers() {
		if ix.Layout().Name() == config.LayoutCollabTerminals && ix.Options().Source != src.Name {
			for n := range catalogTmuxNames(ix.Sessions()) {
				named[n] = true
			}
		}
	}
	for _, f := range files {
		for _, n := range f.named {
			named[n] = true
		}
	}
	type orphan struct{ name, session, file string }
	var found []orphan
	names := make([]string, 0, len(live))
	for n := range live {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if named[n] || !strings.HasPrefix(n, collabOrphanPrefix) {
			continue
		}
		var match *collabFile
		unknown := false
		for i := range files {
			f := &files[i]
			if !strings.HasPrefix(n, collabOrphanPrefix+f.session+"-") {
				continue
			}
			if !f.ok {
				unknown = true
			} else if match == nil {
				match = f
			}
		}
		if match != nil && !unknown {
			found = append(found, orphan{n, match.session, match.path})
		}
	}
	seen := map[string]bool{}
	var created map[string]time.Time
	if src.KillOrphans && len(found) > 0 {
		created = j.opt.Tmux.created(p.ctx)
	}
	grace := enabledDur(j.cfg.Janitor.ActiveGrace)
	for _, o := range found {
		key := src.Name + "\x00" + o.name
		seen[key] = true
		a := Action{Kind: KindOrphan, Source: src.Name, ID: o.name, File: o.file,
			Reason: fmt.Sprintf("tmux session %s belongs to collab session %s, but no terminal record names it", o.name, o.session)}
		hint := fmt.Sprintf("kill it with 'tmux kill-session -t =%s' if it is not needed, or set \"kill_orphans\": true for source %q", o.name, src.Name)
		kill := src.KillOrphans
		switch {
		case !kill:
			a.Reason += " (kill_orphans off: reported only)"
		case created[o.name].IsZero():
			a.Reason += " (not killed: tmux did not say when it was created)"
			kill = false
		case grace > 0 && p.now.Sub(created[o.name]) < grace:
			a.Reason += fmt.Sprintf(" (not killed: created %s ago, within active_grace %s)", ageString(p.now.Sub(created[o.name])), durString(grace))
			kill = false
		}
		// A lasting orphan is logged at WARN and journaled once per Janitor
		// (a dry pass journals nothing), and shown in every report.
		j.mu.Lock()
		seenBefore := j.orphans[key]
		j.orphans[key] |= orphanLogged
		if !p.dry {
			j.orphans[key] |= orphanJournaled
		}
		j.mu.Unlock()
		if !kill {
			p.rep.Warnings = append(p.rep.Warnings, Warning{Source: src.Name, Message: "orphan " + a.Reason, Hint: hint})
		}
		if seenBefore&orphanLogged == 0 {
			j.log.Warn("orphan tmux session", "source", src.Name, "session", o.name, "file", o.file, "reason", a.Reason, "hint", hint)
		}
		if seenBefore&orphanJournaled == 0 {
			p.record(a)
		} else {
			p.rep.Actions = append(p.rep.Actions, a)
		}
		if !kill {
			continue
		}
		k := Action{Kind: KindKillOrphan, Source: src.Name, ID: o.name, File: o.file, Reason: "orphan tmux session killed (kill_orphans)"}
		if !p.dry {
			if err := j.opt.Tmux.kill(p.ctx, o.name); err != nil {
				k.Error = err.Error()
				p.fail("kill tmux session "+o.name, err)
			} else {
				j.log.Info("orphan tmux session killed", "source", src.Name, "session", o.name)
			}
		}
		p.record(k)
	}
	j.mu.Lock()
	for key := range j.orphans {
		if strings.HasPrefix(key, src.Name+"\x00") && !seen[key] {
			delete(j.orphans, key) // gone: report it afresh if it comes back
		}
	}
	j.mu.Unlock()
}

// Bits of Janitor.orphans.
const (
	orphanLogged    = 1 << iota // logged at WARN
	orphanJournaled             // journaled
)
