package usage

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// StampName is the file that lets `usage` without a daemon skip the index pass
// when nothing in the stores changed since its last one (docs/usage.md).
const StampName = "fresh.tsv"

// Stamp is what every directory and file under the source roots looked like just
// before an index pass (size, mtime, ctime, inode), and which summary that pass
// left. While all of it is still so, the ledger is up to date: no byte was
// appended, no file came or went (a directory's mtime moves when an entry is
// added, removed or renamed in it) and no other writer changed the ledger.
type Stamp struct {
	roots   []string
	entries []byte // "path\tsize\tmtime\tctime\tino\n" …
	ok      bool
}

func statLine(b []byte, path string, st *syscall.Stat_t) []byte {
	b = append(b, path...)
	for _, v := range []int64{st.Size, st.Mtim.Nano(), st.Ctim.Nano(), int64(st.Ino)} {
		b = append(b, '\t')
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, '\n')
}

// TakeStamp records the directories and files under roots (call it before the
// index pass it is to vouch for).
func TakeStamp(roots []string) *Stamp {
	s := &Stamp{roots: roots, ok: true}
	var walk func(dir string)
	walk = func(dir string) {
		var st syscall.Stat_t
		if syscall.Lstat(dir, &st) != nil {
			s.ok = false
			return
		}
		s.entries = statLine(s.entries, dir, &st)
		ents, err := os.ReadDir(dir)
		if err != nil {
			s.ok = false
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if strings.ContainsAny(p, "\t\n") {
				s.ok = false // not representable: no stamp, the pass always runs
				return
			}
			if e.IsDir() {
				walk(p)
				continue
			}
			if syscall.Lstat(p, &st) != nil {
				s.ok = false
				return
			}
			s.entries = statLine(s.entries, p, &st)
		}
	}
	for _, r := range roots {
		if strings.ContainsAny(r, "\t\n") {
			s.ok = false
			continue
		}
		var st syscall.Stat_t
		if syscall.Lstat(r, &st) != nil {
			// A root that does not exist yet: its parent's mtime says when it appears.
			s.entries = append(s.entries, "missing\t"+r+"\n"...)
			continue
		}
		walk(r)
	}
	return s
}

func summaryID(stateDir string) string {
	var st syscall.Stat_t
	if syscall.Stat(filepath.Join(stateDir, DirName, SummaryName), &st) != nil {
		return "none"
	}
	return strconv.FormatInt(st.Size, 10) + "\t" + strconv.FormatInt(st.Mtim.Nano(), 10) + "\t" + strconv.FormatUint(st.Ino, 10)
}

func stampHeader(stateDir string, roots []string) string {
	return "sessionwatch usage stamp 1\t" + summaryID(stateDir) + "\t" + strconv.Quote(strings.Join(roots, "\x00")) + "\n"
}

// Write saves the stamp after the pass it vouches for (it names the summary that
// pass left). A stamp that could not be taken removes any earlier one.
func (s *Stamp) Write(stateDir string) error {
	path := filepath.Join(stateDir, DirName, StampName)
	if !s.ok {
		os.Remove(path)
		return nil
	}
	return indexer.WriteFileAtomic(path, append([]byte(stampHeader(stateDir, s.roots)), s.entries...))
}

// Fresh reports whether the stamp in stateDir still holds for roots: the ledger
// is then up to date and no index pass is needed. It reads the stamp and stats
// each entry, on every CPU.
func Fresh(stateDir string, roots []string) bool {
	data, err := os.ReadFile(filepath.Join(stateDir, DirName, StampName))
	if err != nil {
		return false
	}
	head := stampHeader(stateDir, roots)
	if !bytes.HasPrefix(data, []byte(head)) {
		return false
	}
	body := data[len(head):]
	if bytes.Contains(body, []byte("missing\t")) {
		return false // a root that did not exist: look again each time (cheap: the store is empty)
	}
	n := runtime.GOMAXPROCS(0)
	chunks := make([][]byte, 0, n)
	for i := 0; i < n && len(body) > 0; i++ {
		cut := len(body) / (n - i)
		if j := bytes.IndexByte(body[cut:], '\n'); j >= 0 {
			cut += j + 1
		} else {
			cut = len(body)
		}
		chunks = append(chunks, body[:cut])
		body = body[cut:]
	}
	var stale sync.Once
	fresh := true
	var wg sync.WaitGroup
	for _, c := range chunks {
		wg.Add(1)
		go func(c []byte) {
			defer wg.Done()
			var st syscall.Stat_t
			var line []byte
			for len(c) > 0 {
				line = line[:0]
				end := bytes.IndexByte(c, '\n')
				tab := bytes.IndexByte(c[:end], '\t')
				if tab >= 0 && syscall.Lstat(string(c[:tab]), &st) == nil {
					line = statLine(line[:0], string(c[:tab]), &st)
				}
				if tab < 0 || !bytes.Equal(line, c[:end+1]) {
					stale.Do(func() { fresh = false })
					return
				}
				c = c[end+1:]
			}
		}(c)
	}
	wg.Wait()
	return fresh
}
