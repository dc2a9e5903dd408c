package indexer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// schemaPath is the published JSON Schema of the catalog (docs/).
const schemaPath = "../docs/sessions-index.schema.json"

// TestCatalogsMatchPublishedSchema indexes every layout's test store and validates
// each catalog written against docs/sessions-index.schema.json, so the schema other
// tools validate with stays true to what sessionwatch writes.
func TestCatalogsMatchPublishedSchema(t *testing.T) {
	schema := loadSchema(t)
	cases, _ := filepath.Glob("testdata/*/*/store")
	if len(cases) < 8 {
		t.Fatalf("found %d layout stores under testdata, want one per layout", len(cases))
	}
	seen := map[string]bool{}
	for _, store := range cases {
		layout := filepath.Base(filepath.Dir(filepath.Dir(store)))
		t.Run(layout, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "store")
			state := t.TempDir()
			copyTree(t, store, root)
			if layout == "hyperyolo" {
				root = filepath.Join(root, "sessions.json")
			}
			ix := newLayoutIndexer(t, layout, root, state, false)
			if err := ix.Reconcile(); err != nil {
				t.Logf("reconcile: %v", err) // a deliberately corrupt test file: catalogs still validate
			}
			cats, _ := filepath.Glob(filepath.Join(state, "index", layout, "*", CatalogName))
			if len(cats) == 0 {
				t.Fatalf("no catalog written for %s", store)
			}
			for _, p := range cats {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				var doc any
				if err := json.Unmarshal(data, &doc); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for _, problem := range schema.validate(doc, "") {
					t.Errorf("%s: %s", p, problem)
				}
				// The resume state lives beside the catalog, not in it.
				for i, s := range doc.(map[string]any)["sessions"].([]any) {
					if _, ok := s.(map[string]any)["tail"]; ok {
						t.Errorf("%s: sessions[%d] carries a tail", p, i)
					}
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(p), ResumeName)); err != nil {
					t.Errorf("no %s beside %s: %v", ResumeName, p, err)
				}
			}
			seen[layout] = true
		})
	}
	if len(seen) < 8 {
		t.Errorf("validated catalogs of %d layouts, want 8", len(seen))
	}
}

// TestSchemaValidatorRejects shows the validator can fail: each broken catalog
// must produce the named problem.
func TestSchemaValidatorRejects(t *testing.T) {
	schema := loadSchema(t)
	good := `{"version":1,"generator":"sessionwatch","source":"w","layout":"wave","project":"/p","updatedAt":"",
	  "sessions":[{"id":"a","type":"main","file":"/f","firstPrompt":"","createdAt":"2026-01-01T00:00:00.000Z","lastActiveAt":"","messageCount":0,"sizeBytes":1,"tail":{}}]}`
	tests := []struct {
		name, from, to, want string
	}{
		{"valid", "", "", ""},
		{"missing field", `"generator":"sessionwatch",`, "", `missing required "generator"`},
		{"unknown field", `"version":1,`, `"version":1,"colour":"red",`, `unknown field "colour"`},
		{"bad enum", `"type":"main"`, `"type":"side"`, `sessions[0].type: "side" not one of`},
		{"bad time", `"2026-01-01T00:00:00.000Z"`, `"2026-01-01"`, `sessions[0].createdAt: "2026-01-01" does not match`},
		{"negative", `"sizeBytes":1`, `"sizeBytes":-1`, `sessions[0].sizeBytes: -1 is below 0`},
		{"wrong type", `"messageCount":0`, `"messageCount":"0"`, `sessions[0].messageCount: want integer`},
	}
	for _, tt := range tests {
		doc := strings.Replace(good, tt.from, tt.to, 1)
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := strings.Join(schema.validate(v, ""), "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: validate = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// jsonSchema is the subset of JSON Schema the catalog schema uses: type, enum,
// required, properties, additionalProperties (false), items, minimum, minLength,
// pattern and local $ref into $defs.
type jsonSchema struct {
	root map[string]any
}

func loadSchema(t *testing.T) *jsonSchema {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return &jsonSchema{root: m}
}

func (s *jsonSchema) validate(v any, path string) []string {
	return s.check(s.root, v, path)
}

func (s *jsonSchema) check(node map[string]any, v any, path string) []string {
	if ref, ok := node["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		def, ok := s.root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: unresolvable $ref %s", where(path), ref)}
		}
		return s.check(def, v, path)
	}
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, where(path)+": "+fmt.Sprintf(format, args...))
	}
	if typ, ok := node["type"].(string); ok && !hasType(v, typ) {
		add("want %s, got %T", typ, v)
		return problems
	}
	if enum, ok := node["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			add("%s not one of %v", jsonText(v), enum)
		}
	}
	if minimum, ok := node["minimum"].(float64); ok {
		if n, ok := v.(float64); ok && n < minimum {
			add("%v is below %v", n, minimum)
		}
	}
	if str, ok := v.(string); ok {
		if ml, ok := node["minLength"].(float64); ok && float64(len([]rune(str))) < ml {
			add("%s is shorter than %v", jsonText(v), ml)
		}
		if pat, ok := node["pattern"].(string); ok && !regexp.MustCompile(pat).MatchString(str) {
			add("%s does not match %s", jsonText(v), pat)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := node["properties"].(map[string]any)
		required, _ := node["required"].([]any)
		for _, r := range required {
			if _, ok := obj[r.(string)]; !ok {
				add("missing required %q", r)
			}
		}
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, ok := props[k].(map[string]any)
			if !ok {
				if ap, ok := node["additionalProperties"].(bool); ok && !ap {
					add("unknown field %q", k)
				}
				continue
			}
			problems = append(problems, s.check(sub, obj[k], join(path, k))...)
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := node["items"].(map[string]any); ok {
			for i, e := range arr {
				problems = append(problems, s.check(items, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return problems
}

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == float64(int64(n))
	case "number":
		_, ok := v.(float64)
		return ok
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "(catalog)"
	}
	return path
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
