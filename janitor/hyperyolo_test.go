package janitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

var update = flag.Bool("update", false, "rewrite the golden files of the janitor tests")

// storeNow is the pinned clock of the record tests (testdata timestamps are
// relative to it).
var storeNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// storeFixture is a temp tree with a config whose sources are given as JSON
// (%[1]s is replaced by the fixture's dir), a state dir and an archive dir.
func storeFixture(t *testing.T, janitorJSON, sourcesJSON string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, state: filepath.Join(dir, "state"), archive: filepath.Join(dir, "archive"), logs: &syncBuffer{}}
	doc := fmt.Sprintf(`{"state_dir":%q,"archive_dir":%q,"janitor":%s,"sources":[%s]}`,
		f.state, f.archive, janitorJSON, strings.ReplaceAll(sourcesJSON, "%[1]s", dir))
	cfg, err := parseConfig(doc)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	f.cfg = cfg
	return f
}

// pinned is the fixture's janitor with the clock at storeNow.
func (f *fixture) pinned() *Janitor {
	f.t.Helper()
	j := f.janitor()
	j.opt.Now = func() time.Time { return storeNow }
	return j
}

// hyFixture copies testdata/hyperyolo/sessions.json into a fixture whose only
// source is that HyperYOLO store, indexes it, and returns the store path.
func hyFixture(t *testing.T, sourceExtra string) (*fixture, string) {
	t.Helper()
	f := storeFixture(t, `{"run_at_start":false,"schedule":"off"}`,
		`{"name":"hyperyolo","layout":"hyperyolo","root":"%[1]s/hy/sessions.json"`+sourceExtra+`}`)
	store := filepath.Join(f.dir, "hy", "sessions.json")
	data, err := os.ReadFile("testdata/hyperyolo/sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(store), 0o700)
	if err := os.WriteFile(store, data, 0o640); err != nil {
		t.Fatal(err)
	}
	f.index()
	return f, store
}

func mustDecodeStore(t *testing.T, data []byte) (map[string]json.RawMessage, []string) {
	t.Helper()
	recs, keys, err := indexer.DecodeHyperyoloStore(data)
	if err != nil {
		t.Fatalf("decode store: %v\n%s", err, data)
	}
	return recs, keys
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", filepath.Base(path), got, want)
	}
}

func readRecordLines(t *testing.T, path string) []RecordLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("records.jsonl: %v", err)
	}
	var out []RecordLine
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var l RecordLine
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("records.jsonl line %q: %v", line, err)
		}
		out = append(out, l)
	}
	return out
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func kinds(as []Action) map[string][]string {
	out := map[string][]string{}
	for _, a := range as {
		out[a.Kind] = append(out[a.Kind], a.ID)
	}
	return out
}

// TestHyperyoloRetention: stale and invalid records are archived to
// records.jsonl and leave the store; every other entry keeps its value byte for
// byte; a recently active or future-dated record is kept; the catalog follows.
func TestHyperyoloRetention(t *testing.T) {
	f, store := hyFixture(t, "")
	before, _ := os.ReadFile(store)
	origRecs, _ := mustDecodeStore(t, before)
	j := f.pinned()

	// Dry run: the report, and nothing changed (no lock dir, no archive, no journal).
	rep, err := j.RunOnce(context.Background(), Overrides{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep.Actions, KindArchive); fmt.Sprint(got) != "[hyper_0a0a0a0a hyper_1b1b1b1b]" {
		t.Fatalf("dry run would archive %v; actions %+v", got, rep.Actions)
	}
	if after, _ := os.ReadFile(store); !bytes.Equal(after, before) || exists(store+".lock") || exists(f.archive) || exists(filepath.Join(f.state, JournalName)) {
		t.Fatalf("dry run changed something")
	}

	rep, err = j.RunOnce(context.Background(), Overrides{})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("pass = %+v, %v", rep, err)
	}
	k := kinds(rep.Actions)
	if fmt.Sprint(k[KindArchive]) != "[hyper_1b1b1b1b hyper_0a0a0a0a]" || rep.Archived != 2 {
		t.Errorf("archived %v, want the invalid then the stale record", k[KindArchive])
	}
	if fmt.Sprint(k[KindSkipInUse]) != "[hyper_3d3d3d3d]" || fmt.Sprint(k[KindSkip]) != "[hyper_4e4e4e4e]" {
		t.Errorf("kept: in use %v, skipped %v", k[KindSkipInUse], k[KindSkip])
	}
	for _, a := range rep.Actions {
		switch a.ID {
		case "hyper_0a0a0a0a":
			if a.Reason != "inactive 43d4h (retention 30d)" || a.File != store || a.Archive != filepath.Join(f.archive, "hyperyolo", RecordsName) {
				t.Errorf("stale action = %+v", a)
			}
		case "hyper_1b1b1b1b":
			if a.Reason != "marked invalid by its agent" {
				t.Errorf("invalid action = %+v", a)
			}
		case "hyper_3d3d3d3d":
			if !strings.HasPrefix(a.Reason, "active 10m ago, within active_grace 1h") {
				t.Errorf("recent action reason = %q", a.Reason)
			}
		case "hyper_4e4e4e4e":
			if !strings.HasPrefix(a.Reason, "lastActiveAt is in the future") {
				t.Errorf("future action reason = %q", a.Reason)
			}
		}
	}

	// The rewritten store: golden, and every other entry's value byte for byte.
	after, _ := os.ReadFile(store)
	golden(t, "testdata/hyperyolo/want-sessions.json", after)
	recs, keys := mustDecodeStore(t, after)
	if fmt.Sprint(keys) != "[hyper_2c2c2c2c hyper_3d3d3d3d hyper_4e4e4e4e hyper_xyz hyper_00000000 lastCleanup]" {
		t.Errorf("keys after = %v", keys)
	}
	for k, v := range recs {
		if !bytes.Equal(v, origRecs[k]) {
			t.Errorf("value of %s changed:\n%s\nwant\n%s", k, v, origRecs[k])
		}
	}
	if fi, _ := os.Stat(store); fi.Mode().Perm() != 0o640 {
		t.Errorf("store mode = %v, want 0640 kept", fi.Mode().Perm())
	}
	if exists(store+".lock") || exists(store+".tmp") {
		t.Errorf("lock dir or temp file left behind")
	}

	// records.jsonl: one line per retired record, its value verbatim (compacted).
	lines := readRecordLines(t, filepath.Join(f.archive, "hyperyolo", RecordsName))
	if len(lines) != 2 {
		t.Fatalf("records.jsonl has %d lines, want 2", len(lines))
	}
	for _, l := range lines {
		if l.Version != 1 || l.Source != "hyperyolo" || l.Layout != "hyperyolo" || l.File != store || indexer.ParseTime(l.RetiredAt).IsZero() || l.Reason == "" {
			t.Errorf("record line = %+v", l)
		}
		if string(l.Record) != compact(t, origRecs[l.ID]) {
			t.Errorf("archived %s = %s, want %s", l.ID, l.Record, compact(t, origRecs[l.ID]))
		}
	}

	// Journal and catalog.
	js, err := ReadJournal(filepath.Join(f.state, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	var archived []string
	for _, e := range js {
		if e.Action == KindArchive {
			archived = append(archived, e.ID)
			if e.File != store || e.Archive == "" || e.Bytes == 0 {
				t.Errorf("journal entry = %+v", e)
			}
		}
	}
	if len(archived) != 2 {
		t.Errorf("journal archives = %v", archived)
	}
	var listed []string
	for _, s := range f.group.Indexer("hyperyolo").Sessions() {
		listed = append(listed, s.ID)
	}
	if strings.Contains(fmt.Sprint(listed), "hyper_0a0a0a0a") || strings.Contains(fmt.Sprint(listed), "hyper_1b1b1b1b") || len(listed) != 3 {
		t.Errorf("catalog after the pass lists %v", listed)
	}

	// The next pass has nothing more to do and leaves the file alone.
	rep, _ = j.RunOnce(context.Background(), Overrides{})
	if rep.Archived != 0 {
		t.Errorf("second pass archived %d", rep.Archived)
	}
	if again, _ := os.ReadFile(store); !bytes.Equal(again, after) {
		t.Errorf("second pass rewrote the store")
	}
}

// TestHyperyoloLockProtocol: a busy lock dir (younger than 30 s) means no edit
// and "store busy"; a stale one is replaced; anything but a directory is never
// taken.
func TestHyperyoloLockProtocol(t *testing.T) {
	f, store := hyFixture(t, "")
	before, _ := os.ReadFile(store)
	j := f.pinned()
	lock := store + ".lock"

	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		rep, err := j.RunOnce(context.Background(), Overrides{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Archived != 0 || len(rep.Errors) > 0 {
			t.Errorf("dry=%v: pass with a busy store = %+v", dry, rep)
		}
		var busy []Action
		for _, a := range rep.Actions {
			if a.Kind == KindSkip && strings.HasPrefix(a.Reason, "store busy: lock "+lock) && strings.HasSuffix(a.Reason, "retried at the next pass") {
				busy = append(busy, a)
			}
		}
		if len(busy) != 1 {
			t.Errorf("dry=%v: no 'store busy' report in %+v", dry, rep.Actions)
		}
	}
	if after, _ := os.ReadFile(store); !bytes.Equal(after, before) || !exists(lock) || exists(filepath.Join(f.archive, "hyperyolo")) {
		t.Fatalf("a busy store was touched (or its lock removed)")
	}

	// A file at the lock path is not a lock directory: never taken, even when old.
	os.Remove(lock)
	os.WriteFile(lock, []byte("x"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lock, old, old)
	if rep, _ := j.RunOnce(context.Background(), Overrides{}); rep.Archived != 0 || !exists(lock) {
		t.Errorf("pass took a lock path that is a file: %+v", rep.Actions)
	}
	os.Remove(lock)

	// A stale lock dir (31 s) is replaced, then released.
	os.Mkdir(lock, 0o700)
	stale := time.Now().Add(-31 * time.Second)
	os.Chtimes(lock, stale, stale)
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil || rep.Archived != 2 || len(rep.Errors) > 0 {
		t.Fatalf("pass with a stale lock = %+v, %v", rep, err)
	}
	if exists(lock) || exists(store+".tmp") {
		t.Errorf("lock dir or temp file left after the pass")
	}
}

// TestHyperyoloStoreLock: the lock helper itself.
func TestHyperyoloStoreLock(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "sessions.json")
	lk, err := lockStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockStore(store); !errors.Is(err, ErrStoreBusy) {
		t.Errorf("second lock = %v, want ErrStoreBusy", err)
	}
	if err := lk.refresh(); err != nil {
		t.Errorf("refresh = %v", err)
	}
	// Replaced behind our back (another process judged it stale): lost.
	os.Remove(lk.path)
	os.Mkdir(lk.path, 0o700)
	if err := lk.refresh(); !errors.Is(err, ErrStoreBusy) {
		t.Errorf("refresh of a replaced lock = %v", err)
	}
	lk.release()
	if !exists(lk.path) {
		t.Errorf("release removed a lock that is not ours")
	}
}

// TestHyperyoloOverrides: --invalid-only retires only invalid records;
// --max-sessions keeps the newest N; --older-than replaces the retention.
func TestHyperyoloOverrides(t *testing.T) {
	tests := []struct {
		name string
		o    Overrides
		want string // archived, in catalog order
	}{
		{"invalid only", Overrides{InvalidOnly: true}, "[hyper_1b1b1b1b]"},
		// The newest is 4e (future-dated), then 3d (active 10m ago, protected).
		{"max sessions 1", Overrides{MaxSessions: 1}, "[hyper_2c2c2c2c hyper_1b1b1b1b hyper_0a0a0a0a]"},
		// --older-than 2d: the 2c record (1d) stays; the invalid 1b (3d) goes by age.
		{"older than 2d", Overrides{OlderThan: 2 * day}, "[hyper_1b1b1b1b hyper_0a0a0a0a]"},
		{"older than 50d", Overrides{OlderThan: 50 * day}, "[hyper_1b1b1b1b]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, store := hyFixture(t, "")
			j := f.pinned()
			rep, err := j.RunOnce(context.Background(), tt.o)
			if err != nil || len(rep.Errors) > 0 {
				t.Fatal(rep, err)
			}
			if got := fmt.Sprint(kinds(rep.Actions)[KindArchive]); got != tt.want {
				t.Errorf("archived %s, want %s; actions %+v", got, tt.want, rep.Actions)
			}
			data, _ := os.ReadFile(store)
			recs, _ := mustDecodeStore(t, data)
			for _, a := range rep.Actions {
				if _, still := recs[a.ID]; a.Kind == KindArchive && still {
					t.Errorf("%s still in the store", a.ID)
				}
			}
		})
	}
	// The count cap keeps the newest: with max 3, 4e (future-dated), 3d (10m)
	// and 2c (1d) stay.
	f, _ := hyFixture(t, "")
	rep, _ := f.pinned().RunOnce(context.Background(), Overrides{MaxSessions: 3})
	if got := fmt.Sprint(kinds(rep.Actions)[KindArchive]); got != "[hyper_1b1b1b1b hyper_0a0a0a0a]" {
		t.Errorf("max 3 archived %s", got)
	}
	// action "delete": records leave the store without an archive line.
	f, store := hyFixture(t, `,"action":"delete"`)
	rep, _ = f.pinned().RunOnce(context.Background(), Overrides{})
	if rep.Deleted != 2 || exists(filepath.Join(f.archive, "hyperyolo", RecordsName)) {
		t.Errorf("action delete: %+v", rep)
	}
	if data, _ := os.ReadFile(store); bytes.Contains(data, []byte("hyper_0a0a0a0a")) {
		t.Errorf("deleted record still in the store")
	}
}

// bigStore writes a store of n small records (JSON.stringify layout), plus one
// record whose lastPrompt has pad bytes; all recently active.
func writeRecordStore(t *testing.T, path string, n, pad int) {
	t.Helper()
	recs := map[string]json.RawMessage{}
	var order []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("hyper_%08x", i)
		recs[k] = json.RawMessage(fmt.Sprintf(`{"backend":"claude","nativeId":"n%d","createdAt":"2026-11-21T10:00:00.000Z"}`, i))
		order = append(order, k)
	}
	if pad > 0 {
		recs["hyper_ffffffff"] = json.RawMessage(fmt.Sprintf(`{"backend":"claude","nativeId":"big","createdAt":"2026-11-21T10:00:00.000Z","lastPrompt":%q}`, strings.Repeat("x", pad)))
		order = append(order, "hyper_ffffffff")
	}
	data, err := indexer.EncodeHyperyoloStore(recs, order)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHyperyoloWarnings: the layout's defaults warn over 500 records and over
// 5 MB of store file — the file's size, not the sum of its records.
func TestHyperyoloWarnings(t *testing.T) {
	warnings := func(f *fixture) []Warning {
		t.Helper()
		f.index()
		rep, err := f.pinned().RunOnce(context.Background(), Overrides{})
		if err != nil || len(rep.Errors) > 0 {
			t.Fatal(rep, err)
		}
		return rep.Warnings
	}
	src := `{"name":"hyperyolo","layout":"hyperyolo","root":"%[1]s/hy/sessions.json"}`

	f := storeFixture(t, `{"run_at_start":false,"schedule":"off"}`, src)
	writeRecordStore(t, filepath.Join(f.dir, "hy", "sessions.json"), 500, 0)
	if w := warnings(f); len(w) != 0 {
		t.Errorf("500 records: warnings %+v", w)
	}
	f = storeFixture(t, `{"run_at_start":false,"schedule":"off"}`, src)
	writeRecordStore(t, filepath.Join(f.dir, "hy", "sessions.json"), 501, 0)
	if w := warnings(f); len(w) != 1 || !strings.Contains(w[0].Message, "501 records (warn_count 500)") || w[0].Hint == "" {
		t.Errorf("501 records: warnings %+v", w)
	}

	// 5 MB: a store file just over it warns, one just under does not.
	for _, tt := range []struct {
		over bool
	}{{false}, {true}} {
		f = storeFixture(t, `{"run_at_start":false,"schedule":"off"}`, src)
		store := filepath.Join(f.dir, "hy", "sessions.json")
		writeRecordStore(t, store, 0, 1)
		fi, _ := os.Stat(store)
		pad := 5_000_000 - int(fi.Size()) + 1 // file of exactly 5,000,000 bytes: not over
		if tt.over {
			pad++
		}
		writeRecordStore(t, store, 0, pad)
		fi, _ = os.Stat(store)
		w := warnings(f)
		if tt.over && (len(w) != 1 || !strings.Contains(w[0].Message, fmt.Sprintf("%d bytes (warn_size 5MB)", fi.Size()))) {
			t.Errorf("store of %d bytes: warnings %+v", fi.Size(), w)
		}
		if !tt.over && len(w) != 0 {
			t.Errorf("store of %d bytes: warnings %+v", fi.Size(), w)
		}
	}

	// The file's size counts, not the sum of its records' values: a warn_size
	// between the two warns.
	f = storeFixture(t, `{"run_at_start":false,"schedule":"off"}`, src)
	store := filepath.Join(f.dir, "hy", "sessions.json")
	writeRecordStore(t, store, 300, 0)
	f.index()
	var sum int64
	for _, s := range f.group.Indexer("hyperyolo").Sessions() {
		sum += s.SizeBytes
	}
	fi, _ := os.Stat(store)
	if sum >= fi.Size() {
		t.Fatalf("fixture: sum %d >= file %d", sum, fi.Size())
	}
	f.cfg.Sources[0].WarnSize = config.Size(sum + (fi.Size()-sum)/2)
	if w := warnings(f); len(w) != 1 || !strings.Contains(w[0].Message, fmt.Sprintf("%d bytes", fi.Size())) {
		t.Errorf("warn_size between the record sum %d and the file size %d: warnings %+v", sum, fi.Size(), w)
	}
}

// TestHyperyoloDeleteAndRestore: `delete` removes one record under the lock;
// `restore` puts an archived record back, refusing when its key exists again.
func TestHyperyoloDeleteAndRestore(t *testing.T) {
	f, store := hyFixture(t, "")
	before, _ := os.ReadFile(store)
	orig, _ := mustDecodeStore(t, before)
	j := f.pinned()
	entry := func(id string) indexer.Entry {
		for _, s := range f.group.Indexer("hyperyolo").Sessions() {
			if s.ID == id {
				return indexer.Entry{Source: "hyperyolo", Layout: "hyperyolo", Session: s}
			}
		}
		t.Fatalf("no catalog entry %s", id)
		return indexer.Entry{}
	}

	// Busy store: refused, nothing changed.
	os.Mkdir(store+".lock", 0o700)
	if _, err := j.Delete(context.Background(), entry("hyper_2c2c2c2c"), DeleteOptions{}); !errors.Is(err, ErrStoreBusy) {
		t.Errorf("delete with a busy store = %v", err)
	}
	os.Remove(store + ".lock")
	// Active within the grace: refused unless forced.
	var re *RefusedError
	if _, err := j.Delete(context.Background(), entry("hyper_3d3d3d3d"), DeleteOptions{}); !errors.As(err, &re) {
		t.Errorf("delete of a record active 10m ago = %v", err)
	}
	rep, err := j.Delete(context.Background(), entry("hyper_2c2c2c2c"), DeleteOptions{Permanent: true})
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != KindDelete || rep.Deleted != 1 {
		t.Fatalf("delete = %+v, %v", rep, err)
	}
	data, _ := os.ReadFile(store)
	recs, _ := mustDecodeStore(t, data)
	if _, ok := recs["hyper_2c2c2c2c"]; ok || len(recs) != len(orig)-1 {
		t.Errorf("store after delete has %d entries", len(recs))
	}
	for k, v := range recs {
		if !bytes.Equal(v, orig[k]) {
			t.Errorf("delete changed %s", k)
		}
	}
	if exists(store+".lock") || exists(filepath.Join(f.archive, "hyperyolo", RecordsName)) {
		t.Errorf("delete left its lock, or archived")
	}

	// Retire the stale one, then restore it.
	if rep, _ := j.RunOnce(context.Background(), Overrides{}); rep.Archived != 2 {
		t.Fatalf("pass archived %d", rep.Archived)
	}
	ars, err := ListArchives(f.archive, nil)
	if err != nil || len(ars) != 2 {
		t.Fatalf("ListArchives = %d, %v", len(ars), err)
	}
	var stale Archived
	for _, ar := range ars {
		if ar.Meta.ID == "hyper_0a0a0a0a" {
			stale = ar
		}
		if ar.Record == nil || ar.Meta.Format != FormatRecord || ar.Meta.File != store || ar.Path != filepath.Join(f.archive, "hyperyolo", RecordsName) {
			t.Errorf("archived record = %+v", ar)
		}
	}
	rep, err = j.Restore(context.Background(), stale)
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != KindRestore {
		t.Fatalf("restore = %+v, %v", rep, err)
	}
	data, _ = os.ReadFile(store)
	recs, keys := mustDecodeStore(t, data)
	if compact(t, recs["hyper_0a0a0a0a"]) != compact(t, orig["hyper_0a0a0a0a"]) || keys[len(keys)-1] != "hyper_0a0a0a0a" {
		t.Errorf("restored record = %s (keys %v)", recs["hyper_0a0a0a0a"], keys)
	}
	if !bytes.Equal(recs["hyper_0a0a0a0a"], orig["hyper_0a0a0a0a"]) {
		t.Errorf("restored record bytes = %s, want %s", recs["hyper_0a0a0a0a"], orig["hyper_0a0a0a0a"])
	}
	if lines := readRecordLines(t, filepath.Join(f.archive, "hyperyolo", RecordsName)); len(lines) != 1 || lines[0].ID != "hyper_1b1b1b1b" {
		t.Errorf("records.jsonl after restore = %+v", lines)
	}
	// The restore counts as activity: the next pass keeps it.
	rep, _ = j.RunOnce(context.Background(), Overrides{})
	if rep.Archived != 0 {
		t.Errorf("pass after restore archived %v", ids(rep.Actions, KindArchive))
	}

	// The invalid record's key exists again: restore refuses, changes nothing.
	ars, _ = ListArchives(f.archive, nil)
	if len(ars) != 1 {
		t.Fatalf("archives = %+v", ars)
	}
	recs["hyper_1b1b1b1b"] = json.RawMessage(`{"backend":"codex","nativeId":"new","createdAt":"2026-11-22T11:00:00.000Z"}`)
	again, _ := indexer.EncodeHyperyoloStore(recs, keys)
	os.WriteFile(store, again, 0o600)
	if _, err := j.Restore(context.Background(), ars[0]); !errors.Is(err, ErrExists) {
		t.Errorf("restore over an existing key = %v", err)
	}
	if now, _ := os.ReadFile(store); !bytes.Equal(now, again) || exists(store+".lock") {
		t.Errorf("refused restore changed the store or kept the lock")
	}
	if lines := readRecordLines(t, filepath.Join(f.archive, "hyperyolo", RecordsName)); len(lines) != 1 {
		t.Errorf("refused restore removed its archive line")
	}
}

// TestRecordArchiveExpiry: archive_retention also drops old records.jsonl lines.
func TestRecordArchiveExpiry(t *testing.T) {
	f, _ := hyFixture(t, "")
	j := f.pinned()
	if rep, _ := j.RunOnce(context.Background(), Overrides{}); rep.Archived != 2 {
		t.Fatal(rep)
	}
	f.cfg.Janitor.ArchiveRetention = config.NewDuration(7 * day)
	f.cfg.Sources[0].Retention = config.DurationOff // nothing new is retired at the later clock
	j.opt.Now = func() time.Time { return time.Now().Add(8 * day) }
	rep, err := j.RunOnce(context.Background(), Overrides{})
	if err != nil || len(ids(rep.Actions, KindExpireArchive)) != 2 {
		t.Fatalf("expiry pass = %+v, %v", rep.Actions, err)
	}
	if exists(filepath.Join(f.archive, "hyperyolo", RecordsName)) {
		t.Errorf("records.jsonl with every line expired still exists")
	}
}

// TestHyperyoloSkipWithoutRetirement: a pass with nothing to retire reports
// its skips (worded for records) without locking or reading the store.
func TestHyperyoloSkipWithoutRetirement(t *testing.T) {
	f := storeFixture(t, `{"run_at_start":false,"schedule":"off"}`, `{"name":"hyperyolo","layout":"hyperyolo","root":"%[1]s/hy/sessions.json"}`)
	store := filepath.Join(f.dir, "hy", "sessions.json")
	writeHyStoreRaw(t, store, `{
  "hyper_3d3d3d3d": {
    "backend": "claude",
    "createdAt": "2026-11-22T11:50:00.000Z",
    "invalid": true
  }
}`)
	f.index()
	os.Mkdir(store+".lock", 0o700) // busy: would make any edit a skip
	rep, err := f.pinned().RunOnce(context.Background(), Overrides{})
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != KindSkipInUse || !strings.HasPrefix(rep.Actions[0].Reason, "active 10m ago") {
		t.Fatalf("pass = %+v, %v", rep.Actions, err)
	}
}

func writeHyStoreRaw(t *testing.T, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
