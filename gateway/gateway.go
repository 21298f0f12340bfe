// Package gateway serves the sidecar runtime as one MCP server, for clients
// that speak only MCP (Claude Desktop, Cursor, Codex, VS Code, the
// Inspector, anything built on an MCP SDK).
//
// The gateway is a host of the sidecar's own protocol (docs/protocol.md),
// not a second runtime: it runs sidecar.Serve in process, speaks the host
// protocol to it over two pipes, and serves MCP to its clients with
// go-sdk's mcp.Server. Data flows one way: client -> gateway -> host
// protocol -> sidecar -> servers. The clients' requests go through host
// sessions (session/open), so the sidecar's catalogs, disk cache, lazy
// startup, list_changed refresh, sandbox metadata and process supervision
// apply to them as to any harness: over stdio the one client has its own
// session, closed with it; over HTTP every client shares the gateway's
// one session, so that each server runs once. Closing the gateway (Close)
// ends every server process.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// Options configure a Gateway.
type Options struct {
	// Initialize are the host protocol's initialize params: the servers
	// (configDiscovery, configFiles or servers), cacheDir, features,
	// limits. The gateway sets capabilities (what it relays to its
	// clients) and clientInfo.
	Initialize map[string]any
	// Sidecar configures the in-process sidecar (version, environment,
	// logger).
	Sidecar sidecar.Options
	// Servers, when set, are the servers of every session (the others
	// configured stay out); nil: every configured server.
	Servers []string
	// Cwd is the working directory of stdio servers without one of their
	// own, for every session.
	Cwd string
	// Deferred serves three tools (search, describe, call) in place of the
	// catalog: a client without tool search gets its economy.
	Deferred bool
	// Eager starts every server when a client connects; by default
	// servers with a cached catalog stay dormant until first used.
	Eager bool
	// Logger receives the gateway's own warnings; nil: discarded.
	Logger *slog.Logger
	// Checker, when set, sees every host-protocol message (tests set a
	// *schema.Checker).
	Checker hostclient.Checker
}

// Gateway is one in-process sidecar and the MCP clients it serves.
type Gateway struct {
	opts      Options
	logger    *slog.Logger
	host      *hostclient.Client
	serveDone chan struct{}
	init      protocol.InitializeResult

	mu       sync.Mutex
	sessions map[string]*hostSession // by host session id
	progress map[string]progressTarget
	nextTok  int64
	// nextSession numbers the host sessions.
	nextSession int
	closed      bool
}

// progressTarget is where the progress of a host token goes: the client's
// session and the token the client gave.
type progressTarget struct {
	c     *client
	ss    *mcp.ServerSession // the session of the request
	token any
}

// Start runs the sidecar in a goroutine it owns and initializes it. The
// caller must Close the gateway.
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	g := &Gateway{
		opts:      opts,
		logger:    opts.Logger,
		serveDone: make(chan struct{}),
		sessions:  map[string]*hostSession{},
		progress:  map[string]progressTarget{},
	}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	hostR, sidecarW := io.Pipe() // sidecar -> gateway
	sidecarR, hostW := io.Pipe() // gateway -> sidecar
	// The sidecar's lifetime is the gateway's, not the ctx of the caller
	// that started it: Close ends it with shutdown and exit.
	go func() {
		defer close(g.serveDone)
		sidecar.Serve(context.WithoutCancel(ctx), sidecarR, sidecarW, opts.Sidecar)
		sidecarW.Close()
	}()
	g.host = hostclient.New(context.WithoutCancel(ctx), hostR, hostW, hostclient.Options{
		OnNotification: g.notification,
		OnRequest:      g.request,
		Checker:        opts.Checker,
	})
	p := map[string]any{}
	for k, v := range opts.Initialize {
		p[k] = v
	}
	p["clientInfo"] = map[string]any{"name": "mcp-sidecar-gateway", "version": opts.Sidecar.Version}
	// What the gateway relays to the client that made a call; a client
	// that lacks one of them answers the server with an error
	// (docs/gateway.md, "Requests from servers").
	p["capabilities"] = map[string]any{
		"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
		"sampling":    map[string]any{"tools": map[string]any{}},
		"roots":       map[string]any{},
		// OAuth: the client that needs a server opens the authorization
		// URL (URL-mode elicitation), where it can.
		"authorization": map[string]any{},
		// A modern server's input-required results come back as they
		// are, for the client or the gateway to answer (inputs.go).
		"inputRequired": true,
	}
	if err := g.host.Call(ctx, protocol.MethodInitialize, p, &g.init); err != nil {
		g.Close(ctx)
		return nil, fmt.Errorf("starting the sidecar: %w", err)
	}
	if err := g.host.Notify(ctx, protocol.MethodInitialized, map[string]any{}); err != nil {
		g.Close(ctx)
		return nil, fmt.Errorf("starting the sidecar: %w", err)
	}
	return g, nil
}

// Servers are the configured servers, valid or not, sorted.
func (g *Gateway) Servers() []string { return g.init.Servers }

// Initialized is the sidecar's answer to initialize: the config files
// read and their problems.
func (g *Gateway) Initialized() protocol.InitializeResult { return g.init }

// Close shuts the sidecar down as a harness does (shutdown, exit): every
// session ends and every server process with it. It waits for the
// sidecar to return.
func (g *Gateway) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.serveDone
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	_ = g.host.Call(ctx, protocol.MethodShutdown, nil, nil)
	_ = g.host.Notify(ctx, protocol.MethodExit, nil)
	<-g.serveDone
	return g.host.Close()
}

// Done is closed when the sidecar's connection ends.
func (g *Gateway) Done() <-chan struct{} { return g.serveDone }

// ServeStdio serves one client over t (mcp.StdioTransport in the binary)
// until the client hangs up or ctx ends; then its session closes. The
// caller closes the gateway, which ends the servers.
func (g *Gateway) ServeStdio(ctx context.Context, t mcp.Transport) error {
	c := g.newClient(g.newHostSession(false))
	ss, err := c.server.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("serving MCP: %w", err)
	}
	c.attach(ss)
	stop := context.AfterFunc(ctx, func() { ss.Close() })
	defer stop()
	err = ss.Wait()
	c.close(context.WithoutCancel(ctx))
	// The client hanging up is how a stdio session ends.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// register names a new host session.
func (g *Gateway) register(h *hostSession) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return "", false
	}
	g.nextSession++
	id := fmt.Sprintf("client-%d", g.nextSession)
	g.sessions[id] = h
	return id, true
}

func (g *Gateway) unregister(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, id)
}

// forgetProgress forgets the progress tokens of a client that ended.
func (g *Gateway) forgetProgress(c *client) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for tok, t := range g.progress {
		if t.c == c {
			delete(g.progress, tok)
		}
	}
}

func (g *Gateway) hostSessionOf(id string) *hostSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions[id]
}

// progressToken makes a host token for a client's progress token; done
// forgets it.
func (g *Gateway) progressToken(c *client, ss *mcp.ServerSession, token any) (json.RawMessage, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextTok++
	tok := fmt.Sprintf("g%d", g.nextTok)
	g.progress[tok] = progressTarget{c: c, ss: ss, token: token}
	raw, _ := json.Marshal(tok)
	return raw, func() {
		g.mu.Lock()
		delete(g.progress, tok)
		g.mu.Unlock()
	}
}

// notification routes one host notification to the clients of the
// session it names. It runs on the host connection's read loop: it must not
// block, so what waits on a client goes to a goroutine of that client.
func (g *Gateway) notification(n hostclient.Notification) {
	var head struct {
		SessionID string `json:"sessionId"`
	}
	switch n.Method {
	case protocol.NotifyProgress:
		var p protocol.ProgressParams
		var tok string
		if json.Unmarshal(n.Params, &p) != nil || json.Unmarshal(p.Token, &tok) != nil {
			return
		}
		g.mu.Lock()
		t, ok := g.progress[tok]
		g.mu.Unlock()
		if ok {
			t.c.progress(t.ss, t.token, p.Value)
		}
		return
	}
	if json.Unmarshal(n.Params, &head) != nil || head.SessionID == "" {
		return
	}
	if h := g.hostSessionOf(head.SessionID); h != nil {
		h.notification(n)
	}
}

// request answers the sidecar's requests (mcp/elicit, mcp/sample,
// mcp/roots, mcp/authorize) by asking the client of the call they belong
// to (hostSession.route).
func (g *Gateway) request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var head struct {
		SessionID string `json:"sessionId"`
		Server    string `json:"server"`
		Params    struct {
			Mode string `json:"mode"`
		} `json:"params"`
	}
	if err := json.Unmarshal(params, &head); err != nil {
		return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
	}
	h := g.hostSessionOf(head.SessionID)
	if h == nil {
		return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, fmt.Sprintf("no client has session %q", head.SessionID))
	}
	f := h.route(head.Server, func(ss *mcp.ServerSession) bool {
		return declares(ss, method, head.Params.Mode)
	})
	if f == nil {
		return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "no MCP client of the gateway is connected")
	}
	return f.c.serverRequest(ctx, method, head.Server, params, f)
}

// declares reports whether the client of ss declared the capability a
// server's request needs (mode: an elicitation's).
func declares(ss *mcp.ServerSession, method, mode string) bool {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return false
	}
	caps := ip.Capabilities
	switch method {
	case protocol.RequestElicit:
		if caps.Elicitation == nil {
			return false
		}
		return mode != "url" || caps.Elicitation.URL != nil
	case protocol.RequestAuthorize:
		return caps.Elicitation != nil && caps.Elicitation.URL != nil
	case protocol.RequestSample:
		return caps.Sampling != nil
	case protocol.RequestRoots:
		return caps.RootsV2 != nil
	}
	return false
}
