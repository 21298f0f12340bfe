package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
)

// loaded is the user's configuration as the commands see it.
type loaded struct {
	// given are the --config files; nil when the files were discovered
	// or the server was given on the command line.
	given []string
	// inline is the server given with --command or --url; url is --url.
	inline json.RawMessage
	url    string
	// sources were read, in order; looked are the places discovery
	// considered (when neither --config nor a server was given).
	sources []config.Source
	looked  []config.Source
	cfg     *config.Loaded
	servers map[string]*config.ServerConfig // the valid ones
	names   []string                        // every server name, valid or not, sorted
	cwd     string
	// trustProject runs the project's servers no recorded approval
	// covers (--trust-project).
	trustProject bool
	// startupTimeout bounds every server's startup in place of its
	// startup_timeout_sec (--startup-timeout); 0: the config's.
	startupTimeout time.Duration
}

// untrusted are the project servers that no recorded approval covers
// and no other definition of the name replaces: found, not started.
func (l *loaded) untrusted() []config.Untrusted {
	var out []config.Untrusted
	for _, u := range l.cfg.Untrusted {
		if l.cfg.Servers[u.Server] == nil {
			out = append(out, u)
		}
	}
	return out
}

// untrustedNote explains why server name is not started when a project
// file defines it and no approval covers it; "" otherwise.
func (l *loaded) untrustedNote(name string) string {
	for _, u := range l.untrusted() {
		if u.Server == name {
			return fmt.Sprintf("server %q of %s is not trusted (%s): %s", name, u.Source.Describe(), u.Reason, trustFix([]config.Untrusted{u}))
		}
	}
	return ""
}

// trustFix says how to run the servers us: approve them in their tool,
// or pass --trust-project; one the user declined in Claude Code only by
// undoing that.
func trustFix(us []config.Untrusted) string {
	var how []string
	open, declined, remembered := 0, false, false
	for _, u := range us {
		if u.Declined {
			declined = true
			continue
		}
		open++
		h := ""
		switch u.Source.Tool {
		case config.ToolCodex:
			h = "trust the project in Codex"
		case config.ToolClaude:
			h = "approve %s in Claude Code"
		case config.ToolCursor, config.ToolVSCode:
			h = "trust the project's Cursor and VS Code files with 'mcp-sidecar trust'"
			remembered = true
		}
		if h != "" && !slices.Contains(how, h) {
			how = append(how, h)
		}
	}
	them := "them"
	if open == 1 {
		them = "it"
	}
	var parts []string
	if open > 0 {
		fix := "pass --trust-project to run " + them + " this once"
		if remembered {
			fix = "pass --trust-project to run " + them + " (Cursor and VS Code files stay trusted until they change)"
		}
		if len(how) > 0 {
			fix = strings.ReplaceAll(strings.Join(how, " or "), "%s", them) + ", or " + fix
		}
		parts = append(parts, fix)
	}
	if declined {
		parts = append(parts, "a server declined in Claude Code runs once it is taken out of disabledMcpjsonServers")
	}
	return strings.Join(parts, "; ")
}

// loginCommand is the command that authorizes server name, as login
// takes it from this command line: the server's name with the same
// --config files (or --trust-project), or the URL given with --url. A URL
// with a secret in it is not repeated: the person gives it again.
func (l *loaded) loginCommand(name string) string {
	if l.url != "" {
		if redact.URL(l.url) != l.url {
			return "mcp-sidecar login --url URL"
		}
		return "mcp-sidecar login --url " + shellWord(l.url)
	}
	words := []string{"mcp-sidecar", "login", shellWord(name)}
	for _, f := range l.given {
		words = append(words, "--config", shellWord(f))
	}
	if l.trustProject {
		words = append(words, "--trust-project")
	}
	return strings.Join(words, " ")
}

// loginHint says how to authorize server name.
func (l *loaded) loginHint(name string) string {
	hint := "run '" + l.loginCommand(name) + "'"
	if l.url != "" && redact.URL(l.url) != l.url {
		hint += " with the URL you gave"
	}
	return hint
}

// shellWord is s as a shell word: as it is when it needs no quoting,
// else in double quotes (the commands it goes in are shown in single
// quotes).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s) + `"`
}

// started are the servers a session of only (nil: all) starts: the
// valid ones, in order.
func (l *loaded) started(only []string) []string {
	if only != nil {
		return only
	}
	var names []string
	for _, n := range l.names {
		if l.servers[n] != nil {
			names = append(names, n)
		}
	}
	return names
}

// invalid reports the errors of server name's definition.
func (l *loaded) invalid(name string) []*config.Error {
	if c := l.cfg.Servers[name]; c != nil {
		return c.Problems
	}
	return nil
}

// problems are the configuration's errors; warnings its ignored keys.
func (l *loaded) problems() config.Errors { return l.cfg.Errors }
func (l *loaded) warnings() config.Errors { return l.cfg.Warnings }

// usedProblems are the config errors that count for a command using the
// servers only (nil: every server): those of its servers and, when it
// uses them all, those of whole files. The others are shown and do not
// change its exit status.
func (l *loaded) usedProblems(only []string) config.Errors {
	var out config.Errors
	for _, e := range l.problems() {
		if only == nil || slices.Contains(only, e.Server) {
			out = append(out, e)
		}
	}
	return out
}

// serverFlags say which servers a command for people uses: the config
// files (--config), or one server given on the command line (--command or
// --url, with --header and --name), else the files discovery finds.
type serverFlags struct {
	config         []string
	command        string
	url            string
	headers        []string
	name           string
	trustProject   bool
	startupTimeout time.Duration
}

func (f *serverFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.config, "config", nil, "read config `FILE` instead of discovering your files (repeatable; later files win)")
	fs.StringVar(&f.command, "command", "", "try a stdio server without a config: `\"CMD ARGS...\"`, e.g. \"npx -y @modelcontextprotocol/server-everything\"")
	fs.StringVar(&f.url, "url", "", "try a Streamable HTTP server without a config: its `URL`")
	fs.StringArrayVar(&f.headers, "header", nil, "HTTP header for --url, `\"NAME: VALUE\"` (repeatable)")
	fs.StringVar(&f.name, "name", "", "server `NAME` for --command or --url (default: from the command or host)")
	fs.BoolVar(&f.trustProject, "trust-project", false, "run this once the servers of the project's own files that you have not approved in their tool")
	fs.DurationVar(&f.startupTimeout, "startup-timeout", 0, "how long each server may take to start, a `DURATION` such as 90s (default: its startup_timeout_sec, else 30s)")
}

// load reads the configuration the flags name.
func (f *serverFlags) load(env Env) (*loaded, error) {
	if f.startupTimeout < 0 {
		return nil, fmt.Errorf("--startup-timeout must not be negative")
	}
	l, err := f.loadServers(env)
	if err != nil {
		return nil, err
	}
	l.startupTimeout = f.startupTimeout
	return l, nil
}

func (f *serverFlags) loadServers(env Env) (*loaded, error) {
	if f.trustProject && (len(f.config) > 0 || f.command != "" || f.url != "") {
		return nil, fmt.Errorf("--trust-project is for the files found in the project; --config, --command and --url are always used")
	}
	if f.command == "" && f.url == "" {
		if len(f.headers) > 0 || f.name != "" {
			return nil, fmt.Errorf("--header and --name go with --command or --url")
		}
		l := loadConfig(env, f.config, f.trustProject)
		if f.trustProject {
			rememberTrust(env, l, env.Stderr)
		}
		noTerminalForInputs(env, l)
		return l, nil
	}
	if f.command != "" && f.url != "" {
		return nil, fmt.Errorf("give --command or --url, not both")
	}
	if len(f.config) > 0 {
		return nil, fmt.Errorf("--config and --command/--url cannot be combined")
	}
	entry := map[string]any{}
	name := f.name
	if f.command != "" {
		words, err := splitWords(f.command)
		if err != nil || len(words) == 0 {
			return nil, fmt.Errorf("--command: %s", orText(err, "empty command"))
		}
		entry["command"], entry["args"] = words[0], words[1:]
		if name == "" {
			name = nameFromCommand(words)
		}
	} else {
		entry["url"] = f.url
		if len(f.headers) > 0 {
			h := map[string]string{}
			for _, kv := range f.headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return nil, fmt.Errorf("--header %q: want \"NAME: VALUE\"", strings.SplitN(kv, ":", 2)[0])
				}
				h[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			entry["http_headers"] = h
		}
		if name == "" {
			name = nameFromURL(f.url)
		}
	}
	if len(f.headers) > 0 && f.url == "" {
		return nil, fmt.Errorf("--header goes with --url")
	}
	inline, err := json.Marshal(map[string]any{name: entry})
	if err != nil {
		return nil, err
	}
	l := &loaded{inline: inline, url: f.url, cwd: env.Cwd}
	l.cfg = config.LoadAs(nil, inline, commandLine, env.lookup)
	l.servers = l.cfg.Valid()
	l.names = l.cfg.Names()
	return l, nil
}

func orText(err error, text string) string {
	if err != nil {
		return err.Error()
	}
	return text
}

// loadConfig reads the --config files, or the files discovery finds, with
// the loader the sidecar's initialize uses.
func loadConfig(env Env, files []string, trustProject bool) *loaded {
	l := &loaded{given: files, cwd: env.Cwd, trustProject: trustProject}
	if len(files) > 0 {
		l.sources = config.FileSources(files)
	} else {
		l.sources, l.looked = config.Discover(config.DiscoverOptions{Home: env.Home, Cwd: env.Cwd, Env: env.lookup, TrustProject: trustProject})
	}
	l.cfg = config.Load(l.sources, nil, env.lookup)
	l.servers = l.cfg.Valid()
	l.names = l.cfg.Names()
	return l
}

// found reports whether there was any config to read.
func (l *loaded) found() bool { return len(l.sources) > 0 || l.inline != nil }

// describeSources says which files were read and what each defined, for
// people.
func (l *loaded) describeSources(w io.Writer) {
	switch {
	case l.inline != nil:
		fmt.Fprintf(w, "Server given on the command line: %s\n", strings.Join(l.names, ", "))
	case len(l.sources) > 0:
		fmt.Fprintln(w, "Config files read (later ones win):")
		for _, r := range l.cfg.Sources {
			line := "  " + r.Describe()
			switch {
			case r.Err != nil:
				line += ": cannot be used (below)"
			case len(r.Servers) > 0 && len(r.Untrusted) > 0:
				line += ": " + strings.Join(r.Servers, ", ") + "; not trusted: " + strings.Join(r.Untrusted, ", ")
			case len(r.Servers) > 0:
				line += ": " + strings.Join(r.Servers, ", ")
			case len(r.Untrusted) > 0:
				line += ": not trusted: " + strings.Join(r.Untrusted, ", ")
			default:
				line += ": no servers"
			}
			fmt.Fprintln(w, line)
		}
		for _, rp := range l.cfg.Replaced {
			fmt.Fprintf(w, "  %s: %s replaces %s\n", rp.Server, rp.By.Describe(), rp.Over.Describe())
		}
	case len(l.looked) > 0:
		fmt.Fprintln(w, "No config file found. Looked for:")
		for _, f := range l.looked {
			fmt.Fprintln(w, "  "+f.Describe())
		}
	default:
		fmt.Fprintln(w, "No config file given.")
	}
}

// initializeParams are the params of the in-process initialize: the
// --config files, or discovery from the working directory, as a harness
// sends them.
func (l *loaded) initializeParams(env Env, cacheDir, launcher string) (map[string]any, error) {
	p := map[string]any{
		"clientInfo": map[string]any{"name": "mcp-sidecar-cli", "version": env.Version},
		// Every server starts at once, not eight at a time.
		"limits": map[string]any{"maxConcurrentStarts": max(8, len(l.servers))},
		// A person asked for this result: it is shown (or printed as JSON)
		// whole, not cut to a model's budget with the rest in a file that
		// goes when the command ends.
		"features": map[string]bool{"mcp_tool_output_limit": false},
	}
	switch {
	case l.inline != nil:
		p["servers"] = l.inline
	case l.given != nil:
		p["configFiles"] = l.given
	default:
		d := map[string]any{"cwd": l.cwd}
		if l.trustProject {
			d["trustProject"] = true
		}
		p["configDiscovery"] = d
	}
	if cacheDir != "" {
		p["cacheDir"] = cacheDir
	}
	if launcher != "" {
		p["launcher"] = map[string]any{"codexExecutable": launcher}
	}
	return p, nil
}
