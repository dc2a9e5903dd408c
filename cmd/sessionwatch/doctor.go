package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
	"github.com/sessionwatch/sessionwatch/watcher"
)

// inotifyDir is where the kernel's inotify limits are read; tests point it at a
// directory holding fake max_user_watches / max_user_instances files.
var inotifyDir = "/proc/sys/fs/inotify"

// doctorReport collects findings: problems make doctor exit 1, notes do not.
type doctorReport struct {
	out      *strings.Builder
	problems int
}

// Findings name paths and ids from outside: each line goes through termSafe.
func (r *doctorReport) ok(format string, args ...any) {
	fmt.Fprintf(r.out, "ok       %s\n", termSafe(fmt.Sprintf(format, args...)))
}

func (r *doctorReport) note(format string, args ...any) {
	fmt.Fprintf(r.out, "note     %s\n", termSafe(fmt.Sprintf(format, args...)))
}

func (r *doctorReport) problem(hint, format string, args ...any) {
	r.problems++
	fmt.Fprintf(r.out, "PROBLEM  %s\n", termSafe(fmt.Sprintf(format, args...)))
	if hint != "" {
		fmt.Fprintf(r.out, "         fix: %s\n", termSafe(hint))
	}
}

func cmdDoctor(e *env, args []string) error {
	fs := newFlags(e, "doctor", "sessionwatch doctor   (example: sessionwatch doctor)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "doctor: unexpected argument %q", pos[0])
	}
	r := &doctorReport{out: &strings.Builder{}}
	defer func() { fmt.Fprint(e.stdout, r.out.String()) }()

	cfg, err := e.loadConfig()
	if err != nil {
		// One line per problem: the first line of the error is its summary.
		lines := strings.Split(err.Error(), "\n")
		if len(lines) == 1 {
			r.problem("run 'sessionwatch config check' and fix the file", "%s", lines[0])
		}
		for _, l := range lines[1:] {
			r.problem("", "config %s", l)
		}
		if len(lines) > 1 {
			fmt.Fprintf(r.out, "         fix: run 'sessionwatch config check' and fix %s\n", showPath(e.configPath))
		}
		return errSilentFailure
	}
	if _, err := os.Stat(e.configPath); os.IsNotExist(err) {
		r.ok("no config file at %s: defaults in effect", tildePath(e.configPath))
	} else {
		r.ok("config %s", tildePath(e.configPath))
	}

	g, err := indexer.NewGroup(cfg, nil, true)
	if err != nil {
		r.problem("", "%v", err)
		return errSilentFailure
	}
	for _, dir := range []struct{ name, path string }{{"state_dir", cfg.StateDir}, {"archive_dir", cfg.ArchiveDir}} {
		if p := firstExisting(dir.path); p == "" || syscall.Access(p, 2 /* W_OK */) != nil {
			r.problem(fmt.Sprintf("make %s writable by you", showPath(dir.path)), "%s %s is not writable", dir.name, showPath(dir.path))
		} else {
			r.ok("%s %s", dir.name, showPath(dir.path))
		}
	}
	// Temp files an interrupted janitor left: the next janitor run (daemon
	// start, clean, restore) finishes or undoes the action and removes them.
	if temps := janitor.ArchiveTemps(cfg.ArchiveDir); len(temps) > 0 {
		r.problem("start the daemon (or run a janitor command such as 'sessionwatch clean'): its recovery finishes or undoes the interrupted action and removes them",
			"archive_dir holds %d temp file(s) left by an interrupted janitor, e.g. %s", len(temps), showPath(temps[0]))
	}
	dirs, present := 0, 0
	var looked []string
	for i, root := range g.WatchRoots() {
		looked = append(looked, tildePath(root.Path))
		ix := g.Indexers()[i]
		name := ix.Options().Source
		if c := ix.ConfiguredRoot(); c != root.Path {
			r.ok("source %s: root %s is a symlink to %s (the real directory is used)", name, tildePath(c), tildePath(root.Path))
		}
		fi, err := os.Stat(root.Path)
		switch {
		case os.IsNotExist(err):
			r.note("source %s: %s does not exist yet (the daemon waits for it)", name, tildePath(root.Path))
			dirs++ // the nearest existing ancestor is watched meanwhile
			continue
		case err != nil:
			r.problem("check the path and its permissions", "source %s: %v", name, err)
			continue
		}
		top := root.Path
		if !fi.IsDir() {
			top = filepath.Dir(root.Path)
		}
		if syscall.Access(top, 4|1 /* R_OK|X_OK */) != nil {
			r.problem(fmt.Sprintf("chmod u+rx %s", top), "source %s: %s is not readable", name, top)
			continue
		}
		if syscall.Access(top, 2 /* W_OK */) != nil {
			r.problem(fmt.Sprintf("chmod u+w %s (the janitor archives and removes sessions there)", top), "source %s: %s is not writable", name, top)
		}
		n := 1
		if fi.IsDir() {
			n = countWatchDirs(root.Path, root.SkipDir)
		}
		dirs += n
		present++
		r.ok("source %s: %s (%d directories to watch)", name, tildePath(root.Path), n)
	}
	if present == 0 {
		r.note("no agent session store found on this machine; looked at: %s", strings.Join(looked, ", "))
		r.note("nothing to index until an agent writes one (the daemon waits for them); if a store lives elsewhere, set its source's \"root\" in the config")
	}
	running, pid := daemonRunning(cfg.StateDir)
	checkInotify(r, dirs, pid)
	checkUnit(r)
	if running {
		r.ok("daemon running (pid %d)", pid)
		checkDaemonWatches(r, cfg.StateDir, pid)
	} else {
		r.note("daemon not running")
	}
	if r.problems > 0 {
		return errSilentFailure
	}
	return nil
}

func firstExisting(p string) string {
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// countWatchDirs counts the directories the watcher would watch under root.
func countWatchDirs(root string, skip func(string) bool) int {
	n := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != root && skip != nil && skip(p) {
			return filepath.SkipDir
		}
		n++
		return nil
	})
	return n
}

func readLimit(name string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(inotifyDir, name))
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return n, err == nil
}

// inotifyUsage counts the inotify instances and watches this user's processes hold
// now (from /proc/*/fdinfo), excluding this process and the given one (the daemon,
// whose watches are the ones doctor counts as needed). A var: tests replace it,
// since other programs' watches come and go.
var inotifyUsage = func(exclude int) (instances, watches int) {
	uid := os.Getuid()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid := filepath.Base(p)
		if fi, err := os.Stat(p); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) || pid == strconv.Itoa(os.Getpid()) || pid == strconv.Itoa(exclude) {
			continue
		}
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err != nil || l != "anon_inode:inotify" {
				continue
			}
			instances++
			f, err := os.Open(p + "/fdinfo/" + filepath.Base(fd))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "inotify wd:") {
					watches++
				}
			}
			f.Close()
		}
	}
	return instances, watches
}

// watchHeadroom: doctor warns once the watches needed take more than this share
// of the free ones, before they run out: a store gains a directory per new project.
const watchHeadroom = 0.75

// checkInotify compares the watches the sources need (one per directory) with
// what fs.inotify.max_user_watches leaves free after the user's other programs
// (the daemon's own watches count as needed, not as used).
func checkInotify(r *doctorReport, need, daemonPID int) {
	maxWatches, okW := readLimit("max_user_watches")
	maxInst, okI := readLimit("max_user_instances")
	if !okW || !okI {
		r.note("inotify limits not readable in %s (not Linux?); %d directories to watch", inotifyDir, need)
		return
	}
	usedInst, usedWatches := inotifyUsage(daemonPID)
	// Room for twice what is needed now plus the others' share, and never less
	// than the common distribution default.
	fix := fmt.Sprintf("sudo sysctl fs.inotify.max_user_watches=%d (persist it in /etc/sysctl.d/90-inotify.conf)", max(524288, 2*(need+usedWatches)))
	free := maxWatches - usedWatches
	switch {
	case need > free:
		r.problem(fix,
			"inotify watches: %d directories to watch but only %d of fs.inotify.max_user_watches=%d are free (%d in use by your other programs); the daemon would fall back to slow periodic rescans",
			need, max(free, 0), maxWatches, usedWatches)
	case float64(need) > watchHeadroom*float64(free):
		r.note("inotify watches: %d needed, %d of fs.inotify.max_user_watches=%d free (%d in use by your other programs): close to the limit, and each new project directory takes one more; raise it before it runs out: %s",
			need, free, maxWatches, usedWatches, fix)
	default:
		r.ok("inotify watches: %d needed, %d of %d free", need, free, maxWatches)
	}
	if usedInst >= maxInst {
		r.problem("sudo sysctl fs.inotify.max_user_instances=1024",
			"inotify instances: all %d of fs.inotify.max_user_instances are in use by your programs; the daemon could not watch at all", maxInst)
	} else {
		r.ok("inotify instances: %d of %d in use", usedInst, maxInst)
	}
}

// checkDaemonWatches reports directories the running daemon could not watch: it
// still indexes them, by rescanning their roots periodically, but not at once.
func checkDaemonWatches(r *doctorReport, stateDir string, pid int) {
	st, err := readStatusFile(stateDir)
	if err != nil || st.PID != pid || st.Unwatched == 0 {
		return
	}
	limit, hint := watcher.LimitAdvice(st.WatchErr)
	r.problem(hint, "daemon: %d directories are not watched: %s reached; changes there are indexed by periodic rescans (%d so far), not at once",
		st.Unwatched, limit, st.Reasons[watcher.ReasonWatchLimit])
}

// checkUnit reports whether the service is installed and enabled (advice only,
// unless the unit runs a binary that is gone).
func checkUnit(r *doctorReport) {
	sf, err := userServiceFile("", false)
	if err != nil {
		return
	}
	data, err := os.ReadFile(sf.path)
	if err != nil {
		r.note("service not installed: run 'sessionwatch service install' to start it at login")
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			bin := strings.Fields(rest)[0]
			if _, err := os.Stat(bin); err != nil && !strings.Contains(bin, "%") {
				r.problem("rebuild it there, or run 'sessionwatch service install' again from the installed binary", "service %s runs %s, which does not exist", sf.path, bin)
				return
			}
		}
	}
	wants := filepath.Join(filepath.Dir(sf.path), "default.target.wants", "sessionwatch.service")
	if _, err := os.Lstat(wants); err != nil {
		r.note("service installed at %s but not enabled: systemctl --user enable --now sessionwatch", sf.path)
		return
	}
	r.ok("service installed and enabled (%s)", sf.path)
}
