package peoplecli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

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
	o.live = !*asJSON
	c, code, ok := openCatalog(ctx, env, "list", &o)
	if !ok {
		return code
	}
	defer c.sess.close(ctx)
	rep, _, err := c.report(ctx, env)
	if err != nil {
		return fail(ctx, c.stderr, "list", err)
	}
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.State, tools, s.Transport, s.Source)
	}
	tw.Flush()
	fmt.Fprint(w, p.column(b.String(), "STATUS", stateColour))
	var problems []string
	for _, s := range servers {
		if s.Error != "" {
			problems = append(problems, fmt.Sprintf("  %s: %s", s.Name, errorSummary(s.Error)))
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
