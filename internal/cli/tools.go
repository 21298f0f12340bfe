package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// ToolsDoc is the tools command's help text.
const ToolsDoc = `Usage: mcp-sidecar tools [--config FILE]... [--server NAME]... [--cached] [--json]
                         [--search QUERY [--limit N]]

Lists the catalog a harness gets from the sidecar: every tool under its
qualified name (mcp__<server>__<tool>), after enabled_tools and
disabled_tools, grouped by server, with each server's state, where its
catalog came from (live from the server, or cached on disk) and the state
of its disk cache entry before this run:

  hit        a usable cached catalog (tool count and age shown)
  miss       nothing cached for this server in this discovery scope
  unusable   a cache file that is corrupt, of another version, or unsafe
  off        no cache directory (XDG_CACHE_HOME and HOME unset)

The discovery scope is this command's: no session scope, the current
directory as the cwd of stdio servers without one. A harness that passes
its own session scope has entries of its own. A live listing writes the
cache, as it does in a harness.

Config files are as for doctor. By default every enabled server is started;
--cached starts lazily instead (the mcp_lazy_stdio_startup feature), so a
stdio server with a cached catalog stays dormant and its cached tools are
listed. Config errors and startup failures go to stderr. Exit status: 0
when every server listed has a valid config and started, 1 when one of them
does not (with --server, a config error of another server is shown and does
not count), 2 for a bad command line, 130 when interrupted.

--search ranks the catalog for QUERY as a harness's tools/search does and
prints the best --limit tools (default 5) with their score and the first
sentence of their description. QUERY is free text, /regex/ over names and
descriptions, or select:name1,name2.

To list the servers alone (started or not, tool counts), run
'mcp-sidecar list'.

Examples:
  mcp-sidecar tools
  mcp-sidecar tools --server github
  mcp-sidecar tools --cached --config .mcp.json
  mcp-sidecar tools --json | jq -r '.tools[].name'
  mcp-sidecar tools --cached --search "open a pull request"
`

// toolsReport is the --json document: each tool exactly as tools/list
// gives it to a harness, every member kept.
type toolsReport struct {
	Servers []toolsServer     `json:"servers"`
	Tools   []json.RawMessage `json:"tools"`
}

type toolsServer struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Catalog   string `json:"catalog"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
	// Cache is the disk cache entry before this run, CacheAfter after it.
	Cache      cacheState `json:"cache"`
	CacheAfter cacheState `json:"cacheAfter"`
	// Source is where the server is defined: a file with its tool and
	// scope, or the command line.
	Source string `json:"source"`
}

// Tools runs the tools command.
func Tools(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var o catalogOptions
	o.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON document: the tools exactly as a harness receives them")
	query := fs.String("search", "", "rank the catalog for `QUERY` (tools/search) instead of listing it")
	limit := fs.Int("limit", 0, "with --search, the most results `N` (default 5)")
	if code, done := parseFlags(&env, "tools", fs, args, 0, 0); done {
		return code
	}
	o.live = !*asJSON
	c, code, ok := openCatalog(ctx, env, "tools", &o)
	if !ok {
		return code
	}
	defer c.sess.close(ctx)
	if *query != "" {
		if code := searchTools(ctx, env.Stdout, c.stderr, c.sess, *query, *limit, *asJSON); code != exitOK {
			return code
		}
		return c.status
	}
	rep, tools, err := c.report(ctx, env)
	if err != nil {
		return fail(ctx, c.stderr, "tools", err)
	}
	if interrupted(ctx) {
		return exitInterrupted
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, rep); err != nil {
			return fail(ctx, c.stderr, "tools", err)
		}
		return c.status
	}
	printTools(env.Stdout, rep, tools, time.Now(), newPainter(env, env.Stdout))
	return c.status
}

// catalogOptions are the flags of the commands that list the catalog
// (tools, list).
type catalogOptions struct {
	src      serverFlags
	only     []string
	cached   bool
	cacheDir string
	// live: a live display of the startup may be drawn (not with --json).
	live bool
	// listsProblems: the command shows the servers with config errors and
	// the untrusted ones itself (list); only the errors of whole files go
	// to stderr.
	listsProblems bool
}

func (o *catalogOptions) register(fs *pflag.FlagSet) {
	o.src.register(fs)
	fs.StringArrayVar(&o.only, "server", nil, "list only server `NAME` (repeatable)")
	fs.BoolVar(&o.cached, "cached", false, "start lazily: stdio servers with a cached catalog stay dormant")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
}

// catalogRun is a session opened for a catalog listing.
type catalogRun struct {
	l      *loaded
	sess   *session
	stderr *lockedWriter
	dir    string
	// before is each server's disk cache entry before the session.
	before map[string]cacheState
	// status is the exit status so far: 1 once a server listed has a
	// config error, did not start or needs authorization.
	status int
}

// started reports whether a session was opened: a command that lists
// problems gets a catalogRun without one when no server can start.
func (c *catalogRun) started() bool { return c.sess != nil }

// openCatalog loads the servers the flags name, reports the config's
// problems on stderr and opens a session of them (with a live display of
// their startup on a terminal). ok false: the command ends with code.
func openCatalog(ctx context.Context, env Env, cmd string, o *catalogOptions) (c *catalogRun, code int, ok bool) {
	stderr := &lockedWriter{w: env.Stderr}
	l, err := o.src.load(env)
	if err != nil {
		return nil, usageError(env, cmd, err), false
	}
	c = &catalogRun{l: l, stderr: stderr, status: exitOK}
	if !l.found() {
		l.describeSources(stderr)
		return nil, exitFailure, false
	}
	if env.verbose {
		l.describeSources(stderr)
	}
	for _, e := range l.problems() {
		if !o.listsProblems || e.Server == "" {
			fmt.Fprintln(stderr, "config error:", e.Error())
		}
	}
	if len(l.usedProblems(o.only)) > 0 {
		c.status = exitFailure
	}
	names := slices.Clone(o.only)
	for _, u := range l.untrusted() {
		if (len(names) == 0 || slices.Contains(names, u.Server)) && !o.listsProblems {
			fmt.Fprintf(stderr, "mcp-sidecar %s: %s\n", cmd, l.untrustedNote(u.Server))
		}
	}
	for _, n := range names {
		if l.servers[n] != nil {
			continue
		}
		if note := l.untrustedNote(n); note != "" {
			if o.listsProblems {
				fmt.Fprintf(stderr, "mcp-sidecar %s: %s\n", cmd, note)
			}
			return nil, exitFailure, false
		}
		if slices.Contains(l.names, n) {
			if o.listsProblems {
				for _, e := range l.invalid(n) {
					fmt.Fprintln(stderr, "config error:", e.Error())
				}
			}
			fmt.Fprintf(stderr, "mcp-sidecar %s: server %q has config errors (above)\n", cmd, n)
		} else {
			fmt.Fprintf(stderr, "mcp-sidecar %s: no server %q in the config (servers: %s)\n", cmd, n, strings.Join(l.names, ", "))
		}
		return nil, exitFailure, false
	}
	if names == nil {
		for _, n := range l.names {
			if l.servers[n] != nil {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		if o.listsProblems {
			// Nothing to start, and the command's report is the servers
			// that did not start and why (untrusted, invalid): it draws
			// them without a session.
			c.status = exitFailure
			return c, 0, true
		}
		fmt.Fprintf(stderr, "mcp-sidecar %s: no valid server in the config\n", cmd)
		return nil, exitFailure, false
	}

	c.dir = resolveCacheDir(env, o.cacheDir)
	c.before = map[string]cacheState{}
	for _, n := range names {
		c.before[n] = readCache(env, c.dir, n, l.servers[n])
	}
	prog := startupProgress(env, stderr, names, o.live)
	sessOnly := names
	if len(o.only) == 0 {
		sessOnly = nil // every server, disabled ones included
	}
	c.sess, err = openSession(ctx, env, l, sessionOptions{cacheDir: c.dir, only: sessOnly, lazy: o.cached, progress: prog, logOut: stderr})
	if prog != nil {
		prog.finish()
	}
	if err != nil {
		return nil, fail(ctx, stderr, cmd, err), false
	}
	return c, 0, true
}

// startupProgress is the display of the servers' startup: live on a
// terminal (when live), plain lines with --verbose, else none.
func startupProgress(env Env, w io.Writer, names []string, live bool) progress {
	switch {
	case live && IsTerminal(env.Stderr, env.lookup):
		return newProgress(env, w, names)
	case env.verbose:
		return newPlainProgress(w, names)
	}
	return nil
}

// report lists the session's catalog: each server with its state and
// cache entries, and the tools. A server that did not start or needs
// authorization makes the status 1.
func (c *catalogRun) report(ctx context.Context, env Env) (toolsReport, []listedTool, error) {
	list, err := c.sess.toolsList(ctx)
	if err != nil {
		return toolsReport{}, nil, err
	}
	rep := toolsReport{Servers: []toolsServer{}, Tools: []json.RawMessage{}}
	for _, t := range list.Tools {
		rep.Tools = append(rep.Tools, t.Raw)
	}
	count := map[string]int{}
	for _, t := range list.Tools {
		count[t.Server]++
	}
	for _, sc := range list.Servers {
		cfg := c.l.servers[sc.Name]
		if cfg == nil {
			continue
		}
		ts := toolsServer{
			Name: sc.Name, Transport: cfg.Transport(), State: sc.State, Catalog: sc.Catalog, Tools: count[sc.Name],
			Error: sc.Error, Cache: c.before[sc.Name], CacheAfter: readCache(env, c.dir, sc.Name, cfg),
			Source: cfg.Origin.Describe(),
		}
		if ts.Error == "" && sc.State == protocol.StateFailed {
			ts.Error = c.sess.run(sc.Name).err
		}
		if sc.State == protocol.StateNeedsAuthorization {
			// The sidecar's error has the authorization URL of a flow
			// that ends with this command: login runs one that lasts.
			ts.Error = "needs authorization: " + c.l.loginHint(sc.Name)
		}
		if sc.State == protocol.StateFailed || sc.State == protocol.StateNeedsAuthorization {
			c.status = exitFailure // the report says why
		}
		rep.Servers = append(rep.Servers, ts)
	}
	return rep, list.Tools, nil
}

func printTools(w io.Writer, rep toolsReport, tools []listedTool, now time.Time, p painter) {
	for i, s := range rep.Servers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s, %s, catalog %s, %s; disk cache: %s)\n", p.paint(bold, s.Name), s.Transport, p.state(s.State), s.Catalog, plural(int64(s.Tools), "tool"), s.Cache.short(now))
		if s.Cache.State == "unusable" {
			fmt.Fprintf(w, "  cache: %s\n", s.Cache.Reason)
		}
		if s.State == protocol.StateNeedsAuthorization {
			fmt.Fprintf(w, "  %s\n", s.Error)
		} else if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", errorSummary(s.Error))
			if l := lastStderrLine(s.Error, ""); l != "" {
				fmt.Fprintf(w, "  last stderr line: %s\n", l)
			}
		}
		for _, t := range tools {
			if t.Server != s.Name {
				continue
			}
			fmt.Fprintf(w, "  %s\n", signature(t.Tool.Tool, t.InputSchema))
			desc := firstLine(t.Description)
			if desc == "" {
				desc = t.Title
			}
			if desc != "" {
				fmt.Fprintf(w, "      %s\n", clip(desc, 100))
			}
		}
	}
	if len(tools) > 0 {
		fmt.Fprintln(w, "\nCall one with: mcp-sidecar call SERVER TOOL key=value ... (? marks an optional argument)")
	}
}

// searchTools prints the tools/search results for query.
func searchTools(ctx context.Context, stdout io.Writer, stderr io.Writer, sess *session, query string, limit int, asJSON bool) int {
	var res protocol.ToolsSearchResult
	err := sess.h.call(ctx, protocol.MethodToolsSearch, protocol.ToolsSearchParams{SessionID: sess.id, Query: query, Limit: limit}, &res)
	if err != nil {
		return fail(ctx, stderr, "tools", fmt.Errorf("searching the tools: %w", err))
	}
	if asJSON {
		if err := writeJSON(stdout, res); err != nil {
			return fail(ctx, stderr, "tools", err)
		}
		return exitOK
	}
	if len(res.Results) == 0 {
		fmt.Fprintf(stdout, "No tool matches %q.\n", query)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for i, r := range res.Results {
		fmt.Fprintf(tw, "%d\t%s\t%.3g\t%s\n", i+1, r.Name, r.Score, orDash(clip(r.Description, 80)))
	}
	tw.Flush()
	return exitOK
}
