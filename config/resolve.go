package config

import "path/filepath"

// ResolveRoot returns the real path of a configured root (SPEC §5: a root that
// is itself a symlink is resolved once and its real directory used everywhere;
// symlinks inside it are never followed). For a root that is one file (isFile),
// only its directory is resolved: the file keeps its name, so the agent's lock
// beside it is still found. ok is false when the root (or a file root's
// directory) does not exist yet: the path is returned cleaned, as configured, to
// be resolved when it appears.
func ResolveRoot(root string, isFile bool) (resolved string, ok bool) {
	root = filepath.Clean(root)
	if isFile {
		dir, err := filepath.EvalSymlinks(filepath.Dir(root))
		if err != nil {
			return root, false
		}
		return filepath.Join(dir, filepath.Base(root)), true
	}
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return root, false
	}
	return r, true
}
