package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// osGetenv is the environment the defaults are computed from.
var osGetenv = os.Getenv

// DefaultPath returns the config file path: $SESSIONWATCH_CONFIG (with ~ and
// $VAR expanded) if set, else $XDG_CONFIG_HOME/sessionwatch/config.json if
// $XDG_CONFIG_HOME is an absolute path, else
// ~/.config/sessionwatch/config.json.
func DefaultPath() string {
	if p := os.Getenv(configEnvVar); p != "" {
		return ExpandPath(p)
	}
	return filepath.Join(xdgConfigHome(os.Getenv, homeDir()), DefaultConfigRel)
}

// ExpandPath expands a leading "~" or "~/" to $HOME (the current user's home
// directory if $HOME is unset), then $VAR and ${VAR} as os.ExpandEnv does
// (undefined variables become ""). "~user" forms are left alone.
func ExpandPath(p string) string {
	return expandPath(p, nil)
}

// expandPath is ExpandPath that reports each undefined variable to undefined
// (when non-nil).
func expandPath(p string, undefined func(name string)) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home := homeDir(); home != "" {
			// Expand variables in the rest only, so that a $ in $HOME is
			// not taken for a variable.
			return home + expandEnv(p[1:], undefined)
		}
	}
	return expandEnv(p, undefined)
}

func expandEnv(s string, undefined func(name string)) string {
	return os.Expand(s, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok && undefined != nil {
			undefined(name)
		}
		return v
	})
}

// Init writes the default configuration (Default, with paths under $HOME
// written as ~/...) to path, creating missing directories with mode 0700.
// The file is written atomically — a temp file in the same directory,
// fsync, then moved into place and the directory fsynced — with mode 0600.
// Init refuses, with an error naming path that matches fs.ErrExist, if
// something already exists at path.
func Init(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("init config %s: %w", path, fs.ErrExist)
	}
	data, err := Default().Marshal()
	if err != nil {
		return fmt.Errorf("init config %s: %w", path, err)
	}
	if err := writeNew(path, tildeHome(data)); err != nil {
		return fmt.Errorf("init config %s: %w", path, err)
	}
	return nil
}

// tildeHome rewrites JSON string values that start with $HOME/ to ~/, so the
// written file reads like the SPEC's example and follows the user's home.
func tildeHome(data []byte) []byte {
	home := homeDir()
	if home == "" || home == "/" || strings.ContainsAny(home, `"\$`) {
		return data
	}
	return []byte(strings.ReplaceAll(string(data), `"`+home+`/`, `"~/`))
}

// writeNew atomically creates path with data, mode 0600, failing with
// fs.ErrExist if path exists.
func writeNew(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(defaultConfigPermission); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// A hard link publishes the file atomically and, unlike rename, fails
	// if path appeared meanwhile. Filesystems without hard links fall back
	// to rename after a last check.
	if lerr := os.Link(tmp.Name(), path); lerr != nil {
		if errors.Is(lerr, fs.ErrExist) {
			return lerr
		}
		if _, serr := os.Lstat(path); serr == nil {
			return fs.ErrExist
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return err
		}
	} else if err := os.Remove(tmp.Name()); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory so a rename or link in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
