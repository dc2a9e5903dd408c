package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// unitTemplate is the systemd user unit; %s is the ExecStart binary. The repo's
// sessionwatch.service is this template with %h/.local/bin/sessionwatch (a test
// keeps them equal).
const unitTemplate = `# sessionwatch: keeps AI coding agents' session stores indexed and tidy.
# A systemd user unit; 'sessionwatch service install' writes it with the real path.
[Unit]
Description=sessionwatch: session index watcher and janitor
Documentation=https://github.com/sessionwatch/sessionwatch

[Service]
Type=notify
ExecStart=%s run
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=5
# READY=1 comes after the first full index pass, which can take minutes on a
# store of many GiB; WATCHDOG=1 is sent from the event loop every WatchdogSec/2.
TimeoutStartSec=30min
WatchdogSec=60
# Above the daemon's own shutdown bound (10 s).
TimeoutStopSec=30
# Hardening that works in the user manager. ProtectSystem=/ProtectHome= need mount
# namespaces (PrivateUsers=), which would hide other processes' open files from
# the janitor's in-use check, so they are not used.
NoNewPrivileges=yes
UMask=0077
LockPersonality=yes
RestrictRealtime=yes
SystemCallArchitectures=native

[Install]
WantedBy=default.target
`

// launchdTemplate is the macOS launch agent; %[1]s is the binary, %[2]s the log dir.
const launchdTemplate = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>` + launchdLabel + `</string>
  <key>ProgramArguments</key>
  <array>
    <string>%[1]s</string>
    <string>run</string>
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ProcessType</key>
  <string>Background</string>
  <key>StandardOutPath</key>
  <string>%[2]s/sessionwatch.log</string>
  <key>StandardErrorPath</key>
  <string>%[2]s/sessionwatch.log</string>
</dict>
</plist>
`

const launchdLabel = "io.github.sessionwatch"

// serviceFile describes the file `service` manages on this platform.
type serviceFile struct {
	path    string
	content []byte
	enable  []string // commands to run after install
	disable []string // commands to run before uninstall
}

func userServiceFile(bin string, launchd bool) (serviceFile, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return serviceFile{}, fmt.Errorf("find home directory: %w", err)
	}
	if launchd {
		path := filepath.Join(home, "Library", "LaunchAgents", launchdLabel+".plist")
		logs := filepath.Join(home, "Library", "Logs")
		return serviceFile{
			path:    path,
			content: []byte(fmt.Sprintf(launchdTemplate, xmlEscape(bin), xmlEscape(logs))),
			enable:  []string{fmt.Sprintf("launchctl bootstrap gui/$(id -u) %s", path)},
			disable: []string{fmt.Sprintf("launchctl bootout gui/$(id -u) %s", path)},
		}, nil
	}
	cfgHome := os.Getenv("XDG_CONFIG_HOME")
	if cfgHome == "" {
		cfgHome = filepath.Join(home, ".config")
	}
	return serviceFile{
		path:    filepath.Join(cfgHome, "systemd", "user", "sessionwatch.service"),
		content: []byte(fmt.Sprintf(unitTemplate, bin)),
		enable: []string{
			"systemctl --user daemon-reload && systemctl --user enable --now sessionwatch",
			"loginctl enable-linger $USER   # optional: keep it running while you are logged out",
		},
		disable: []string{"systemctl --user disable --now sessionwatch"},
	}, nil
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// installedBinary is the absolute path of this binary, refusing one that `go run`
// built in a temporary directory (the service would lose it).
func installedBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") || strings.HasPrefix(exe, os.TempDir()+string(filepath.Separator)) {
		return "", failErr("install a real binary first (go build -o ~/.local/bin/sessionwatch ./cmd/sessionwatch && ~/.local/bin/sessionwatch service install), or name one with --binary PATH",
			"service install: %s is a temporary build, which the service would lose", exe)
	}
	return exe, nil
}

// serviceUsage is `service --help`.
const serviceUsage = "sessionwatch service install|uninstall|print [--launchd] [--binary PATH]   (example: sessionwatch service install)\n" +
	"install: write the systemd user unit (launchd agent on macOS) running this binary, and print how to enable it.\n" +
	"uninstall: remove it. print: print it without writing anything."

var serviceSubs = []string{"install", "uninstall", "print"}

func cmdService(e *env, args []string) error {
	if len(args) == 0 {
		return usageErr("sessionwatch service install|uninstall|print (see 'sessionwatch service --help')", "service: missing subcommand")
	}
	sub := args[0]
	if sub == "-h" || sub == "--help" || sub == "-help" {
		_, err := parseFlags(newFlags(e, "service", serviceUsage), args)
		return err
	}
	if !slices.Contains(serviceSubs, sub) {
		hint := "sessionwatch service install|uninstall|print"
		if s := suggest(sub, serviceSubs); s != "" {
			hint = "did you mean 'sessionwatch service " + s + "'?"
		}
		return usageErr(hint, "service: unknown subcommand %q", sub)
	}
	fs := newFlags(e, "service "+sub, strings.Replace(serviceUsage, "install|uninstall|print", sub, 1))
	launchd := fs.Bool("launchd", runtime.GOOS == "darwin", "manage a launchd agent (the default on macOS) instead of a systemd user unit")
	binary := fs.String("binary", "", "the binary the service runs (default: this one)")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "service %s: unexpected argument %q", sub, pos[0])
	}
	bin := *binary
	switch {
	case bin == "" && sub == "install":
		if bin, err = installedBinary(); err != nil {
			return err
		}
	case bin == "" && sub == "print":
		// Printing writes nothing: any binary, even a temporary build, will do.
		if bin, err = os.Executable(); err != nil {
			return failErr("", "service print: find this binary: %v", err)
		}
		if r, err := filepath.EvalSymlinks(bin); err == nil {
			bin = r
		}
	}
	if bin != "" {
		if bin, err = filepath.Abs(bin); err != nil {
			return err
		}
	}
	sf, err := userServiceFile(bin, *launchd)
	if err != nil {
		return err
	}
	switch sub {
	case "print":
		e.stdout.Write(sf.content)
		return nil
	case "install":
		if err := indexer.WriteFileAtomic(sf.path, sf.content); err != nil {
			return failErr("", "service install: %v", err)
		}
		os.Chmod(sf.path, 0o644)
		fmt.Fprintf(e.stdout, "wrote %s\nto start it now and at every login, run:\n", showPath(sf.path))
		for _, c := range sf.enable {
			fmt.Fprintf(e.stdout, "  %s\n", c)
		}
		return nil
	case "uninstall":
		if err := os.Remove(sf.path); err != nil {
			if os.IsNotExist(err) {
				return failErr("", "service uninstall: %s is not installed", tildePath(sf.path))
			}
			return failErr("", "service uninstall: %v", err)
		}
		fmt.Fprintf(e.stdout, "removed %s\nif it was running, stop it with:\n", showPath(sf.path))
		for _, c := range sf.disable {
			fmt.Fprintf(e.stdout, "  %s\n", c)
		}
		return nil
	}
	return usageErr("sessionwatch service install|uninstall|print", "service: unknown subcommand %q", sub)
}
