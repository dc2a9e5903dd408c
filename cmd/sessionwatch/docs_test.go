package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/sessionwatch/sessionwatch/config"
)

// repoRoot is the repository's top directory, seen from this package.
const repoRoot = "../.."

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(data)
}

// docSection is the part of a markdown document under the heading "## name",
// up to the next "## " heading; "" if there is none.
func docSection(doc, name string) string {
	_, rest, ok := strings.Cut(doc, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// TestCLIDocCoversEveryCommandAndFlag: docs/cli.md has a section per command of
// the CLI's command list, and every flag a command's --help prints (its
// subcommands' too) is named in that section.
func TestCLIDocCoversEveryCommandAndFlag(t *testing.T) {
	doc := readDoc(t, "docs/cli.md")
	if len(commandNames) < 10 {
		t.Fatalf("commandNames has %d commands", len(commandNames))
	}
	for _, c := range commandNames {
		sec := docSection(doc, c)
		if sec == "" {
			t.Errorf("docs/cli.md has no section \"## %s\"", c)
			continue
		}
		if !strings.Contains(sec, "sessionwatch "+c) {
			t.Errorf("docs/cli.md section %s shows no example of 'sessionwatch %s'", c, c)
		}
		helps := [][]string{{c, "--help"}}
		for _, sub := range subcommands[c] {
			if !strings.Contains(sec, sub) {
				t.Errorf("docs/cli.md section %s does not name subcommand %s", c, sub)
			}
			if c != "completion" {
				helps = append(helps, []string{c, sub, "--help"})
			}
		}
		for _, args := range helps {
			for _, f := range helpFlags(args) {
				if !strings.Contains(sec, "`--"+f.name) {
					t.Errorf("docs/cli.md section %s does not document --%s (from '%s')", c, f.name, strings.Join(args, " "))
				}
			}
		}
	}
}

// jsonKeys lists the JSON keys of a struct type's fields.
func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// TestConfigDocCoversEveryKey: every key of the config file (top level, janitor,
// sources, search, prices) is documented in docs/config.md, and the defaults
// the doc states for the global knobs are the code's.
func TestConfigDocCoversEveryKey(t *testing.T) {
	doc := readDoc(t, "docs/config.md")
	groups := map[string]reflect.Type{
		"":          reflect.TypeOf(config.Config{}),
		"janitor":   reflect.TypeOf(config.Janitor{}),
		"sources[]": reflect.TypeOf(config.Source{}),
		"search":    reflect.TypeOf(config.Search{}),
		"prices":    reflect.TypeOf(config.Price{}),
	}
	n := 0
	for group, typ := range groups {
		for _, k := range jsonKeys(typ) {
			n++
			if !strings.Contains(doc, "`"+k+"`") {
				t.Errorf("docs/config.md does not document %s key `%s`", group, k)
			}
		}
	}
	if n < 30 {
		t.Fatalf("found %d config keys by reflection, want them all", n)
	}
	d := config.Default()
	for key, val := range map[string]string{
		"settle": d.Settle.String(), "max_settle": d.MaxSettle.String(), "rescan_interval": d.RescanInterval.String(),
		"log_level": d.LogLevel, "log_format": d.LogFormat, "schedule": d.Janitor.Schedule,
		"active_grace": d.Janitor.ActiveGrace.String(), "lock_stale_after": d.Janitor.LockStaleAfter.String(),
		"archive_retention": d.Janitor.ArchiveRetention.String(), "first_run": d.Janitor.FirstRun,
	} {
		row := "| `" + key + "` | `\"" + val + "\"` |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/config.md: want the row %q (the default in the code)", row)
		}
	}
}

// TestNothingPointsOutsideTheRepository: no file in the repository refers to the
// team's files outside it, and every relative link in the markdown documents
// names a file inside the repository that exists.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	forbidden := []string{".." + "/shared", "SPEC" + ".md"}
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files, docs := 0, 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files++
		for _, f := range forbidden {
			if strings.Contains(string(data), f) {
				t.Errorf("%s mentions %q, a file outside the repository", rel, f)
			}
		}
		if !strings.HasSuffix(p, ".md") {
			return nil
		}
		docs++
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Clean(filepath.Join(filepath.Dir(p), target))
			if r, err := filepath.Rel(root, abs); err != nil || !filepath.IsLocal(r) {
				t.Errorf("%s links to %s, outside the repository", rel, target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, target)
				continue
			}
			if anchor := strings.TrimPrefix(m[2], "#"); anchor != "" && strings.HasSuffix(abs, ".md") {
				if heads := headingAnchors(abs); !heads[anchor] {
					t.Errorf("%s links to %s%s: no such heading there", rel, target, m[2])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 || docs < 8 {
		t.Fatalf("walked %d files, %d markdown documents: want the whole repository", files, docs)
	}
}

// headingAnchors are the anchors GitHub makes of a markdown file's headings:
// lower case, punctuation dropped, spaces as "-".
func headingAnchors(path string) map[string]bool {
	data, _ := os.ReadFile(path)
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
