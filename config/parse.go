package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Parse reads a JSON config: it starts from Default, decodes the document on
// top of it, expands ~ and $VAR in state_dir, archive_dir and every root, and
// validates the result. A listed source starts from SourceDefaults of its
// layout, so it gets that layout's defaults for the keys it leaves out; its
// name defaults to the layout name. A missing "sources" key (or null) keeps
// the default sources; "sources": [] means no sources.
//
// Every problem is reported, not just the first: unknown or duplicate keys at
// any level, values of the wrong type, bad durations and sizes, undefined
// variables in paths, and everything Validate checks, joined with
// errors.Join. Invalid JSON is a single problem "line L:C: message".
func Parse(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.Join(&Problem{Message: "config is empty; want a JSON object, e.g. {}"})
	}
	var doc json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, errors.Join(syntaxProblem(data, err))
	}
	d := decoder{}
	c := Default()
	d.config(c, doc)
	// Expanding before Validate lets it check the paths the daemon will use.
	c.expand(func(path, raw, name string) {
		d.add(path, fmt.Sprintf("undefined environment variable $%s", name), quote(raw))
	})
	if err := c.Validate(); err != nil {
		// A field that failed to decode kept its default; what Validate says
		// about that value would only confuse.
		failed := map[string]bool{}
		for _, e := range d.ps {
			failed[e.(*Problem).Path] = true
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if !failed[e.(*Problem).Path] {
				d.ps = append(d.ps, e)
			}
		}
	}
	sortProblems(d.ps)
	if err := d.ps.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// sortProblems orders problems so that those of one source are together and
// sources come in order, after the global ones; otherwise the order found
// is kept.
func sortProblems(ps problems) {
	index := func(e error) int {
		var p *Problem
		if !errors.As(e, &p) || !strings.HasPrefix(p.Path, "sources[") {
			return -1
		}
		n := 0
		for _, r := range p.Path[len("sources["):] {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
		}
		return n
	}
	slices.SortStableFunc(ps, func(a, b error) int { return cmp.Compare(index(a), index(b)) })
}

// Load reads and parses the config file at path. A missing file means all
// defaults (Default). Problems in the file come back joined as by Parse, each
// prefixed with the path ("/home/u/.config/sessionwatch/config.json:
// settle: ..."); other read errors are returned wrapped.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		c := Default()
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("default config (no file at %s): %w", path, err)
		}
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	c, err := Parse(f)
	if err == nil {
		return c, nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for i, e := range errs {
		errs[i] = fmt.Errorf("%s: %w", path, e)
	}
	return nil, errors.Join(errs...)
}

// syntaxProblem turns a JSON syntax error into a Problem with line:column.
func syntaxProblem(data []byte, err error) *Problem {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &Problem{Message: "invalid JSON: " + err.Error()}
	}
	off := int(se.Offset)
	if off > len(data) {
		off = len(data)
	}
	// Offset is just past the offending byte.
	pos := max(off-1, 0)
	line := 1 + bytes.Count(data[:pos], []byte("\n"))
	col := pos - bytes.LastIndexByte(data[:pos], '\n')
	return &Problem{Message: fmt.Sprintf("line %d:%d: invalid JSON: %s", line, col, se.Error())}
}

// decoder walks a syntactically valid document and collects problems. It
// looks at every key itself rather than using encoding/json's
// DisallowUnknownFields, which stops at the first unknown key, so that one
// run reports every problem.
type decoder struct {
	ps problems
}

func (d *decoder) add(path, msg, got string) { d.ps.add(path, msg, got) }

// member is one key of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// object returns the members of raw, or false (after reporting) if raw is not
// an object. Duplicate keys are reported; the last one wins, as in
// encoding/json.
func (d *decoder) object(path string, raw json.RawMessage) ([]member, bool) {
	if kindOf(raw) != "object" {
		d.add(path, "must be an object", gotRaw(raw))
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		d.add(path, "must be an object", gotRaw(raw))
		return nil, false
	}
	var ms []member
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			d.add(path, "invalid object: "+err.Error(), "")
			return ms, true
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			d.add(path, "invalid object: "+err.Error(), "")
			return ms, true
		}
		if seen[k] {
			d.add(join(path, k), "duplicate key", "")
			for i := range ms {
				if ms[i].key == k {
					ms[i].val = v
				}
			}
			continue
		}
		seen[k] = true
		ms = append(ms, member{k, v})
	}
	return ms, true
}

// field is the handler for one known key.
type field struct {
	name   string
	decode func(path string, raw json.RawMessage)
}

// fields decodes the members of an object with the handlers, reporting
// unknown keys with a suggestion. A null value leaves the field as it is.
func (d *decoder) fields(path string, ms []member, fs []field) {
	for _, m := range ms {
		p := join(path, m.key)
		i := -1
		for j, f := range fs {
			if f.name == m.key {
				i = j
			}
		}
		if i < 0 {
			msg := "unknown key"
			if s := suggest(m.key, fs); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
			}
			d.add(p, msg, "")
			continue
		}
		if kindOf(m.val) == "null" {
			continue
		}
		fs[i].decode(p, m.val)
	}
}

func (d *decoder) str(dst *string) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if kindOf(raw) != "string" {
			d.add(path, "must be a string", gotRaw(raw))
			return
		}
		_ = json.Unmarshal(raw, dst)
	}
}

func (d *decoder) boolean(dst *bool) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if kindOf(raw) != "bool" {
			d.add(path, "must be true or false", gotRaw(raw))
			return
		}
		_ = json.Unmarshal(raw, dst)
	}
}

func (d *decoder) integer(dst *int) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if kindOf(raw) != "number" {
			d.add(path, "must be an integer", gotRaw(raw))
			return
		}
		n, err := jsonInt(raw)
		if err != nil || int64(int(n)) != n {
			d.add(path, "must be an integer", gotRaw(raw))
			return
		}
		*dst = int(n)
	}
}

func (d *decoder) duration(dst *Duration) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		v, err := durationFromJSON(raw)
		if err != nil {
			d.add(path, err.Error(), gotRaw(raw))
			return
		}
		*dst = v
	}
}

func (d *decoder) size(dst *Size) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		v, err := sizeFromJSON(raw)
		if err != nil {
			d.add(path, err.Error(), gotRaw(raw))
			return
		}
		*dst = v
	}
}

func (d *decoder) config(c *Config, raw json.RawMessage) {
	if kindOf(raw) != "object" {
		d.add("", "config must be a JSON object", gotRaw(raw))
		return
	}
	ms, _ := d.object("", raw)
	d.fields("", ms, []field{
		{"state_dir", d.str(&c.StateDir)},
		{"archive_dir", d.str(&c.ArchiveDir)},
		{"log_level", d.str(&c.LogLevel)},
		{"log_format", d.str(&c.LogFormat)},
		{"settle", d.duration(&c.Settle)},
		{"max_settle", d.duration(&c.MaxSettle)},
		{"rescan_interval", d.duration(&c.RescanInterval)},
		{"janitor", func(path string, raw json.RawMessage) { d.janitor(&c.Janitor, path, raw) }},
		{"sources", func(path string, raw json.RawMessage) { d.sources(c, path, raw) }},
		{"prices", func(path string, raw json.RawMessage) { d.prices(c, path, raw) }},
		{"search", func(path string, raw json.RawMessage) {
			if ms, ok := d.object(path, raw); ok {
				d.fields(path, ms, []field{{"tool_output", d.boolean(&c.Search.ToolOutput)}})
			}
		}},
	})
}

// prices decodes "prices": {"<model>": {"input","output","cache_write","cache_read"}},
// dollars per million tokens; an absent field is 0. Validate checks the values.
func (d *decoder) prices(c *Config, path string, raw json.RawMessage) {
	ms, ok := d.object(path, raw)
	if !ok {
		return
	}
	c.Prices = make(map[string]Price, len(ms))
	for _, m := range ms {
		p := path + "." + strconv.Quote(m.key)
		pms, ok := d.object(p, m.val)
		if !ok {
			continue
		}
		var pr Price
		d.fields(p, pms, []field{
			{"input", d.number(&pr.Input)},
			{"output", d.number(&pr.Output)},
			{"cache_write", d.number(&pr.CacheWrite)},
			{"cache_read", d.number(&pr.CacheRead)},
		})
		c.Prices[m.key] = pr
	}
}

func (d *decoder) number(dst *float64) func(string, json.RawMessage) {
	return func(path string, raw json.RawMessage) {
		if kindOf(raw) != "number" || json.Unmarshal(raw, dst) != nil {
			d.add(path, "must be a number of dollars per million tokens", gotRaw(raw))
		}
	}
}

func (d *decoder) janitor(j *Janitor, path string, raw json.RawMessage) {
	ms, ok := d.object(path, raw)
	if !ok {
		return
	}
	d.fields(path, ms, []field{
		{"schedule", d.str(&j.Schedule)},
		{"run_at_start", d.boolean(&j.RunAtStart)},
		{"dry_run", d.boolean(&j.DryRun)},
		{"active_grace", d.duration(&j.ActiveGrace)},
		{"lock_stale_after", d.duration(&j.LockStaleAfter)},
		{"archive_retention", d.duration(&j.ArchiveRetention)},
		{"first_run", d.str(&j.FirstRun)},
	})
	if strings.EqualFold(j.Schedule, ScheduleOff) {
		j.Schedule = ScheduleOff
	}
}

func (d *decoder) sources(c *Config, path string, raw json.RawMessage) {
	if kindOf(raw) != "array" {
		d.add(path, "must be an array of source objects", gotRaw(raw))
		return
	}
	var elems []json.RawMessage
	_ = json.Unmarshal(raw, &elems)
	c.Sources = make([]Source, 0, len(elems))
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		ms, ok := d.object(p, e)
		if !ok {
			continue
		}
		// The layout decides the defaults, so look at it first; a layout
		// of the wrong type is reported by the field handler below.
		layout := ""
		for _, m := range ms {
			if m.key == "layout" && kindOf(m.val) == "string" {
				_ = json.Unmarshal(m.val, &layout)
			}
		}
		s := SourceDefaults(layout)
		named := false
		d.fields(p, ms, []field{
			{"name", func(path string, raw json.RawMessage) {
				named = kindOf(raw) == "string"
				d.str(&s.Name)(path, raw)
			}},
			{"layout", d.str(&s.Layout)},
			{"root", d.str(&s.Root)},
			{"enabled", d.boolean(&s.Enabled)},
			{"retention", d.duration(&s.Retention)},
			{"action", d.str(&s.Action)},
			{"max_sessions", d.integer(&s.MaxSessions)},
			{"warn_size", d.size(&s.WarnSize)},
			{"warn_count", d.integer(&s.WarnCount)},
			{"remove_empty_dirs", d.boolean(&s.RemoveEmptyDirs)},
			{"native_index", d.boolean(&s.NativeIndex)},
			{"kill_orphans", d.boolean(&s.KillOrphans)},
		})
		if !named {
			s.Name = layout
		}
		c.Sources = append(c.Sources, s)
	}
}

// join appends key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest returns the known key closest to key, if it is close enough to be a
// likely typo.
func suggest(key string, fs []field) string {
	best, bestD := "", 3
	for _, f := range fs {
		if d := editDistance(strings.ToLower(key), f.name); d < bestD {
			best, bestD = f.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return len(a) + len(b)
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// kindOf names the JSON type of a raw value: object, array, string, number,
// bool or null.
func kindOf(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// articleKind is kindOf with an article, for messages.
func articleKind(k string) string {
	switch k {
	case "object", "array":
		return "an " + k
	case "null":
		return "null"
	}
	return "a " + k
}

// gotRaw renders a raw JSON value, compacted and shortened, for "(got X)".
func gotRaw(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return shorten(string(raw))
	}
	return shorten(b.String())
}
