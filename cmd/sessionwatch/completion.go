package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// completeCmd is the hidden command the completion scripts call to complete
// REFs and source names from the catalogs (they read nothing else and write
// nothing): `sessionwatch __complete SHELL refs|sources CUR [WORDS…]`.
const completeCmd = "__complete"

// completionShells are the shells `completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

// subcommands of the commands that take one.
var subcommands = map[string][]string{
	"config":     {"show", "check", "init"},
	"service":    {"install", "uninstall", "print"},
	"completion": completionShells,
}

// refCommands take a REF as their argument.
var refCommands = []string{"show", "delete", "restore"}

func cmdCompletion(e *env, args []string) error {
	fs := newFlags(e, "completion", "sessionwatch completion bash|zsh|fish   (example: source <(sessionwatch completion bash))\n"+
		"Print a completion script for bash, zsh or fish: commands, flags, source names, and session ids\n"+
		"completed from the catalogs (with their titles where the shell shows descriptions). Enable it with\n"+
		"  bash: source <(sessionwatch completion bash)        (in ~/.bashrc)\n"+
		"  zsh:  source <(sessionwatch completion zsh)         (in ~/.zshrc, after compinit)\n"+
		"  fish: sessionwatch completion fish | source         (in ~/.config/fish/config.fish)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("example: source <(sessionwatch completion bash)", "completion: want one shell: bash, zsh or fish (got %d arguments)", len(pos))
	}
	spec := completionSpec(e)
	var script string
	switch pos[0] {
	case "bash":
		script = bashScript(spec)
	case "zsh":
		script = zshScript(spec)
	case "fish":
		script = fishScript(spec)
	default:
		hint := "give bash, zsh or fish"
		if s := suggest(pos[0], completionShells); s != "" {
			hint = "did you mean '" + s + "'?"
		}
		return usageErr(hint, "completion: unknown shell %q", pos[0])
	}
	_, err = io.WriteString(e.stdout, script)
	return err
}

// flagSpec is one flag of a command as the scripts complete it.
type flagSpec struct {
	name  string // without "--"
	value bool   // takes a value
	desc  string
}

// cmdSpec is one command as the scripts complete it.
type cmdSpec struct {
	name  string
	desc  string
	flags []flagSpec
	subs  []string
}

// completionSpec collects every command's flags from its own --help, so the
// scripts cannot drift from the flag sets.
func completionSpec(e *env) []cmdSpec {
	var out []cmdSpec
	for _, name := range commandNames {
		c := cmdSpec{name: name, desc: firstSentence(summaries[name]), subs: subcommands[name]}
		helpArgs := [][]string{{name, "--help"}}
		for _, sub := range c.subs {
			if name != "completion" {
				helpArgs = append(helpArgs, []string{name, sub, "--help"})
			}
		}
		seen := map[string]bool{}
		for _, a := range helpArgs {
			for _, f := range helpFlags(a) {
				if !seen[f.name] {
					seen[f.name] = true
					c.flags = append(c.flags, f)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, ".")
	if len(s) > 0 {
		s = strings.ToLower(s[:1]) + s[1:]
	}
	return s
}

// helpFlags runs `sessionwatch ARGS` (ending in --help) and reads the flags it prints.
func helpFlags(args []string) []flagSpec {
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, io.Discard); err != nil && !errors.Is(err, flag.ErrHelp) {
		return nil
	}
	var fl []flagSpec
	inFlags := false
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case line == "flags:":
			inFlags = true
		case inFlags && strings.HasPrefix(line, "  --"):
			f := strings.Fields(line)
			spec := flagSpec{name: strings.TrimPrefix(f[0], "--")}
			rest := f[1:]
			if len(rest) > 0 && rest[0] == strings.ToUpper(rest[0]) && rest[0] != strings.ToLower(rest[0]) {
				spec.value = true
				rest = rest[1:]
			}
			spec.desc = strings.Join(rest, " ")
			if i := strings.Index(spec.desc, " (default"); i >= 0 {
				spec.desc = spec.desc[:i]
			}
			fl = append(fl, spec)
		case inFlags:
			inFlags = false
		}
	}
	return fl
}

// flagNames lists a command's flags as "--name" words.
func (c cmdSpec) flagNames() string {
	var names []string
	for _, f := range c.flags {
		names = append(names, "--"+f.name)
	}
	names = append(names, "--help", "--config")
	return strings.Join(names, " ")
}

func commandWords(spec []cmdSpec) string {
	var names []string
	for _, c := range spec {
		names = append(names, c.name)
	}
	return strings.Join(names, " ")
}

func bashScript(spec []cmdSpec) string {
	var b strings.Builder
	b.WriteString(`# bash completion for sessionwatch.
# Enable it with this line in ~/.bashrc:  source <(sessionwatch completion bash)
_sessionwatch() {
    local cur prev cmd="" sub="" i
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    for ((i=1; i<COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            --config) ((i++)) ;;
            -*) ;;
            *) if [[ -z "$cmd" ]]; then cmd="${COMP_WORDS[i]}"; elif [[ -z "$sub" ]]; then sub="${COMP_WORDS[i]}"; fi ;;
        esac
    done
    case "$prev" in
        --config|--binary) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --source) COMPREPLY=($(compgen -W "$(sessionwatch __complete bash sources "$cur" "${COMP_WORDS[@]:1}" 2>/dev/null)" -- "$cur")); return ;;
        --type) COMPREPLY=($(compgen -W "main subagent all" -- "$cur")); return ;;
        --older-than|--max-sessions) return ;;
    esac
    if [[ -z "$cmd" ]]; then
        COMPREPLY=($(compgen -W "` + commandWords(spec) + ` --config --help --version" -- "$cur"))
        return
    fi
    if [[ "$cur" == -* ]]; then
        case "$cmd" in
`)
	for _, c := range spec {
		fmt.Fprintf(&b, "            %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, c.flagNames())
	}
	b.WriteString(`        esac
        return
    fi
    case "$cmd" in
`)
	for _, c := range spec {
		if len(c.subs) > 0 {
			fmt.Fprintf(&b, "        %s) [[ -z \"$sub\" ]] && COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, strings.Join(c.subs, " "))
		}
	}
	fmt.Fprintf(&b, "        help) [[ -z \"$sub\" ]] && COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", commandWords(spec))
	b.WriteString(`        ` + strings.Join(refCommands, "|") + `)
            if [[ -z "$sub" ]]; then
                local IFS=$'\n'
                COMPREPLY=($(sessionwatch __complete bash refs "$cur" "${COMP_WORDS[@]:1}" 2>/dev/null))
            fi ;;
    esac
}
complete -F _sessionwatch sessionwatch
`)
	return b.String()
}

// zshQuote quotes s for a zsh (or bash) single-quoted word.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// describeItem is one "name:description" entry for zsh's _describe.
func describeItem(name, desc string) string {
	return strings.ReplaceAll(name, ":", `\:`) + ":" + desc
}

func zshScript(spec []cmdSpec) string {
	var b strings.Builder
	b.WriteString(`#compdef sessionwatch
# zsh completion for sessionwatch.
# Enable it with this line in ~/.zshrc (after compinit):  source <(sessionwatch completion zsh)
_sessionwatch() {
    local cmd="" sub="" i
    local -a items
    for ((i=2; i<CURRENT; i++)); do
        case ${words[i]} in
            --config) ((i++)) ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=${words[i]}; elif [[ -z $sub ]]; then sub=${words[i]}; fi ;;
        esac
    done
    case ${words[CURRENT-1]} in
        --config|--binary) _files; return ;;
        --source) items=(${(f)"$(sessionwatch __complete zsh sources "${words[CURRENT]}" "${(@)words[2,-1]}" 2>/dev/null)"}); _describe -t sources source items; return ;;
        --type) compadd main subagent all; return ;;
        --older-than|--max-sessions) return ;;
    esac
    if [[ -z $cmd ]]; then
        if [[ ${words[CURRENT]} == -* ]]; then
            compadd -- --config --help --version
        else
            items=(
`)
	for _, c := range spec {
		fmt.Fprintf(&b, "                %s\n", zshQuote(describeItem(c.name, c.desc)))
	}
	b.WriteString(`            )
            _describe -t commands command items
        fi
        return
    fi
    if [[ ${words[CURRENT]} == -* ]]; then
        case $cmd in
`)
	for _, c := range spec {
		fmt.Fprintf(&b, "            %s) items=(", c.name)
		for _, f := range c.flags {
			fmt.Fprintf(&b, " %s", zshQuote(describeItem("--"+f.name, f.desc)))
		}
		b.WriteString(" '--help:show the usage' '--config:config file') ;;\n")
	}
	b.WriteString(`        esac
        _describe -t flags flag items
        return
    fi
    case $cmd in
`)
	for _, c := range spec {
		if len(c.subs) > 0 {
			fmt.Fprintf(&b, "        %s) [[ -z $sub ]] && compadd %s ;;\n", c.name, strings.Join(c.subs, " "))
		}
	}
	fmt.Fprintf(&b, "        help) [[ -z $sub ]] && compadd %s ;;\n", commandWords(spec))
	b.WriteString(`        ` + strings.Join(refCommands, "|") + `)
            if [[ -z $sub ]]; then
                items=(${(f)"$(sessionwatch __complete zsh refs "${words[CURRENT]}" "${(@)words[2,-1]}" 2>/dev/null)"})
                _describe -V -t sessions session items
            fi ;;
    esac
}
if [[ ${zsh_eval_context[-1]} == loadautoload ]]; then
    _sessionwatch "$@"
else
    compdef _sessionwatch sessionwatch
fi
`)
	return b.String()
}

// fishQuote quotes s for fish's single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func fishScript(spec []cmdSpec) string {
	var b strings.Builder
	b.WriteString(`# fish completion for sessionwatch.
# Enable it with this line in ~/.config/fish/config.fish:  sessionwatch completion fish | source
complete -c sessionwatch -f
complete -c sessionwatch -l config -r -F -d 'config file'
complete -c sessionwatch -n __fish_use_subcommand -l help -d 'show the usage'
complete -c sessionwatch -n __fish_use_subcommand -l version -d 'version and commit'
`)
	for _, c := range spec {
		fmt.Fprintf(&b, "complete -c sessionwatch -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.desc))
	}
	for _, c := range spec {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		for _, f := range c.flags {
			opt := ""
			switch {
			case f.name == "source":
				opt = " -x -a '(sessionwatch __complete fish sources (commandline -ct) (commandline -opc)[2..-1] 2>/dev/null)'"
			case f.name == "type":
				opt = " -x -a 'main subagent all'"
			case f.name == "binary":
				opt = " -r -F"
			case f.value:
				opt = " -x"
			}
			fmt.Fprintf(&b, "complete -c sessionwatch -n %s -l %s%s -d %s\n", cond, f.name, opt, fishQuote(f.desc))
		}
		fmt.Fprintf(&b, "complete -c sessionwatch -n %s -l help -d 'show the usage'\n", cond)
		if len(c.subs) > 0 {
			fmt.Fprintf(&b, "complete -c sessionwatch -n %s -a %s\n", fishQuote("__fish_seen_subcommand_from "+c.name+"; and not __fish_seen_subcommand_from "+strings.Join(c.subs, " ")), fishQuote(strings.Join(c.subs, " ")))
		}
	}
	fmt.Fprintf(&b, "complete -c sessionwatch -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(commandWords(spec)))
	fmt.Fprintf(&b, "complete -c sessionwatch -n %s -a '(sessionwatch __complete fish refs (commandline -ct) (commandline -opc)[2..-1] 2>/dev/null)'\n",
		fishQuote("__fish_seen_subcommand_from "+strings.Join(refCommands, " ")))
	return b.String()
}

// cmdComplete answers the scripts: `__complete SHELL refs|sources CUR [WORDS…]`,
// WORDS being the command line after "sessionwatch" (for --all, --source, --type,
// --config and the command). One candidate a line, for bash the bare word, for zsh
// "id:description", for fish "id<TAB>description". It reads the config and the
// catalogs (archives for restore), writes nothing and prints nothing on error.
func cmdComplete(e *env, args []string) error {
	if len(args) < 3 {
		return usageErr("", "%s: want SHELL KIND CUR [WORDS…]", completeCmd)
	}
	shell, kind, cur, words := args[0], args[1], args[2], args[3:]
	var cmd, source, typ = "", "", "main"
	all := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		next := func() string {
			if i+1 < len(words) {
				i++
				return words[i]
			}
			return ""
		}
		switch {
		case w == "--config" || w == "-config":
			e.configPath = next()
			e.configExplicit = true
		case w == "--source" || w == "-source":
			source = next()
		case w == "--type" || w == "-type":
			typ = next()
		case w == "--all" || w == "-all":
			all = true
		case strings.HasPrefix(w, "-"):
		case cmd == "":
			cmd = w
		}
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return errSilentFailure
	}
	type cand struct{ word, desc string }
	var cands []cand
	switch kind {
	case "sources":
		for _, s := range cfg.Sources {
			if strings.HasPrefix(s.Name, cur) {
				cands = append(cands, cand{s.Name, termSafe(s.Layout + " " + tildePath(s.Root))})
			}
		}
	case "refs":
		sc := scope{all: all, typ: typ}
		if source != "" {
			sc.sources = []string{source}
		}
		if typ != "main" && typ != "subagent" && typ != "all" {
			sc.typ = "main"
		}
		if cmd == "restore" {
			archives, _ := janitor.ListArchives(cfg.ArchiveDir, sc.sources)
			for _, a := range archivesInScope(archives, sc) {
				if strings.HasPrefix(a.Meta.ID, cur) {
					cands = append(cands, cand{a.Meta.ID, "archived " + a.ArchivedAt.Local().Format("2006-01-02 15:04") + " " + a.Meta.Source})
				}
			}
			break
		}
		entries, _ := selectSessions(cfg, sc)
		for _, en := range entries {
			if strings.HasPrefix(en.ID, cur) {
				cands = append(cands, cand{en.ID, completionTitle(en)})
			}
		}
	default:
		return usageErr("", "%s: unknown kind %q", completeCmd, kind)
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, c := range cands {
		// The shell shows candidates to the terminal as they are: a word that
		// needs escaping (an id taken from a transcript) is not offered, since
		// escaped it would no longer name the session.
		if seen[c.word] || termSafe(c.word) != c.word || strings.ContainsAny(c.word, "\n\t") {
			continue
		}
		seen[c.word] = true
		switch shell {
		case "zsh":
			b.WriteString(describeItem(c.word, c.desc))
		case "fish":
			b.WriteString(c.word + "\t" + c.desc)
		default:
			b.WriteString(c.word)
		}
		b.WriteByte('\n')
	}
	_, err = io.WriteString(e.stdout, b.String())
	return err
}

// completionTitle is a session's description in a completion menu: one line,
// escaped, at most 60 characters.
func completionTitle(en indexer.Entry) string {
	t := en.Title
	if t == "" {
		t = en.FirstPrompt
	}
	return safeCell(t, 60)
}

// archivesInScope keeps the archives of the scope's projects (all with --all).
func archivesInScope(archives []janitor.Archived, sc scope) []janitor.Archived {
	if sc.all {
		return archives
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil
	}
	in := map[string]bool{}
	for _, p := range indexer.ProjectCandidates(cwd) {
		in[p] = true
	}
	var out []janitor.Archived
	for _, a := range archives {
		if in[a.Meta.Project] {
			out = append(out, a)
		}
	}
	return out
}
