package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// client is one MCP client connection: its own mcp.Server (so that a
// notification reaches only the clients it concerns), its capabilities,
// subscriptions and calls in flight, and the host session it uses
// (session.go): its own over stdio, the gateway's one over HTTP.
type client struct {
	g      *Gateway
	host   *hostSession
	server *mcp.Server
	// shared: the client of every sessionless request (MCP 2026-07-28
	// over HTTP), open until the gateway closes.
	shared bool
	// headers are the header declarations of the tools it called
	// (headers.go).
	headers headerCache

	attachOnce sync.Once
	closeOnce  sync.Once
	done       chan struct{} // closed by close

	mu sync.Mutex
	ss *mcp.ServerSession
	// owners route resources/read and completion by owner: a resource
	// URI or a template's fixed prefix to its server, from the last
	// listings.
	resourceOwner map[string]string
	templateOwner []templateOwner

	// life ends with the client: it bounds its requests (a client that
	// disconnects cancels its own calls, and no other's) and the host
	// calls that outlive one request (calls of rounds, mrtr.go).
	life      context.Context
	endLife   context.CancelFunc
	rounds    map[string]*roundCall // by requestState
	order     []*roundCall          // oldest first
	nextRound int
	nextAsk   int
}

type templateOwner struct {
	prefix, server string
}

// gatewayTool is the one tool of a client's mcp.Server, never listed
// (tools/list is answered from the host catalog): every tools/call goes
// to it, the name asked for in its context, so that go-sdk's handling of
// a call's result applies (multi round-trip input requests of
// 2026-07-28). Adding it again is how a notifications/tools/list_changed
// goes to the client, through go-sdk's own debounced notification (legacy
// sessions and 2026-07-28 listeners alike); the refresh resource and
// prompt do the same for resources and prompts.
var (
	gatewayTool     = &mcp.Tool{Name: "mcp-sidecar-gateway", InputSchema: json.RawMessage(`{"type":"object"}`)}
	refreshResource = &mcp.Resource{Name: "refresh", URI: "mcp-sidecar-gateway:refresh"}
	refreshPrompt   = &mcp.Prompt{Name: "mcp-sidecar-gateway-refresh"}
)

// newClient makes a client of host session h; it joins h's clients
// (attach) when its MCP session connects.
func (g *Gateway) newClient(h *hostSession) *client {
	c := &client{g: g, host: h, done: make(chan struct{}), resourceOwner: map[string]string{}, rounds: map[string]*roundCall{}}
	c.life, c.endLife = context.WithCancel(context.Background())
	c.server = mcp.NewServer(&mcp.Implementation{Name: "mcp-sidecar", Title: "mcp-sidecar gateway", Version: g.opts.Sidecar.Version}, &mcp.ServerOptions{
		Logger: g.logger,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: !g.opts.Deferred},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return c.subscribe(ctx, req.Params.URI, true)
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return c.subscribe(ctx, req.Params.URI, false)
		},
		CompletionHandler: c.complete,
	})
	c.server.AddTool(gatewayTool, c.callTool)
	c.server.AddReceivingMiddleware(c.middleware)
	return c
}

// toolsChanged sends the client notifications/tools/list_changed.
func (c *client) toolsChanged() {
	c.server.AddTool(gatewayTool, c.callTool)
}

// serverStarted sends the client notifications/resources/list_changed
// and notifications/prompts/list_changed: a server that started (a
// dormant one at first use) may have resources and prompts the client's
// listings left out.
func (c *client) serverStarted() {
	c.resourcesChanged()
	c.promptsChanged()
}

// resourcesChanged sends the client notifications/resources/list_changed.
func (c *client) resourcesChanged() {
	c.server.AddResource(refreshResource, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, mcp.ResourceNotFoundError(refreshResource.URI)
	})
}

// promptsChanged sends the client notifications/prompts/list_changed.
func (c *client) promptsChanged() {
	c.server.AddPrompt(refreshPrompt, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt"}
	})
}

// attach records the client's MCP session, joins the host session's
// clients, and ends the client when its session ends.
func (c *client) attach(ss *mcp.ServerSession) {
	if c.shared {
		// A session of one request: the client outlives it.
		return
	}
	c.attachOnce.Do(func() {
		c.mu.Lock()
		c.ss = ss
		c.mu.Unlock()
		c.host.attach(c, ss.ID())
		go func() {
			_ = ss.Wait()
			c.close(context.Background())
		}()
	})
}

func (c *client) session() *mcp.ServerSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ss
}

// close ends the client: its calls in flight are cancelled, its
// subscriptions dropped, and a host session of its own closed (the
// sidecar ends its server processes); the gateway's shared host session
// and its servers go on for the other clients.
func (c *client) close(ctx context.Context) {
	c.closeOnce.Do(func() {
		close(c.done)
		c.endLife()
		c.host.detach(ctx, c)
		c.g.forgetProgress(c)
		if !c.host.shared {
			c.host.close(ctx)
		}
	})
}

// hostSession is the id of the client's host session, opened at its
// first use.
func (c *client) hostSession(ctx context.Context) (string, error) {
	return c.host.session(ctx)
}

// single is the session's one server when it has exactly one: then the
// gateway is a transparent proxy and tools keep the server's own names.
func (c *client) single() string {
	if servers := c.host.serverList(); len(servers) == 1 && !c.g.opts.Deferred {
		return servers[0]
	}
	return ""
}

func (c *client) call(ctx context.Context, method string, params, result any) error {
	return c.g.host.Call(ctx, method, params, result)
}

type toolNameKey struct{}

func (c *client) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			c.attach(ss)
		}
		// A client that goes away cancels its own requests; the host
		// session and the other clients' calls go on.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(c.life, cancel)()
		switch method {
		case "tools/list":
			return c.listTools(ctx)
		case "tools/call":
			r := req.(*mcp.CallToolRequest)
			if r.Params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params"}
			}
			ctx = context.WithValue(ctx, toolNameKey{}, r.Params.Name)
			r.Params.Name = gatewayTool.Name
			return next(ctx, method, r)
		case "resources/list":
			return c.listResources(ctx)
		case "resources/templates/list":
			return c.listTemplates(ctx)
		case "resources/read":
			return c.readResource(ctx, req.(*mcp.ReadResourceRequest))
		case "prompts/list":
			return c.listPrompts(ctx)
		case "prompts/get":
			return c.getPrompt(ctx, req.(*mcp.GetPromptRequest))
		}
		return next(ctx, method, req)
	}
}

// notification handles one host notification of the client's session,
// on the host's read loop: what goes to the client goes on a goroutine.
func (c *client) notification(n hostclient.Notification) {
	switch n.Method {
	case protocol.NotifyToolsChanged:
		c.headers.forget()
		if !c.g.opts.Deferred {
			c.toolsChanged()
		}
	case protocol.NotifyStartupStatus:
		var p protocol.StartupStatusParams
		if json.Unmarshal(n.Params, &p) == nil && p.Status == protocol.StatusReady {
			c.serverStarted()
		}
	case protocol.NotifyListChanged:
		// A server's own list_changed: the merged listings the client
		// has are out of date as well.
		var p protocol.ListChangedParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		switch p.List {
		case protocol.ListPrompts:
			c.promptsChanged()
		case protocol.ListResources:
			c.resourcesChanged()
		}
	case protocol.NotifyLog:
		var p protocol.LogParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		ss := c.session()
		if ss == nil {
			return
		}
		level := mcp.LoggingLevel(p.Level)
		if p.Level == "stderr" {
			level = "debug"
		}
		var data any
		_ = json.Unmarshal(p.Data, &data)
		go func() {
			_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: level, Logger: p.Server, Data: data})
		}()
	case protocol.NotifyResourceUpdated:
		var p protocol.ResourceUpdatedParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		go func() {
			_ = c.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: p.URI})
		}()
	case protocol.NotifyElicitationComplete:
		var p protocol.ElicitationCompleteParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		if ss := c.session(); ss != nil {
			go func() {
				_ = ss.NotifyElicitationComplete(context.Background(), &mcp.ElicitationCompleteParams{ElicitationID: p.ElicitationID})
			}()
		}
	}
}

// progress relays a server's progress for a call of this client, on
// the session of the request that made it.
func (c *client) progress(ss *mcp.ServerSession, token any, v protocol.ProgressValue) {
	if ss == nil {
		return
	}
	p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: v.Progress, Message: v.Message}
	if v.Total != nil {
		p.Total = *v.Total
	}
	// On the host's read loop, which must not wait on a client; the
	// call's answer comes after (it waits for its own progress only as
	// far as go-sdk's writer orders them).
	go func() { _ = ss.NotifyProgress(context.Background(), p) }()
}

// serverRequest asks the client of call f what a server asked
// (elicitation, sampling, roots, authorization), within the
// capabilities of the session that made the call.
func (c *client) serverRequest(ctx context.Context, method, server string, params json.RawMessage, f *flight) (any, error) {
	ss := f.ss
	if ss == nil {
		return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "the client is not connected")
	}
	var caps *mcp.ClientCapabilities
	if ip := ss.InitializeParams(); ip != nil {
		caps = ip.Capabilities
	}
	unsupported := func(what string) error {
		return protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, fmt.Sprintf("the MCP client of the gateway does not support %s (server %q asked)", what, server))
	}
	var p struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
	}
	switch method {
	case protocol.RequestAuthorize:
		var ap protocol.AuthorizeParams
		if err := json.Unmarshal(params, &ap); err != nil {
			return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
		}
		return c.authorize(ctx, ss, caps, ap)
	case protocol.RequestElicit:
		if caps == nil || caps.Elicitation == nil {
			return nil, unsupported("elicitation")
		}
		var ep mcp.ElicitParams
		if err := json.Unmarshal(p.Params, &ep); err != nil {
			return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
		}
		if modern(ss) {
			return c.askRounds(ctx, f.rc, &ep)
		}
		if ep.Mode == "url" {
			c.host.elicited(c, server, ep.ElicitationID)
		}
		res, err := ss.Elicit(ctx, &ep)
		if err != nil {
			return nil, clientError(err)
		}
		return res, nil
	case protocol.RequestSample:
		if caps == nil || caps.Sampling == nil {
			return nil, unsupported("sampling")
		}
		var sp mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(p.Params, &sp); err != nil {
			return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
		}
		if modern(ss) {
			return c.askRounds(ctx, f.rc, &sp)
		}
		res, err := ss.CreateMessageWithTools(ctx, &sp)
		if err != nil {
			return nil, clientError(err)
		}
		return res, nil
	case protocol.RequestRoots:
		if caps == nil || caps.RootsV2 == nil {
			return nil, unsupported("roots")
		}
		if modern(ss) {
			return c.askRounds(ctx, f.rc, &mcp.ListRootsParams{})
		}
		res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
		if err != nil {
			return nil, clientError(err)
		}
		return res, nil
	}
	return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "the gateway does not handle "+method)
}

// authorize asks a client that supports URL-mode elicitation to open a
// server's authorization URL; the sidecar receives the redirect. Any
// other client is answered cancelled at once: the server stays
// needs_authorization, and a call of it is a tool error naming
// 'mcp-sidecar login SERVER'.
func (c *client) authorize(ctx context.Context, ss *mcp.ServerSession, caps *mcp.ClientCapabilities, p protocol.AuthorizeParams) (protocol.AuthorizeResult, error) {
	if ss == nil || caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return protocol.AuthorizeResult{Cancelled: true}, nil
	}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:          "url",
		URL:           p.AuthorizationURL,
		ElicitationID: "authorize-" + p.Server,
		Message:       fmt.Sprintf("MCP server %q needs your authorization: open this URL and approve. (Or run `mcp-sidecar login %s` in a terminal.)", p.Server, p.Server),
	})
	if err != nil || res.Action != "accept" {
		return protocol.AuthorizeResult{Cancelled: true}, nil
	}
	return protocol.AuthorizeResult{}, nil
}

// clientError is the client's answer to a server's request as the host
// protocol carries it: its JSON-RPC code and message.
func clientError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &protocol.Error{Code: we.Code, Message: we.Message, Data: protocol.ErrorData{Kind: protocol.KindServerError}}
	}
	return protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, err.Error())
}

// mcpError is a host error as an MCP client sees it: the server's own
// error for server_error, else the host's code and message.
func mcpError(err error) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Data.Kind == protocol.KindServerError && pe.Data.ServerCode != nil {
		return &jsonrpc.Error{Code: *pe.Data.ServerCode, Message: pe.Message, Data: pe.Data.ServerData}
	}
	code := pe.Code
	switch pe.Data.Kind {
	case protocol.KindUnknownServer, protocol.KindUnknownTool:
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: pe.Message}
}

// loginHint is what a client is told of a server that needs OAuth.
func loginHint(server string) string {
	return fmt.Sprintf("run `mcp-sidecar login %s` in a terminal to authorize it, then call again", server)
}

// splitName finds the server of a client-visible name of a prompt:
// mcp__<server>__<name> when the session has several servers.
func (c *client) splitName(name string) (server, raw string, ok bool) {
	if s := c.single(); s != "" {
		return s, name, true
	}
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	servers := c.host.serverList()
	// The longest server name that fits, for server names with "__".
	best := ""
	for _, s := range servers {
		if strings.HasPrefix(rest, s+"__") && len(s) > len(best) {
			best = s
		}
	}
	if best == "" {
		return "", "", false
	}
	return best, rest[len(best)+2:], true
}

// serverOf is the server a tools/call goes to ("" for a name of no
// server: the host answers it unknown).
func (c *client) serverOf(p protocol.ToolsCallParams) string {
	if p.Server != "" {
		return p.Server
	}
	s, _, _ := c.splitName(p.Name)
	return s
}

func (c *client) qualify(server, name string) string {
	if c.single() != "" {
		return name
	}
	return "mcp__" + server + "__" + name
}
