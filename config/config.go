// Package config holds sessionwatch's configuration: the Config type and its
// defaults, parsing of the JSON config file (SPEC §7) with every problem
// reported at once, validation, and the Duration and Size value types.
//
// The flow is: defaults first (Default, SourceDefaults), then the file is
// decoded on top of them (Parse, Load), paths are expanded (ExpandPath), and
// Validate checks the result. Every problem is an error of the form
// "field.path: message (got X)"; all of them are joined with errors.Join, and
// each matches ErrInvalid with errors.Is.
//
// Every knob documents what its zero or "off" value means. In the file, a
// JSON null is the same as leaving the key out.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Defaults of the global and janitor knobs (SPEC §2, §5, §7). Per-layout
// defaults are in Layouts.
const (
	DefaultLogLevel       = "info"
	DefaultLogFormat      = "text"
	DefaultSettle         = 50 * time.Millisecond
	DefaultMaxSettle      = time.Second
	DefaultRescanInterval = time.Hour
	DefaultSchedule       = "@hourly"
	DefaultActiveGrace    = time.Hour
	DefaultLockStaleAfter = 48 * time.Hour
	DefaultAction         = ActionArchive
	DefaultWarnSize       = GiB
	DefaultWarnCount      = 500

	// DefaultStateDirRel is the default state_dir, relative to $HOME.
	DefaultStateDirRel = ".local/state/sessionwatch"
	// DefaultArchiveDirRel is the default archive_dir, relative to $HOME.
	DefaultArchiveDirRel = ".local/share/sessionwatch/archive"
	// DefaultConfigRel is the config file, relative to $XDG_CONFIG_HOME
	// (~/.config).
	DefaultConfigRel = "sessionwatch/config.json"
)

// Values with a special meaning.
const (
	ScheduleOff   = "off"     // Janitor.Schedule: no scheduled runs
	ActionArchive = "archive" // Source.Action: gzip into archive_dir, restorable
	ActionDelete  = "delete"  // Source.Action: remove the files

	// Janitor.FirstRun: the very first pass on a machine where sessionwatch
	// never ran only reports what it would retire (FirstRunPreview, the
	// default), or retires as every later pass does (FirstRunApply).
	FirstRunPreview = "preview"
	FirstRunApply   = "apply"
)

const (
	configEnvVar            = "SESSIONWATCH_CONFIG"
	defaultConfigPermission = 0o600
	legacyRootSuffix        = "-legacy"
	maxNameLen              = 128 // a source name is a directory name
	maxGotLen               = 80  // longest "(got X)" rendering
)

// ErrInvalid is matched (errors.Is) by every problem Parse, Load and Validate
// report about the configuration itself, as opposed to failures to read it.
var ErrInvalid = errors.New("invalid config")

// Problem is one thing wrong with a configuration. Its message is
// "path: message (got X)"; parts that are empty are left out.
type Problem struct {
	Path    string // field path, e.g. "sources[2].warn_size"; "" for the document itself
	Message string // what is wrong, e.g. "must not be negative"
	Got     string // the offending value as JSON, possibly shortened; "" when there is none
}

// Error formats the problem as "path: message (got X)", leaving out "(got X)"
// when the message already names X.
func (p *Problem) Error() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	// A message that already quotes the value (`invalid duration "fast"`) does
	// not repeat it.
	if p.Got != "" && !strings.Contains(p.Message, p.Got) {
		b.WriteString(" (got ")
		b.WriteString(p.Got)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns ErrInvalid.
func (p *Problem) Unwrap() error { return ErrInvalid }

// Config is the whole configuration of sessionwatch (SPEC §7).
type Config struct {
	// StateDir holds the catalog, journal and daemon state. Default
	// ~/.local/state/sessionwatch. Required; must be absolute after expansion.
	StateDir string `json:"state_dir"`
	// ArchiveDir holds archived sessions. Default
	// ~/.local/share/sessionwatch/archive. Required; must be absolute after
	// expansion.
	ArchiveDir string `json:"archive_dir"`
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `json:"log_level"`
	// LogFormat is text or json (slog handlers). Default text.
	LogFormat string `json:"log_format"`
	// Settle is how long a path must be quiet before its events are flushed.
	// Default 50ms; off (or 0) = flush each event immediately.
	Settle Duration `json:"settle"`
	// MaxSettle is the longest a busy path waits before a flush while writes
	// continue. Default 1s; off = no upper bound. Must not be below Settle.
	MaxSettle Duration `json:"max_settle"`
	// RescanInterval is how often every source is reconciled against the
	// catalog. Default 1h; off = no periodic rescan (overflows and watch
	// errors still trigger one).
	RescanInterval Duration `json:"rescan_interval"`
	// Janitor configures the cleanup runs.
	Janitor Janitor `json:"janitor"`
	// Sources are the agent stores to watch. When the file has no "sources"
	// key (or null), there is one source per layout with a default root
	// (see Default). An empty list, "sources": [], is valid and means no
	// sources at all: the daemon then watches nothing.
	Sources []Source `json:"sources"`
	// Prices override or extend the embedded price table of `usage`, per model
	// (prices.go). Default none.
	Prices map[string]Price `json:"prices,omitempty"`
	// Search configures the full-text search index (docs/search.md).
	Search Search `json:"search"`
}

// Search configures the search index.
type Search struct {
	// ToolOutput also indexes tool inputs and outputs (most of a transcript's
	// bytes). Default false: user prompts and assistant text only. Changing it
	// rebuilds the index.
	ToolOutput bool `json:"tool_output"`
}

// Janitor configures the janitor (SPEC §5).
type Janitor struct {
	// Schedule is a cron spec checked with cron.ParseStandard: five fields
	// ("0 * * * *") or a descriptor ("@hourly", "@every 10m"). Default
	// "@hourly"; "off" = no scheduled runs (RunAtStart and `clean` still run).
	Schedule string `json:"schedule"`
	// RunAtStart runs one pass when the daemon starts. Default true.
	RunAtStart bool `json:"run_at_start"`
	// DryRun reports every action and changes nothing. Default false.
	DryRun bool `json:"dry_run"`
	// ActiveGrace protects sessions modified within it. Default 1h; off = no
	// grace (other in-use checks still apply).
	ActiveGrace Duration `json:"active_grace"`
	// LockStaleAfter is the age after which a lock whose pid is alive counts
	// as stale. Default 48h; off = a lock is never stale by age (only a dead
	// pid makes it stale).
	LockStaleAfter Duration `json:"lock_stale_after"`
	// ArchiveRetention deletes archives older than it. Default off = archives
	// are kept forever.
	ArchiveRetention Duration `json:"archive_retention"`
	// FirstRun is what the daemon's very first pass on a machine where the
	// janitor never ran does (no journal and no first-run marker in the state
	// dir): "preview" (default) reports what it would retire and changes
	// nothing; "apply" retires as every later pass. `clean` always applies.
	FirstRun string `json:"first_run"`
}

// Scheduled reports whether the janitor runs on a schedule (Schedule is not
// "off" or empty).
func (j Janitor) Scheduled() bool {
	return j.Schedule != "" && !strings.EqualFold(j.Schedule, ScheduleOff)
}

// Source is one agent store to watch (SPEC §1, §3). Keys a listed source
// leaves out get the defaults of its layout (SourceDefaults).
type Source struct {
	// Name is unique among sources and matches [a-z0-9][a-z0-9_-]* because it
	// becomes a directory name. Default: the layout name.
	Name string `json:"name"`
	// Layout is one of LayoutNames(). Required.
	Layout string `json:"layout"`
	// Root is the store's directory (for hyperyolo: its sessions.json file).
	// Default: the layout's default root; required for collab-terminals,
	// which has none. Must be absolute after expansion; it need not exist.
	Root string `json:"root"`
	// Enabled: a disabled source is neither watched nor cleaned. Default true.
	Enabled bool `json:"enabled"`
	// Retention retires sessions inactive for longer. Default per layout
	// (wave 14d, hyperyolo 30d, others off); off (or 0) = never retire by age.
	Retention Duration `json:"retention"`
	// Action is what retiring does: archive (default) or delete.
	Action string `json:"action"`
	// MaxSessions keeps only the newest N sessions per project. Default 0 =
	// no cap. Must be >= 0.
	MaxSessions int `json:"max_sessions"`
	// WarnSize warns about a project larger than this. Default 1GiB
	// (hyperyolo 5MB); off (or 0) = no size warning.
	WarnSize Size `json:"warn_size"`
	// WarnCount warns about a project with more sessions. Default 500; 0 = no
	// count warning. Must be >= 0.
	WarnCount int `json:"warn_count"`
	// RemoveEmptyDirs removes project directories left empty. Default true.
	RemoveEmptyDirs bool `json:"remove_empty_dirs"`
	// NativeIndex maintains the agent's own sessions-index.json. Default true
	// for layouts that have one (wave, claude), false otherwise; true for a
	// layout without one is a validation error.
	NativeIndex bool `json:"native_index"`
	// KillOrphans kills live tmux sessions no record names (collab-terminals
	// only; true for another layout is a validation error). Default false =
	// report them only.
	KillOrphans bool `json:"kill_orphans"`
}

// Default returns the configuration with every default, computed from the
// environment now ($HOME, $CLAUDE_CONFIG_DIR, $CODEX_HOME, $XDG_CONFIG_HOME).
// Sources holds one source per layout that has a default root, named after
// its layout; a layout's further (legacy) roots get sources named
// "<layout>-legacy" — llxprt's ~/.llxprt/tmp is "llxprt-legacy".
func Default() *Config {
	home := homeDir()
	c := &Config{
		StateDir:       filepath.Join(home, DefaultStateDirRel),
		ArchiveDir:     filepath.Join(home, DefaultArchiveDirRel),
		LogLevel:       DefaultLogLevel,
		LogFormat:      DefaultLogFormat,
		Settle:         NewDuration(DefaultSettle),
		MaxSettle:      NewDuration(DefaultMaxSettle),
		RescanInterval: NewDuration(DefaultRescanInterval),
		Janitor:        defaultJanitor(),
		Sources:        defaultSources(),
	}
	c.expand(nil)
	return c
}

func defaultJanitor() Janitor {
	return Janitor{
		Schedule:         DefaultSchedule,
		RunAtStart:       true,
		ActiveGrace:      NewDuration(DefaultActiveGrace),
		LockStaleAfter:   NewDuration(DefaultLockStaleAfter),
		ArchiveRetention: DurationOff,
		FirstRun:         FirstRunPreview,
	}
}

func defaultSources() []Source {
	home := homeDir()
	var out []Source
	for _, l := range layouts {
		for i, root := range l.Roots(osGetenv, home) {
			s := SourceDefaults(l.Name)
			s.Root = root
			switch {
			case i == 1:
				s.Name += legacyRootSuffix
			case i > 1:
				s.Name += legacyRootSuffix + strconv.Itoa(i)
			}
			out = append(out, s)
		}
	}
	return out
}

// expand applies ExpandPath and filepath.Clean to every non-empty path. Undefined variables are reported
// to undefined (when non-nil) with the path of the field.
func (c *Config) expand(undefined func(path, raw string, name string)) {
	ex := func(path string, p *string) {
		raw := *p
		v := expandPath(raw, func(name string) {
			if undefined != nil {
				undefined(path, raw, name)
			}
		})
		if v != "" {
			v = filepath.Clean(v)
		}
		*p = v
	}
	ex("state_dir", &c.StateDir)
	ex("archive_dir", &c.ArchiveDir)
	for i := range c.Sources {
		ex(fmt.Sprintf("sources[%d].root", i), &c.Sources[i].Root)
	}
}

// nameRE is what a source name must match.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`) }) // compiled on first use, not at init

// Validate checks the configuration and returns every problem joined with
// errors.Join (nil if there is none). Each is a *Problem reading
// "field.path: message (got X)", e.g.
// `sources[1].action: must be archive or delete (got "trash")`.
func (c *Config) Validate() error {
	var ps problems
	checkDir := func(path, v string) {
		switch {
		case v == "":
			ps.add(path, "required", quote(v))
		case !filepath.IsAbs(v):
			ps.add(path, "must be an absolute path (after expanding ~ and $VAR)", quote(v))
		}
	}
	checkDir("state_dir", c.StateDir)
	checkPrices(c.Prices, ps.add)
	checkDir("archive_dir", c.ArchiveDir)
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		ps.add("log_level", "must be one of debug, info, warn, error", quote(c.LogLevel))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		ps.add("log_format", "must be text or json", quote(c.LogFormat))
	}
	checkDur := func(path string, d Duration) {
		if !d.Off && d.D < 0 {
			ps.add(path, "must not be negative", quote(d.String()))
		}
	}
	checkDur("settle", c.Settle)
	checkDur("max_settle", c.MaxSettle)
	checkDur("rescan_interval", c.RescanInterval)
	if c.Settle.Enabled() && c.MaxSettle.Enabled() && c.Settle.D > c.MaxSettle.D {
		ps.add("settle", fmt.Sprintf("must not exceed max_settle (%s)", c.MaxSettle), quote(c.Settle.String()))
	}

	j := c.Janitor
	if err := checkSchedule(j.Schedule); err != nil {
		ps.add("janitor.schedule", err.Error(), quote(j.Schedule))
	}
	checkDur("janitor.active_grace", j.ActiveGrace)
	checkDur("janitor.lock_stale_after", j.LockStaleAfter)
	checkDur("janitor.archive_retention", j.ArchiveRetention)
	if j.FirstRun != FirstRunPreview && j.FirstRun != FirstRunApply {
		ps.add("janitor.first_run", "must be preview or apply", quote(j.FirstRun))
	}

	names := map[string]int{}
	roots := map[[2]string]int{}
	for i, s := range c.Sources {
		p := fmt.Sprintf("sources[%d].", i)
		l, known := LookupLayout(s.Layout)
		switch {
		case s.Name == "" && s.Layout == "":
			// The name defaults to the layout; the missing layout is the problem.
		case s.Name == "":
			ps.add(p+"name", "required", quote(s.Name))
		case len(s.Name) > maxNameLen:
			ps.add(p+"name", fmt.Sprintf("must be at most %d characters", maxNameLen), quote(s.Name))
		case !nameRE().MatchString(s.Name):
			ps.add(p+"name", "must match [a-z0-9][a-z0-9_-]* (it becomes a directory name)", quote(s.Name))
		default:
			if first, dup := names[s.Name]; dup {
				ps.add(p+"name", fmt.Sprintf("duplicate name, also used by sources[%d]; set a distinct \"name\"", first), quote(s.Name))
			} else {
				names[s.Name] = i
			}
		}
		switch {
		case s.Layout == "":
			ps.add(p+"layout", "required, one of "+strings.Join(LayoutNames(), ", "), "")
		case !known:
			ps.add(p+"layout", "unknown layout, want one of "+strings.Join(LayoutNames(), ", "), quote(s.Layout))
		}
		switch {
		case s.Root == "" && known && len(l.Roots(osGetenv, homeDir())) == 0:
			ps.add(p+"root", fmt.Sprintf("required: layout %s has no default root", s.Layout), quote(s.Root))
		case s.Root == "" && known:
			ps.add(p+"root", "required", quote(s.Root))
		case s.Root == "":
			// The unknown layout is the problem.
		case !filepath.IsAbs(s.Root):
			ps.add(p+"root", "must be an absolute path (after expanding ~ and $VAR)", quote(s.Root))
		default:
			key := [2]string{s.Layout, filepath.Clean(s.Root)}
			if first, dup := roots[key]; dup {
				ps.add(p+"root", fmt.Sprintf("same layout and root as sources[%d]", first), quote(s.Root))
			} else {
				roots[key] = i
			}
		}
		checkDur(p+"retention", s.Retention)
		if s.Action != ActionArchive && s.Action != ActionDelete {
			ps.add(p+"action", "must be archive or delete", quote(s.Action))
		}
		if s.MaxSessions < 0 {
			ps.add(p+"max_sessions", "must be >= 0; 0 means no cap", strconv.Itoa(s.MaxSessions))
		}
		if s.WarnSize < 0 {
			ps.add(p+"warn_size", "must not be negative; 0 or \"off\" means no warning", strconv.FormatInt(int64(s.WarnSize), 10))
		}
		if s.WarnCount < 0 {
			ps.add(p+"warn_count", "must be >= 0; 0 means no warning", strconv.Itoa(s.WarnCount))
		}
		if s.NativeIndex && known && !l.HasNativeIndex {
			ps.add(p+"native_index", fmt.Sprintf("layout %s has no native index", s.Layout), "true")
		}
		if s.KillOrphans && known && s.Layout != LayoutCollabTerminals {
			ps.add(p+"kill_orphans", "only valid for layout "+LayoutCollabTerminals, "true")
		}
	}
	return ps.err()
}

// checkSchedule accepts "off" or anything cron.ParseStandard accepts.
func checkSchedule(s string) (err error) {
	if strings.EqualFold(s, ScheduleOff) {
		return nil
	}
	if strings.TrimSpace(s) == "" {
		return errors.New(`required (use "off" for no scheduled runs)`)
	}
	defer func() {
		// cron v3.0.1 panics on some malformed specs, e.g. "TZ=x".
		if r := recover(); r != nil {
			err = errors.New("invalid cron schedule")
		}
	}()
	if _, err := cron.ParseStandard(s); err != nil {
		return fmt.Errorf("invalid cron schedule: %v", err)
	}
	return nil
}

// Marshal returns the effective configuration as indented JSON that Parse
// reads back to an equal Config. Paths are written expanded.
func (c *Config) Marshal() ([]byte, error) {
	cc := *c
	if cc.Sources == nil {
		// null would mean "default sources" to Parse.
		cc.Sources = []Source{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&cc); err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return buf.Bytes(), nil
}

// problems collects Problems in the order they are found.
type problems []error

func (ps *problems) add(path, msg, got string) {
	*ps = append(*ps, &Problem{Path: path, Message: msg, Got: got})
}

func (ps problems) err() error { return errors.Join(ps...) }

// quote renders a string value for "(got X)".
func quote(s string) string { return shorten(strconv.Quote(s)) }

// shorten cuts a rendered value to maxGotLen bytes, on a rune boundary.
func shorten(s string) string {
	if len(s) <= maxGotLen {
		return s
	}
	cut := maxGotLen
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
