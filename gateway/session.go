package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// hostSession is one session of the host protocol (session/open) and
// the MCP clients it serves: over stdio the one client, whose session
// ends with it; over HTTP every client of the gateway, so that each
// server runs once whatever the number of clients, and a client that
// comes or goes never starts or stops one (docs/gateway.md, "Sessions
// and processes").
type hostSession struct {
	g *Gateway
	// shared: the session of every HTTP client, open until the gateway
	// closes; else the session of one client, closed with it.
	shared bool

	// open serializes the opening; id is "" until opened, servers are
	// the session's.
	open    sync.Mutex
	id      string
	servers []string
	closed  bool

	mu      sync.Mutex
	clients []*client // attached, oldest first
	// byMCPSession are the clients by their MCP session id (HTTP's
	// Mcp-Session-Id).
	byMCPSession map[string]*client
	// flights are the calls in flight of the clients, oldest first: who
	// a server's request goes to (route).
	flights []*flight
	// subs are the clients subscribed to a resource of a server: the
	// host subscription is made by the first and dropped with the last.
	subs map[subKey][]*client
	// elicitations are the clients asked a URL elicitation, by server and
	// elicitationId: whom its completion goes to.
	elicitations map[subKey]*client
}

type subKey struct{ server, key string }

// flight is a call of a client in flight at the host: a tools/call (or a
// resources/read, prompts/get, completion) of server.
type flight struct {
	c      *client
	ss     *mcp.ServerSession // the request's session: its capabilities
	rc     *roundCall         // a 2026-07-28 client's call in rounds
	server string
}

func (g *Gateway) newHostSession(shared bool) *hostSession {
	return &hostSession{g: g, shared: shared, subs: map[subKey][]*client{}, elicitations: map[subKey]*client{}, byMCPSession: map[string]*client{}}
}

// session opens the host session at its first use.
func (h *hostSession) session(ctx context.Context) (string, error) {
	h.open.Lock()
	defer h.open.Unlock()
	if h.id != "" {
		return h.id, nil
	}
	if h.closed {
		return "", errors.New("the client's session is closed")
	}
	// The gateway names the session, and routes to it before it opens:
	// the sidecar's requests of its startup (mcp/authorize) and its
	// notifications may come before the answer.
	id, ok := h.g.register(h)
	if !ok {
		return "", errors.New("the gateway is closing")
	}
	p := map[string]any{"sessionId": id, "startup": "lazy"}
	if h.g.opts.Eager {
		p["startup"] = "eager"
	}
	if h.g.opts.Cwd != "" {
		p["cwd"] = h.g.opts.Cwd
	}
	if h.g.opts.Servers != nil {
		p["servers"] = h.g.opts.Servers
	}
	// The session outlives the request that opens it: a shared one serves
	// other clients, whose requests must not fail for this one's cancel.
	if h.shared {
		ctx = context.WithoutCancel(ctx)
	}
	var res protocol.SessionOpenResult
	if err := h.g.host.Call(ctx, protocol.MethodSessionOpen, p, &res); err != nil {
		h.g.unregister(id)
		return "", mcpError(err)
	}
	h.id = res.SessionID
	for _, s := range res.Servers {
		h.servers = append(h.servers, s.Name)
	}
	return h.id, nil
}

// close closes the host session: the sidecar ends its server processes.
func (h *hostSession) close(ctx context.Context) {
	h.open.Lock()
	defer h.open.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if h.id == "" {
		return
	}
	_ = h.g.host.Call(ctx, protocol.MethodSessionClose, protocol.SessionParams{SessionID: h.id}, nil)
	h.g.unregister(h.id)
}

func (h *hostSession) serverList() []string {
	h.open.Lock()
	defer h.open.Unlock()
	return h.servers
}

func (h *hostSession) attach(c *client, mcpSession string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients = append(h.clients, c)
	if mcpSession != "" {
		h.byMCPSession[mcpSession] = c
	}
}

// clientOf is the client of an MCP session id, nil if none.
func (h *hostSession) clientOf(mcpSession string) *client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byMCPSession[mcpSession]
}

// detach forgets a client that ended: its subscriptions go, and a host
// subscription with them when it was the last subscriber.
func (h *hostSession) detach(ctx context.Context, c *client) {
	h.mu.Lock()
	h.clients = without(h.clients, c)
	for id, bc := range h.byMCPSession {
		if bc == c {
			delete(h.byMCPSession, id)
		}
	}
	var last []subKey
	for k, cs := range h.subs {
		if !contains(cs, c) {
			continue
		}
		if cs = without(cs, c); len(cs) == 0 {
			delete(h.subs, k)
			last = append(last, k)
		} else {
			h.subs[k] = cs
		}
	}
	for k, ec := range h.elicitations {
		if ec == c {
			delete(h.elicitations, k)
		}
	}
	h.mu.Unlock()
	if !h.shared {
		return // the session closes with its client
	}
	h.open.Lock()
	id := h.id
	h.open.Unlock()
	for _, k := range last {
		_ = h.g.host.Call(ctx, protocol.MethodResourcesUnsubscribe, protocol.ResourceSubscribeParams{SessionID: id, Server: k.server, URI: k.key}, nil)
	}
}

func (h *hostSession) attached() []*client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*client(nil), h.clients...)
}

// subscribe records c's subscription to uri of server (or its end), and
// reports whether the host's subscription is to be made (c is the first)
// or dropped (c was the last).
func (h *hostSession) subscribe(c *client, server, uri string, on bool) (host bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := subKey{server, uri}
	cs := h.subs[k]
	if on {
		if contains(cs, c) {
			return false
		}
		h.subs[k] = append(cs, c)
		return len(cs) == 0
	}
	if !contains(cs, c) {
		return false
	}
	if cs = without(cs, c); len(cs) > 0 {
		h.subs[k] = cs
		return false
	}
	delete(h.subs, k)
	return true
}

func (h *hostSession) subscribers(server, uri string) []*client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*client(nil), h.subs[subKey{server, uri}]...)
}

// fly records a call in flight until the returned func runs.
func (h *hostSession) fly(f *flight) (land func()) {
	h.mu.Lock()
	h.flights = append(h.flights, f)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.flights = without(h.flights, f)
	}
}

// route chooses the call a server's request (elicitation, sampling,
// roots, authorization) belongs to. The host protocol names the session
// and the server that asks, not the call, so:
//
//   - the one call in flight to that server, when there is one: the
//     request can belong to no other;
//   - of several, the most recent whose client declared what the request
//     needs (capable), else the most recent;
//   - with none to that server (a server that asks at its start, before
//     the call that started it reached it), the most recent call in
//     flight of a capable client, else the most recently attached
//     capable client.
//
// nil when the session has no client to ask.
func (h *hostSession) route(server string, capable func(*mcp.ServerSession) bool) *flight {
	h.mu.Lock()
	defer h.mu.Unlock()
	var mine []*flight
	for _, f := range h.flights {
		if f.server == server {
			mine = append(mine, f)
		}
	}
	if len(mine) == 1 {
		return mine[0]
	}
	if f := lastCapable(mine, capable); f != nil {
		return f
	}
	if len(mine) > 0 {
		return mine[len(mine)-1]
	}
	if f := lastCapable(h.flights, capable); f != nil {
		return f
	}
	for i := len(h.clients) - 1; i >= 0; i-- {
		c := h.clients[i]
		if ss := c.session(); ss != nil && capable(ss) {
			return &flight{c: c, ss: ss, server: server}
		}
	}
	for i := len(h.clients) - 1; i >= 0; i-- {
		if ss := h.clients[i].session(); ss != nil {
			return &flight{c: h.clients[i], ss: ss, server: server}
		}
	}
	return nil
}

func lastCapable(fs []*flight, capable func(*mcp.ServerSession) bool) *flight {
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].ss != nil && capable(fs[i].ss) {
			return fs[i]
		}
	}
	return nil
}

// notification handles one host notification of the session, on the
// host's read loop: the catalog's changes and a server's changes of its
// prompts or resources go to every client, a resource's update to its
// subscribers, an elicitation's completion to the client that was asked.
func (h *hostSession) notification(n hostclient.Notification) {
	switch n.Method {
	case protocol.NotifyResourceUpdated:
		var p protocol.ResourceUpdatedParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		for _, c := range h.subscribers(p.Server, p.URI) {
			c.notification(n)
		}
		return
	case protocol.NotifyElicitationComplete:
		var p protocol.ElicitationCompleteParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		h.mu.Lock()
		c := h.elicitations[subKey{p.Server, p.ElicitationID}]
		delete(h.elicitations, subKey{p.Server, p.ElicitationID})
		h.mu.Unlock()
		if c != nil {
			c.notification(n)
			return
		}
		if h.shared {
			// An elicitation the gateway did not relay as one of URL
			// mode: no client of this session knows its id.
			return
		}
	}
	for _, c := range h.attached() {
		c.notification(n)
	}
}

// elicited records that c was asked a URL elicitation, whose completion
// goes to it.
func (h *hostSession) elicited(c *client, server, id string) {
	if id == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.elicitations[subKey{server, id}] = c
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// without is s without v, in a new array (readers may hold the old one).
func without[T comparable](s []T, v T) []T {
	out := make([]T, 0, len(s))
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
