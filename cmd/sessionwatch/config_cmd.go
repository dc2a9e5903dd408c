package main

import (
	"fmt"

	"github.com/sessionwatch/sessionwatch/config"
)

func cmdConfig(e *env, args []string) error {
	if len(args) == 0 {
		return usageErr("sessionwatch config show|check|init", "config: missing subcommand")
	}
	sub := args[0]
	fs := newFlags(e, "config "+sub, "sessionwatch config show|check|init   (example: sessionwatch config check)")
	if _, err := parseFlags(fs, args[1:]); err != nil {
		return err
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
		fmt.Fprintf(e.stdout, "%s: ok\n", e.configPath)
		return nil
	case "init":
		if err := config.Init(e.configPath); err != nil {
			return failErr("edit the existing file, or pass --config PATH", "%v", err)
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", e.configPath)
		return nil
	}
	return usageErr("sessionwatch config show|check|init", "config: unknown subcommand %q", sub)
}
