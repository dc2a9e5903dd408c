package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/sessionwatch/sessionwatch/config"
)

// configUsage is `config --help`.
const configUsage = "sessionwatch config show|check|init   (example: sessionwatch config check)\n" +
	"show: print the effective config (the file over the defaults) as JSON.\n" +
	"check: validate the file and print every problem, one per line (exit 2 if any).\n" +
	"init: write the default config to the file (refused if it exists)."

var configSubs = []string{"show", "check", "init"}

func cmdConfig(e *env, args []string) error {
	if len(args) == 0 {
		return usageErr("sessionwatch config show|check|init (see 'sessionwatch config --help')", "config: missing subcommand")
	}
	sub := args[0]
	if sub == "-h" || sub == "--help" || sub == "-help" {
		_, err := parseFlags(newFlags(e, "config", configUsage), args)
		return err
	}
	usage := map[string]string{
		"show":  "sessionwatch config show   (example: sessionwatch config show)\nPrint the effective config (the file over the defaults) as JSON.",
		"check": "sessionwatch config check   (example: sessionwatch --config ~/sw.json config check)\nValidate the config file and print every problem, one per line (exit 2 if any).",
		"init":  "sessionwatch config init   (example: sessionwatch config init)\nWrite the default config to the file; refused if something is there already.",
	}[sub]
	if usage == "" {
		hint := "sessionwatch config show|check|init"
		if s := suggest(sub, configSubs); s != "" {
			hint = "did you mean 'sessionwatch config " + s + "'?"
		}
		return usageErr(hint, "config: unknown subcommand %q", sub)
	}
	fs := newFlags(e, "config "+sub, usage)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "config %s: unexpected argument %q", sub, pos[0])
	}
	switch sub {
	case "show":
		cfg, err := e.loadConfig()
		if err != nil {
			return err
		}
		data, err := cfg.Marshal()
		if err != nil {
			return err
		}
		e.stdout.Write(data)
		return nil
	case "check":
		if _, err := e.loadConfig(); err != nil {
			return err
		}
		if _, err := os.Stat(e.configPath); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(e.stdout, "no config file at %s: defaults in effect\n", showPath(e.configPath))
			return nil
		}
		fmt.Fprintf(e.stdout, "%s: ok\n", showPath(e.configPath))
		return nil
	default: // init
		if err := config.Init(e.configPath); err != nil {
			return failErr("edit the existing file, or pass --config PATH", "%s", tildeText(err.Error()))
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", showPath(e.configPath))
		return nil
	}
}
