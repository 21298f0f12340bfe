package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

func printProblems(w io.Writer, l *loaded) {
	if ps := l.problems(); len(ps) > 0 {
		fmt.Fprintf(w, "\nConfig errors (%d):\n", len(ps))
		for _, e := range ps {
			fmt.Fprintln(w, "  "+e.Error())
		}
	}
	if ws := l.warnings(); len(ws) > 0 {
		fmt.Fprintf(w, "\nConfig warnings (%d):\n", len(ws))
		for _, e := range ws {
			fmt.Fprintln(w, "  "+e.Error())
		}
	}
	fmt.Fprintln(w)
}

func printDoctorTable(w io.Writer, rep doctorReport, p painter) {
	if len(rep.Servers) == 0 {
		fmt.Fprintln(w, "No MCP servers configured.")
		return
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATUS\tSTARTUP\tTOOLS\tBYTES\t~TOKENS\tSANDBOX\tLAUNCHER\tMCP\tLAST STDERR")
	dash := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	for _, s := range rep.Servers {
		name := s.Name
		if s.Required {
			name += "*"
		}
		startup := "-"
		if s.StartupMs != nil {
			startup = formatDuration(msDuration(*s.StartupMs))
		}
		launcher := "no"
		if s.LauncherOK {
			launcher = "yes"
		}
		status := s.Status
		if s.SkippedStdoutLines > 0 || len(s.ExcludedTools) > 0 {
			status += " (warning)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			name, orDash(s.Transport), status, startup, dash(s.Tools), dash(s.CatalogBytes), dash(s.TokensEstimate),
			orDash(s.Sandbox), launcher, orDash(s.ProtocolVersion), orDash(clip(s.LastStderr, 60)))
	}
	tw.Flush()
	fmt.Fprint(w, p.column(table.String(), "STATUS", stateColour))
	fmt.Fprintf(w, "\n* required. ~TOKENS is the sidecar's estimate: %d for the whole catalog.\n", rep.TokensEstimate)
	fmt.Fprintf(w, "Launcher: %s", rep.Launcher.Status)
	if rep.Launcher.Reason == noCandidate {
		fmt.Fprint(w, " (none given; try --launcher PATH)")
	} else if rep.Launcher.Reason != "" {
		fmt.Fprintf(w, " (%s)", rep.Launcher.Reason)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Catalog cache: %s", rep.Cache.Status)
	if rep.Cache.Dir != "" {
		fmt.Fprintf(w, ", %s", rep.Cache.Dir)
	}
	if rep.Cache.Reason != "" {
		fmt.Fprintf(w, " (%s)", rep.Cache.Reason)
	}
	fmt.Fprintln(w)
	var failed []doctorServer
	for _, s := range rep.Servers {
		// Invalid servers' errors were listed with the config errors.
		if s.Error != "" && s.Status != "invalid" {
			failed = append(failed, s)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "\nProblems:")
		for _, s := range failed {
			printFailure(w, s)
		}
	}
	var warned []doctorServer
	for _, s := range rep.Servers {
		if s.SkippedStdoutLines > 0 || len(s.ExcludedTools) > 0 {
			warned = append(warned, s)
		}
	}
	if len(warned) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, s := range warned {
			for _, x := range s.ExcludedTools {
				fmt.Fprintf(w, "  %s: tool %q left out of the catalog: %s\n", s.Name, x.Tool, x.Reason)
			}
			switch len(s.ExcludedTools) {
			case 0:
			case 1:
				fmt.Fprintln(w, "    Its x-mcp-header declarations break MCP's rules: no harness can call it as the server expects. The server's other tools work.")
			default:
				fmt.Fprintln(w, "    Their x-mcp-header declarations break MCP's rules: no harness can call them as the server expects. The server's other tools work.")
			}
			if s.SkippedStdoutLines == 0 {
				continue
			}
			verb := "are"
			if s.SkippedStdoutLines == 1 {
				verb = "is"
			}
			fmt.Fprintf(w, "  %s: works, but printed %s on stdout that %s not JSON-RPC (skipped); the first:\n    %s\n",
				s.Name, plural(int64(s.SkippedStdoutLines), "line"), verb, s.FirstSkippedStdoutLine)
			fmt.Fprintln(w, "    A server must print only JSON-RPC on stdout; logs belong on stderr.")
		}
	}
	printUntrusted(w, rep)
	printAuthorizations(w, rep.Servers, time.Now())
	// Without a verified launcher the line above says it all.
	var why []string
	for _, s := range rep.Servers {
		if rep.Launcher.Status == "verified" && !s.LauncherOK && s.LauncherWhy != "" && s.Status == protocol.StatusReady {
			why = append(why, fmt.Sprintf("  %s: %s", s.Name, s.LauncherWhy))
		}
	}
	if len(why) > 0 {
		fmt.Fprintln(w, "\nNo launcher for:")
		for _, l := range why {
			fmt.Fprintln(w, l)
		}
	}
}

// printUntrusted lists the project servers no recorded approval covers,
// and how to run them.
func printUntrusted(w io.Writer, rep doctorReport) {
	if len(rep.Untrusted) == 0 {
		return
	}
	fmt.Fprintln(w, "\nNot trusted (servers of the project's own files, not started):")
	var us []config.Untrusted
	for _, s := range rep.Servers {
		if s.Status == statusUntrusted {
			fmt.Fprintf(w, "  %s: %s: %s\n", s.Name, s.Source, s.NotTrusted)
		}
	}
	for _, u := range rep.Untrusted {
		us = append(us, config.Untrusted{Server: u.Server, Source: config.Source{Tool: u.Tool}, Declined: u.Declined})
	}
	fix := trustFix(us)
	fmt.Fprintf(w, "  %s.\n", strings.ToUpper(fix[:1])+fix[1:])
}

// printAuthorizations lists the servers that use OAuth: which are
// authorized and when their tokens expire.
func printAuthorizations(w io.Writer, servers []doctorServer, now time.Time) {
	var lines []string
	for _, s := range servers {
		a := s.Authorization
		switch {
		case a != nil && a.Authorized:
			lines = append(lines, fmt.Sprintf("  %s: authorized (%s)", s.Name, describeToken(a, now)))
		case s.Status == protocol.StatusNeedsAuthorization || a != nil:
			lines = append(lines, fmt.Sprintf("  %s: not authorized: %s", s.Name, s.loginHint))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "\nOAuth:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

// stderrLines is how much of a failed server's stderr tail doctor shows;
// --json has all of it.
const stderrLines = 5

func printFailure(w io.Writer, s doctorServer) {
	head, tail, hasTail := strings.Cut(s.Error, "; stderr:\n")
	fmt.Fprintf(w, "  %s: %s\n", s.Name, strings.ReplaceAll(head, "\n", "\n    "))
	if !hasTail {
		return
	}
	lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
	if n := len(lines) - stderrLines; n > 0 {
		fmt.Fprintf(w, "    stderr (last %d of %d lines):\n", stderrLines, len(lines))
		lines = lines[n:]
	} else {
		fmt.Fprintln(w, "    stderr:")
	}
	for _, l := range lines {
		fmt.Fprintln(w, "      "+l)
	}
}
