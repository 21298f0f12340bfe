package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/suggest"
)

// command is one entry of the binary's command table.
type command struct {
	name    string
	usage   string // the usage line after "mcp-sidecar "
	summary string // one line for the list of commands
	doc     string // the whole help text
	run     func(ctx context.Context, env Env, args []string) int
	// people: a command for people, with --no-color and --verbose.
	people bool
}

// commands is the binary's command table, in the order help lists it.
func commands() []command {
	return []command{
		{"serve", "[serve] [flags]", "speak the host protocol on stdin/stdout (what harnesses spawn)", ServeDoc, Serve, false},
		{"doctor", "doctor [flags]", "check the MCP servers of your config: start each, show a table", DoctorDoc, Doctor, true},
		{"list", "list [flags]", "list your servers: started or not, tool count, where each is defined", ListDoc, List, true},
		{"tools", "tools [flags]", "list the tools of your servers with their signatures", ToolsDoc, Tools, true},
		{"call", "call [SERVER] TOOL [ARGS...] [flags]", "call one tool; print the result and the _meta the server got", CallDoc, Call, true},
		{"resources", "resources [list|read URI|templates] [flags]", "list or read a server's resources", ResourcesDoc, Resources, true},
		{"prompts", "prompts [list|get NAME [ARGS...]] [flags]", "list a server's prompts or get one", PromptsDoc, Prompts, true},
		{"mcp", "mcp [--http ADDR] [--deferred] [flags]", "serve your servers as one MCP server, for any MCP client (stdio or HTTP)", MCPDoc, MCP, true},
		{"login", "login SERVER [flags]", "authorize a server that asks for OAuth: open the URL, keep the token", LoginDoc, Login, true},
		{"logout", "logout SERVER [flags]", "forget a server's OAuth token", LogoutDoc, Logout, true},
		{"trust", "trust [--list] [--revoke] [PROJECT]", "trust a project's Cursor and VS Code servers until their files change", TrustDoc, Trust, true},
		{"probe-launcher", "probe-launcher PATH", "run the sandbox launcher probe on PATH and explain the verdict", ProbeDoc, ProbeLauncher, true},
		{"completion", "completion bash|zsh|fish", "print the shell completion script (commands, flags, server names)", CompletionDoc, Completion, false},
		{"demo", "demo", "run a harness against the embedded example server and show what it sees", DemoDoc, Demo, false},
		{"example-server", "example-server [flags]", "serve the embedded example MCP server on stdio", ExampleServerDoc, ExampleServer, false},
		{"version", "version [--verbose]", "print the version", VersionDoc, version, true},
		{"help", "help [COMMAND]", "show help", "Usage: mcp-sidecar help [COMMAND]\n\nShows the list of commands, or one command's help.\n", nil, false},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// Main runs the binary's command line: a command of the table, or serve
// when the first argument is not a command (a flag, or nothing).
func Main(ctx context.Context, env Env, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		switch {
		case len(args) > 0 && (args[0] == "--version" || args[0] == "-version"):
			return version(ctx, env, nil)
		case len(args) > 0 && (args[0] == "--help" || args[0] == "-help" || args[0] == "-h"):
			return help(env, args[1:])
		}
		return Serve(ctx, env, args)
	}
	name, rest := args[0], args[1:]
	if name == WatchdogCommand {
		return reaper.Watchdog(env.Stdin)
	}
	if name == CompleteCommand {
		complete(env, rest)
		return exitOK
	}
	if name == "help" {
		return help(env, rest)
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(env.Stderr, "mcp-sidecar: unknown command %q", name)
		if hint := suggest.Closest(name, commandNames()); hint != "" {
			fmt.Fprintf(env.Stderr, " (did you mean %q?)", hint)
		}
		fmt.Fprintln(env.Stderr, "\nRun 'mcp-sidecar --help' for the list of commands.")
		return exitUsage
	}
	code := c.run(ctx, env, rest)
	if interrupted(ctx) {
		return exitInterrupted
	}
	return code
}

// Usage is the binary's help: its commands.
func Usage() string {
	var b strings.Builder
	b.WriteString("mcp-sidecar: an MCP client runtime for agent harnesses.\n\nUsage:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  mcp-sidecar %-40s %s\n", c.usage, c.summary)
	}
	b.WriteString(`
With no command, mcp-sidecar speaks the host protocol on stdin/stdout, as a
harness spawns it. The commands for people read the config files you have
(Codex, Claude Code, Cursor, VS Code; see 'mcp-sidecar help doctor'). They
all take --no-color (so does a non-empty NO_COLOR) and -v/--verbose; those
that start servers, --startup-timeout DURATION.
Run 'mcp-sidecar help COMMAND' for a command's flags and examples.
`)
	return b.String()
}

func help(env Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stdout, Usage())
		return exitOK
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "mcp-sidecar: no help for unknown command %q", args[0])
		if hint := suggest.Closest(args[0], commandNames()); hint != "" {
			fmt.Fprintf(env.Stderr, " (did you mean %q?)", hint)
		}
		fmt.Fprintln(env.Stderr)
		return exitUsage
	}
	if c.run == nil {
		fmt.Fprint(env.Stdout, c.doc)
		return exitOK
	}
	return c.run(context.Background(), env, []string{"--help"})
}

// VersionDoc is the version command's help text.
const VersionDoc = `Usage: mcp-sidecar version [--verbose]

Prints the version (also: mcp-sidecar --version), the same whichever way
the binary was built: go run, go build, go install, a release archive or
an npm package. It comes from the VERSION file of the source. --verbose
adds the commit it was built from, when the build recorded it, and the Go
version and system.

Examples:
  mcp-sidecar version --verbose
`

func version(_ context.Context, env Env, args []string) int {
	fs := newFlagSet()
	if code, done := parseFlags(&env, "version", fs, args, 0, 0); done {
		return code
	}
	fmt.Fprintln(env.Stdout, "mcp-sidecar", env.Version)
	if env.verbose && env.Build != "" {
		fmt.Fprintln(env.Stdout, env.Build)
	}
	return exitOK
}

// Exit statuses shared by the commands.
const (
	exitOK          = 0
	exitFailure     = 1   // the thing checked is broken: bad config, failed required server, failed call
	exitUsage       = 2   // the command line is wrong
	exitInterrupted = 130 // Ctrl-C, as shells report SIGINT
)

// interrupted reports whether the command was stopped from outside
// (Ctrl-C, SIGTERM): then it says nothing more and exits 130.
func interrupted(ctx context.Context) bool { return ctx.Err() != nil }

func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by parseFlags
	fs.SortFlags = false
	return fs
}

// parseFlags parses args into fs (flags may stand anywhere among the
// positional arguments; "--" ends them). --help prints the command's help
// on stdout; a bad flag prints a short error and the usage line on stderr.
// The number of positional arguments must be within [min, max] (max < 0:
// no limit). done says the command should return code.
//
// A command for people also gets --no-color and -v/--verbose, whose
// values parseFlags sets in env.
func parseFlags(env *Env, name string, fs *pflag.FlagSet, args []string, min, max int) (code int, done bool) {
	c, _ := lookup(name)
	var noColor, verbose *bool
	if c.people {
		noColor = fs.Bool("no-color", false, "no colour, even on a terminal (so does a non-empty NO_COLOR)")
		verbose = fs.BoolP("verbose", "v", false, "also show the config files read, each server's startup and its stderr lines")
	}
	fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageError(*env, name, err), true
	}
	if h, _ := fs.GetBool("help"); h {
		fmt.Fprint(env.Stdout, c.doc)
		if fs.HasFlags() {
			fmt.Fprintf(env.Stdout, "\nFlags:\n%s", flagUsages(fs, 100))
		}
		return exitOK, true
	}
	if c.people {
		env.noColor, env.verbose = *noColor, *verbose
	}
	n := fs.NArg()
	switch {
	case n < min:
		return usageError(*env, name, fmt.Errorf("too few arguments")), true
	case max >= 0 && n > max:
		return usageError(*env, name, fmt.Errorf("unexpected argument %q", fs.Arg(max))), true
	}
	return 0, false
}

// flagUsages lists fs's flags for help, wrapped to width columns, spelt
// as the usage lines spell them: a boolean flag is "--json" (pflag's own
// listing writes "--json[=true|false]").
func flagUsages(fs *pflag.FlagSet, width int) string {
	type row struct{ flag, usage string }
	var rows []row
	left := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		flag := "      --" + f.Name
		if f.Shorthand != "" {
			flag = "  -" + f.Shorthand + ", --" + f.Name
		}
		name, usage := pflag.UnquoteUsage(f)
		if f.Value.Type() != "bool" && name != "" {
			flag += " " + name
		}
		switch f.DefValue {
		case "", "0", "0s", "false", "[]":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		rows = append(rows, row{flag, usage})
		left = max(left, len(flag))
	})
	var b strings.Builder
	for _, r := range rows {
		line := fmt.Sprintf("%-*s   ", left, r.flag)
		indent := strings.Repeat(" ", len(line))
		n := len(line)
		for i, word := range strings.Fields(r.usage) {
			if i > 0 && n+1+len(word) > width {
				line += "\n" + indent
				n = len(indent)
			} else if i > 0 {
				line += " "
				n++
			}
			line += word
			n += len(word)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// usageError reports a bad command line: the problem, then the usage line.
func usageError(env Env, name string, err error) int {
	c, _ := lookup(name)
	fmt.Fprintf(env.Stderr, "mcp-sidecar %s: %v\nUsage: mcp-sidecar %s (see 'mcp-sidecar help %s')\n", name, err, c.usage, name)
	return exitUsage
}

// IsTerminal reports whether w is a terminal, and TERM is not "dumb":
// where rewriting lines in place shows a live display rather than garbage.
func IsTerminal(w any, lookup func(string) (string, bool)) bool {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false
	}
	if lookup != nil {
		if t, _ := lookup("TERM"); t == "dumb" {
			return false
		}
	}
	return true
}

// terminalWidth is the width of w's terminal, else COLUMNS, else 80.
func terminalWidth(w any, lookup func(string) (string, bool)) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			return cols
		}
	}
	if lookup != nil {
		if c, ok := lookup("COLUMNS"); ok {
			var n int
			if _, err := fmt.Sscanf(c, "%d", &n); err == nil && n > 20 {
				return n
			}
		}
	}
	return 80
}
