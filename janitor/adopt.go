package janitor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// ArchiveDir is where the archives of one project of a source go:
// <archive_dir>/<source>/<project-key>/ (SPEC §5). The key always names a
// directory of its own, whatever the project's path ("/", ".", "..", "").
func ArchiveDir(archiveDir, source, project string) string {
	return filepath.Join(archiveDir, source, indexer.ProjectKey(project))
}

// AdoptArchives moves archives that older versions wrote outside their project
// directory — <archive_dir>/<source>/<file> for the projects "/" and ".", and
// <archive_dir>/<file> for ".." — into ArchiveDir of their own metadata, so
// restore finds them. Each move is one rename (atomic; both directories synced);
// an archive whose name is taken there gets a free ".N" name. Files that do not
// read as sessionwatch archives are left alone. It returns what it moved.
func AdoptArchives(archiveDir string) ([]string, error) {
	dirs := []string{archiveDir}
	ents, err := os.ReadDir(archiveDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopt archives: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(archiveDir, e.Name()))
		}
	}
	var moved []string
	var errs []error
	for _, d := range dirs {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			name := f.Name()
			if !f.Type().IsRegular() || !strings.HasSuffix(name, ".gz") || strings.HasPrefix(name, indexer.TempPrefix) {
				continue
			}
			old := filepath.Join(d, name)
			ar, err := ReadArchive(old)
			if err != nil {
				continue
			}
			dst := ArchiveDir(archiveDir, ar.Meta.Source, ar.Meta.Project)
			if dst == d {
				continue
			}
			to, err := freeName(dst, name)
			if err == nil {
				err = mkdirAllSynced(dst)
			}
			if err == nil {
				err = os.Rename(old, to)
			}
			if err == nil {
				err = errors.Join(indexer.SyncDir(dst), indexer.SyncDir(d))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("adopt archive %s: %w", old, err))
				continue
			}
			moved = append(moved, to)
		}
	}
	return moved, errors.Join(errs...)
}

// freeName returns dir/name, or dir/<stem>.N<ext> for the first N not taken.
func freeName(dir, name string) (string, error) {
	ext := ".gz"
	if strings.HasSuffix(name, ".tar.gz") {
		ext = ".tar.gz"
	}
	stem := strings.TrimSuffix(name, ext)
	for n := 0; n < 1000; n++ {
		p := filepath.Join(dir, name)
		if n > 0 {
			p = filepath.Join(dir, fmt.Sprintf("%s.%d%s", stem, n, ext))
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free name for %s in %s", name, dir)
}
