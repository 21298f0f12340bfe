package peoplecli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/internal/suggest"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// ResourcesDoc is the resources command's help text.
const ResourcesDoc = `Usage: mcp-sidecar resources [list | templates | read URI] [--server NAME] [flags]

Lists the resources of your servers (list, the default), their resource
templates (templates), or reads one resource (read URI; --server may be left
out when only one server is configured). Servers come from your config files
as for doctor, or from --command / --url. Every page is followed.
Exit status: 0 on success; 1 on an error, or when a server listed has a
config error or did not start (with --server, the config errors of other
servers are shown and do not count; read fails only when the read does); 2
for a bad command line; 130 when interrupted.

Examples:
  mcp-sidecar resources
  mcp-sidecar resources read file:///README.md --server files
  mcp-sidecar resources templates --command "npx -y @modelcontextprotocol/server-everything"
`

// PromptsDoc is the prompts command's help text.
const PromptsDoc = `Usage: mcp-sidecar prompts [list | get NAME [key=value...]] [--server NAME] [flags]

Lists the prompts of your servers with their arguments (list, the default;
? marks an optional one), or gets one prompt with its arguments and prints
its messages (get). Servers come from your config files as for doctor, or
from --command / --url; --server may be left out for get when only one
server has a prompt of that name.
Exit status: 0 on success; 1 on an error, or when a server listed has a
config error or did not start (with --server, the config errors of other
servers are shown and do not count; get fails only when the get does); 2
for a bad command line; 130 when interrupted.

Examples:
  mcp-sidecar prompts
  mcp-sidecar prompts get simple_prompt --command "npx -y @modelcontextprotocol/server-everything"
  mcp-sidecar prompts get review_code code="x := 1" --server assistant
`

// serverSession loads the servers the flags name and opens a session of
// those asked for (all valid ones when only is empty).
func serverSession(ctx context.Context, env Env, cmd string, src *serverFlags, only []string, cacheDir string, stderr *lockedWriter) (*session, *loaded, int, bool) {
	l, err := src.load(env)
	if err != nil {
		return nil, nil, usageError(env, cmd, err), false
	}
	for _, n := range only {
		if note := l.untrustedNote(n); note != "" {
			fmt.Fprintf(stderr, "mcp-sidecar %s: %s\n", cmd, note)
			return nil, nil, exitFailure, false
		}
		if l.servers[n] == nil {
			l.describeSources(stderr)
			fmt.Fprintf(stderr, "mcp-sidecar %s: no valid server %q in the config (servers: %s)\n", cmd, n, strings.Join(l.names, ", "))
			return nil, nil, exitFailure, false
		}
	}
	if len(l.servers) == 0 {
		l.describeSources(stderr)
		fmt.Fprintf(stderr, "mcp-sidecar %s: no valid server in the config\n", cmd)
		return nil, nil, exitFailure, false
	}
	sess, err := openSession(ctx, env, l, sessionOptions{cacheDir: resolveCacheDir(env, cacheDir), only: only, logOut: stderr})
	if err != nil {
		return nil, nil, fail(ctx, stderr, cmd, err), false
	}
	return sess, l, 0, true
}

// readyServers are the session's servers that started, in order; the
// others are reported on stderr.
func (s *session) readyServers(ctx context.Context, w io.Writer, cmd string) ([]string, error) {
	st, err := s.status(ctx)
	if err != nil {
		return nil, err
	}
	var ready []string
	for _, srv := range st.Servers {
		switch srv.State {
		case protocol.StateReady:
			ready = append(ready, srv.Name)
		case protocol.StateDisabled:
		default:
			s.notReady = true
			why := srv.LastError
			if why == "" {
				why = s.run(srv.Name).err
			}
			fmt.Fprintf(w, "mcp-sidecar %s: server %q is %s: %s\n", cmd, srv.Name, srv.State, errorSummary(why))
		}
	}
	return ready, nil
}

// Resources runs the resources command.
func Resources(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	server := fs.String("server", "", "only server `NAME`")
	asJSON := fs.Bool("json", false, "print the results as the sidecar gives them, one JSON document")
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	if code, done := parseFlags(env, "resources", fs, args, 0, 2); done {
		return code
	}
	sub := "list"
	if fs.NArg() > 0 {
		sub = fs.Arg(0)
	}
	switch {
	case (sub == "list" || sub == "templates") && fs.NArg() <= 1:
	case sub == "read" && fs.NArg() == 2:
	case sub == "read":
		return usageError(env, "resources", fmt.Errorf("read needs one URI"))
	default:
		return usageError(env, "resources", fmt.Errorf("unknown subcommand %q (list, templates or read URI)", sub))
	}
	return listOrGet(ctx, env, "resources", &src, *server, *cacheDir, *asJSON, sub != "read", func(sess *session, servers []string, w io.Writer) (any, error) {
		if sub == "read" {
			if len(servers) != 1 {
				return nil, fmt.Errorf("several servers (%s): say which with --server", strings.Join(servers, ", "))
			}
			var res json.RawMessage
			err := sess.h.call(ctx, protocol.MethodResourcesRead, protocol.ResourcesReadParams{SessionID: sess.id, Server: servers[0], URI: fs.Arg(1)}, &res)
			if err != nil {
				return nil, fmt.Errorf("server %q could not read %s: %w", servers[0], fs.Arg(1), err)
			}
			if w != nil {
				printContents(w, res)
			}
			return res, nil
		}
		method, member, what := protocol.MethodResourcesList, "resources", "resources"
		if sub == "templates" {
			method, member, what = protocol.MethodResourceTemplates, "resourceTemplates", "resource templates"
		}
		out := map[string]json.RawMessage{}
		for _, srv := range servers {
			var res json.RawMessage
			if err := sess.h.call(ctx, method, protocol.ServerRequestParams{SessionID: sess.id, Server: srv, All: true}, &res); err != nil {
				return nil, fmt.Errorf("listing the %s of server %q: %w", what, srv, err)
			}
			out[srv] = res
			if w != nil {
				printResourceList(w, srv, member, res)
			}
		}
		return out, nil
	})
}

// Prompts runs the prompts command.
func Prompts(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	server := fs.String("server", "", "only server `NAME`")
	asJSON := fs.Bool("json", false, "print the results as the sidecar gives them, one JSON document")
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	if code, done := parseFlags(env, "prompts", fs, args, 0, -1); done {
		return code
	}
	sub := "list"
	if fs.NArg() > 0 {
		sub = fs.Arg(0)
	}
	switch {
	case sub == "list" && fs.NArg() <= 1:
	case sub == "get" && fs.NArg() >= 2:
	case sub == "get":
		return usageError(env, "prompts", fmt.Errorf("get needs a prompt NAME"))
	default:
		return usageError(env, "prompts", fmt.Errorf("unknown subcommand %q (list or get NAME)", sub))
	}
	promptArgs := map[string]string{}
	for _, kv := range fs.Args()[min(2, fs.NArg()):] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageError(env, "prompts", fmt.Errorf("argument %q is not key=value", kv))
		}
		promptArgs[k] = v
	}
	return listOrGet(ctx, env, "prompts", &src, *server, *cacheDir, *asJSON, sub == "list", func(sess *session, servers []string, w io.Writer) (any, error) {
		lists := map[string]json.RawMessage{}
		for _, srv := range servers {
			var res json.RawMessage
			if err := sess.h.call(ctx, protocol.MethodPromptsList, protocol.ServerRequestParams{SessionID: sess.id, Server: srv, All: true}, &res); err != nil {
				return nil, fmt.Errorf("listing the prompts of server %q: %w", srv, err)
			}
			lists[srv] = res
		}
		if sub == "list" {
			if w != nil {
				for _, srv := range servers {
					printPromptList(w, srv, lists[srv])
				}
			}
			return lists, nil
		}
		name := fs.Arg(1)
		var on, known []string
		for _, srv := range servers {
			for _, p := range promptsOf(lists[srv]) {
				known = append(known, p.Name)
				if p.Name == name {
					on = append(on, srv)
				}
			}
		}
		switch {
		case len(on) == 0:
			msg := fmt.Sprintf("no server has a prompt %q", name)
			if hint := suggest.Closest(name, known); hint != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", hint)
			}
			return nil, fmt.Errorf("%s; 'mcp-sidecar prompts' lists them", msg)
		case len(on) > 1:
			return nil, fmt.Errorf("prompt %q is on several servers (%s): say which with --server", name, strings.Join(on, ", "))
		}
		var res json.RawMessage
		err := sess.h.call(ctx, protocol.MethodPromptsGet, protocol.PromptsGetParams{SessionID: sess.id, Server: on[0], Name: name, Arguments: promptArgs}, &res)
		if err != nil {
			return nil, fmt.Errorf("server %q could not give prompt %q: %w", on[0], name, err)
		}
		if w != nil {
			printPromptMessages(w, res)
		}
		return res, nil
	})
}

// listOrGet opens a session of the servers asked for, runs do on the
// ready ones, and prints (do prints to w for people, or its value is
// printed as JSON). A listing (lists) fails when a server it lists has a
// config error or did not start, as tools does; a get or a read only when
// it fails.
func listOrGet(ctx context.Context, env Env, cmd string, src *serverFlags, server, cacheDir string, asJSON, lists bool, do func(*session, []string, io.Writer) (any, error)) int {
	stderr := &lockedWriter{w: env.Stderr}
	var only []string
	if server != "" {
		only = []string{server}
	}
	sess, l, code, ok := serverSession(ctx, env, cmd, src, only, cacheDir, stderr)
	if !ok {
		return code
	}
	defer sess.close(ctx)
	for _, e := range l.problems() {
		fmt.Fprintln(stderr, "config error:", e.Error())
	}
	servers, err := sess.readyServers(ctx, stderr, cmd)
	if err != nil {
		return fail(ctx, stderr, cmd, err)
	}
	if len(servers) == 0 {
		return fail(ctx, stderr, cmd, fmt.Errorf("no server started"))
	}
	var w io.Writer = env.Stdout
	if asJSON {
		w = nil
	}
	v, err := do(sess, servers, w)
	if err != nil {
		return fail(ctx, stderr, cmd, err)
	}
	if asJSON {
		if err := writeJSON(env.Stdout, v); err != nil {
			return fail(ctx, stderr, cmd, err)
		}
	}
	if lists && (sess.notReady || len(l.usedProblems(only)) > 0) {
		return exitFailure // said on stderr
	}
	return exitOK
}

func printResourceList(w io.Writer, server, member string, res json.RawMessage) {
	var items map[string][]struct {
		URI         string `json:"uri"`
		URITemplate string `json:"uriTemplate"`
		Name        string `json:"name"`
		MIMEType    string `json:"mimeType"`
		Description string `json:"description"`
	}
	_ = json.Unmarshal(res, &items)
	list := items[member]
	fmt.Fprintf(w, "%s (%d)\n", server, len(list))
	for _, r := range list {
		uri := r.URI
		if uri == "" {
			uri = r.URITemplate
		}
		line := "  " + uri
		if r.Name != "" && r.Name != uri {
			line += "  " + r.Name
		}
		if r.MIMEType != "" {
			line += "  (" + r.MIMEType + ")"
		}
		fmt.Fprintln(w, line)
		if d := firstLine(r.Description); d != "" {
			fmt.Fprintf(w, "      %s\n", clip(d, 100))
		}
	}
}

func printContents(w io.Writer, res json.RawMessage) {
	var r struct {
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     *string
			Blob     string `json:"blob"`
		} `json:"contents"`
	}
	_ = json.Unmarshal(res, &r)
	for _, c := range r.Contents {
		if c.Text != nil {
			fmt.Fprintln(w, *c.Text)
		} else {
			fmt.Fprintf(w, "[%s %s, %d bytes of base64]\n", c.URI, c.MIMEType, len(c.Blob))
		}
	}
}

type promptInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Arguments   []struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
	} `json:"arguments"`
}

func promptsOf(res json.RawMessage) []promptInfo {
	var r struct {
		Prompts []promptInfo `json:"prompts"`
	}
	_ = json.Unmarshal(res, &r)
	return r.Prompts
}

func printPromptList(w io.Writer, server string, res json.RawMessage) {
	prompts := promptsOf(res)
	fmt.Fprintf(w, "%s (%d)\n", server, len(prompts))
	for _, p := range prompts {
		var args []string
		for _, a := range p.Arguments {
			mark := "?"
			if a.Required {
				mark = ""
			}
			args = append(args, a.Name+mark)
		}
		fmt.Fprintf(w, "  %s(%s)\n", p.Name, strings.Join(args, ", "))
		if d := firstLine(p.Description); d != "" {
			fmt.Fprintf(w, "      %s\n", clip(d, 100))
		}
	}
}

func printPromptMessages(w io.Writer, res json.RawMessage) {
	var r struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(res, &r)
	if r.Description != "" {
		fmt.Fprintln(w, r.Description)
		fmt.Fprintln(w)
	}
	for _, m := range r.Messages {
		fmt.Fprintf(w, "%s:\n", m.Role)
		printResult(indentWriter{w}, []json.RawMessage{m.Content}, nil, false)
	}
}

// indentWriter indents each line written by two spaces.
type indentWriter struct{ w io.Writer }

func (iw indentWriter) Write(p []byte) (int, error) {
	s := strings.TrimSuffix(string(p), "\n")
	_, err := io.WriteString(iw.w, "  "+strings.ReplaceAll(s, "\n", "\n  ")+"\n")
	return len(p), err
}
