package janitor

// Archive retention: archives and archived records older than
// janitor.archive_retention are deleted.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// expireArchives deletes archives older than janitor.archive_retention (by the
// archive file's mtime: the time it was archived), then archive directories
// left empty. Only files that read as sessionwatch archives are touched.
func (p *pass) expireArchives(sources []string) {
	ret := enabledDur(p.j.cfg.Janitor.ArchiveRetention)
	if ret <= 0 {
		return
	}
	for _, src := range sources {
		base := filepath.Join(p.j.cfg.ArchiveDir, src)
		p.expireRecords(src, filepath.Join(base, RecordsName), ret)
		keys, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, k := range keys {
			if !k.IsDir() {
				continue
			}
			dir := filepath.Join(base, k.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			left := len(files)
			for _, f := range files {
				if !f.Type().IsRegular() || !strings.HasSuffix(f.Name(), ".gz") || strings.HasPrefix(f.Name(), indexer.TempPrefix) {
					continue
				}
				path := filepath.Join(dir, f.Name())
				fi, err := os.Lstat(path)
				if err != nil || p.now.Sub(fi.ModTime()) <= ret {
					continue
				}
				ar, err := ReadArchive(path)
				if err != nil {
					continue
				}
				a := Action{Kind: KindExpireArchive, Source: src, ID: ar.Meta.ID, Project: ar.Meta.Project, File: ar.Meta.File,
					Archive: path, Bytes: fi.Size(), Reason: fmt.Sprintf("archived %s ago (archive_retention %s)", ageString(p.now.Sub(fi.ModTime())), durString(ret))}
				if !p.dry {
					if err := removeQuiet(path); err != nil {
						p.fail("expire archive "+path, err)
						continue
					}
				}
				left--
				p.record(a)
			}
			if left == 0 && !p.dry {
				if os.Remove(dir) == nil {
					indexer.SyncDir(base)
					p.record(Action{Kind: KindRmdir, Source: src, File: dir, Reason: "empty archive directory"})
				}
			} else if !p.dry {
				indexer.SyncDir(dir)
			}
		}
	}
}

// expireRecords removes the lines of records.jsonl retired longer ago than
// ret (lines whose retiredAt does not parse are kept).
func (p *pass) expireRecords(src, path string, ret time.Duration) {
	recs, err := readRecords(path)
	if err != nil || len(recs) == 0 {
		return
	}
	old := map[string]ArchivedRecord{}
	for _, r := range recs {
		if t := indexer.ParseTime(r.RetiredAt); !t.IsZero() && p.now.Sub(t) > ret {
			old[string(r.Line)] = r
		}
	}
	if len(old) == 0 {
		return
	}
	if !p.dry {
		if _, err := rewriteRecords(path, func(line []byte) bool { _, ok := old[string(line)]; return ok }); err != nil {
			p.fail("expire archived records in "+path, err)
			return
		}
	}
	for _, r := range recs {
		if _, ok := old[string(r.Line)]; !ok {
			continue
		}
		p.record(Action{Kind: KindExpireArchive, Source: src, ID: r.ID, File: r.File, Archive: path, Bytes: int64(len(r.Line)) + 1,
			Reason: fmt.Sprintf("record archived %s ago (archive_retention %s)", ageString(p.now.Sub(indexer.ParseTime(r.RetiredAt))), durString(ret))})
	}
}
