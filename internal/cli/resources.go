package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/internal/suggest"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// ResourcesDoc is the resources command's help text.
const ResourcesDoc = `Usage: mcp-sidecar resources [list | templates | read URI] [--server NAME] [flags]

Lists the resources of your servers (list, the default), their resource
templates (templates), or reads one resource (read URI). Without --server,
every server that offers resources is listed, and those that offer none
are named below; read goes to the server that lists the URI (or has a
template that matches it). Servers come from your config files as for
doctor, or from --command / --url. Every page is followed.
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
its messages (get). Without --server, every server that offers prompts is
listed, and those that offer none are named below. Servers come from your
config files as for doctor, or from --command / --url; --server may be left
out for get when only one server has a prompt of that name.
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
	if env.verbose {
		l.describeSources(stderr)
	}
	prog := startupProgress(env, stderr, l.started(only), env.verbose)
	sess, err := openSession(ctx, env, l, sessionOptions{cacheDir: resolveCacheDir(env, cacheDir), only: only, logOut: stderr, progress: prog})
	if prog != nil {
		prog.finish()
	}
	if err != nil {
		return nil, nil, fail(ctx, stderr, cmd, err), false
	}
	return sess, l, 0, true
}

// readyServers are the session's servers that started, in order, with
// their status; the others are reported on stderr.
func (s *session) readyServers(ctx context.Context, w io.Writer, cmd string) ([]protocol.ServerStatus, error) {
	st, err := s.status(ctx)
	if err != nil {
		return nil, err
	}
	var ready []protocol.ServerStatus
	for _, srv := range st.Servers {
		switch srv.State {
		case protocol.StateReady:
			ready = append(ready, srv)
		case protocol.StateDisabled:
		default:
			s.notReady = true
			why := srv.LastError
			if why == "" {
				why = s.run(srv.Name).err
			}
			fmt.Fprintf(w, "mcp-sidecar %s: %s\n", cmd, s.notStarted(srv, why))
		}
	}
	return ready, nil
}

// notStarted says why a server of the session is not ready, and for one
// that needs authorization how to give it.
func (s *session) notStarted(srv protocol.ServerStatus, why string) string {
	if srv.State == protocol.StateNeedsAuthorization {
		return fmt.Sprintf("server %q needs authorization: %s", srv.Name, s.l.loginHint(srv.Name))
	}
	return fmt.Sprintf("server %q is %s: %s", srv.Name, srv.State, errorSummary(why))
}

// offers reports whether a server declared the MCP capability ("resources"
// or "prompts") in its initialize result.
func offers(st protocol.ServerStatus, capability string) bool {
	var caps map[string]json.RawMessage
	if json.Unmarshal(st.Capabilities, &caps) != nil {
		return false
	}
	v, ok := caps[capability]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

// unsupported reports whether err is a server's "Method not found": a
// server that declared a capability but does not implement the method
// offers nothing of it either.
func unsupported(err error) bool {
	var re *rpcError
	return errors.As(err, &re) && re.kind == protocol.KindServerError && re.serverCode == protocol.CodeMethodNotFound
}

// lister is what a listing is of: the MCP capability, the host protocol
// method, the member of its result and the words for people.
type lister struct {
	capability, method, member, what string
}

var (
	listResources = lister{"resources", protocol.MethodResourcesList, "resources", "resources"}
	listTemplates = lister{"resources", protocol.MethodResourceTemplates, "resourceTemplates", "resource templates"}
	listPrompts   = lister{"prompts", protocol.MethodPromptsList, "prompts", "prompts"}
)

// listAll lists what l names of every server that offers it: the results
// by server, and the servers that offer none (they did not declare the
// capability, or answered that they do not know the method).
func (l lister) listAll(ctx context.Context, sess *session, servers []protocol.ServerStatus) (map[string]json.RawMessage, []string, error) {
	out := map[string]json.RawMessage{}
	var none []string
	for _, srv := range servers {
		if !offers(srv, l.capability) {
			none = append(none, srv.Name)
			continue
		}
		var res json.RawMessage
		err := sess.h.call(ctx, l.method, protocol.ServerRequestParams{SessionID: sess.id, Server: srv.Name, All: true}, &res)
		switch {
		case unsupported(err):
			none = append(none, srv.Name)
		case err != nil:
			return nil, nil, fmt.Errorf("listing the %s of server %q: %w", l.what, srv.Name, err)
		default:
			out[srv.Name] = res
		}
	}
	return out, none, nil
}

// print prints the listings of the servers in order, then the servers
// that offer none.
func (l lister) print(w io.Writer, servers []protocol.ServerStatus, lists map[string]json.RawMessage, none []string) {
	for _, srv := range servers {
		if res, ok := lists[srv.Name]; ok {
			if l.member == "prompts" {
				printPromptList(w, srv.Name, res)
			} else {
				printResourceList(w, srv.Name, l.member, res)
			}
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(w, "No %s offered by: %s\n", l.what, strings.Join(none, ", "))
	}
}

// Resources runs the resources command.
func Resources(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	server := fs.String("server", "", "only server `NAME`")
	asJSON := fs.Bool("json", false, "print the results as the sidecar gives them, one JSON document")
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	if code, done := parseFlags(&env, "resources", fs, args, 0, 2); done {
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
	return listOrGet(ctx, env, "resources", &src, *server, *cacheDir, *asJSON, sub != "read", func(sess *session, servers []protocol.ServerStatus, w io.Writer) (any, error) {
		if sub == "read" {
			uri := fs.Arg(1)
			srv, err := serverOf(ctx, sess, servers, uri, *server != "")
			if err != nil {
				return nil, err
			}
			var res json.RawMessage
			err = sess.h.call(ctx, protocol.MethodResourcesRead, protocol.ResourcesReadParams{SessionID: sess.id, Server: srv, URI: uri}, &res)
			if err != nil {
				return nil, fmt.Errorf("server %q could not read %s: %w", srv, uri, err)
			}
			if w != nil {
				printContents(w, res)
			}
			return res, nil
		}
		l := listResources
		if sub == "templates" {
			l = listTemplates
		}
		return l.listed(ctx, sess, servers, *server, w)
	})
}

// listed lists and prints (to w, unless nil) what l names. A server named
// with --server that offers none is an error.
func (l lister) listed(ctx context.Context, sess *session, servers []protocol.ServerStatus, named string, w io.Writer) (map[string]json.RawMessage, error) {
	lists, none, err := l.listAll(ctx, sess, servers)
	if err != nil {
		return nil, err
	}
	if named != "" && len(none) > 0 {
		return nil, fmt.Errorf("server %q offers no %s", named, l.what)
	}
	if w != nil {
		l.print(w, servers, lists, none)
	}
	return lists, nil
}

// serverOf is the server to read uri from: the one named, the only one
// offering resources, or the one whose resources (or resource templates)
// include uri.
func serverOf(ctx context.Context, sess *session, servers []protocol.ServerStatus, uri string, named bool) (string, error) {
	var with []protocol.ServerStatus
	for _, srv := range servers {
		if named || offers(srv, "resources") {
			with = append(with, srv)
		}
	}
	switch {
	case len(with) == 1:
		return with[0].Name, nil
	case len(with) == 0:
		return "", fmt.Errorf("no server offers resources")
	}
	var names, have []string
	for _, srv := range with {
		names = append(names, srv.Name)
		if listsURI(ctx, sess, srv.Name, uri) {
			have = append(have, srv.Name)
		}
	}
	switch len(have) {
	case 1:
		return have[0], nil
	case 0:
		return "", fmt.Errorf("no server lists %s (servers with resources: %s): say which with --server", uri, strings.Join(names, ", "))
	}
	return "", fmt.Errorf("several servers list %s (%s): say which with --server", uri, strings.Join(have, ", "))
}

// listsURI reports whether server lists uri among its resources, or has a
// resource template that matches it.
func listsURI(ctx context.Context, sess *session, server, uri string) bool {
	for _, l := range []lister{listResources, listTemplates} {
		var res map[string][]struct {
			URI         string `json:"uri"`
			URITemplate string `json:"uriTemplate"`
		}
		if sess.h.call(ctx, l.method, protocol.ServerRequestParams{SessionID: sess.id, Server: server, All: true}, &res) != nil {
			continue
		}
		for _, r := range res[l.member] {
			if r.URI == uri || (r.URITemplate != "" && templateMatches(r.URITemplate, uri)) {
				return true
			}
		}
	}
	return false
}

// templateMatches reports whether uri is an expansion of an RFC 6570 URI
// template: each {expression} stands for any text ({+x} and {#x} may span
// slashes, the others not).
func templateMatches(template, uri string) bool {
	var b strings.Builder
	b.WriteString("^")
	for {
		i := strings.IndexByte(template, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(template))
			break
		}
		j := strings.IndexByte(template[i:], '}')
		if j < 0 {
			b.WriteString(regexp.QuoteMeta(template))
			break
		}
		b.WriteString(regexp.QuoteMeta(template[:i]))
		if expr := template[i+1 : i+j]; strings.HasPrefix(expr, "+") || strings.HasPrefix(expr, "#") {
			b.WriteString(".*")
		} else {
			b.WriteString("[^/]*")
		}
		template = template[i+j+1:]
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(uri)
}

// Prompts runs the prompts command.
func Prompts(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	server := fs.String("server", "", "only server `NAME`")
	asJSON := fs.Bool("json", false, "print the results as the sidecar gives them, one JSON document")
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	if code, done := parseFlags(&env, "prompts", fs, args, 0, -1); done {
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
	return listOrGet(ctx, env, "prompts", &src, *server, *cacheDir, *asJSON, sub == "list", func(sess *session, servers []protocol.ServerStatus, w io.Writer) (any, error) {
		if sub == "list" {
			return listPrompts.listed(ctx, sess, servers, *server, w)
		}
		lists, _, err := listPrompts.listAll(ctx, sess, servers)
		if err != nil {
			return nil, err
		}
		name := fs.Arg(1)
		var on, known []string
		for _, srv := range servers {
			for _, p := range promptsOf(lists[srv.Name]) {
				known = append(known, p.Name)
				if p.Name == name {
					on = append(on, srv.Name)
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
		err = sess.h.call(ctx, protocol.MethodPromptsGet, protocol.PromptsGetParams{SessionID: sess.id, Server: on[0], Name: name, Arguments: promptArgs}, &res)
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
func listOrGet(ctx context.Context, env Env, cmd string, src *serverFlags, server, cacheDir string, asJSON, lists bool, do func(*session, []protocol.ServerStatus, io.Writer) (any, error)) int {
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
		printResult(indentWriter{w}, []json.RawMessage{m.Content}, nil, false, painter{})
	}
}

// indentWriter indents each line written by two spaces.
type indentWriter struct{ w io.Writer }

func (iw indentWriter) Write(p []byte) (int, error) {
	s := strings.TrimSuffix(string(p), "\n")
	_, err := io.WriteString(iw.w, "  "+strings.ReplaceAll(s, "\n", "\n  ")+"\n")
	return len(p), err
}
