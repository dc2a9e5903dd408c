package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestHelpEverywhere: --help, -h, help CMD, for every command and subcommand,
// print that command's usage with an example on stdout and exit 0.
func TestHelpEverywhere(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "help"}} {
		out, errs, code := e.cli(args...)
		if code != 0 || out != usageText || errs != "" {
			t.Errorf("%q = %d, stdout %d bytes, stderr %q; want the usage on stdout, exit 0", args, code, len(out), errs)
		}
	}
	var cmds [][]string
	for _, c := range commandNames {
		if c == "help" {
			continue
		}
		cmds = append(cmds, []string{c})
		for _, sub := range subcommands[c] {
			if c != "completion" {
				cmds = append(cmds, []string{c, sub})
			}
		}
	}
	for _, cmd := range cmds {
		want := "usage: sessionwatch " + strings.Join(cmd, " ")
		for _, args := range [][]string{append(cmd, "--help"), append(cmd, "-h"), append([]string{"help"}, cmd...), append([]string{"--config", e.config}, append(cmd, "--help")...)} {
			args = append([]string(nil), args...)
			out, errs, code := e.cli(args...)
			if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "\nexample:\n  ") || errs != "" {
				t.Errorf("%q = %d\nstdout:\n%s\nstderr: %q\nwant %q…, an example, exit 0", args, code, out, errs, want)
			}
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if out, _, code := e.cli(args...); code != 0 || !strings.HasPrefix(out, "sessionwatch dev (commit ") {
			t.Errorf("%q = %d %q", args, code, out)
		}
	}
	// A stray argument is a usage error, as for every other command.
	if out, errs, code := e.cli("version", "extra"); code != 2 || out != "" || !strings.HasPrefix(errs, `sessionwatch: version: unexpected argument "extra"`) {
		t.Errorf("version extra = %d %q %q, want exit 2", code, out, errs)
	}
}

// TestMistypedCommandsAndFlags: one error line and a "did you mean" hint.
func TestMistypedCommandsAndFlags(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		args      []string
		msg, hint string
	}{
		{[]string{"lst"}, `sessionwatch: unknown command "lst"`, "did you mean 'sessionwatch list'?"},
		{[]string{"stauts"}, `sessionwatch: unknown command "stauts"`, "did you mean 'sessionwatch status'?"},
		{[]string{"list", "--al"}, "sessionwatch: list: unknown flag --al", "did you mean --all?"},
		{[]string{"show", "1", "--jsn"}, "sessionwatch: show: unknown flag --jsn", "did you mean --json?"},
		{[]string{"clean", "--dryrun"}, "sessionwatch: clean: unknown flag --dryrun", "did you mean --dry-run?"},
		{[]string{"--confg", "x", "list"}, "sessionwatch: unknown flag --confg", "did you mean --config?"},
		{[]string{"-all", "list"}, "sessionwatch: unknown flag --all", "sessionwatch help"},
		{[]string{"config", "chek"}, `sessionwatch: config: unknown subcommand "chek"`, "did you mean 'sessionwatch config check'?"},
		{[]string{"service", "pirnt"}, `sessionwatch: service: unknown subcommand "pirnt"`, "did you mean 'sessionwatch service print'?"},
		{[]string{"completion", "zhs"}, `sessionwatch: completion: unknown shell "zhs"`, "did you mean 'zsh'?"},
		{[]string{"list", "--source"}, "sessionwatch: list: --source needs a value", "list --help"},
		{[]string{"clean", "--max-sessions", "x"}, `sessionwatch: clean: invalid value "x" for --max-sessions`, "clean --help"},
	}
	for _, tt := range tests {
		out, errs, code := e.cli(tt.args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 2 || lines[0] != tt.msg || !strings.HasPrefix(lines[1], "hint: ") || !strings.Contains(lines[1], tt.hint) {
			t.Errorf("%q = %d, stdout %q, stderr:\n%s\nwant exit 2, %q and a hint with %q", tt.args, code, out, errs, tt.msg, tt.hint)
		}
	}
}

// TestConfigFlagAnywhereAndMissing: --config after the command; an explicit
// config path that does not exist is an error; the default path missing means
// defaults, said plainly.
func TestConfigFlagAnywhereAndMissing(t *testing.T) {
	e := newEnv(t)
	other := filepath.Join(e.home, "other.json")
	os.WriteFile(other, []byte(`{"settle":"fast"}`), 0o600)
	for _, args := range [][]string{{"config", "check", "--config", other}, {"config", "check", "--config=" + other}, {"--config", other, "config", "check"}} {
		_, errs, code := e.cli(args...)
		if code != 2 || !strings.Contains(errs, `settle: invalid duration "fast"`) || strings.Contains(errs, `(got "fast")`) {
			t.Errorf("%q = %d %q; want 2 naming the value once", args, code, errs)
		}
	}
	missing := filepath.Join(e.home, "nope.json")
	for _, args := range [][]string{{"--config", missing, "list"}, {"status", "--config", missing}, {"config", "check", "--config", missing}} {
		_, errs, code := e.cli(args...)
		if code != 2 || !strings.Contains(errs, "config file ~/nope.json does not exist") {
			t.Errorf("%q = %d %q; want 2, the file does not exist", args, code, errs)
		}
	}
	t.Setenv("SESSIONWATCH_CONFIG", missing)
	if _, errs, code := e.cli("list"); code != 2 || !strings.Contains(errs, "does not exist") {
		t.Errorf("$SESSIONWATCH_CONFIG missing: list = %d %q", code, errs)
	}
	if out, errs, code := e.cli("config", "init"); code != 0 || !fileExists(missing) {
		t.Errorf("config init of a missing explicit file = %d %q %q", code, out, errs)
	}

	// No file at the default path: defaults, said so by config check and doctor.
	t.Setenv("SESSIONWATCH_CONFIG", "")
	fakeInotify(t)
	out, errs, code := e.cli("config", "check")
	if code != 0 || out != "no config file at ~/.config/sessionwatch/config.json: defaults in effect\n" {
		t.Errorf("config check without a file = %d %q %q", code, out, errs)
	}
	out, errs, code = e.cli("doctor")
	if code != 0 || !strings.Contains(out, "no config file at ~/.config/sessionwatch/config.json: defaults in effect") {
		t.Errorf("doctor without a config file = %d\n%s%s", code, out, errs)
	}
	// No agent store at all: said plainly, naming the roots, exit 0.
	if !strings.Contains(out, "note     no agent session store found on this machine; looked at: ~/.wave/projects, ~/.claude/projects") {
		t.Errorf("doctor on a machine without stores:\n%s", out)
	}
	// Each config problem on its own line.
	os.WriteFile(other, []byte(`{"settle":"fast","bogus":1}`), 0o600)
	out, _, code = e.cli("doctor", "--config", other)
	if code != 1 || strings.Count(out, "PROBLEM  config ") != 2 {
		t.Errorf("doctor with two config problems = %d\n%s", code, out)
	}
}

// fakeInotify points doctor at generous inotify limits.
func fakeInotify(t *testing.T) {
	fake := t.TempDir()
	old := inotifyDir
	inotifyDir = fake
	t.Cleanup(func() { inotifyDir = old })
	os.WriteFile(filepath.Join(fake, "max_user_instances"), []byte("1000000\n"), 0o600)
	os.WriteFile(filepath.Join(fake, "max_user_watches"), []byte("100000000\n"), 0o600)
}

// TestEmptyListExplains: stdout empty, stderr says why and what to do.
func TestEmptyListExplains(t *testing.T) {
	e := newEnv(t)
	empty := filepath.Join(e.home, "code", "empty")
	os.MkdirAll(empty, 0o700)
	t.Chdir(empty)
	out, errs, code := e.cli("list")
	if code != 0 || out != "" || !strings.HasPrefix(errs, "No sessions found for this project\n") ||
		!strings.Contains(errs, "looked in directory ~/code/empty for project ~/code/empty") ||
		!strings.Contains(errs, "nothing indexed yet") || !strings.Contains(errs, "'sessionwatch run'") || !strings.Contains(errs, "'sessionwatch reindex'") {
		t.Errorf("list with no catalog = %d %q\n%s", code, out, errs)
	}
	e.agedSession("/elsewhere/a", "a1a1a1a1-0000-4000-8000-000000000001", time.Hour)
	e.agedSession("/elsewhere/a", "a2a2a2a2-0000-4000-8000-000000000002", time.Hour)
	e.agedSession("/elsewhere/b", "b1b1b1b1-0000-4000-8000-000000000001", time.Hour)
	e.cli("reindex")
	out, errs, code = e.cli("list")
	if code != 0 || out != "" || !strings.Contains(errs, "3 sessions in 2 other projects: sessionwatch list --all") {
		t.Errorf("list with sessions elsewhere = %d %q\n%s", code, out, errs)
	}
	out, errs, _ = e.cli("list", "--all", "--type", "subagent")
	if out != "" || !strings.HasPrefix(errs, "No sessions found\n") || !strings.Contains(errs, "3 sessions indexed, none matching --type subagent") {
		t.Errorf("list --all --type subagent = %q\n%s", out, errs)
	}
}

// TestListFitsTheTerminal: with a width, the title column shrinks first; piped
// without one, titles keep today's 60-character cut.
func TestListFitsTheTerminal(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "w")
	os.MkdirAll(work, 0o700)
	long := strings.Repeat("a long prompt about the build ", 5)
	dir := e.project(work)
	for i := range 3 {
		appendTo(t, filepath.Join(dir, fmt.Sprintf("%08d-0000-4000-8000-000000000000.jsonl", i)), header(work)+message(time.Now().Add(-time.Duration(i)*time.Hour), long))
	}
	e.cli("reindex")
	t.Chdir(work)
	widest := func(out string) int {
		w := 0
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			w = max(w, utf8.RuneCountInString(l))
		}
		return w
	}
	t.Setenv("COLUMNS", "")
	out, _, _ := e.cli("list")
	if w := widest(out); w <= 100 || !strings.Contains(out, cell(long, 60)) {
		t.Fatalf("piped list: widest line %d, want the 60-character title:\n%s", w, out)
	}
	for _, cols := range []int{100, 80} {
		t.Setenv("COLUMNS", fmt.Sprint(cols))
		out, _, _ = e.cli("list")
		if w := widest(out); w > cols || !strings.Contains(out, "a long prompt") || !strings.Contains(out, "…") {
			t.Errorf("COLUMNS=%d: widest line %d:\n%s", cols, w, out)
		}
	}
	// Too narrow even for a short title: the title keeps its minimum, nothing breaks.
	t.Setenv("COLUMNS", "40")
	out, _, _ = e.cli("list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.Contains(out, "a long prompt") {
		t.Errorf("COLUMNS=40:\n%s", out)
	}
}

// TestServicePrintAnyBinary: print works for a temporary build (this test's);
// install refuses it, naming --binary PATH.
func TestServicePrintAnyBinary(t *testing.T) {
	e := newEnv(t)
	exe, _ := os.Executable()
	if _, err := installedBinary(); err == nil {
		t.Skipf("the test binary %s does not look temporary", exe)
	}
	out, errs, code := e.cli("service", "print", "--launchd=false")
	if code != 0 || !strings.Contains(out, "ExecStart=") {
		t.Errorf("service print from a temporary build = %d %q", code, errs)
	}
	_, errs, code = e.cli("service", "install", "--launchd=false")
	if code != 1 || !strings.Contains(errs, "temporary build") || !strings.Contains(errs, "--binary PATH") {
		t.Errorf("service install from a temporary build = %d %q", code, errs)
	}
}

// TestCommandListComplete: every command the usage text lists is in
// commandNames (which help, "did you mean", completion and the docs test read)
// and runs: search and usage were once missing from it.
func TestCommandListComplete(t *testing.T) {
	e := newEnv(t)
	listed := map[string]bool{}
	_, body, _ := strings.Cut(usageText, "commands:\n")
	body, _, _ = strings.Cut(body, "\n\n")
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && len(f) > 0 {
			listed[f[0]] = true
		}
	}
	if len(listed) < 10 {
		t.Fatalf("read %d commands from the usage text, want them all: %v", len(listed), listed)
	}
	known := map[string]bool{}
	for _, c := range commandNames {
		known[c] = true
		if summaries[c] == "" {
			t.Errorf("command %q has no summary", c)
		}
	}
	for c := range listed {
		if !known[c] {
			t.Errorf("usage text lists %q, commandNames does not", c)
		}
		if _, errs, _ := e.cli(c, "--help"); strings.Contains(errs, "unknown command") {
			t.Errorf("%s --help: %s", c, errs)
		}
	}
	for c := range known {
		if !listed[c] {
			t.Errorf("commandNames has %q, the usage text does not list it", c)
		}
	}
}

// TestDoctorReportsArchiveTemps: a temp file an interrupted janitor left in the
// archive is a problem (exit 1), named with ~ like every path doctor prints.
func TestDoctorReportsArchiveTemps(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.home, "archive", "wave")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".sessionwatch-tmp-x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := e.cli("doctor")
	want := "PROBLEM  archive_dir holds 1 temp file(s) left by an interrupted janitor, e.g. ~/archive/wave/.sessionwatch-tmp-x\n"
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out, e.home) {
		t.Errorf("doctor = %d:\n%s\nwant exit 1 and %q", code, out, want)
	}
}
