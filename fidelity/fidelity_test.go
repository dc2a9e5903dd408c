// Package fidelity holds the opt-in differential tests that run the agents' own
// session readers next to sessionwatch on the same stores (docs/fidelity.md).
//
// They need Node.js and the readers installed from npm:
//
//	npm install --prefix /tmp/readers @anthropic-ai/claude-agent-sdk @google/gemini-cli @anthropic-ai/claude-code@2.1.29
//	SESSIONWATCH_READERS=/tmp/readers go test -v -run . ./fidelity/
//
// Without SESSIONWATCH_READERS, or without node, every test skips and says why.
// SESSIONWATCH_FIDELITY_REPORT=<file> also writes the report there.
package fidelity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// readers returns the readers' install dir, or skips the test.
func readers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SESSIONWATCH_READERS")
	if dir == "" {
		t.Skip("fidelity: set SESSIONWATCH_READERS to a directory where `npm install --prefix DIR @anthropic-ai/claude-agent-sdk @google/gemini-cli @anthropic-ai/claude-code@2.1.29` ran, to compare with the agents' own readers")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("fidelity: node is not installed; the agents' readers need Node.js")
	}
	for _, p := range []string{"@anthropic-ai/claude-agent-sdk", "@anthropic-ai/claude-code", "@google/gemini-cli"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			t.Fatalf("SESSIONWATCH_READERS=%s: %s is not installed there: %v", dir, p, err)
		}
	}
	return dir
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sessionwatch builds the CLI once per test binary.
func sessionwatch(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fidelity-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sessionwatch")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/sessionwatch").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build sessionwatch: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// listed is the part of `list --json` compared here.
type listed struct {
	ID           string `json:"id"`
	Project      string `json:"project"`
	Type         string `json:"type"`
	Title        string `json:"title"`
	FirstPrompt  string `json:"firstPrompt"`
	CreatedAt    string `json:"createdAt"`
	LastActiveAt string `json:"lastActiveAt"`
	MessageCount int    `json:"messageCount"`
	File         string `json:"file"`
	Hidden       bool   `json:"hidden"`
}

// swList indexes the store with sessionwatch (HOME=home, one source) and returns
// every session, hidden ones included, by id.
func swList(t *testing.T, home, source, root string) map[string]listed {
	t.Helper()
	bin := sessionwatch(t)
	cfg := filepath.Join(home, "sw-config.json")
	state := filepath.Join(home, "sw-state")
	conf := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[{"name":%q,"layout":%q,"root":%q}]}`,
		state, filepath.Join(home, "sw-archive"), source, source, root)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		cmd := exec.Command(bin, append([]string{"--config", cfg}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Dir = home
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sessionwatch %v: %v\n%s", args, err, stderr.Bytes())
		}
		return out
	}
	run("reindex")
	var rows []listed
	if err := json.Unmarshal(run("list", "--all", "--type", "all", "--json"), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]listed{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

// node runs a script under testdata with HOME=home and returns its stdout.
func node(t *testing.T, home, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join("testdata", script)}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
	}
	return out
}

// report collects the comparison, one line per finding.
type report struct {
	t     *testing.T
	name  string
	lines []string
	notes []string // printed after the findings, not counted
	fails int
}

func (r *report) addf(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// check records one compared value: equal, an expected difference (listed in the
// test with its reason), or a failure.
func (r *report) check(id, field string, ours, theirs any, expected map[string]string) bool {
	key := id + " " + field
	if fmt.Sprint(ours) == fmt.Sprint(theirs) {
		if why, ok := expected[key]; ok {
			r.fails++
			r.addf("FAIL  %s: expected a difference (%s) but both say %q", key, why, fmt.Sprint(ours))
		}
		return true
	}
	if why, ok := expected[key]; ok {
		r.addf("known %s: ours %q, theirs %q — %s", key, fmt.Sprint(ours), fmt.Sprint(theirs), why)
		return false
	}
	r.fails++
	r.addf("FAIL  %s: ours %q, theirs %q", key, fmt.Sprint(ours), fmt.Sprint(theirs))
	return false
}

func (r *report) done(compared int) {
	r.t.Helper()
	head := fmt.Sprintf("== %s: %d sessions compared, %d unexpected differences, %d known (%s/%s)", r.name, compared, r.fails, len(r.lines)-r.fails, runtime.GOOS, runtime.GOARCH)
	text := head + "\n" + strings.Join(append(r.lines, r.notes...), "\n") + "\n"
	r.t.Log("\n" + text)
	if p := os.Getenv("SESSIONWATCH_FIDELITY_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			f.WriteString(text)
			f.Close()
		}
	}
	if r.fails > 0 {
		r.t.Errorf("%d unexpected differences with the real reader (see the report above)", r.fails)
	}
}

// msOf parses an RFC 3339 time to epoch milliseconds (0 if it does not parse).
func msOf(s string) int64 {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return tm.UnixMilli()
}

// sortedKeys returns m's keys in order, for a stable report.
func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
