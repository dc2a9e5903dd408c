package indexer

import (
	"encoding/json"
	"os"
	"sync"
)

// geminiRegistries caches the parsed projects.json of each Gemini root: without
// it, resolving the project of each of n project dirs parsed the file and hashed
// its n paths again, n² hashes per pass (25 million at 5,000 projects).
var geminiRegistries = registryCache{m: map[string]*registryIndex{}}

type registryCache struct {
	mu sync.Mutex
	m  map[string]*registryIndex // by file path
}

// registryIndex is one version of a projects.json: for each slug or sha256 of a
// path, the smallest path it names.
type registryIndex struct {
	dev, ino   uint64
	size, mtim int64
	dirs       map[string]string
}

func (c *registryCache) lookup(file, dir string) string {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() {
		c.mu.Lock()
		delete(c.m, file)
		c.mu.Unlock()
		return ""
	}
	dev, ino := statIdentity(fi)
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := c.m[file]
	if idx == nil || idx.dev != dev || idx.ino != ino || idx.size != fi.Size() || idx.mtim != fi.ModTime().UnixNano() {
		idx = &registryIndex{dev: dev, ino: ino, size: fi.Size(), mtim: fi.ModTime().UnixNano(), dirs: parseRegistry(file)}
		c.m[file] = idx
	}
	return idx.dirs[dir]
}

// parseRegistry maps every slug and every path's sha256 in a projects.json to the
// smallest path that has it; nil when the file is unreadable or not the registry.
func parseRegistry(file string) map[string]string {
	data, err := readCappedRegular(file, maxRegistryBytes)
	if err != nil {
		return nil
	}
	var reg struct {
		Projects map[string]json.RawMessage `json:"projects"`
	}
	if json.Unmarshal(data, &reg) != nil {
		return nil
	}
	dirs := make(map[string]string, 2*len(reg.Projects))
	keep := func(key, path string) {
		if best, ok := dirs[key]; !ok || path < best {
			dirs[key] = path
		}
	}
	for path, raw := range reg.Projects {
		if path == "" {
			continue
		}
		if slug, _ := jsString(raw); slug != "" {
			keep(slug, path)
		}
		keep(sha256Hex(path), path)
	}
	return dirs
}

// dirsOf is the current version of file's index: every slug and sha256 of a
// path, mapped to the smallest path that has it (nil when there is none). The
// map is not changed after it is made.
func (c *registryCache) dirsOf(file string) map[string]string {
	c.lookup(file, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if idx := c.m[file]; idx != nil {
		return idx.dirs
	}
	return nil
}
