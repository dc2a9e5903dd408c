package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// testEnv points HOME at a fresh directory and clears the variables the
// defaults depend on. It returns the home directory.
func testEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "SESSIONWATCH_CONFIG"} {
		t.Setenv(k, "")
	}
	return home
}

// problemList returns the messages of the problems joined in err.
func problemList(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("Parse(%q) = %v, want no error", doc, err)
	}
	return c
}

func TestLayoutNames(t *testing.T) {
	want := []string{"wave", "claude", "codex", "gemini", "llxprt", "hyperyolo", "mogzi", "collab-terminals"}
	if got := LayoutNames(); !slices.Equal(got, want) {
		t.Errorf("LayoutNames() = %v, want %v", got, want)
	}
	for i, l := range Layouts() {
		if l.Name != want[i] {
			t.Errorf("Layouts()[%d].Name = %q, want %q", i, l.Name, want[i])
		}
	}
	if _, ok := LookupLayout("nope"); ok {
		t.Errorf("LookupLayout(%q) found, want not found", "nope")
	}
}

func TestLayoutDefaults(t *testing.T) {
	home := testEnv(t)
	envDir := t.TempDir()
	tests := []struct {
		layout     string
		env        map[string]string
		roots      []string
		retention  Duration
		warnSize   Size
		warnCount  int
		native     bool
		sourceRoot string
	}{
		{"wave", nil, []string{home + "/.wave/projects"}, NewDuration(14 * Day), GiB, 500, true, home + "/.wave/projects"},
		{"claude", nil, []string{home + "/.claude/projects"}, DurationOff, GiB, 500, true, home + "/.claude/projects"},
		{"claude", map[string]string{"CLAUDE_CONFIG_DIR": envDir + "/cc"}, []string{envDir + "/cc/projects"}, DurationOff, GiB, 500, true, envDir + "/cc/projects"},
		{"codex", nil, []string{home + "/.codex/sessions"}, DurationOff, GiB, 500, false, home + "/.codex/sessions"},
		{"codex", map[string]string{"CODEX_HOME": envDir + "/cx"}, []string{envDir + "/cx/sessions"}, DurationOff, GiB, 500, false, envDir + "/cx/sessions"},
		{"gemini", nil, []string{home + "/.gemini/tmp"}, DurationOff, GiB, 500, false, home + "/.gemini/tmp"},
		{"llxprt", nil, []string{home + "/.local/state/llxprt-code/tmp", home + "/.llxprt/tmp"}, DurationOff, GiB, 500, false, home + "/.local/state/llxprt-code/tmp"},
		{"hyperyolo", nil, []string{home + "/.config/hyperyolo/sessions.json"}, NewDuration(30 * Day), 5 * MB, 500, false, home + "/.config/hyperyolo/sessions.json"},
		{"hyperyolo", map[string]string{"XDG_CONFIG_HOME": envDir + "/xdg"}, []string{envDir + "/xdg/hyperyolo/sessions.json"}, NewDuration(30 * Day), 5 * MB, 500, false, envDir + "/xdg/hyperyolo/sessions.json"},
		{"hyperyolo", map[string]string{"XDG_CONFIG_HOME": "relative/xdg"}, []string{home + "/.config/hyperyolo/sessions.json"}, NewDuration(30 * Day), 5 * MB, 500, false, home + "/.config/hyperyolo/sessions.json"},
		{"mogzi", nil, []string{home + "/.mogzi/chats"}, DurationOff, GiB, 500, false, home + "/.mogzi/chats"},
		{"collab-terminals", nil, nil, DurationOff, GiB, 500, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.layout, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			l, ok := LookupLayout(tt.layout)
			if !ok {
				t.Fatalf("LookupLayout(%q) not found", tt.layout)
			}
			if got := l.Roots(os.Getenv, home); !slices.Equal(got, tt.roots) {
				t.Errorf("LookupLayout(%q).Roots() = %q, want %q", tt.layout, got, tt.roots)
			}
			if l.Retention != tt.retention || l.WarnSize != tt.warnSize || l.WarnCount != tt.warnCount || l.HasNativeIndex != tt.native {
				t.Errorf("LookupLayout(%q) = %+v, want retention %v, warn size %v, warn count %d, native %v",
					tt.layout, l, tt.retention, tt.warnSize, tt.warnCount, tt.native)
			}
			want := Source{
				Name: tt.layout, Layout: tt.layout, Root: tt.sourceRoot, Enabled: true,
				Retention: tt.retention, Action: "archive", WarnSize: tt.warnSize, WarnCount: tt.warnCount,
				RemoveEmptyDirs: true, NativeIndex: tt.native,
			}
			if got := SourceDefaults(tt.layout); got != want {
				t.Errorf("SourceDefaults(%q) = %+v, want %+v", tt.layout, got, want)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	home := testEnv(t)
	t.Setenv("CLAUDE_CONFIG_DIR", home+"/claude-cfg")
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
	if c.StateDir != home+"/.local/state/sessionwatch" || c.ArchiveDir != home+"/.local/share/sessionwatch/archive" {
		t.Errorf("Default() dirs = %q, %q", c.StateDir, c.ArchiveDir)
	}
	if c.LogLevel != "info" || c.LogFormat != "text" {
		t.Errorf("Default() log = %q, %q, want info, text", c.LogLevel, c.LogFormat)
	}
	if c.Settle != NewDuration(50*time.Millisecond) || c.MaxSettle != NewDuration(time.Second) || c.RescanInterval != NewDuration(time.Hour) {
		t.Errorf("Default() settle, max_settle, rescan = %v, %v, %v", c.Settle, c.MaxSettle, c.RescanInterval)
	}
	wantJ := Janitor{Schedule: "@hourly", RunAtStart: true, ActiveGrace: NewDuration(time.Hour), LockStaleAfter: NewDuration(48 * time.Hour), ArchiveRetention: DurationOff,
		FirstRun: FirstRunPreview}
	if c.Janitor != wantJ {
		t.Errorf("Default().Janitor = %+v, want %+v", c.Janitor, wantJ)
	}
	var names, roots []string
	for _, s := range c.Sources {
		names = append(names, s.Name)
		roots = append(roots, s.Root)
	}
	wantNames := []string{"wave", "claude", "codex", "gemini", "llxprt", "llxprt-legacy", "hyperyolo", "mogzi"}
	wantRoots := []string{
		home + "/.wave/projects", home + "/claude-cfg/projects", home + "/.codex/sessions", home + "/.gemini/tmp",
		home + "/.local/state/llxprt-code/tmp", home + "/.llxprt/tmp", home + "/.config/hyperyolo/sessions.json", home + "/.mogzi/chats",
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("Default() source names = %q, want %q", names, wantNames)
	}
	if !slices.Equal(roots, wantRoots) {
		t.Errorf("Default() source roots = %q, want %q", roots, wantRoots)
	}
	if s := c.Sources[5]; s.Layout != "llxprt" {
		t.Errorf("Default().Sources[5].Layout = %q, want llxprt", s.Layout)
	}

	// An empty document is all defaults, as is a missing sources key or null.
	for _, doc := range []string{`{}`, `{"sources":null}`, "  {\n}\n"} {
		if got := mustParse(t, doc); !reflect.DeepEqual(got, c) {
			t.Errorf("Parse(%q) = %+v, want %+v", doc, got, c)
		}
	}
}

func TestParsePartialSources(t *testing.T) {
	home := testEnv(t)
	c := mustParse(t, `{"sources":[
		{"layout":"hyperyolo"},
		{"layout":"wave","retention":"7d","name":"wave-work","root":"~/work/.wave/projects"},
		{"name":"tmux","layout":"collab-terminals","root":"$HOME/projects","kill_orphans":true},
		{"layout":"claude","warn_size":"2GiB","native_index":false}
	]}`)
	want := []Source{
		{Name: "hyperyolo", Layout: "hyperyolo", Root: home + "/.config/hyperyolo/sessions.json", Enabled: true,
			Retention: NewDuration(30 * Day), Action: "archive", WarnSize: 5 * MB, WarnCount: 500, RemoveEmptyDirs: true},
		{Name: "wave-work", Layout: "wave", Root: home + "/work/.wave/projects", Enabled: true,
			Retention: NewDuration(7 * Day), Action: "archive", WarnSize: GiB, WarnCount: 500, RemoveEmptyDirs: true, NativeIndex: true},
		{Name: "tmux", Layout: "collab-terminals", Root: home + "/projects", Enabled: true,
			Retention: DurationOff, Action: "archive", WarnSize: GiB, WarnCount: 500, RemoveEmptyDirs: true, KillOrphans: true},
		{Name: "claude", Layout: "claude", Root: home + "/.claude/projects", Enabled: true,
			Retention: DurationOff, Action: "archive", WarnSize: 2 * GiB, WarnCount: 500, RemoveEmptyDirs: true},
	}
	if !reflect.DeepEqual(c.Sources, want) {
		t.Errorf("Parse sources = %+v\nwant %+v", c.Sources, want)
	}
	// The globals keep their defaults.
	if d := Default(); c.StateDir != d.StateDir || c.Janitor != d.Janitor || c.Settle != d.Settle {
		t.Errorf("Parse globals = %+v, want defaults", c)
	}
}

func TestEmptySources(t *testing.T) {
	testEnv(t)
	c := mustParse(t, `{"sources":[]}`)
	if c.Sources == nil || len(c.Sources) != 0 {
		t.Errorf("Parse(%q).Sources = %#v, want empty non-nil", `{"sources":[]}`, c.Sources)
	}
}

func TestParseEveryProblem(t *testing.T) {
	testEnv(t)
	doc := `{
  "log_level": "verbose",
  "log_format": "xml",
  "settle": "2s",
  "max_settle": "1s",
  "rescan_interval": "1y",
  "bogus": true,
  "janitor": {"schedule": "every hour", "active_grace": -5, "shedule": "x"},
  "sources": [
    {"layout": "wave"},
    {"layout": "wave", "retention": "14x"},
    {"layout": "collab-terminals", "name": "tmux"},
    {"layout": "codex", "name": "Codex!", "native_index": true, "max_sessions": -1, "warn_size": "5XB", "warn_count": "many", "action": "trash"},
    {"layout": "nope", "name": "n", "kill_orphans": true, "root": "relative/dir"},
    {"name": "x"},
    "wave"
  ]
}`
	_, err := Parse(strings.NewReader(doc))
	want := []string{
		`rescan_interval: invalid duration "1y"`,
		`bogus: unknown key`,
		`janitor.active_grace: invalid duration: a bare number is only allowed as 0 (off); use a string with a unit such as "1h" or "14d" (got -5)`,
		`janitor.shedule: unknown key, did you mean "schedule"?`,
		`log_level: must be one of debug, info, warn, error (got "verbose")`,
		`log_format: must be text or json (got "xml")`,
		`settle: must not exceed max_settle (1s) (got "2s")`,
		`janitor.schedule: invalid cron schedule: expected exactly 5 fields, found 2: [every hour] (got "every hour")`,
		`sources[1].retention: invalid duration "14x"`,
		`sources[1].name: duplicate name, also used by sources[0]; set a distinct "name" (got "wave")`,
		`sources[1].root: same layout and root as sources[0] (got "` + os.Getenv("HOME") + `/.wave/projects")`,
		`sources[2].root: required: layout collab-terminals has no default root (got "")`,
		`sources[3].warn_size: invalid size "5XB": unknown unit "XB"`,
		`sources[3].warn_count: must be an integer (got "many")`,
		`sources[3].name: must match [a-z0-9][a-z0-9_-]* (it becomes a directory name) (got "Codex!")`,
		`sources[3].action: must be archive or delete (got "trash")`,
		`sources[3].max_sessions: must be >= 0; 0 means no cap (got -1)`,
		`sources[3].native_index: layout codex has no native index (got true)`,
		`sources[4].layout: unknown layout, want one of wave, claude, codex, gemini, llxprt, hyperyolo, mogzi, collab-terminals (got "nope")`,
		`sources[4].root: must be an absolute path (after expanding ~ and $VAR) (got "relative/dir")`,
		`sources[5].layout: required, one of wave, claude, codex, gemini, llxprt, hyperyolo, mogzi, collab-terminals`,
		`sources[6]: must be an object (got "wave")`,
	}
	got := problemList(err)
	if !slices.Equal(got, want) {
		t.Errorf("Parse problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false, want true", err)
	}
	var p *Problem
	if !errors.As(err, &p) || p.Path != "rescan_interval" {
		t.Errorf("errors.As(err, *Problem) = %+v, want path rescan_interval", p)
	}
}

func TestUnknownKeys(t *testing.T) {
	testEnv(t)
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"top level", `{"bogus":1}`, []string{"bogus: unknown key"}},
		{"top level typo", `{"log_levle":"info"}`, []string{`log_levle: unknown key, did you mean "log_level"?`}},
		{"janitor", `{"janitor":{"bogus":1}}`, []string{"janitor.bogus: unknown key"}},
		{"source", `{"sources":[{"layout":"wave","bogus":1}]}`, []string{"sources[0].bogus: unknown key"}},
		{"source typo", `{"sources":[{"layout":"wave","retension":"1d"}]}`, []string{`sources[0].retension: unknown key, did you mean "retention"?`}},
		{"every level at once", `{"a":1,"janitor":{"b":2},"sources":[{"layout":"wave"},{"layout":"codex","c":3}]}`,
			[]string{"a: unknown key", "janitor.b: unknown key", "sources[1].c: unknown key"}},
		{"duplicate key", `{"settle":"1ms","settle":"2ms"}`, []string{"settle: duplicate key"}},
		{"duplicate nested key", `{"sources":[{"layout":"wave","root":"/a","root":"/b"}]}`, []string{"sources[0].root: duplicate key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.doc))
			if got := problemList(err); !slices.Equal(got, tt.want) {
				t.Errorf("Parse(%q) = %q, want %q", tt.doc, got, tt.want)
			}
		})
	}
}

func TestWrongTypes(t *testing.T) {
	testEnv(t)
	tests := []struct {
		doc  string
		want string
	}{
		{`[]`, `config must be a JSON object (got [])`},
		{`"x"`, `config must be a JSON object (got "x")`},
		{`{"state_dir":5}`, `state_dir: must be a string (got 5)`},
		{`{"settle":true}`, `settle: invalid duration: must be a string such as "14d" or "off", not a bool (got true)`},
		{`{"janitor":[]}`, `janitor: must be an object (got [])`},
		{`{"search":{"tool_output":"yes"}}`, `search.tool_output: must be true or false (got "yes")`},
		{`{"search":{"tool_outputs":true}}`, `search.tool_outputs: unknown key, did you mean "tool_output"?`},
		{`{"janitor":{"run_at_start":"yes"}}`, `janitor.run_at_start: must be true or false (got "yes")`},
		{`{"janitor":{"first_run":"later"}}`, `janitor.first_run: must be preview or apply (got "later")`},
		{`{"janitor":{"first_run":""}}`, `janitor.first_run: must be preview or apply (got "")`},
		{`{"janitor":{"first_run":true}}`, `janitor.first_run: must be a string (got true)`},
		{`{"sources":{}}`, `sources: must be an array of source objects (got {})`},
		{`{"sources":[{"layout":"wave","max_sessions":1.5}]}`, `sources[0].max_sessions: must be an integer (got 1.5)`},
		{`{"sources":[{"layout":"wave","enabled":1}]}`, `sources[0].enabled: must be true or false (got 1)`},
		{`{"sources":[{"layout":"wave","warn_size":-1}]}`, `sources[0].warn_size: invalid size: must not be negative (got -1)`},
		{`{"sources":[{"layout":"wave","name":7}]}`, `sources[0].name: must be a string (got 7)`},
		{`{"state_dir":"$SESSIONWATCH_TEST_UNDEFINED/x"}`, `state_dir: undefined environment variable $SESSIONWATCH_TEST_UNDEFINED (got "$SESSIONWATCH_TEST_UNDEFINED/x")`},
		{``, `config is empty; want a JSON object, e.g. {}`},
	}
	for _, tt := range tests {
		_, err := Parse(strings.NewReader(tt.doc))
		if got := problemList(err); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("Parse(%q) = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

func TestParseSearch(t *testing.T) {
	testEnv(t)
	c, err := Parse(strings.NewReader(`{}`))
	if err != nil || c.Search.ToolOutput {
		t.Fatalf("Parse({}) search = %+v, %v; want tool_output false by default", c.Search, err)
	}
	c, err = Parse(strings.NewReader(`{"search":{"tool_output":true}}`))
	if err != nil || !c.Search.ToolOutput {
		t.Fatalf("Parse(tool_output true) search = %+v, %v", c.Search, err)
	}
}

func TestSyntaxError(t *testing.T) {
	testEnv(t)
	tests := []struct {
		doc  string
		want string
	}{
		{"{\n  \"a\": 1,\n}", "line 3:1: invalid JSON: invalid character '}' looking for beginning of object key string"},
		{`{"settle": "1s"`, "line 1:15: invalid JSON: unexpected end of JSON input"},
		{"{}\n{}", "line 2:1: invalid JSON: invalid character '{' after top-level value"},
		{"{\n\t\"settle\": 1s}", "line 2:13: invalid JSON: invalid character 's' after object key:value pair"},
	}
	for _, tt := range tests {
		_, err := Parse(strings.NewReader(tt.doc))
		if got := problemList(err); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("Parse(%q) = %q, want %q", tt.doc, got, tt.want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error does not match ErrInvalid", tt.doc)
		}
	}
}

// TestZeroMeansOff pins what zero and "off" mean for every knob that has
// them, as documented on the fields.
func TestZeroMeansOff(t *testing.T) {
	testEnv(t)
	src := func(c *Config) Source { return c.Sources[0] }
	tests := []struct {
		name  string
		doc   string
		check func(c *Config) bool
	}{
		{"settle off flushes each event", `{"settle":"off"}`, func(c *Config) bool { return !c.Settle.Enabled() && c.Settle.Off }},
		{"settle 0", `{"settle":0}`, func(c *Config) bool { return !c.Settle.Enabled() }},
		{"settle \"0\"", `{"settle":"0"}`, func(c *Config) bool { return !c.Settle.Enabled() }},
		{"max_settle off is no bound", `{"max_settle":"off","settle":"10s"}`, func(c *Config) bool { return !c.MaxSettle.Enabled() && c.Settle.Enabled() }},
		{"rescan_interval off", `{"rescan_interval":"off"}`, func(c *Config) bool { return !c.RescanInterval.Enabled() }},
		{"schedule off", `{"janitor":{"schedule":"OFF"}}`, func(c *Config) bool { return !c.Janitor.Scheduled() && c.Janitor.Schedule == "off" }},
		{"schedule every", `{"janitor":{"schedule":"@every 10m"}}`, func(c *Config) bool { return c.Janitor.Scheduled() }},
		{"schedule five fields", `{"janitor":{"schedule":"*/15 * * * *"}}`, func(c *Config) bool { return c.Janitor.Scheduled() }},
		{"active_grace off", `{"janitor":{"active_grace":"off"}}`, func(c *Config) bool { return !c.Janitor.ActiveGrace.Enabled() }},
		{"lock_stale_after 0", `{"janitor":{"lock_stale_after":0}}`, func(c *Config) bool { return !c.Janitor.LockStaleAfter.Enabled() }},
		{"first_run default preview", `{}`, func(c *Config) bool { return c.Janitor.FirstRun == FirstRunPreview }},
		{"first_run apply", `{"janitor":{"first_run":"apply"}}`, func(c *Config) bool { return c.Janitor.FirstRun == FirstRunApply }},
		{"archive_retention default off", `{}`, func(c *Config) bool { return !c.Janitor.ArchiveRetention.Enabled() }},
		{"archive_retention on", `{"janitor":{"archive_retention":"1w"}}`, func(c *Config) bool { return c.Janitor.ArchiveRetention == NewDuration(Week) }},
		{"retention off", `{"sources":[{"layout":"wave","retention":"off"}]}`, func(c *Config) bool { return !src(c).Retention.Enabled() }},
		{"retention 0", `{"sources":[{"layout":"wave","retention":0}]}`, func(c *Config) bool { return !src(c).Retention.Enabled() }},
		{"max_sessions 0 no cap", `{"sources":[{"layout":"wave","max_sessions":0}]}`, func(c *Config) bool { return src(c).MaxSessions == 0 }},
		{"warn_size off", `{"sources":[{"layout":"wave","warn_size":"off"}]}`, func(c *Config) bool { return src(c).WarnSize == 0 }},
		{"warn_size 0", `{"sources":[{"layout":"hyperyolo","warn_size":0}]}`, func(c *Config) bool { return src(c).WarnSize == 0 }},
		{"warn_count 0", `{"sources":[{"layout":"wave","warn_count":0}]}`, func(c *Config) bool { return src(c).WarnCount == 0 }},
		{"null keeps default", `{"settle":null,"janitor":{"schedule":null},"sources":[{"layout":"wave","retention":null}]}`,
			func(c *Config) bool {
				return c.Settle == NewDuration(DefaultSettle) && c.Janitor.Schedule == "@hourly" && src(c).Retention == NewDuration(14*Day)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.doc)
			if !tt.check(c) {
				t.Errorf("Parse(%q) = %+v, check failed", tt.doc, c)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	home := testEnv(t)
	tests := []struct {
		name   string
		modify func(c *Config)
		want   []string
	}{
		{"defaults", func(c *Config) {}, nil},
		{"no sources", func(c *Config) { c.Sources = nil }, nil},
		{"settle above max_settle", func(c *Config) { c.Settle = NewDuration(2 * time.Second) },
			[]string{`settle: must not exceed max_settle (1s) (got "2s")`}},
		{"settle above max_settle off", func(c *Config) { c.Settle, c.MaxSettle = NewDuration(time.Minute), DurationOff }, nil},
		{"negative durations", func(c *Config) {
			c.RescanInterval = Duration{D: -time.Hour}
			c.Sources[0].Retention = Duration{D: -time.Hour}
		}, []string{`rescan_interval: must not be negative (got "-1h0m0s")`, `sources[0].retention: must not be negative (got "-1h0m0s")`}},
		{"empty dirs", func(c *Config) { c.StateDir, c.ArchiveDir = "", "rel" },
			[]string{`state_dir: required (got "")`, `archive_dir: must be an absolute path (after expanding ~ and $VAR) (got "rel")`}},
		{"empty schedule", func(c *Config) { c.Janitor.Schedule = "" },
			[]string{`janitor.schedule: required (use "off" for no scheduled runs) (got "")`}},
		{"panicking schedule", func(c *Config) { c.Janitor.Schedule = "TZ=x" },
			[]string{`janitor.schedule: invalid cron schedule (got "TZ=x")`}},
		{"negative counts", func(c *Config) { c.Sources[0].WarnCount, c.Sources[0].WarnSize = -1, -1 },
			[]string{`sources[0].warn_size: must not be negative; 0 or "off" means no warning (got -1)`, `sources[0].warn_count: must be >= 0; 0 means no warning (got -1)`}},
		{"kill_orphans outside collab", func(c *Config) { c.Sources[0].KillOrphans = true },
			[]string{`sources[0].kill_orphans: only valid for layout collab-terminals (got true)`}},
		{"collab without root", func(c *Config) { c.Sources = []Source{SourceDefaults("collab-terminals")} },
			[]string{`sources[0].root: required: layout collab-terminals has no default root (got "")`}},
		{"collab with root", func(c *Config) {
			s := SourceDefaults("collab-terminals")
			s.Root, s.KillOrphans = home+"/p", true
			c.Sources = []Source{s}
		}, nil},
		{"name too long", func(c *Config) { c.Sources[0].Name = strings.Repeat("a", 129) },
			[]string{`sources[0].name: must be at most 128 characters (got "` + strings.Repeat("a", 79) + `…)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.modify(c)
			if got := problemList(c.Validate()); !slices.Equal(got, tt.want) {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	home := testEnv(t)
	t.Setenv("SESSIONWATCH_TEST_DIR", home+"/data")
	docs := []string{
		`{}`,
		`{"sources":[]}`,
		`{"state_dir":"$SESSIONWATCH_TEST_DIR/state","archive_dir":"${SESSIONWATCH_TEST_DIR}/archive/",
		  "log_level":"debug","log_format":"json","settle":"off","max_settle":"1.5s","rescan_interval":"90m",
		  "janitor":{"schedule":"@every 10m","run_at_start":false,"dry_run":true,"active_grace":0,
		             "lock_stale_after":"1w2d","archive_retention":"365d","first_run":"apply"},
		  "sources":[{"layout":"wave","retention":"36h","action":"delete","max_sessions":20,"warn_size":1536,
		              "warn_count":0,"remove_empty_dirs":false,"native_index":false,"enabled":false},
		             {"name":"ct","layout":"collab-terminals","root":"~/src","kill_orphans":true},
		             {"layout":"hyperyolo","warn_size":"1.5GiB"}]}`,
	}
	for _, doc := range docs {
		c := mustParse(t, doc)
		b, err := c.Marshal()
		if err != nil {
			t.Fatalf("Marshal() = %v", err)
		}
		back, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %v\n%s", doc, err, b)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("Parse(Marshal(Parse(%q))) = %+v, want %+v", doc, back, c)
		}
		b2, _ := back.Marshal()
		if string(b2) != string(b) {
			t.Errorf("Marshal is not stable for %q:\n%s\nthen\n%s", doc, b, b2)
		}
	}
	// A nil Sources marshals as [] (no sources), not null (default sources).
	c := Default()
	c.Sources = nil
	b, _ := c.Marshal()
	if back := mustParse(t, string(b)); len(back.Sources) != 0 {
		t.Errorf("Parse(Marshal(nil sources)).Sources = %v, want none", back.Sources)
	}
}

func TestLoad(t *testing.T) {
	home := testEnv(t)
	dir := t.TempDir()

	missing := filepath.Join(dir, "missing.json")
	c, err := Load(missing)
	if err != nil {
		t.Fatalf("Load(%q) = %v, want defaults", missing, err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load(%q) = %+v, want Default()", missing, c)
	}

	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"log_level":"warn","sources":[{"layout":"codex","root":"~/cx"}]}`), 0o600)
	c, err = Load(good)
	if err != nil {
		t.Fatalf("Load(%q) = %v", good, err)
	}
	if c.LogLevel != "warn" || len(c.Sources) != 1 || c.Sources[0].Root != home+"/cx" {
		t.Errorf("Load(%q) = %+v", good, c)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"log_level":"loud","x":1}`), 0o600)
	_, err = Load(bad)
	want := []string{bad + ": x: unknown key", bad + `: log_level: must be one of debug, info, warn, error (got "loud")`}
	if got := problemList(err); !slices.Equal(got, want) {
		t.Errorf("Load(%q) = %q, want %q", bad, got, want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Load(%q) error does not match ErrInvalid", bad)
	}

	syntax := filepath.Join(dir, "syntax.json")
	os.WriteFile(syntax, []byte("{\n,"), 0o600)
	_, err = Load(syntax)
	if got, want := problemList(err), []string{syntax + ": line 2:1: invalid JSON: invalid character ',' looking for beginning of object key string"}; !slices.Equal(got, want) {
		t.Errorf("Load(%q) = %q, want %q", syntax, got, want)
	}

	// A directory can be opened but not read: a read error, not a config error.
	_, err = Load(dir)
	if err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load(%q) = %v, want a read error naming the path", dir, err)
	}
}

func TestInit(t *testing.T) {
	home := testEnv(t)
	path := filepath.Join(t.TempDir(), "new", "sub", "config.json")
	if err := Init(path); err != nil {
		t.Fatalf("Init(%q) = %v", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("Init(%q) file mode = %v, want 0600", path, got)
	}
	di, _ := os.Stat(filepath.Dir(path))
	if got := di.Mode().Perm(); got != 0o700 {
		t.Errorf("Init(%q) dir mode = %v, want 0700", path, got)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"root": "~/.wave/projects"`) || strings.Contains(string(data), home) {
		t.Errorf("Init(%q) wrote paths not relative to ~:\n%s", path, data)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(Init(%q)) = %v", path, err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load(Init(%q)) = %+v, want Default()", path, c)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("Init(%q) left %d files in the directory, want 1", path, len(entries))
	}

	os.WriteFile(path, []byte("{}"), 0o600)
	err = Init(path)
	if err == nil || !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("Init(%q) on existing file = %v, want fs.ErrExist naming the path", path, err)
	}
	if data, _ := os.ReadFile(path); string(data) != "{}" {
		t.Errorf("Init(%q) overwrote the existing file: %q", path, data)
	}
}

func TestDefaultPath(t *testing.T) {
	home := testEnv(t)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"home", nil, home + "/.config/sessionwatch/config.json"},
		{"xdg", map[string]string{"XDG_CONFIG_HOME": "/etc/xdg-test"}, "/etc/xdg-test/sessionwatch/config.json"},
		{"relative xdg ignored", map[string]string{"XDG_CONFIG_HOME": "rel"}, home + "/.config/sessionwatch/config.json"},
		{"explicit wins", map[string]string{"XDG_CONFIG_HOME": "/etc/xdg-test", "SESSIONWATCH_CONFIG": "/srv/sw.json"}, "/srv/sw.json"},
		{"explicit expands", map[string]string{"SESSIONWATCH_CONFIG": "~/sw.json"}, home + "/sw.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if got := DefaultPath(); got != tt.want {
				t.Errorf("DefaultPath() with %v = %q, want %q", tt.env, got, tt.want)
			}
		})
	}
}

func TestExpandPath(t *testing.T) {
	home := testEnv(t)
	t.Setenv("SW_X", "/x")
	tests := []struct {
		in, want string
	}{
		{"~", home},
		{"~/a/b", home + "/a/b"},
		{"~user/a", "~user/a"},
		{"/a/~/b", "/a/~/b"},
		{"$SW_X/y", "/x/y"},
		{"${SW_X}/y", "/x/y"},
		{"$SW_UNSET_FOR_TEST/y", "/y"},
		{"~/$SW_X", home + "//x"},
		{"/plain", "/plain"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ExpandPath(tt.in); got != tt.want {
			t.Errorf("ExpandPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecodeProblemHidesValidate(t *testing.T) {
	testEnv(t)
	doc := `{"sources":[{"layout":5}]}`
	_, err := Parse(strings.NewReader(doc))
	want := []string{"sources[0].layout: must be a string (got 5)"}
	if got := problemList(err); !slices.Equal(got, want) {
		t.Errorf("Parse(%q) = %q, want %q", doc, got, want)
	}
}

func TestPricesValidate(t *testing.T) {
	c := Default()
	c.Prices = map[string]Price{"good": {Input: 3, Output: 15}, "bad": {Input: -1}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `prices."bad".input: must be a non-negative`) || strings.Contains(err.Error(), `"good"`) {
		t.Errorf("Validate() = %v, want only prices.\"bad\".input named", err)
	}
	c.Prices = map[string]Price{"m": {Input: 1, Output: 2, CacheWrite: 3, CacheRead: 0.1}}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() with valid prices = %v", err)
	}
}

// The config file's "prices" key is read (it was once rejected as unknown): each
// model's four prices, an absent one 0; a bad value or key is a problem naming it.
func TestParsePrices(t *testing.T) {
	c, err := Parse(strings.NewReader(`{"prices":{"glm-5":{"input":0.6,"output":2.2,"cache_read":0.11}}}`))
	if err != nil {
		t.Fatalf("Parse(prices) = %v", err)
	}
	want := Price{Input: 0.6, Output: 2.2, CacheRead: 0.11}
	if got := c.Prices["glm-5"]; got != want || len(c.Prices) != 1 {
		t.Errorf("Prices = %v, want glm-5: %v", c.Prices, want)
	}
	_, err = Parse(strings.NewReader(`{"prices":{"m":{"input":"cheap","outptu":1,"cache_write":-1}}}`))
	for _, w := range []string{`prices."m".input: must be a number`, `prices."m".outptu: unknown key, did you mean "output"?`, `prices."m".cache_write: must be a non-negative number`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Parse(bad prices) = %v, want a problem %q", err, w)
		}
	}
	if _, err := Parse(strings.NewReader(`{"prices":[1]}`)); err == nil || !strings.Contains(err.Error(), "prices: must be an object") {
		t.Errorf("Parse(prices array) = %v, want prices: must be an object", err)
	}
}
