package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// sessionOptions say how to open the one session of a command.
type sessionOptions struct {
	cacheDir string
	launcher string
	// only limits the session to these servers (nil: all).
	only []string
	// lazy turns mcp_lazy_stdio_startup on: servers with a cached catalog
	// stay dormant, as in a harness that starts lazily.
	lazy bool
	// progress, if set, sees each server's startup.
	progress progress
	// logOut receives the sidecar's own warnings; quietStdout leaves out
	// those about servers' non-JSON stdout lines, for a command that
	// reports them itself.
	logOut      *lockedWriter
	quietStdout bool
	// authorize, when set, is the host's part of OAuth: the session
	// declares capabilities.authorization and it answers mcp/authorize.
	// authorizationTimeout bounds a flow (0: the sidecar's default).
	authorize            func(ctx context.Context, p protocol.AuthorizeParams) (protocol.AuthorizeResult, error)
	authorizationTimeout time.Duration
	// elicit, when set, asks the person what a server asks (form
	// elicitation): the session declares capabilities.elicitation.
	elicit func(ctx context.Context, p protocol.ElicitParams) (any, error)
}

// serverRun is one server's startup as the host saw it.
type serverRun struct {
	status     string // last mcp/startupStatus status
	err        string
	tools      *int
	began      time.Time
	ended      time.Time
	lastStderr string // last stderr line forwarded as mcp/log
}

// elapsed is the startup time as the host measured it: from the server's
// "starting" to its terminal status.
func (r *serverRun) elapsed() time.Duration {
	if r == nil || r.began.IsZero() || r.ended.IsZero() {
		return 0
	}
	return r.ended.Sub(r.began)
}

// session is a started in-process sidecar with one open session whose
// round-0 startup has completed.
type session struct {
	h       *host
	l       *loaded
	id      string
	init    protocol.InitializeResult
	opened  []protocol.ServerState
	mu      sync.Mutex
	runs    map[string]*serverRun
	summary protocol.StartupCompleteParams
	// notReady is set by readyServers when a server of the session did
	// not start.
	notReady bool
}

func (s *session) run(name string) *serverRun {
	if s == nil {
		return &serverRun{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[name]
	if r == nil {
		return &serverRun{}
	}
	cp := *r
	return &cp
}

// openSession starts the sidecar, initializes it with the loaded config,
// opens a session (eager unless opts.lazy) and waits for round 0 to end.
// The caller closes the session's host.
func openSession(ctx context.Context, env Env, l *loaded, opts sessionOptions) (*session, error) {
	init, err := l.initializeParams(env, opts.cacheDir, opts.launcher)
	if err != nil {
		return nil, err
	}
	if opts.lazy {
		init["features"].(map[string]bool)["mcp_lazy_stdio_startup"] = true
	}
	caps := map[string]any{}
	if opts.authorize != nil {
		caps["authorization"] = map[string]any{}
		if opts.authorizationTimeout > 0 {
			init["limits"].(map[string]any)["authorizationTimeoutMs"] = opts.authorizationTimeout.Milliseconds()
		}
	}
	if opts.elicit != nil {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	input := terminalInput(env) // VS Code inputs, asked on the terminal (inputs.go)
	if input != nil {
		caps["inputs"] = true
	}
	var onRequest func(context.Context, string, json.RawMessage) (any, error)
	if len(caps) > 0 {
		init["capabilities"] = caps
		onRequest = func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			switch {
			case method == protocol.RequestAuthorize && opts.authorize != nil:
				var p protocol.AuthorizeParams
				if err := json.Unmarshal(params, &p); err != nil {
					return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
				}
				return opts.authorize(ctx, p)
			case method == protocol.RequestElicit && opts.elicit != nil:
				var p protocol.ElicitParams
				if err := json.Unmarshal(params, &p); err != nil {
					return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
				}
				return opts.elicit(ctx, p)
			case method == protocol.RequestInput && input != nil:
				var p protocol.InputParams
				if err := json.Unmarshal(params, &p); err != nil {
					return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
				}
				return input(ctx, p)
			}
			return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, method+" is not handled by this command")
		}
	}
	s := &session{l: l, runs: map[string]*serverRun{}}
	complete := make(chan struct{})
	var completeOnce sync.Once
	s.h = startHost(ctx, env, opts.logOut, onRequest, l.startupTimeout)
	if opts.quietStdout {
		s.h.log.setQuietStdout()
	}
	if _, live := opts.progress.(*ttyProgress); live {
		// Lines printed now would break the live display: they follow it.
		s.h.log.hold()
		defer s.h.log.release()
	}
	s.h.onNotification(func(n hostclient.Notification) {
		switch n.Method {
		case protocol.NotifyStartupStatus:
			var p protocol.StartupStatusParams
			if json.Unmarshal(n.Params, &p) != nil {
				return
			}
			now := time.Now()
			s.mu.Lock()
			r := s.runs[p.Server]
			if r == nil {
				r = &serverRun{}
				s.runs[p.Server] = r
			}
			r.status, r.tools = p.Status, p.Tools
			if p.Status == protocol.StatusStarting {
				r.began, r.ended, r.err = now, time.Time{}, ""
			} else {
				r.ended, r.err = now, s.h.say(p.Error)
			}
			cp := *r
			s.mu.Unlock()
			if opts.progress != nil {
				opts.progress.update(p.Server, &cp)
			}
		case protocol.NotifyStartupComplete:
			var p protocol.StartupCompleteParams
			if json.Unmarshal(n.Params, &p) != nil || p.Round != 0 {
				return
			}
			s.mu.Lock()
			s.summary = p
			s.mu.Unlock()
			completeOnce.Do(func() { close(complete) })
		case protocol.NotifyLog:
			var p protocol.LogParams
			if json.Unmarshal(n.Params, &p) != nil {
				return
			}
			if env.verbose {
				s.h.log.line(describeServerLog(p))
			}
			if p.Level != "stderr" {
				return
			}
			var line string
			if json.Unmarshal(p.Data, &line) != nil || strings.TrimSpace(line) == "" {
				return
			}
			s.mu.Lock()
			r := s.runs[p.Server]
			if r == nil {
				r = &serverRun{}
				s.runs[p.Server] = r
			}
			r.lastStderr = strings.TrimSpace(line)
			s.mu.Unlock()
		}
	})
	fail := func(err error) (*session, error) {
		s.h.close(ctx)
		return nil, err
	}
	if s.init, err = s.h.initialize(ctx, init); err != nil {
		return fail(fmt.Errorf("could not start the servers: %w", err))
	}
	open := map[string]any{"startup": "eager", "cwd": env.Cwd}
	if opts.lazy {
		open["startup"] = "lazy"
	}
	if opts.only != nil {
		open["servers"] = opts.only
	}
	var opened protocol.SessionOpenResult
	if err := s.h.call(ctx, protocol.MethodSessionOpen, open, &opened); err != nil {
		return fail(fmt.Errorf("could not start the servers: %w", err))
	}
	s.id, s.opened = opened.SessionID, opened.Servers
	if opts.progress != nil {
		for _, st := range opened.Servers {
			opts.progress.add(st.Name, st.State)
		}
	}
	select {
	case <-complete:
	case <-ctx.Done():
		return fail(context.Cause(ctx))
	}
	if opts.progress != nil {
		opts.progress.finish()
	}
	s.h.log.release()
	return s, nil
}

func (s *session) close(ctx context.Context) { s.h.close(ctx) }

// listedTool is a tool of tools/list: the object as a harness receives it
// (Raw: every member, execution and later ones included) and its decoded
// common members.
type listedTool struct {
	protocol.Tool
	Raw json.RawMessage
}

// toolsListing is tools/list's result with each tool kept whole.
type toolsListing struct {
	Tools   []listedTool
	Servers []protocol.ServerCatalog
}

func (s *session) toolsList(ctx context.Context) (toolsListing, error) {
	var res struct {
		Tools   []json.RawMessage        `json:"tools"`
		Servers []protocol.ServerCatalog `json:"servers"`
	}
	if err := s.h.call(ctx, protocol.MethodToolsList, protocol.ToolsListParams{SessionID: s.id}, &res); err != nil {
		return toolsListing{}, fmt.Errorf("listing the tools: %w", err)
	}
	for i := range res.Servers {
		res.Servers[i].Error = s.h.say(res.Servers[i].Error)
	}
	out := toolsListing{Servers: res.Servers, Tools: make([]listedTool, 0, len(res.Tools))}
	for _, raw := range res.Tools {
		var t protocol.Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return toolsListing{}, fmt.Errorf("listing the tools: a tool is not an object: %w", err)
		}
		out.Tools = append(out.Tools, listedTool{Tool: t, Raw: raw})
	}
	return out, nil
}

func (s *session) status(ctx context.Context) (protocol.ServersStatusResult, error) {
	var res protocol.ServersStatusResult
	if err := s.h.call(ctx, protocol.MethodServersStatus, protocol.SessionParams{SessionID: s.id}, &res); err != nil {
		return res, fmt.Errorf("reading the servers' state: %w", err)
	}
	for i := range res.Servers {
		res.Servers[i].LastError = s.h.say(res.Servers[i].LastError)
	}
	return res, nil
}

// capabilityOf reads the sandbox capability from a server's reported MCP
// capabilities with the sidecar's own detection.
func capabilityOf(st protocol.ServerStatus) sandbox.Capability {
	var caps struct {
		Experimental map[string]json.RawMessage `json:"experimental"`
	}
	if json.Unmarshal(st.Capabilities, &caps) != nil {
		return sandbox.CapNone
	}
	return sandbox.DetectCapability(caps.Experimental)
}

// running reports whether the server's MCP connection was up when status
// was taken (only then are its capabilities known).
func running(st protocol.ServerStatus) bool {
	return st.State == protocol.StateReady
}

// lastStderrLine is the last non-empty line of the server's stderr: from
// the stderr tail the sidecar puts in a startup error, else from the
// stderr lines it forwarded as mcp/log.
func lastStderrLine(errText, forwarded string) string {
	if _, tail, ok := strings.Cut(errText, "; stderr:\n"); ok {
		lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" {
				return l
			}
		}
	}
	return forwarded
}

// firstLine is the part of s before its first newline.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// errorSummary is a startup error without the stderr tail the sidecar
// appends (shown apart, as the last stderr line).
func errorSummary(errText string) string {
	head, _, _ := strings.Cut(errText, "; stderr:\n")
	return firstLine(head)
}

// describeServerLog is a line of a server's stderr, or a log message it
// sent, for --verbose: "server "x" stderr: ...", "server "x" log (info): ...".
func describeServerLog(p protocol.LogParams) string {
	var text string
	if json.Unmarshal(p.Data, &text) != nil {
		text = string(p.Data) // structured data, as the server sent it
	}
	text = strings.TrimRight(text, "\r\n")
	switch {
	case p.Server == "":
		return fmt.Sprintf("sidecar (%s): %s\n", p.Level, text)
	case p.Level == "stderr":
		return fmt.Sprintf("server %q stderr: %s\n", p.Server, text)
	}
	return fmt.Sprintf("server %q log (%s): %s\n", p.Server, p.Level, text)
}
