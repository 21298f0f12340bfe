package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// TrustDoc is trust's help text.
const TrustDoc = `Usage: mcp-sidecar trust [PROJECT]
       mcp-sidecar trust --list
       mcp-sidecar trust --revoke [PROJECT]

Trusts the servers of a project's Cursor and VS Code files (.cursor/mcp.json,
.vscode/mcp.json), which neither tool records an approval of that
mcp-sidecar can read: mcp-sidecar then starts them, here and in every
harness that discovers your config, until the file changes. A changed file
(a server added, a command edited, a commit pulled) is not trusted until you
trust it again. PROJECT is the project's folder (default: the current one);
its files are found as doctor finds them, from the repository root down to
PROJECT. Codex's and Claude Code's project files are trusted in those tools
(Codex: trust the project; Claude Code: approve the servers).

The record is $XDG_CONFIG_HOME/mcp-sidecar/trust.json (~/.config/...): for
each project, by its real path, each file it trusts, by real path, with the
SHA-256 of its content. --trust-project on the other commands trusts the
project's Cursor and VS Code files the same way.

  --list     the projects and files trusted, and whether each is as trusted
  --revoke   forget the project's trust

Examples:
  mcp-sidecar trust
  mcp-sidecar trust ~/work/proj
  mcp-sidecar trust --list
  mcp-sidecar trust --revoke ~/work/proj
`

// Trust runs the trust command.
func Trust(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	list := fs.Bool("list", false, "list the projects and files trusted")
	revoke := fs.Bool("revoke", false, "forget the trust of PROJECT")
	if code, done := parseFlags(&env, "trust", fs, args, 0, 1); done {
		return code
	}
	if *list && (*revoke || fs.NArg() > 0) {
		return usageError(env, "trust", fmt.Errorf("--list takes no PROJECT and no --revoke"))
	}
	path, ok := config.DefaultTrustFile(env.lookup)
	if !ok {
		return fail(ctx, env.Stderr, "trust", fmt.Errorf("no config folder for the trust record: neither XDG_CONFIG_HOME nor HOME is an absolute path"))
	}
	rec, err := config.ReadTrustRecord(path)
	if err != nil {
		return fail(ctx, env.Stderr, "trust", err)
	}
	if *list {
		printTrustList(env.Stdout, rec)
		return exitOK
	}
	project := env.Cwd
	if fs.NArg() == 1 {
		project = fs.Arg(0)
		if !filepath.IsAbs(project) {
			project = filepath.Join(env.Cwd, project)
		}
	}
	root := config.ProjectRoot(filepath.Clean(project))
	if *revoke {
		if !rec.Revoke(root) {
			fmt.Fprintf(env.Stdout, "%s was not trusted.\n", root)
			return exitOK
		}
		if err := rec.Write(path); err != nil {
			return fail(ctx, env.Stderr, "trust", err)
		}
		fmt.Fprintf(env.Stdout, "Forgot the trust of %s: its Cursor and VS Code servers are not started until you trust it again.\n", root)
		return exitOK
	}
	found, _ := config.Discover(config.DiscoverOptions{Home: env.Home, Cwd: filepath.Clean(project), Env: env.lookup})
	done := rec.TrustProjectFiles(found, time.Now())
	if len(done) == 0 {
		fmt.Fprintf(env.Stderr, "mcp-sidecar trust: no Cursor or VS Code file in %s (.cursor/mcp.json, .vscode/mcp.json)\n", root)
		sayOwnTrust(env.Stderr, found)
		return exitFailure
	}
	code := exitOK
	var trusted []config.TrustedNow
	for _, t := range done {
		if t.Problem != "" {
			fmt.Fprintf(env.Stderr, "mcp-sidecar trust: %s: %s; not trusted\n", t.Source.Path, t.Problem)
			code = exitFailure
			continue
		}
		trusted = append(trusted, t)
	}
	if len(trusted) > 0 {
		if err := rec.Write(path); err != nil {
			return fail(ctx, env.Stderr, "trust", err)
		}
	}
	for _, t := range trusted {
		fmt.Fprintf(env.Stdout, "Trusted %s as it is now: %s.\n", t.Source.Describe(), describeServers(t.Servers))
	}
	if len(trusted) > 0 {
		fmt.Fprintf(env.Stdout, "A change to a file asks again; 'mcp-sidecar trust --revoke %s' forgets.\n", root)
	}
	sayOwnTrust(env.Stdout, found)
	return code
}

// describeServers lists a file's servers for people.
func describeServers(names []string) string {
	switch len(names) {
	case 0:
		return "no servers"
	case 1:
		return "server " + names[0]
	}
	return "servers " + strings.Join(names, ", ")
}

// sayOwnTrust says how to trust the project's Codex and Claude Code files,
// which their own tools approve.
func sayOwnTrust(w io.Writer, found []config.Source) {
	var tools []string
	for _, s := range found {
		if s.Scope != config.ScopeProject || slices.Contains(config.TrustableTools(), s.Tool) {
			continue
		}
		h := ""
		switch s.Tool {
		case config.ToolCodex:
			h = "trust the project in Codex for " + s.Path
		case config.ToolClaude:
			h = "approve the servers of " + s.Path + " in Claude Code"
		}
		if h != "" && !slices.Contains(tools, h) {
			tools = append(tools, h)
		}
	}
	if len(tools) > 0 {
		fmt.Fprintf(w, "Not covered: %s.\n", strings.Join(tools, "; "))
	}
}

// printTrustList lists the trust record.
func printTrustList(w io.Writer, rec *config.TrustRecord) {
	if len(rec.Projects) == 0 {
		fmt.Fprintln(w, "No project is trusted.")
		return
	}
	projects := make([]string, 0, len(rec.Projects))
	for p := range rec.Projects {
		projects = append(projects, p)
	}
	slices.Sort(projects)
	for _, p := range projects {
		fmt.Fprintln(w, p)
		files := rec.Projects[p].Files
		paths := make([]string, 0, len(files))
		for f := range files {
			paths = append(paths, f)
		}
		slices.Sort(paths)
		for _, f := range paths {
			tf := files[f]
			state := config.FileState(p, f, tf)
			switch state {
			case "changed":
				state = "changed since: not trusted until trusted again"
			case "trusted":
				state = "trusted"
			}
			fmt.Fprintf(w, "  %s (%s, %s): %s\n", f, toolName(tf.Tool), tf.TrustedAt.Local().Format("2006-01-02 15:04"), state)
		}
	}
}

// toolName names a tool for people.
func toolName(tool string) string {
	switch tool {
	case config.ToolCursor:
		return "Cursor"
	case config.ToolVSCode:
		return "VS Code"
	}
	return tool
}

// rememberTrust records the Cursor and VS Code project files of l, whose
// project the person trusted with --trust-project, and says so on w.
func rememberTrust(env Env, l *loaded, w io.Writer) {
	path, ok := config.DefaultTrustFile(env.lookup)
	if !ok {
		return
	}
	rec, err := config.ReadTrustRecord(path)
	if err != nil {
		fmt.Fprintf(w, "mcp-sidecar: --trust-project not remembered: %v\n", err)
		return
	}
	var trusted []config.TrustedNow
	for _, t := range rec.TrustProjectFiles(l.sources, time.Now()) {
		if t.Problem == "" {
			trusted = append(trusted, t)
		}
	}
	if len(trusted) == 0 {
		return
	}
	if err := rec.Write(path); err != nil {
		fmt.Fprintf(w, "mcp-sidecar: --trust-project not remembered: %v\n", err)
		return
	}
	for _, t := range trusted {
		fmt.Fprintf(w, "mcp-sidecar: trusted %s as it is now (until it changes; 'mcp-sidecar trust --revoke' forgets)\n", t.Source.Path)
	}
}
