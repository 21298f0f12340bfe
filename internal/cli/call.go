package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/suggest"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// CallDoc is the call command's help text.
const CallDoc = `Usage: mcp-sidecar call [SERVER] TOOL [ARGS...] [--sandbox-state FILE] [flags]

Starts the servers of your config (as for doctor; or one given with
--command or --url), calls TOOL once through the sidecar, prints the result
and stops the servers. TOOL is the server's own name for the tool, or the
qualified name tools shows (mcp__SERVER__TOOL); SERVER may be left out when
only one server has a tool of that name. A name that does not exist gets a
suggestion.

ARGS are the tool's arguments, either
  key=value ...   each value typed by the tool's input schema: numbers,
                  booleans, arrays and objects (as JSON) where the schema
                  says so, strings otherwise (quote=needed is not)
  '{"k": ...}'    one JSON object
  -               one JSON object read from stdin
Without ARGS the tool gets {}.

Arguments the tool's input schema requires are checked before the call:
a missing one is named, with the tool's signature, and nothing is sent.

The result is shown readably: text content as text, other content
summarised, structuredContent as indented JSON (once: a text block that is
its JSON is not shown again), and isError said plainly. Then comes the
_meta the server received. The sidecar does not echo it, so it is worked
out the way the sidecar builds it, from the same inputs: your --meta
entries, the --sandbox-state policy, the sandbox capability the server
advertised and the launcher (--launcher, if it passed the probe, and only
for stdio servers).
The sandbox keys (codex/sandbox-state, its copy codex/sandbox-state-meta,
codex/sandbox-launcher) go only to servers that advertise
codex/sandbox-state; the policy is sent as the bytes in FILE.

On a terminal, the tool's progress is shown on one line of stderr while it
runs (--progress=false: not at all; elsewhere, --progress prints each
notification as a line), and when a server asks the user something
(elicitation) the form is asked there, field by field, each answer checked
against the field's type, then "Send this to SERVER? [Y/n]" (n declines,
Ctrl-D cancels). Without a terminal on stdin and stderr (or with the
arguments read from stdin), servers are told the user cannot be asked;
no server is offered roots. Exit status: 0 when the tool ran and succeeded, 1 for an
error or an isError result (a config error or failed startup of another
server does not count: 'mcp-sidecar doctor' shows those), 2 for a bad
command line, 130 when interrupted.

Examples:
  mcp-sidecar call github search_issues query="is:open label:bug" limit=5
  mcp-sidecar call mcp__github__search_issues '{"query":"is:open"}'
  mcp-sidecar call echo message=hi --command "npx -y @modelcontextprotocol/server-everything"
  mcp-sidecar call example sandbox_info --sandbox-state policy.json --launcher "$(command -v codex)"
  echo '{"text":"hi"}' | mcp-sidecar call example echo - --json
`

type callReport struct {
	Server            string          `json:"server"`
	Tool              string          `json:"tool"`
	Result            json.RawMessage `json:"result"`
	MetaSent          map[string]any  `json:"metaSent"`
	SandboxCapability string          `json:"sandboxCapability"`
}

// isArgument reports whether a positional argument of call is a tool
// argument rather than a server or tool name.
func isArgument(s string) bool {
	return s == "-" || strings.HasPrefix(strings.TrimSpace(s), "{") || strings.Contains(s, "=")
}

// Call runs the call command.
func Call(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	stateFile := fs.String("sandbox-state", "", "`FILE` holding the call's sandbox policy, one JSON value (\"-\": stdin)")
	metaArg := fs.String("meta", "", "host _meta entries as a JSON `OBJECT`, e.g. '{\"threadId\":\"t1\"}'")
	launcher := fs.String("launcher", "", "absolute `PATH` of a candidate sandbox launcher (the Codex executable)")
	timeout := fs.Duration("timeout", 0, "how long the call may take, a `DURATION` such as 30s (default: the server's tool_timeout_sec)")
	showProgress := fs.Bool("progress", false, "ask for progress notifications and show them on stderr (on a terminal: always, on one line; --progress=false: never)")
	asJSON := fs.Bool("json", false, "print the raw result and the _meta sent as one JSON document")
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	if code, done := parseFlags(&env, "call", fs, args, 1, -1); done {
		return code
	}
	usage := func(format string, a ...any) int {
		return usageError(env, "call", fmt.Errorf(format, a...))
	}
	var names, argWords []string
	for _, p := range fs.Args() {
		if len(argWords) == 0 && len(names) < 2 && !isArgument(p) {
			names = append(names, p)
		} else {
			argWords = append(argWords, p)
		}
	}
	if len(names) == 0 {
		return usage("no TOOL given")
	}
	server, tool := "", names[len(names)-1]
	if len(names) == 2 {
		server = names[0]
	}
	jsonArgs, stdinUsed := json.RawMessage(nil), false
	if len(argWords) == 1 && (argWords[0] == "-" || strings.HasPrefix(strings.TrimSpace(argWords[0]), "{")) {
		raw := []byte(argWords[0])
		if argWords[0] == "-" {
			stdinUsed = true
			var err error
			if raw, err = readAll(env.Stdin, "stdin"); err != nil {
				return usage("%v", err)
			}
		}
		if !isObject(raw) {
			return usage("the arguments must be one JSON object, like '{\"text\":\"hi\"}', or key=value pairs")
		}
		jsonArgs = bytes.TrimSpace(raw)
	} else {
		for _, w := range argWords {
			if !strings.Contains(w, "=") {
				return usage("argument %q is not key=value (a JSON object must be the only argument)", w)
			}
		}
	}
	var state json.RawMessage
	if *stateFile != "" {
		if *stateFile == "-" && stdinUsed {
			return usage("the arguments and --sandbox-state cannot both come from stdin")
		}
		var err error
		state, err = readFileOrStdin(*stateFile, env.Stdin)
		if err != nil {
			return usage("--sandbox-state: %v", err)
		}
		if !sandbox.StatePresent(state) {
			return usage("--sandbox-state: %s holds no policy", *stateFile)
		}
		if err := sandbox.ValidateState(state); err != nil {
			return usage("--sandbox-state %s: %v", *stateFile, err)
		}
	}
	hostMeta := map[string]json.RawMessage{}
	if *metaArg != "" {
		if !isObject([]byte(*metaArg)) || json.Unmarshal([]byte(*metaArg), &hostMeta) != nil {
			return usage("--meta must be one JSON object")
		}
	}
	// On a terminal, progress is shown on one line, redrawn, unless
	// --progress=false; elsewhere as lines, with --progress.
	liveProgress := IsTerminal(env.Stderr, env.lookup) && (*showProgress || !fs.Changed("progress"))
	plainProgress := *showProgress && !liveProgress
	if liveProgress || plainProgress {
		hostMeta["progressToken"] = json.RawMessage(`"mcp-sidecar-call"`)
	}
	// A server's questions are asked on the terminal: stdin to answer,
	// stderr to ask (stdout stays the result's).
	askOnTerminal := !stdinUsed && *stateFile != "-" && IsTerminal(env.Stdin, env.lookup) && IsTerminal(env.Stderr, env.lookup)
	if *timeout < 0 {
		return usage("--timeout must not be negative")
	}

	stderr := &lockedWriter{w: env.Stderr}
	var con *console
	if liveProgress || askOnTerminal {
		var in *lineInput
		if askOnTerminal {
			in = newLineInput(env.Stdin)
		}
		con = newConsole(env, in)
		stderr = &lockedWriter{w: con}
	}
	l, err := src.load(env)
	if err != nil {
		return usage("%v", err)
	}
	var only []string
	if server != "" {
		if l.servers[server] == nil {
			for _, e := range l.invalid(server) {
				fmt.Fprintln(stderr, "config error:", e.Error())
			}
			if note := l.untrustedNote(server); note != "" {
				fmt.Fprintln(stderr, "mcp-sidecar call:", note)
			} else if len(l.invalid(server)) == 0 {
				l.describeSources(stderr)
				msg := fmt.Sprintf("no server %q in the config (servers: %s)", server, strings.Join(l.names, ", "))
				if hint := suggest.Closest(server, l.names); hint != "" {
					msg += fmt.Sprintf("; did you mean %q?", hint)
				}
				fmt.Fprintln(stderr, "mcp-sidecar call:", msg)
			}
			return exitFailure
		}
		only = []string{server}
	} else if len(l.servers) == 0 {
		l.describeSources(stderr)
		fmt.Fprintln(stderr, "mcp-sidecar call: no valid server in the config")
		return exitFailure
	}

	if env.verbose {
		l.describeSources(stderr)
	}
	prog := startupProgress(env, stderr, l.started(only), env.verbose)
	opts := sessionOptions{cacheDir: resolveCacheDir(env, *cacheDir), launcher: *launcher, only: only, logOut: stderr, progress: prog}
	if askOnTerminal {
		opts.elicit = con.elicit
	}
	sess, err := openSession(ctx, env, l, opts)
	if prog != nil {
		prog.finish()
	}
	if err != nil {
		return fail(ctx, stderr, "call", err)
	}
	defer sess.close(ctx)
	list, err := sess.toolsList(ctx)
	if err != nil {
		return fail(ctx, stderr, "call", err)
	}
	target, problem := resolveTool(list, sess, server, tool)
	if problem != "" {
		if interrupted(ctx) {
			return exitInterrupted
		}
		fmt.Fprintln(stderr, "mcp-sidecar call:", problem)
		return exitFailure
	}
	server, tool = target.Server, target.Tool.Tool
	cfg := l.servers[server]
	arguments := jsonArgs
	if arguments == nil {
		if arguments, err = typedArguments(argWords, target.InputSchema); err != nil {
			fmt.Fprintf(stderr, "mcp-sidecar call: %v\n", err)
			return exitUsage
		}
	}
	if missing := missingArguments(arguments, target.InputSchema); len(missing) > 0 {
		fmt.Fprintf(stderr, "mcp-sidecar call: tool %q needs %s: %s\n", tool, argumentList(missing), signature(tool, target.InputSchema))
		return exitUsage
	}
	if liveProgress || plainProgress {
		sess.h.onNotification(func(n hostclient.Notification) {
			if n.Method != protocol.NotifyProgress {
				return
			}
			var p protocol.ProgressParams
			if json.Unmarshal(n.Params, &p) != nil {
				return
			}
			if liveProgress {
				con.progress(p.Value)
			} else {
				fmt.Fprintf(stderr, "progress %s\n", formatProgress(p.Value))
			}
		})
	}

	params := protocol.ToolsCallParams{SessionID: sess.id, Server: server, Tool: tool, Arguments: arguments, SandboxState: state, TimeoutMs: timeout.Milliseconds()}
	if len(hostMeta) > 0 {
		params.Meta = hostMeta
	}
	var raw json.RawMessage
	callErr := sess.h.call(ctx, protocol.MethodToolsCall, params, &raw)
	if con != nil {
		con.done()
	}

	// What the server received, recomputed from the same inputs.
	st, err := sess.status(ctx)
	if err != nil {
		return fail(ctx, stderr, "call", err)
	}
	var capability sandbox.Capability
	for _, s := range st.Servers {
		if s.Name == server {
			capability = capabilityOf(s)
		}
	}
	launcherPath := ""
	if sess.init.Launcher.Status == "verified" && cfg.Transport() == config.TransportStdio {
		launcherPath = *launcher
	}
	meta, dropped := sandbox.BuildMeta(sandbox.Injection{
		Capability: capability,
		State:      state,
		Launcher:   launcherPath,
		HostMeta:   params.Meta,
		Transport:  cfg.Transport(),
	})

	if callErr != nil {
		return fail(ctx, stderr, "call", callError(callErr, sess.l, server, tool, *timeout))
	}
	var res struct {
		Content    []json.RawMessage `json:"content"`
		Structured json.RawMessage   `json:"structuredContent"`
		IsError    bool              `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		fmt.Fprintf(stderr, "mcp-sidecar call: the result is not a CallToolResult: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		rep := callReport{Server: server, Tool: tool, Result: raw, MetaSent: meta, SandboxCapability: describeCapability(capability)}
		if err := writeJSON(env.Stdout, rep); err != nil {
			fmt.Fprintln(stderr, "mcp-sidecar call:", err)
			return exitFailure
		}
	} else {
		printResult(env.Stdout, res.Content, res.Structured, res.IsError, newPainter(env, env.Stdout))
		printMeta(env.Stdout, server, meta, dropped, capability, state, *launcher, sess.init.Launcher)
	}
	if res.IsError {
		return exitFailure
	}
	return exitOK
}

// callError is a failed call's error for people. The sidecar names the
// bound it applied as the host gave it (timeoutMs): for a person it is
// --timeout. A server that asks for authorization gets the login command.
func callError(err error, l *loaded, server, tool string, timeout time.Duration) error {
	err = describeRPCError(err)
	var re *rpcError
	switch {
	case errors.As(err, &re) && re.kind == protocol.KindToolTimeout && timeout > 0:
		return fmt.Errorf("tool %q of server %q did not answer within %s (--timeout)", tool, server, timeout)
	case errors.As(err, &re) && re.kind == protocol.KindNeedsAuthorization:
		return fmt.Errorf("server %q needs authorization: %s", server, l.loginHint(server))
	}
	return err
}

func printResult(w io.Writer, content []json.RawMessage, structured json.RawMessage, isError bool, p painter) {
	if isError {
		fmt.Fprintln(w, p.paint(red, "The tool ran and reported an error (isError: true):"))
	}
	hasStructured := len(bytes.TrimSpace(structured)) > 0 && string(bytes.TrimSpace(structured)) != "null"
	shown := 0
	for _, c := range content {
		// MCP has a tool that returns structuredContent send its JSON as
		// text too: that text is the same thing, shown once below.
		if hasStructured && sameJSONText(c, structured) {
			continue
		}
		shown++
		var item struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
			URI      string `json:"uri"`
			Resource *struct {
				URI      string `json:"uri"`
				MIMEType string `json:"mimeType"`
				Text     string `json:"text"`
				Blob     string `json:"blob"`
			} `json:"resource"`
		}
		if json.Unmarshal(c, &item) != nil {
			fmt.Fprintf(w, "%s\n", c)
			continue
		}
		switch item.Type {
		case "text":
			fmt.Fprintln(w, item.Text)
		case "image", "audio":
			fmt.Fprintf(w, "[%s %s, %d bytes of base64]\n", item.Type, item.MIMEType, len(item.Data))
		case "resource_link":
			fmt.Fprintf(w, "[resource link %s]\n", item.URI)
		case "resource":
			if item.Resource == nil {
				fmt.Fprintf(w, "%s\n", c)
				continue
			}
			if item.Resource.Blob != "" {
				fmt.Fprintf(w, "[resource %s %s, %d bytes of base64]\n", item.Resource.URI, item.Resource.MIMEType, len(item.Resource.Blob))
			} else {
				fmt.Fprintf(w, "[resource %s]\n%s\n", item.Resource.URI, item.Resource.Text)
			}
		default:
			fmt.Fprintf(w, "%s\n", c)
		}
	}
	switch {
	case hasStructured && shown == 0:
		fmt.Fprintln(w, indentJSON(structured, ""))
	case hasStructured:
		fmt.Fprintln(w, "\nstructuredContent:")
		fmt.Fprintln(w, indentJSON(structured, "  "))
	}
}

// sameJSONText reports whether content is a text block whose text is the
// JSON value structured (the same value: whitespace, key order and number
// spelling aside).
func sameJSONText(content, structured json.RawMessage) bool {
	var item struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &item) != nil || item.Type != "text" {
		return false
	}
	var a, b any
	if !decodeNumbers(item.Text, &a) || !decodeNumbers(string(structured), &b) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// decodeNumbers decodes one JSON value into v, numbers as json.Number.
func decodeNumbers(s string, v *any) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}

func printMeta(w io.Writer, server string, meta map[string]any, dropped []string, c sandbox.Capability, state json.RawMessage, launcher string, ls protocol.LauncherStatus) {
	fmt.Fprintf(w, "\n_meta sent to %s:\n", server)
	if len(meta) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		b, err := marshalCompact(meta[k])
		if err != nil {
			b = []byte(err.Error())
		}
		fmt.Fprintf(w, "  %s: %s\n", k, b)
	}
	switch {
	case !c.OptedIn():
		if sandbox.StatePresent(state) {
			fmt.Fprintf(w, "The sandbox keys were left out: %s does not advertise codex/sandbox-state.\n", server)
		}
	case !sandbox.StatePresent(state):
		fmt.Fprintf(w, "%s advertises %s, but no --sandbox-state was given, so no sandbox keys were sent.\n", server, describeCapability(c))
	case launcher != "" && ls.Status != "verified":
		fmt.Fprintf(w, "No codex/sandbox-launcher: %s is unavailable (%s).\n", launcher, ls.Reason)
	}
	if len(dropped) > 0 {
		fmt.Fprintf(w, "Dropped from --meta (only the sidecar sets sandbox keys; values must be JSON): %s\n", strings.Join(dropped, ", "))
	}
}

func indentJSON(raw json.RawMessage, prefix string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), prefix, "  "); err != nil {
		return prefix + string(raw)
	}
	return prefix + b.String()
}

// marshalCompact is v's JSON without HTML escaping: a json.RawMessage
// keeps its bytes (whitespace compacted), big numbers included.
func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// maxInput bounds JSON read from a file or stdin.
const maxInput = 16 << 20

func readAll(r io.Reader, what string) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("no %s", what)
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("%s is larger than %d bytes", what, maxInput)
	}
	return b, nil
}

func readFileOrStdin(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return readAll(stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path)
}

// isObject reports whether b is exactly one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}
