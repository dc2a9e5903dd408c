package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refProject makes a real project directory under home with n Wave sessions
// whose ids are ids(i), the first the newest, and chdirs into it.
func refProject(t *testing.T, e *testEnv, name string, n int, ids func(int) string) string {
	t.Helper()
	work := filepath.Join(e.home, name)
	os.MkdirAll(work, 0o700)
	for i := range n {
		e.agedSession(work, ids(i), 20*time.Hour+time.Duration(i)*time.Minute)
	}
	return work
}

// listedIDs is `list --json`'s ids in row order.
func listedIDs(t *testing.T, e *testEnv, args ...string) []string {
	t.Helper()
	out, errs, code := e.cli(append([]string{"list", "--json"}, args...)...)
	var rows []listed
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("list --json = %d %s %s", code, out, errs)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		if r.N != i+1 {
			t.Fatalf("row %d numbered %d", i+1, r.N)
		}
		ids[i] = r.ID
	}
	return ids
}

// TestDeleteNeverLeavesTheProject is issue 11 §1's first case: in a project whose
// list shows 2 rows, `delete 3` deleted the one session of another project whose
// id starts with 3.
func TestDeleteNeverLeavesTheProject(t *testing.T) {
	e := newEnv(t)
	other := e.agedSession("/elsewhere/proj", "3f3f3f3f-0000-4000-8000-000000000003", 20*24*time.Hour)
	work := refProject(t, e, "two", 2, func(i int) string { return fmt.Sprintf("a%07d-0000-4000-8000-000000000000", i) })
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	t.Chdir(work)
	for _, args := range [][]string{{"delete", "3"}, {"delete", "3f3f"}, {"delete", "--force", "3"}, {"show", "3"}, {"show", "3f3f3f3f-0000-4000-8000-000000000003"}} {
		out, errs, code := e.cli(args...)
		if code != 1 || !strings.Contains(errs, "session not found for this project: 3") || !strings.Contains(errs, "--all") {
			t.Errorf("%q = %d %q %q; want 1, not found for this project, hint naming --all", args, code, out, errs)
		}
	}
	if !fileExists(other) {
		t.Fatal("delete 3 removed another project's session")
	}
	// With --all the other project is in scope, and a number still means its row.
	if _, errs, code := e.cli("show", "--all", "3f3f"); code != 0 {
		t.Errorf("show --all 3f3f = %d %q", code, errs)
	}
}

// TestRefRowsInALargeProject is issue 11 §1's second case: in a project of 228
// rows, `show 3` was "ambiguous", `show 6` showed row 3's session and `show 999`
// one of another project.
func TestRefRowsInALargeProject(t *testing.T) {
	e := newEnv(t)
	e.agedSession("/elsewhere/proj", "99900000-0000-4000-8000-000000000999", 20*24*time.Hour)
	// Ids spread over the hex digits: many start with 3 and with 6.
	work := refProject(t, e, "big", 228, func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012d", uint32(i)*2654435761, i) })
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	t.Chdir(work)
	ids := listedIDs(t, e)
	if len(ids) != 228 {
		t.Fatalf("list shows %d rows, want 228", len(ids))
	}
	show := func(ref string) (string, string, int) {
		out, errs, code := e.cli("show", ref, "--json")
		var got shown
		json.Unmarshal([]byte(out), &got)
		return got.ID, errs, code
	}
	for _, n := range []int{1, 3, 6, 10, 228} {
		if id, errs, code := show(fmt.Sprint(n)); code != 0 || id != ids[n-1] {
			t.Errorf("show %d = %q, %d %q; want row %d, %s", n, id, code, errs, n, ids[n-1])
		}
	}
	if _, errs, code := show("999"); code != 1 || !strings.Contains(errs, "session not found for this project: 999") {
		t.Errorf("show 999 = %d %q; want not found for this project", code, errs)
	}
	// An ambiguous prefix lists at most 10 ids, one a line, then how many more.
	cands := 1 // row 3, then every other id starting with 3
	for i, id := range ids {
		if i != 2 && strings.HasPrefix(id, "3") {
			cands++
		}
	}
	if cands <= 11 {
		t.Fatalf("fixture: only %d ids start with 3", cands)
	}
	_, errs, code := e.cli("delete", "3")
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 1 || !strings.Contains(lines[0], "3 is row 3 ("+ids[2]+")") || !strings.Contains(errs, fmt.Sprintf("and %d more", cands-10)) || len(lines) != 1+10+1+1 {
		t.Errorf("delete 3 = %d\n%s\nwant refused naming row 3 (%s) and the ids starting with 3 (10 listed, then \"and %d more\")", code, errs, ids[2], cands-10)
	}
	// A number that is no id's prefix is the row, for delete too (dry run).
	var free int
	for n := 1; n <= 228; n++ {
		if func() bool {
			for _, id := range ids {
				if strings.HasPrefix(id, fmt.Sprint(n)) {
					return false
				}
			}
			return true
		}() {
			free = n
			break
		}
	}
	if free == 0 {
		t.Fatal("fixture: every row number is an id prefix")
	}
	out, errs, code := e.cli("delete", fmt.Sprint(free), "--dry-run", "--force")
	if code != 0 || !strings.Contains(out, ids[free-1][:8]) {
		t.Errorf("delete %d --dry-run = %d %q %q; want row %d (%s)", free, code, out, errs, free, ids[free-1])
	}
	_, errs, code = e.cli("show", ids[5][:3])
	if code == 0 {
		return // a unique 3-character prefix: nothing to check
	}
	if !strings.Contains(errs, "ambiguous") || strings.Count(errs, "\n") > 13 {
		t.Errorf("show %s = %d %q", ids[5][:3], code, errs)
	}
}

// TestRestoreResolvesInScope: restore reads REFs among this project's archives
// (newest archived first, as numbered), and never guesses a number.
func TestRestoreResolvesInScope(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "rp")
	os.MkdirAll(work, 0o700)
	mine := e.agedSession(work, "1aaaaaaa-0000-4000-8000-000000000001", 20*24*time.Hour)
	theirs := e.agedSession("/elsewhere/r", "1bbbbbbb-0000-4000-8000-000000000002", 20*24*time.Hour)
	if _, errs, code := e.cli("clean"); code != 0 || fileExists(mine) || fileExists(theirs) {
		t.Fatalf("clean = %d %s", code, errs)
	}
	t.Chdir(work)
	if _, errs, code := e.cli("restore", "1bbb"); code != 1 || !strings.Contains(errs, "no archived session matches 1bbb in this project") || !strings.Contains(errs, "--all") {
		t.Errorf("restore of another project's archive = %d %q", code, errs)
	}
	// "1" is row 1 and the start of its id: the same session, no conflict.
	if out, errs, code := e.cli("restore", "1"); code != 0 || !fileExists(mine) {
		t.Errorf("restore 1 = %d %q %q", code, out, errs)
	}
	// With --all "1" is row 1 and the start of another archived id: refused.
	theirs2 := e.agedSession("/elsewhere/r", "2ccccccc-0000-4000-8000-000000000003", 20*24*time.Hour)
	os.Remove(mine)
	e.cli("reindex")
	if _, errs, code := e.cli("clean"); code != 0 || fileExists(theirs2) {
		t.Fatalf("clean = %d %s", code, errs)
	}
	if _, errs, code := e.cli("restore", "--all", "2"); code != 1 || !strings.Contains(errs, "is row 2") {
		t.Errorf("restore --all 2 = %d %q; want refused naming both", code, errs)
	}
	if _, errs, code := e.cli("restore", "--all", "1bbb"); code != 0 || !fileExists(theirs) {
		t.Errorf("restore --all 1bbb = %d %q", code, errs)
	}
}
