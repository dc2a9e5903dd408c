package config

import (
	"os"
	"os/user"
	"path/filepath"
)

// Layout names, as written in a source's "layout" key (SPEC §3).
const (
	LayoutWave            = "wave"
	LayoutClaude          = "claude"
	LayoutCodex           = "codex"
	LayoutGemini          = "gemini"
	LayoutLlxprt          = "llxprt"
	LayoutHyperyolo       = "hyperyolo"
	LayoutMogzi           = "mogzi"
	LayoutCollabTerminals = "collab-terminals"
)

// LayoutDefaults is one row of the built-in table of known layouts (SPEC §3):
// the defaults a source of that layout gets for keys it does not set.
type LayoutDefaults struct {
	Name           string   // layout name, e.g. "wave"
	Retention      Duration // default retention; off = sessions are kept forever
	WarnSize       Size     // default per-project size warning threshold
	WarnCount      int      // default per-project session count warning threshold
	HasNativeIndex bool     // the agent reads a sessions-index.json that sessionwatch maintains

	// Roots returns the default root(s) given the environment and the home
	// directory; none means the layout has no default root
	// (collab-terminals), so a source of it must set "root". The first root
	// is the current one; later ones are legacy locations.
	Roots func(getenv func(string) string, home string) []string
}

// layouts is the table, in SPEC order.
var layouts = []LayoutDefaults{
	{
		Name: LayoutWave, Retention: NewDuration(14 * Day), WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount, HasNativeIndex: true,
		Roots: func(_ func(string) string, home string) []string {
			return []string{filepath.Join(home, ".wave", "projects")}
		},
	},
	{
		Name: LayoutClaude, Retention: DurationOff, WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount, HasNativeIndex: true,
		Roots: func(getenv func(string) string, home string) []string {
			if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
				return []string{filepath.Join(d, "projects")}
			}
			return []string{filepath.Join(home, ".claude", "projects")}
		},
	},
	{
		Name: LayoutCodex, Retention: DurationOff, WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount,
		Roots: func(getenv func(string) string, home string) []string {
			if d := getenv("CODEX_HOME"); d != "" {
				return []string{filepath.Join(d, "sessions")}
			}
			return []string{filepath.Join(home, ".codex", "sessions")}
		},
	},
	{
		Name: LayoutGemini, Retention: DurationOff, WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount,
		Roots: func(_ func(string) string, home string) []string {
			return []string{filepath.Join(home, ".gemini", "tmp")}
		},
	},
	{
		Name: LayoutLlxprt, Retention: DurationOff, WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount,
		Roots: func(_ func(string) string, home string) []string {
			return []string{
				filepath.Join(home, ".local", "state", "llxprt-code", "tmp"),
				filepath.Join(home, ".llxprt", "tmp"), // legacy
			}
		},
	},
	{
		// The root is a file: the whole store is one JSON document.
		Name: LayoutHyperyolo, Retention: NewDuration(30 * Day), WarnSize: 5 * MB, WarnCount: DefaultWarnCount,
		Roots: func(getenv func(string) string, home string) []string {
			return []string{filepath.Join(xdgConfigHome(getenv, home), "hyperyolo", "sessions.json")}
		},
	},
	{
		Name: LayoutMogzi, Retention: DurationOff, WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount,
		Roots: func(_ func(string) string, home string) []string {
			return []string{filepath.Join(home, ".mogzi", "chats")}
		},
	},
	{
		Name: LayoutCollabTerminals, Retention: DurationOff, WarnSize: DefaultWarnSize, WarnCount: DefaultWarnCount,
		Roots: func(func(string) string, string) []string { return nil },
	},
}

// Size units for writing defaults in code.
const (
	KB  Size = 1e3
	MB  Size = 1e6
	GB  Size = 1e9
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
)

// Layouts returns the table of known layouts in SPEC order: wave, claude,
// codex, gemini, llxprt, hyperyolo, mogzi, collab-terminals. The slice is a
// copy.
func Layouts() []LayoutDefaults {
	return append([]LayoutDefaults(nil), layouts...)
}

// LayoutNames returns the names of the known layouts in SPEC order.
func LayoutNames() []string {
	names := make([]string, len(layouts))
	for i, l := range layouts {
		names[i] = l.Name
	}
	return names
}

// LookupLayout returns the defaults of the named layout and whether it is
// known.
func LookupLayout(name string) (LayoutDefaults, bool) {
	for _, l := range layouts {
		if l.Name == name {
			return l, true
		}
	}
	return LayoutDefaults{}, false
}

// SourceDefaults returns a Source with every default for layout: Name and
// Layout set to layout, Root the first default root in the current
// environment ("" if the layout has none), and the layout's retention, warn
// thresholds and native index setting. For an unknown layout it returns the
// generic defaults (retention off, no native index) so that decoding can go
// on; Validate reports the layout.
func SourceDefaults(layout string) Source {
	s := Source{
		Name:            layout,
		Layout:          layout,
		Enabled:         true,
		Retention:       DurationOff,
		Action:          ActionArchive,
		WarnSize:        DefaultWarnSize,
		WarnCount:       DefaultWarnCount,
		RemoveEmptyDirs: true,
	}
	l, ok := LookupLayout(layout)
	if !ok {
		return s
	}
	s.Retention = l.Retention
	s.WarnSize = l.WarnSize
	s.WarnCount = l.WarnCount
	s.NativeIndex = l.HasNativeIndex
	if roots := l.Roots(os.Getenv, homeDir()); len(roots) > 0 {
		s.Root = roots[0]
	}
	return s
}

// homeDir returns $HOME, else the home directory of the current user, else "".
func homeDir() string {
	if h := os.Getenv("HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// xdgConfigHome returns $XDG_CONFIG_HOME when it is an absolute path (the XDG
// spec says relative values are to be ignored), else home/.config.
func xdgConfigHome(getenv func(string) string, home string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(home, ".config")
}
