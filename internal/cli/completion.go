package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// CompletionDoc is the completion command's help text.
const CompletionDoc = `Usage: mcp-sidecar completion bash|zsh|fish

Prints the shell completion script for bash, zsh or fish: commands, their
flags and subcommands, and the names of your servers where a command takes
one (call, login, logout, --server), read from the same config files as
the command would read (--config, --trust-project on the line count). A
file is completed after --config. No server is started.

Load it in the current shell, or install it for every new one:

  bash   source <(mcp-sidecar completion bash)
         mcp-sidecar completion bash > ~/.local/share/bash-completion/completions/mcp-sidecar
  zsh    source <(mcp-sidecar completion zsh)
         mcp-sidecar completion zsh > "${fpath[1]}/_mcp-sidecar"
  fish   mcp-sidecar completion fish | source
         mcp-sidecar completion fish > ~/.config/fish/completions/mcp-sidecar.fish

The scripts ask the binary itself what to complete ('mcp-sidecar
__complete WORDS...'), so they stay right as commands and flags change.

Examples:
  mcp-sidecar completion bash
`

// CompleteCommand is the hidden command the completion scripts run: its
// arguments are the words of the command line after the program's name,
// up to the word being completed (the last, maybe empty); it prints the
// candidates, one per line, or completeFiles for a file name.
const CompleteCommand = "__complete"

// completeFiles asks the script to complete a file name.
const completeFiles = ":files"

// Completion runs the completion command.
func Completion(_ context.Context, env Env, args []string) int {
	fs := newFlagSet()
	if code, done := parseFlags(&env, "completion", fs, args, 1, 1); done {
		return code
	}
	script, ok := completionScripts[fs.Arg(0)]
	if !ok {
		return usageError(env, "completion", fmt.Errorf("no completion for %q: bash, zsh or fish", fs.Arg(0)))
	}
	fmt.Fprint(env.Stdout, script)
	return exitOK
}

var completionScripts = map[string]string{
	"bash": `# bash completion for mcp-sidecar: source <(mcp-sidecar completion bash)
_mcp_sidecar() {
    local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n' out
    out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
    if [[ "$out" == ":files" ]]; then
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
        return 0
    fi
    COMPREPLY=($(compgen -W "$out" -- "$cur"))
}
complete -F _mcp_sidecar mcp-sidecar
`,
	"zsh": `#compdef mcp-sidecar
# zsh completion for mcp-sidecar: source <(mcp-sidecar completion zsh)
compdef _mcp-sidecar mcp-sidecar
_mcp-sidecar() {
    local -a out
    out=(${(f)"$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)"})
    if [[ "${out[1]}" == ":files" ]]; then
        _files
        return
    fi
    compadd -- "${out[@]}"
}
# Autoloaded from fpath, the file is the function's first run: complete.
if [[ "$funcstack[1]" == "_mcp-sidecar" ]]; then
    _mcp-sidecar "$@"
fi
`,
	"fish": `# fish completion for mcp-sidecar: mcp-sidecar completion fish | source
function __mcp_sidecar_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l out ($words[1] __complete $words[2..-1] 2>/dev/null)
    if test "$out[1]" = ":files"
        __fish_complete_path (commandline -ct)
        return
    end
    printf '%s\n' $out
end
complete -c mcp-sidecar -f -a '(__mcp_sidecar_complete)'
`,
}

// subcommands are the words a command takes first, where it has a fixed
// set.
var subcommands = map[string][]string{
	"resources":  {"list", "templates", "read"},
	"prompts":    {"list", "get"},
	"completion": {"bash", "zsh", "fish"},
}

// complete prints the candidates for the last of words.
func complete(env Env, words []string) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	if len(words) == 1 {
		if strings.HasPrefix(cur, "-") {
			printCandidates(env.Stdout, cur, []string{"--help", "--version"})
			return
		}
		printCandidates(env.Stdout, cur, commandNames())
		return
	}
	name := words[0]
	c, ok := lookup(name)
	if !ok {
		return
	}
	flags := commandFlags(c)
	before := words[1 : len(words)-1]
	if len(before) > 0 {
		prev := before[len(before)-1]
		if takes, known := flags[strings.TrimLeft(prev, "-")]; known && takes && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
			switch strings.TrimLeft(prev, "-") {
			case "config":
				fmt.Fprintln(env.Stdout, completeFiles)
			case "server":
				printCandidates(env.Stdout, cur, serverNames(env, before))
			}
			return // another flag's value: nothing to offer
		}
	}
	if strings.HasPrefix(cur, "-") {
		var names []string
		for f := range flags {
			names = append(names, "--"+f)
		}
		slices.Sort(names)
		printCandidates(env.Stdout, cur, names)
		return
	}
	// The positional arguments before this one.
	var pos []string
	for i := 0; i < len(before); i++ {
		w := before[i]
		if strings.HasPrefix(w, "-") {
			if takes := flags[strings.TrimLeft(w, "-")]; takes && !strings.Contains(w, "=") {
				i++ // the flag's value
			}
			continue
		}
		pos = append(pos, w)
	}
	switch {
	case name == "help" && len(pos) == 0:
		printCandidates(env.Stdout, cur, commandNames())
	case subcommands[name] != nil && len(pos) == 0:
		printCandidates(env.Stdout, cur, subcommands[name])
	case (name == "call" || name == "login" || name == "logout") && len(pos) == 0:
		printCandidates(env.Stdout, cur, serverNames(env, before))
	}
}

func printCandidates(w io.Writer, prefix string, candidates []string) {
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			fmt.Fprintln(w, c)
		}
	}
}

// flagLine is a flag in a command's help: its name, and a placeholder
// when it takes a value.
var flagLine = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--([a-z][a-z-]*)( [A-Z"]\S*)?`)

// commandFlags are a command's flags as its help lists them (the flags
// are defined where the command parses them): name -> takes a value.
func commandFlags(c command) map[string]bool {
	flags := map[string]bool{}
	if c.run == nil {
		return flags
	}
	var out bytes.Buffer
	c.run(context.Background(), Env{Stdout: &out, Stderr: io.Discard}, []string{"--help"})
	_, list, ok := strings.Cut(out.String(), "\nFlags:\n")
	if !ok {
		return flags
	}
	for _, m := range flagLine.FindAllStringSubmatch(list, -1) {
		flags[m[1]] = m[2] != ""
	}
	return flags
}

// serverNames are the servers of the config the command line's flags
// name (--config, --trust-project), as the command would load it; no
// server is started.
func serverNames(env Env, words []string) []string {
	var files []string
	trust := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--config" && i+1 < len(words):
			files = append(files, words[i+1])
			i++
		case strings.HasPrefix(w, "--config="):
			files = append(files, strings.TrimPrefix(w, "--config="))
		case w == "--trust-project":
			trust = true
		}
	}
	return loadConfig(env, files, trust).names
}
