package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hyStore is a HyperYOLO store as the tool writes it (JSON.stringify(data, null, 2)).
const hyStore = `{
  "hyper_0a1b2c3d": {
    "backend": "claude",
    "nativeId": "5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69",
    "createdAt": "2026-11-01T09:00:00.000Z",
    "lastSeenAt": "2026-11-02T10:30:00.000Z",
    "lastPrompt": "refactor the parser",
    "lastResumeStatus": "ok"
  },
  "hyper_deadbeef": {
    "backend": "codex",
    "nativeId": "019a2b3c",
    "createdAt": "2026-10-01T08:00:00.000Z",
    "invalid": true,
    "unknownField": {
      "kept": [
        1,
        2
      ]
    }
  }
}`

// hyperyoloEnv is a test env whose config also has hyperyolo sources (name → store path).
func hyperyoloEnv(t *testing.T, stores ...string) (*testEnv, map[string]string) {
	t.Helper()
	e := newEnv(t)
	paths := map[string]string{}
	srcs := `{"name":"wave","layout":"wave","root":` + jsonString(e.root) + `}`
	for _, name := range stores {
		p := filepath.Join(e.home, ".config", name, "sessions.json")
		paths[name] = p
		srcs += `,{"name":` + jsonString(name) + `,"layout":"hyperyolo","root":` + jsonString(p) + `}`
	}
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[%s]}`,
		e.state, filepath.Join(e.home, "archive"), srcs)
	return e, paths
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func writeStore(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestExport(t *testing.T) {
	e, paths := hyperyoloEnv(t, "hyperyolo")
	store := paths["hyperyolo"]

	// Missing store: exit 1, saying which file.
	out, errs, code := e.cli("export")
	if code != 1 || out != "" || !strings.Contains(errs, "sessionwatch: export: hyperyolo store "+store+" does not exist") || !strings.Contains(errs, "hint:") {
		t.Errorf("export without a store = %d, %q, %q", code, out, errs)
	}

	// The records, byte for byte as HyperYOLO wrote them.
	writeStore(t, store, hyStore)
	out, errs, code = e.cli("export")
	if code != 0 || out != hyStore+"\n" {
		t.Errorf("export = %d (%s):\n%s\nwant\n%s", code, errs, out, hyStore)
	}
	if out2, _, code := e.cli("export", "--source", "hyperyolo"); code != 0 || out2 != out {
		t.Errorf("export --source hyperyolo = %d:\n%s", code, out2)
	}

	// Read from the store, not the catalog: nothing was indexed, and a corrupt store
	// is an error even when a catalog exists.
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d: %s", code, errs)
	}
	writeStore(t, store, hyStore[:len(hyStore)/2])
	out, errs, code = e.cli("export")
	if code != 1 || out != "" || !strings.Contains(errs, "is not valid") {
		t.Errorf("export of a corrupt store = %d, %q, %q", code, out, errs)
	}

	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"export", "--source", "wave"}, 2, `source "wave" has layout wave, not hyperyolo`},
		{[]string{"export", "--source", "nope"}, 2, `unknown source "nope"`},
		{[]string{"export", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"export", "--bogus"}, 2, "export: unknown flag --bogus"},
	} {
		if _, errs, code := e.cli(tt.args...); code != tt.code || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v = %d, %q, want %d with %q", tt.args, code, errs, tt.code, tt.msg)
		}
	}
}

func TestExportSeveralStores(t *testing.T) {
	e, paths := hyperyoloEnv(t, "hy-a", "hy-b")
	writeStore(t, paths["hy-a"], `{"hyper_0000000a":{"backend":"claude","createdAt":"2026-11-01T00:00:00.000Z"}}`)
	writeStore(t, paths["hy-b"], `{"hyper_0000000b":{"backend":"codex"},"hyper_0000000a":{"backend":"claude", "createdAt":"2026-11-01T00:00:00.000Z"}}`)
	out, errs, code := e.cli("export")
	var got map[string]json.RawMessage
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 {
		t.Fatalf("export of two stores = %d (%s):\n%s", code, errs, out)
	}
	if !strings.Contains(out, `"hyper_0000000a": {`) || strings.Index(out, "hyper_0000000a") > strings.Index(out, "hyper_0000000b") {
		t.Errorf("export order: the first store's records first:\n%s", out)
	}
	writeStore(t, paths["hy-b"], `{"hyper_0000000a":{"backend":"gemini"}}`)
	if _, errs, code := e.cli("export"); code != 1 || !strings.Contains(errs, "record hyper_0000000a differs between sources hy-a and hy-b") {
		t.Errorf("conflicting stores = %d, %q", code, errs)
	}
	if out, _, code := e.cli("export", "--source", "hy-b"); code != 0 || !strings.Contains(out, "gemini") {
		t.Errorf("export --source hy-b = %d:\n%s", code, out)
	}
}

// TestShowHyperyolo: a record's details reach `show --json` through the catalog.
func TestShowHyperyolo(t *testing.T) {
	e, paths := hyperyoloEnv(t, "hyperyolo")
	writeStore(t, paths["hyperyolo"], hyStore)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d: %s", code, errs)
	}
	out, errs, code := e.cli("show", "hyper_0a1b", "--all", "--json")
	if code != 0 {
		t.Fatalf("show = %d: %s", code, errs)
	}
	var got struct {
		ID, Source, Layout, Provider, FirstPrompt, LastActiveAt, File string
		Invalid                                                       bool
		Details                                                       map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	if got.ID != "hyper_0a1b2c3d" || got.Source != "hyperyolo" || got.Layout != "hyperyolo" || got.Provider != "claude" ||
		got.FirstPrompt != "refactor the parser" || got.LastActiveAt != "2026-11-02T10:30:00.000Z" || got.File != paths["hyperyolo"] {
		t.Errorf("show --json = %+v", got)
	}
	for k, v := range map[string]any{"backend": "claude", "nativeId": "5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69", "lastResumeStatus": "ok", "lastSeenAt": "2026-11-02T10:30:00.000Z"} {
		if got.Details[k] != v {
			t.Errorf("details[%q] = %v, want %v (details %v)", k, got.Details[k], v, got.Details)
		}
	}
	out, _, _ = e.cli("show", "hyper_dead", "--all", "--json")
	if !strings.Contains(out, `"invalid": true`) {
		t.Errorf("show of an invalid record:\n%s", out)
	}
	out, _, code = e.cli("list", "--all", "--source", "hyperyolo")
	if code != 0 || !strings.Contains(out, "hyper_0a") || !strings.Contains(out, "refactor the parser") {
		t.Errorf("list --source hyperyolo = %d:\n%s", code, out)
	}
}
