package indexer

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGeminiRegistryCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "projects.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"projects":{"/home/u/b":"web","/home/u/a":"web","/home/u/c":"api"}}`)
	for _, c := range []struct{ dir, want string }{
		{"web", "/home/u/a"}, // of two paths with one slug, the smallest
		{"api", "/home/u/c"},
		{sha256Hex("/home/u/b"), "/home/u/b"},
		{"nope", ""},
	} {
		if got := geminiRegistryPath(file, c.dir); got != c.want {
			t.Errorf("geminiRegistryPath(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
	// A new version of the file is read again, whatever its size.
	write(`{"projects":{"/home/u/z":"web"}}`)
	if got := geminiRegistryPath(file, "web"); got != "/home/u/z" {
		t.Errorf("after a rewrite: geminiRegistryPath(web) = %q, want /home/u/z", got)
	}
	os.Remove(file)
	if got := geminiRegistryPath(file, "web"); got != "" {
		t.Errorf("after removal: geminiRegistryPath(web) = %q, want \"\"", got)
	}
	write(`not json`)
	if got := geminiRegistryPath(file, "web"); got != "" {
		t.Errorf("unparseable registry: geminiRegistryPath(web) = %q, want \"\"", got)
	}
}
