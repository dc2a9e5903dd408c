package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// statusOut is `status --json` (SPEC §6).
type statusOut struct {
	Running       bool            `json:"running"`
	PID           int             `json:"pid"`
	Uptime        int64           `json:"uptime"` // seconds
	Sources       []sourceStatus  `json:"sources"`
	RescanReasons map[string]int  `json:"rescanReasons"`
	WatchError    string          `json:"watchError,omitempty"`
	Janitor       json.RawMessage `json:"janitor"`
	Warnings      []string        `json:"warnings"`
	LastError     string          `json:"lastError"`
	StatusAge     int64           `json:"statusAge,omitempty"` // seconds since the daemon last refreshed status.json
}

// daemonRunning reports whether a daemon holds the state dir's lock, and its pid.
func daemonRunning(stateDir string) (bool, int) {
	f, err := os.Open(filepath.Join(stateDir, "daemon.pid"))
	if err != nil {
		return false, 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false, 0
	}
	var pid int
	fmt.Sscan(daemonPID(stateDir), &pid)
	return true, pid
}

func cmdStatus(e *env, args []string) error {
	fs := newFlags(e, "status", "sessionwatch status [--json]   (example: sessionwatch status)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "status: unexpected argument %q", pos[0])
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	out := buildStatus(cfg, time.Now())
	if *asJSON {
		return writeJSON(e.stdout, out)
	}
	printStatus(e, cfg, out)
	return nil
}

// buildStatus combines the daemon's status file with a liveness check of its pid;
// with no daemon running, the figures come from the catalogs on disk.
func buildStatus(cfg *config.Config, now time.Time) statusOut {
	out := statusOut{RescanReasons: map[string]int{}, Warnings: []string{}, Janitor: json.RawMessage(`{"lastRun":"","retired":0,"archived":0,"deleted":0,"skippedInUse":0,"bytesFreed":0}`)}
	out.Running, out.PID = daemonRunning(cfg.StateDir)
	raw := map[string]json.RawMessage{}
	data, _ := os.ReadFile(filepath.Join(cfg.StateDir, "status.json"))
	var st statusFile
	if json.Unmarshal(data, &st) == nil && json.Unmarshal(data, &raw) == nil {
		if j, ok := raw["janitor"]; ok && string(j) != "null" {
			out.Janitor = j
		}
		if w, ok := raw["warnings"]; ok {
			json.Unmarshal(w, &out.Warnings)
		}
		out.LastError = st.LastError
	}
	if out.Running && st.PID == out.PID {
		out.Uptime = int64(now.Sub(indexer.ParseTime(st.StartedAt)).Seconds())
		out.Sources = st.Sources
		if st.Reasons != nil {
			out.RescanReasons = st.Reasons
		}
		out.WatchError = st.WatchErr
		out.StatusAge = int64(now.Sub(indexer.ParseTime(st.UpdatedAt)).Seconds())
		if out.StatusAge > int64(3*statusEvery/time.Second) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("the daemon has not refreshed its status for %ds: it may be stuck", out.StatusAge))
		}
	} else {
		out.Sources = sourcesFromCatalogs(cfg)
	}
	if out.Sources == nil {
		out.Sources = []sourceStatus{}
	}
	// The daemon's status file knows its own passes (dry runs too); the journal
	// knows every pass that was not a dry run, a `clean` from the CLI too. The
	// newer one is the last pass.
	if p, ok, err := janitor.LastPass(cfg.StateDir); err == nil && ok {
		var cur struct {
			LastRun string `json:"lastRun"`
		}
		json.Unmarshal(out.Janitor, &cur)
		if !indexer.ParseTime(p.Time).Before(indexer.ParseTime(cur.LastRun)) {
			js := janitorStatus{LastRun: p.Time, Retired: p.Retired, Archived: p.Archived, Deleted: p.Deleted,
				SkippedInUse: p.SkippedInUse, BytesFreed: p.Bytes, Preview: p.Preview, Errors: p.Errors}
			if data, err := json.Marshal(js); err == nil {
				out.Janitor = data
			}
		}
	}
	return out
}

// sourcesFromCatalogs summarizes each enabled source from its catalogs.
func sourcesFromCatalogs(cfg *config.Config) []sourceStatus {
	var out []sourceStatus
	for _, src := range cfg.Sources {
		if !src.Enabled {
			continue
		}
		_, err := os.Stat(src.Root)
		s := sourceStatus{Name: src.Name, Layout: src.Layout, Root: src.Root, Present: err == nil}
		entries, _ := indexer.ReadCatalogs(cfg.StateDir, []string{src.Name}, nil)
		projects := map[string]bool{}
		for _, en := range entries {
			projects[en.Project] = true
			s.Sessions++
			s.Bytes += en.SizeBytes
		}
		s.Projects = len(projects)
		out = append(out, s)
	}
	return out
}

func printStatus(e *env, cfg *config.Config, out statusOut) {
	w := e.stdout
	if out.Running {
		fmt.Fprintf(w, "sessionwatch: running (pid %d, up %s)\n", out.PID, (time.Duration(out.Uptime) * time.Second).String())
	} else {
		fmt.Fprintf(w, "sessionwatch: not running (state dir %s)\n", showPath(cfg.StateDir))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tLAYOUT\tPRESENT\tPROJECTS\tSESSIONS\tSIZE\tWATCHES\tRESCANS\tROOT")
	for _, s := range out.Sources {
		present := "yes"
		if !s.Present {
			present = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%s\n", termSafe(s.Name), termSafe(s.Layout), present, s.Projects, s.Sessions, humanSize(s.Bytes), s.Watches, s.Rescans, showPath(s.Root))
	}
	tw.Flush()
	if len(out.RescanReasons) > 0 {
		var parts []string
		for _, k := range sortedKeys(out.RescanReasons) {
			parts = append(parts, fmt.Sprintf("%s %d", termSafe(k), out.RescanReasons[k]))
		}
		fmt.Fprintf(w, "rescans: %s\n", strings.Join(parts, ", "))
	}
	var j struct {
		LastRun      string `json:"lastRun"`
		Retired      int    `json:"retired"`
		Archived     int    `json:"archived"`
		Deleted      int    `json:"deleted"`
		SkippedInUse int    `json:"skippedInUse"`
		BytesFreed   int64  `json:"bytesFreed"`
		DryRun       bool   `json:"dryRun"`
		Preview      bool   `json:"preview"`
	}
	switch {
	case json.Unmarshal(out.Janitor, &j) != nil || j.LastRun == "":
		fmt.Fprintln(w, "janitor: no run yet")
	case j.Preview:
		fmt.Fprintf(w, "janitor: last run %s: first-run preview, nothing changed: would retire %d (archive %d, delete %d); apply with 'sessionwatch clean'\n",
			localTime(j.LastRun), j.Retired, j.Archived, j.Deleted)
	case j.DryRun:
		fmt.Fprintf(w, "janitor: last run %s: dry run, nothing changed: would retire %d (archive %d, delete %d), skipped in use %d\n",
			localTime(j.LastRun), j.Retired, j.Archived, j.Deleted, j.SkippedInUse)
	default:
		fmt.Fprintf(w, "janitor: last run %s: retired %d (archived %d, deleted %d), skipped in use %d, freed %s\n",
			localTime(j.LastRun), j.Retired, j.Archived, j.Deleted, j.SkippedInUse, humanSize(j.BytesFreed))
	}
	if out.WatchError != "" {
		fmt.Fprintf(w, "watch error: %s\n", termSafe(out.WatchError))
	}
	for _, warn := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", termSafe(warn))
	}
	if out.LastError != "" {
		fmt.Fprintf(w, "last error: %s\n", termSafe(out.LastError))
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
