package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// jsonKeyOrder lists, in the order they appear, the keys of the JSON object at
// path (object keys, or "0" for an array's first element) in data.
func jsonKeyOrder(t *testing.T, data []byte, path ...string) []string {
	t.Helper()
	var v json.RawMessage = data
	for _, p := range path {
		if p == "0" {
			var arr []json.RawMessage
			if err := json.Unmarshal(v, &arr); err != nil || len(arr) == 0 {
				t.Fatalf("%v: not a non-empty array (%v): %s", path, err, v)
			}
			v = arr[0]
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil || obj[p] == nil {
			t.Fatalf("%v: no key %q (%v): %s", path, p, err, v)
		}
		v = obj[p]
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%v: not an object: %s", path, v)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// inOrder: every key of want occurs in got, in want's order (got may hold
// more keys between them).
func inOrder(got, want []string) bool {
	i := 0
	for _, k := range got {
		if i < len(want) && k == want[i] {
			i++
		}
	}
	return i == len(want)
}

// listKeys are the fields of a `list --json` row, in the contract's order.
var listKeys = []string{"n", "id", "source", "layout", "project", "type", "title", "firstPrompt", "createdAt",
	"lastActiveAt", "messageCount", "sizeBytes", "file", "provider", "model", "inUse", "stale", "invalid", "corrupt"}

// TestJSONFieldsInTheContractsOrder: `list --json` rows carry exactly the
// contract's fields in its order; `show --json` starts with them, in that order,
// and adds the layout's details after; `status --json` carries every field the
// contract names, in its order, at the top, per source and for the janitor.
func TestJSONFieldsInTheContractsOrder(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "proj")
	os.MkdirAll(work, 0o700)
	seedProject(t, e, work)
	t.Chdir(work)

	out, errs, code := e.cli("list", "--json")
	if code != 0 {
		t.Fatalf("list --json = %d %s", code, errs)
	}
	if got := jsonKeyOrder(t, []byte(out), "0"); !slices.Equal(got, listKeys) {
		t.Errorf("list --json row keys:\n got %v\nwant %v", got, listKeys)
	}
	out, errs, code = e.cli("list", "--json", "--all", "--type", "all")
	if code != 0 {
		t.Fatalf("list --json --all --type all = %d %s", code, errs)
	}
	if got := jsonKeyOrder(t, []byte(out), "0"); !slices.Equal(got, listKeys) {
		t.Errorf("list --json --all --type all row keys:\n got %v\nwant %v", got, listKeys)
	}

	out, errs, code = e.cli("show", "1", "--json")
	if code != 0 {
		t.Fatalf("show 1 --json = %d %s", code, errs)
	}
	if got := jsonKeyOrder(t, []byte(out)); len(got) < len(listKeys) || !slices.Equal(got[:len(listKeys)], listKeys) {
		t.Errorf("show --json keys:\n got %v\nwant first %v", got, listKeys)
	}

	// Before any janitor pass, and after one (the janitor object is then the
	// last pass's, read from the journal).
	for _, pass := range []bool{false, true} {
		if pass {
			if _, errs, code := e.cli("clean"); code != 0 {
				t.Fatalf("clean = %d %s", code, errs)
			}
		}
		out, errs, code = e.cli("status", "--json")
		if code != 0 {
			t.Fatalf("status --json = %d %s", code, errs)
		}
		var st struct {
			Janitor struct {
				LastRun string `json:"lastRun"`
			} `json:"janitor"`
		}
		if json.Unmarshal([]byte(out), &st) != nil || (st.Janitor.LastRun != "") != pass {
			t.Fatalf("status --json after a pass %v: janitor.lastRun %q", pass, st.Janitor.LastRun)
		}
		checkStatusKeys(t, out)
	}
}

func checkStatusKeys(t *testing.T, out string) {
	t.Helper()
	for _, c := range []struct {
		path []string
		want []string
	}{
		{nil, []string{"running", "pid", "uptime", "sources", "janitor", "warnings", "lastError"}},
		{[]string{"sources", "0"}, []string{"name", "layout", "root", "present", "projects", "sessions", "bytes", "watches", "rescans"}},
		{[]string{"janitor"}, []string{"lastRun", "retired", "archived", "deleted", "skippedInUse", "bytesFreed"}},
	} {
		if got := jsonKeyOrder(t, []byte(out), c.path...); !inOrder(got, c.want) {
			t.Errorf("status --json %s keys:\n got %v\nwant %v in this order", strings.Join(c.path, "."), got, c.want)
		}
	}
}

// TestListTableColumnsInTheContractsOrder: the table's header names the
// contract's columns in its order, IDs are their first 8 characters and sizes
// are in B, KB or MB; `list --archived` has the same columns plus when and why
// the session was archived.
func TestListTableColumnsInTheContractsOrder(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "proj")
	os.MkdirAll(work, 0o700)
	seedProject(t, e, work)
	t.Chdir(work)
	cols := regexp.MustCompile(`\S+( \S+)*`)
	out, errs, code := e.cli("list")
	if code != 0 {
		t.Fatalf("list = %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"#", "ID", "AGENT", "STARTED", "LAST ACTIVE", "MODEL", "MSGS", "SIZE", "TITLE"}
	if got := cols.FindAllString(lines[0], -1); !slices.Equal(got, want) {
		t.Errorf("list header %q: columns %q, want %q", lines[0], got, want)
	}
	row := regexp.MustCompile(`^1 +33333333 +wave +\S+ \S+ +\S+ \S+ +- +1 +\d+(B|KB|MB) +newest prompt$`)
	if !row.MatchString(lines[1]) {
		t.Errorf("list row 1 = %q, want #, the id's first 8, agent, times, model, messages, size in B/KB/MB, title", lines[1])
	}

	if _, errs, code := e.cli("delete", "33333333-cccc-4000-8000-000000000003", "--force"); code != 0 {
		t.Fatalf("delete = %d %s", code, errs)
	}
	out, errs, code = e.cli("list", "--archived")
	if code != 0 {
		t.Fatalf("list --archived = %d %s", code, errs)
	}
	head := strings.SplitN(out, "\n", 2)[0]
	got := cols.FindAllString(head, -1)
	if len(got) != len(want)+2 || !slices.Equal(got[:len(want)-1], want[:len(want)-1]) || got[len(got)-1] != "TITLE" {
		t.Errorf("list --archived header %q: columns %q, want %q plus when and why archived", head, got, want)
	}
}
