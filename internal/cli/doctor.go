package cli

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// DoctorDoc is doctor's help text.
const DoctorDoc = `Usage: mcp-sidecar doctor [--config FILE]... [--command "CMD ARGS..." | --url URL] [--launcher PATH]
                          [--strict] [--trust-project] [--json]

Checks the MCP servers a harness would get from your config files, the way
the sidecar runs them. Without --config it finds the files of the tools you
use, as each tool does, and reads them in this order (a later definition of
a server wins):

  user scope     $CODEX_HOME/config.toml (or ~/.codex/config.toml),
                 ~/.claude.json (Claude Code), ~/.cursor/mcp.json,
                 VS Code's user mcp.json
  project scope  .codex/config.toml, .mcp.json (Claude Code),
                 .cursor/mcp.json and .vscode/mcp.json, in every directory
                 from the repository root down to the current one
  local scope    Claude Code's servers for this project in ~/.claude.json

It says which files it read, which servers each defined and which
definitions a later file replaced; reports every config error with its
file, server and key (and every ignored key); starts every enabled server
at once (a live display on a terminal, plain lines otherwise, both on
stderr) and prints a table:

  SERVER      the server's name (* = required)
  TRANSPORT   stdio or http
  STATUS      ready, failed, cancelled, disabled, invalid (config error),
              needs_authorization (OAuth: run the login command shown), or
              untrusted (a project server you have not approved: not started)
  STARTUP     from "starting" to ready or failed, as the host saw it
  TOOLS       tools in the catalog after enabled_tools/disabled_tools
  BYTES       the JSON of those tools as tools/list gives them to a harness
  ~TOKENS     the sidecar's estimate of the tokens those definitions cost a
              model each turn (as servers/status gives it; within a few
              percent of OpenAI's tokenizers on real catalogs)
  SANDBOX     the sandbox capability the server advertises (codex/sandbox-state)
  LAUNCHER    whether calls to it would carry codex/sandbox-launcher
  MCP         the MCP version the connection speaks (2026-07-28 and later:
              the protocol without initialize; earlier ones: the initialize
              handshake)
  LAST STDERR the server's last stderr line, for a server that failed

Below the table, OAuth lists the servers that use it: which are authorized
and when their tokens expire (they are renewed without you while a refresh
token is kept).

Under the launcher's line, "Catalog cache" says whether the cache folder is
usable: ok, absent (made at the first live listing), off (no folder),
untrusted (another user's, or writable by group or others: the sidecar
neither reads nor writes it) or unusable.

A project's own files (.codex/config.toml, .mcp.json, .cursor/mcp.json,
.vscode/mcp.json) come with the repository, so their servers start only as
far as you approved them in the tool that owns the file, as that tool
records it: a project you trusted in Codex, .mcp.json servers you approved
in Claude Code. Cursor and VS Code record no approval mcp-sidecar can read.
The others are listed as untrusted with what their tool recorded;
--trust-project runs them this once (not those you declined in Claude Code).

The servers are stopped when the check ends. Servers of an invalid config
entry are not started; the others are (so one typo does not hide the rest).
A server that prints lines that are not JSON-RPC on stdout works, with a
warning. Exit status: 0 when the config is valid and every required server
started (with --strict: every enabled server), 1 otherwise, 2 for a bad
command line, 130 when interrupted.

Examples:
  mcp-sidecar doctor
  mcp-sidecar doctor --strict          # in CI: fail on any server that does not start
  mcp-sidecar doctor --trust-project   # also run the project's servers you have not approved
  mcp-sidecar doctor --config ~/.codex/config.toml --config .mcp.json
  mcp-sidecar doctor --command "npx -y @modelcontextprotocol/server-everything"
  mcp-sidecar doctor --url https://mcp.example.com/mcp --header "Authorization: Bearer $TOKEN"
  mcp-sidecar doctor --launcher "$(command -v codex)"
  mcp-sidecar doctor --json | jq '.servers[] | select(.status != "ready")'
`

// doctorReport is doctor's --json document.
type doctorReport struct {
	Files        []string      `json:"files"`
	LookedFor    []string      `json:"lookedFor,omitempty"`
	ConfigErrors []configError `json:"configErrors"`
	Warnings     []configError `json:"warnings"`
	// Untrusted are the project servers no recorded approval covers: found, not started.
	Untrusted []untrustedServer       `json:"untrusted"`
	Launcher  protocol.LauncherStatus `json:"launcher"`
	Cache     doctorCache             `json:"cache"`
	Servers   []doctorServer          `json:"servers"`
	// TokensEstimate is the estimate of the whole catalog.
	TokensEstimate int  `json:"catalogTokensEstimate"`
	OK             bool `json:"ok"`
}

type untrustedServer struct {
	Server   string `json:"server"`
	File     string `json:"file"`
	Tool     string `json:"tool,omitempty"`
	Reason   string `json:"reason"`
	Declined bool   `json:"declined,omitempty"`
}

type configError struct {
	File    string `json:"file,omitempty"`
	Server  string `json:"server,omitempty"`
	Key     string `json:"key,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func configErrorOf(e *config.Error) configError {
	return configError{File: e.File, Server: e.Server, Key: e.Key, Line: e.Line, Column: e.Column, Message: e.Message}
}

// doctorCache is the catalog cache folder as the sidecar judges it.
type doctorCache struct {
	Dir string `json:"dir,omitempty"`
	// Status is "ok", "absent" (created at the first live listing), "off"
	// (no folder: XDG_CACHE_HOME and HOME unset), "untrusted" (another
	// user's, or writable by group or others: refused, nothing read or
	// written) or "unusable" (not a folder, unreadable).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

func checkCacheDir(dir string) doctorCache {
	if dir == "" {
		return doctorCache{Status: "off", Reason: "no cache directory (XDG_CACHE_HOME and HOME unset)"}
	}
	err := (&catalog.DiskCache{Dir: dir}).CheckDir()
	switch {
	case err == nil:
		return doctorCache{Dir: dir, Status: "ok"}
	case errors.Is(err, fs.ErrNotExist):
		return doctorCache{Dir: dir, Status: "absent"}
	case errors.Is(err, catalog.ErrUntrusted):
		return doctorCache{Dir: dir, Status: "untrusted", Reason: err.Error()}
	}
	return doctorCache{Dir: dir, Status: "unusable", Reason: err.Error()}
}

type doctorServer struct {
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	// ConfigErrors are the errors of an invalid server's definition.
	ConfigErrors []configError `json:"configErrors,omitempty"`
	// NotTrusted says why a project server is not started (status
	// "untrusted").
	NotTrusted string `json:"notTrusted,omitempty"`
	// SkippedStdoutLines counts the lines that were not JSON-RPC on the
	// server's stdout (it works, with a warning); FirstSkippedStdoutLine
	// is the first.
	SkippedStdoutLines     int    `json:"skippedStdoutLines,omitempty"`
	FirstSkippedStdoutLine string `json:"firstSkippedStdoutLine,omitempty"`
	Transport              string `json:"transport,omitempty"`
	Required               bool   `json:"required"`
	Status                 string `json:"status"`
	StartupMs              *int64 `json:"startupMs,omitempty"`
	Tools                  *int   `json:"tools,omitempty"`
	CatalogBytes           *int   `json:"catalogBytes,omitempty"`
	TokensEstimate         *int   `json:"catalogTokensEstimate,omitempty"`
	Sandbox                string `json:"sandbox,omitempty"` // advertised capability names, comma-separated, or "none"
	LauncherOK             bool   `json:"launcherEligible"`
	LauncherWhy            string `json:"launcherReason,omitempty"`
	ProtocolVersion        string `json:"protocolVersion,omitempty"`
	// Era is "modern" (MCP 2026-07-28 and later) or "legacy" (the
	// initialize handshake).
	Era string `json:"era,omitempty"`
	// ExcludedTools are the tools the server listed that the catalog
	// leaves out (invalid x-mcp-header declarations), with why.
	ExcludedTools []protocol.ExcludedTool `json:"excludedTools,omitempty"`
	Error         string                  `json:"error,omitempty"`
	LastStderr    string                  `json:"lastStderr,omitempty"`
	// Authorization is the OAuth state of a server that is authorized or
	// needs authorization (never a token).
	Authorization *protocol.ServerAuthorization `json:"authorization,omitempty"`
	// Login is the command that authorizes a server that uses OAuth, as
	// login takes it from this command line; loginHint says it in words.
	Login     string `json:"login,omitempty"`
	loginHint string
}

// Doctor runs the doctor command.
func Doctor(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON document on stdout and no live display")
	strict := fs.Bool("strict", false, "exit 1 when any enabled server fails to start, not only a required one (for CI)")
	launcher := fs.String("launcher", "", "absolute `PATH` of a candidate sandbox launcher (the Codex executable) to probe and judge per server")
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	if code, done := parseFlags(&env, "doctor", fs, args, 0, 0); done {
		return code
	}
	l, err := src.load(env)
	if err != nil {
		return usageError(env, "doctor", err)
	}
	stderr := &lockedWriter{w: env.Stderr}

	rep := doctorReport{Files: []string{}, ConfigErrors: []configError{}, Warnings: []configError{}, Untrusted: []untrustedServer{}, Servers: []doctorServer{}}
	// Before the session: its live listings may create the folder.
	rep.Cache = checkCacheDir(resolveCacheDir(env, *cacheDir))
	for _, src := range l.sources {
		rep.Files = append(rep.Files, src.Path)
	}
	for _, src := range l.looked {
		rep.LookedFor = append(rep.LookedFor, src.Describe())
	}
	for _, e := range l.problems() {
		rep.ConfigErrors = append(rep.ConfigErrors, configErrorOf(e))
	}
	for _, e := range l.warnings() {
		rep.Warnings = append(rep.Warnings, configErrorOf(e))
	}
	untrusted := map[string]config.Untrusted{}
	for _, u := range l.untrusted() {
		rep.Untrusted = append(rep.Untrusted, untrustedServer{Server: u.Server, File: u.Source.Path, Tool: u.Source.Tool, Reason: u.Reason, Declined: u.Declined})
		untrusted[u.Server] = u
	}
	if !*asJSON {
		l.describeSources(env.Stdout)
		printProblems(env.Stdout, l)
	}

	var prog progress
	if !*asJSON && len(l.servers) > 0 {
		prog = newProgress(env, stderr, l.names)
		defer prog.finish()
	}
	var sess *session
	// Also with no server to start: the session's initialize judges the
	// launcher, which the report shows whatever the servers.
	if len(l.names) > 0 || len(rep.Untrusted) > 0 {
		// The Warnings below the table say what the server printed on stdout.
		sess, err = openSession(ctx, env, l, sessionOptions{cacheDir: resolveCacheDir(env, *cacheDir), launcher: *launcher, progress: prog, logOut: stderr, quietStdout: true})
		if err != nil {
			return fail(ctx, stderr, "doctor", err)
		}
		defer sess.close(ctx)
	}
	if prog != nil {
		prog.finish()
	}

	statuses := map[string]protocol.ServerStatus{}
	byServer := map[string][]listedTool{}
	if sess != nil {
		rep.Launcher = sess.init.Launcher
		list, err := sess.toolsList(ctx)
		if err != nil {
			return fail(ctx, stderr, "doctor", err)
		}
		for _, t := range list.Tools {
			byServer[t.Server] = append(byServer[t.Server], t)
		}
		st, err := sess.status(ctx)
		if err != nil {
			return fail(ctx, stderr, "doctor", err)
		}
		for _, s := range st.Servers {
			statuses[s.Name] = s
		}
		rep.TokensEstimate = st.Tokens
	}

	rep.OK = len(l.problems()) == 0 && l.found()
	rows := slices.Clone(l.names)
	for name := range untrusted {
		rows = append(rows, name)
	}
	slices.Sort(rows)
	for _, name := range slices.Compact(rows) {
		ds := doctorServer{Name: name}
		if u, ok := untrusted[name]; ok {
			ds.Source, ds.Status, ds.NotTrusted = u.Source.Describe(), statusUntrusted, u.Reason
			rep.Servers = append(rep.Servers, ds)
			continue
		}
		if c := l.cfg.Servers[name]; c != nil {
			ds.Source = c.Origin.Describe()
		}
		cfg := l.servers[name]
		if cfg == nil {
			ds.Status = protocol.StateInvalid
			for _, e := range l.invalid(name) {
				ds.ConfigErrors = append(ds.ConfigErrors, configErrorOf(e))
			}
			ds.Error = l.invalid(name)[0].Error()
			rep.Servers = append(rep.Servers, ds)
			continue
		}
		ds.Transport, ds.Required = cfg.Transport(), cfg.Required
		st, known := statuses[name]
		run := sess.run(name)
		switch {
		case !known:
			ds.Status = "not started"
		case st.State == protocol.StateDisabled:
			ds.Status = protocol.StateDisabled
		case run.status != "":
			ds.Status = run.status
		default:
			ds.Status = st.State
		}
		if d := run.elapsed(); d > 0 {
			ms := d.Milliseconds()
			ds.StartupMs = &ms
		}
		if running(st) {
			tools := byServer[name]
			n, size := len(tools), catalogBytes(tools)
			ds.Tools, ds.CatalogBytes, ds.TokensEstimate = &n, &size, st.Tokens
			ds.Sandbox = describeCapability(capabilityOf(st))
			ds.ProtocolVersion, ds.Era = st.ProtocolVersion, st.Era
			ds.ExcludedTools = st.ExcludedTools
			ds.SkippedStdoutLines, ds.FirstSkippedStdoutLine = st.SkippedStdoutLines, st.FirstSkippedStdoutLine
		}
		ds.LauncherOK, ds.LauncherWhy = launcherVerdict(cfg, st, rep.Launcher)
		ds.Authorization = st.Authorization
		if st.Authorization != nil || ds.Status == protocol.StatusNeedsAuthorization {
			ds.Login, ds.loginHint = l.loginCommand(name), l.loginHint(name)
		}
		if ds.Status == protocol.StatusNeedsAuthorization {
			ds.Error = "needs authorization: " + ds.loginHint
			if cfg.Required || *strict {
				rep.OK = false
			}
		}
		if ds.Status == protocol.StatusFailed || ds.Status == protocol.StatusCancelled {
			ds.Error = run.err
			if ds.Error == "" {
				ds.Error = st.LastError
			}
			ds.LastStderr = lastStderrLine(ds.Error, run.lastStderr)
			if cfg.Required || *strict {
				rep.OK = false
			}
		}
		rep.Servers = append(rep.Servers, ds)
	}

	if interrupted(ctx) {
		return exitInterrupted
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, rep); err != nil {
			return fail(ctx, stderr, "doctor", err)
		}
	} else {
		printDoctorTable(env.Stdout, rep, newPainter(env, env.Stdout))
	}
	if !rep.OK {
		return exitFailure
	}
	return exitOK
}

// statusUntrusted is doctor's status of a project server no recorded
// approval covers.
const statusUntrusted = "untrusted"

// noCandidate is the sidecar's reason when initialize named no launcher.
const noCandidate = "no launcher candidate given in initialize.launcher"

// launcherVerdict says whether a tools/call to the server would carry
// codex/sandbox-launcher, by the rules the sidecar applies (docs/protocol.md, "Sandbox metadata"):
// a local stdio server that opted in, and a launcher that passed the probe.
func launcherVerdict(cfg *config.ServerConfig, st protocol.ServerStatus, launcher protocol.LauncherStatus) (bool, string) {
	switch {
	case cfg.Transport() != config.TransportStdio:
		return false, "the launcher goes only to local stdio servers"
	case !running(st):
		return false, "not running, so its sandbox capability is unknown"
	case !capabilityOf(st).OptedIn():
		return false, "it does not advertise codex/sandbox-state"
	case launcher.Status != "verified":
		why := "no verified launcher"
		if launcher.Reason == noCandidate {
			why += " (no --launcher given)"
		} else if launcher.Reason != "" {
			why += ": " + launcher.Reason
		}
		return false, why
	}
	return true, ""
}

func describeCapability(c sandbox.Capability) string {
	names := c.Advertised()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// catalogBytes is the size of the tools' JSON as a harness receives them
// in tools/list: their bytes as sent, in a JSON array.
func catalogBytes(tools []listedTool) int {
	if len(tools) == 0 {
		return 0
	}
	n := 1 + len(tools) // brackets and commas
	for _, t := range tools {
		n += len(t.Raw)
	}
	return n
}
