package search

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOldFormatIsRebuiltNotMisread: an index of an older version — a version 2
// manifest, or a segment with the SWSEG2 magic under a current manifest — is
// refused by readers and rebuilt from the transcripts by the writer.
func TestOldFormatIsRebuiltNotMisread(t *testing.T) {
	for _, tc := range []struct {
		name string
		age  func(t *testing.T, dir string)
	}{
		{"manifest version 2", func(t *testing.T, dir string) {
			p := filepath.Join(dir, ManifestName)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			old := bytes.Replace(data, []byte(`"version":3`), []byte(`"version":2`), 1)
			if bytes.Equal(old, data) {
				t.Fatalf("manifest %s has no version 3", data)
			}
			os.WriteFile(p, old, 0o600)
		}},
		{"segment SWSEG2", func(t *testing.T, dir string) {
			segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.sws"))
			if len(segs) == 0 {
				t.Fatal("no segment")
			}
			for _, p := range segs {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				copy(data, "SWSEG2\n\x00")
				os.WriteFile(p, data, 0o600)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:01Z", "user", "fix the flaky parser test"))
			x, _ := s.index(Options{})
			x.Close()
			dir := filepath.Join(s.state, DirName)
			if got := hitNames(s.search("parser", Filter{})); got != uuid1+".jsonl" {
				t.Fatalf("before: parser → %q", got)
			}
			tc.age(t, dir)
			if r, err := OpenReader(dir); err == nil {
				r.Close()
				t.Fatal("OpenReader read an index of the old format")
			}
			x, _ = s.index(Options{})
			x.Close()
			if got := hitNames(s.search("parser", Filter{})); got != uuid1+".jsonl" {
				t.Errorf("after the rebuild: parser → %q, want %q", got, uuid1+".jsonl")
			}
		})
	}
}
