package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// ListDoc is the list command's help text.
const ListDoc = `Usage: mcp-sidecar list [--config FILE]... [--server NAME]... [--cached] [--json]

Lists your MCP servers, as 'claude mcp list' and 'codex mcp list' do: each
server of your config files (found as for doctor) with whether it started,
its number of tools, its transport and the file that defines it. The
servers are started to find out, as a harness would start them; --cached
starts lazily instead, so a stdio server with a cached catalog stays
dormant and shows its cached tool count.

Below the list, each server that did not start says why, and one that
needs authorization the login command. For the tools themselves, run
'mcp-sidecar tools'; for a full check of the setup, 'mcp-sidecar doctor'.

Exit status: 0 when every server listed has a valid config and started, 1
when one of them does not (with --server, a config error of another server
is shown and does not count), 2 for a bad command line, 130 when
interrupted.

Examples:
  mcp-sidecar list
  mcp-sidecar list --cached
  mcp-sidecar list --json | jq -r '.servers[] | select(.state != "ready") | .name'
`

// listReport is list's --json document.
type listReport struct {
	Servers []toolsServer `json:"servers"`
}

// List runs the list command.
func List(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var o catalogOptions
	o.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON document: the servers, as in tools --json")
	if code, done := parseFlags(&env, "list", fs, args, 0, 0); done {
		return code
	}
	o.live, o.listsProblems = !*asJSON, true
	c, code, ok := openCatalog(ctx, env, "list", &o)
	if !ok {
		return code
	}
	rep := toolsReport{Servers: []toolsServer{}}
	if c.started() {
		defer c.sess.close(ctx)
		var err error
		if rep, _, err = c.report(ctx, env); err != nil {
			return fail(ctx, c.stderr, "list", err)
		}
	}
	rep.Servers = append(rep.Servers, notStartedServers(c.l, o.only)...)
	slices.SortFunc(rep.Servers, func(a, b toolsServer) int { return strings.Compare(a.Name, b.Name) })
	if interrupted(ctx) {
		return exitInterrupted
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, listReport{Servers: rep.Servers}); err != nil {
			return fail(ctx, c.stderr, "list", err)
		}
		return c.status
	}
	printServers(env.Stdout, rep.Servers, newPainter(env, env.Stdout))
	return c.status
}

// notStartedServers are the servers of the config that no session
// starts: those with config errors (state invalid) and the project
// servers nobody approved (untrusted), of only (nil: all).
func notStartedServers(l *loaded, only []string) []toolsServer {
	var out []toolsServer
	wanted := func(n string) bool { return only == nil || slices.Contains(only, n) }
	for _, n := range l.names {
		if l.servers[n] != nil || !wanted(n) {
			continue
		}
		ts := toolsServer{Name: n, State: protocol.StateInvalid, Catalog: protocol.CatalogNone}
		if c := l.cfg.Servers[n]; c != nil {
			ts.Source = c.Origin.Describe()
		}
		if errs := l.invalid(n); len(errs) > 0 {
			ts.Error = errs[0].Message
			if errs[0].Key != "" {
				ts.Error = fmt.Sprintf("key %q: %s", errs[0].Key, errs[0].Message)
			}
		}
		out = append(out, ts)
	}
	for _, u := range l.untrusted() {
		if wanted(u.Server) {
			out = append(out, toolsServer{
				Name: u.Server, State: statusUntrusted, Catalog: protocol.CatalogNone, Source: u.Source.Describe(),
				Error: fmt.Sprintf("%s: %s", u.Reason, trustFix([]config.Untrusted{u})),
			})
		}
	}
	return out
}

// printServers prints list's table, then why each server that is not
// ready is not.
func printServers(w io.Writer, servers []toolsServer, p painter) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tTOOLS\tTRANSPORT\tDEFINED IN")
	for _, s := range servers {
		tools := "-"
		if s.Catalog != protocol.CatalogNone {
			tools = strconv.Itoa(s.Tools)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.State, tools, orDash(s.Transport), s.Source)
	}
	tw.Flush()
	fmt.Fprint(w, p.column(b.String(), "STATUS", stateColour))
	var problems []string
	for _, s := range servers {
		if s.Error != "" {
			problems = append(problems, fmt.Sprintf("  %s: %s", s.Name, errorSummary(s.Error)))
		}
		if l := lastStderrLine(s.Error, ""); l != "" {
			problems = append(problems, "    last stderr line: "+l)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintln(w)
		for _, l := range problems {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w, "\nTheir tools: mcp-sidecar tools. A full check: mcp-sidecar doctor.")
}
