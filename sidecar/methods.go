package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

func (s *Server) toolsList(ctx context.Context, rq *request) (result, error) {
	var p protocol.ToolsListParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	sess, err := s.session(ctx, rq.session, p.SessionID)
	if err != nil {
		return result{}, err
	}
	scs, err := sess.selectServers(p.Servers)
	if err != nil {
		return result{}, err
	}
	// A catalog is right or it is not served: wait for startups in flight
	// (each bounded by its own startup_timeout_sec).
	if err := sess.current(ctx, scs); err != nil {
		return result{}, err
	}
	schemas := p.Schemas == nil || *p.Schemas
	return result{value: sess.listing(scs, schemas)}, nil
}

// listing renders the session catalog restricted to scs, each tool with
// its schemas or in its summary form (schemas: false).
// toolsListWire is protocol.ToolsListResult as sent: each tool is the
// server's object, rendered once per catalog change (catalog.WireJSON).
type toolsListWire struct {
	Tools   []json.RawMessage        `json:"tools"`
	Servers []protocol.ServerCatalog `json:"servers"`
}

func (sess *Session) listing(scs []*serverConn, schemas bool) toolsListWire {
	cat := sess.snapshot()
	res := toolsListWire{Tools: []json.RawMessage{}, Servers: []protocol.ServerCatalog{}}
	want := make(map[string]bool, len(scs))
	for _, sc := range scs {
		want[sc.name] = true
		sc.mu.Lock()
		entry := protocol.ServerCatalog{Name: sc.name, State: sc.state, Catalog: sc.catalogSrc, Stale: sc.isStaleLocked(),
			SupportsParallelToolCalls: sc.cfg.SupportsParallelToolCalls, Instructions: sc.instructions}
		switch sc.state {
		case protocol.StateFailed, protocol.StateDisconnected, protocol.StateNeedsAuthorization:
			entry.Error = sc.lastErr
		case protocol.StateInvalid:
			entry.Error = invalidError(sc.name, sc.cfg).Message
		}
		sc.mu.Unlock()
		res.Servers = append(res.Servers, entry)
	}
	forms := cat.wire
	if !schemas {
		forms = cat.summary
	}
	for i, t := range cat.tools {
		if want[t.Server] {
			res.Tools = append(res.Tools, forms[i])
		}
	}
	return res
}

// selectServers returns the named servers of the session (all when names is
// nil), in session order.
func (sess *Session) selectServers(names []string) ([]*serverConn, error) {
	if names == nil {
		scs := make([]*serverConn, 0, len(sess.names))
		for _, n := range sess.names {
			scs = append(scs, sess.servers[n])
		}
		return scs, nil
	}
	scs := make([]*serverConn, 0, len(names))
	for _, n := range names {
		sc, err := sess.server(n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(scs, sc) {
			scs = append(scs, sc)
		}
	}
	return scs, nil
}

var errToolTimeout = errors.New("tool call timed out")

func isJSONObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// progressKey canonicalises a progress token so that the token the host
// sent (raw JSON) and the token go-sdk decoded from the server's
// notification (string or float64) meet.
func progressKey(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "raw:" + string(raw)
	}
	return progressKeyOf(v)
}

// Both sides come from encoding/json decoding into any: a token is a
// string or a float64.
func progressKeyOf(v any) string {
	switch t := v.(type) {
	case string:
		return "s:" + t
	case float64:
		return "n:" + strconv.FormatFloat(t, 'g', -1, 64)
	default:
		b, _ := json.Marshal(v)
		return "raw:" + string(b)
	}
}

// bind resolves the tool a call names to one server's tool definition.
// Its waits for catalog refreshes count against budget (the call's
// timeoutMs; nil: none); its waits for startups do not.
func (sess *Session) bind(ctx context.Context, p protocol.ToolsCallParams, budget *waitBudget) (*serverConn, catalog.Tool, error) {
	switch {
	case p.Name != "" && (p.Server != "" || p.Tool != ""):
		return nil, catalog.Tool{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "give either name, or server and tool, not both")
	case p.Name != "":
		ref, ok := sess.snapshot().byName[p.Name]
		if !ok {
			// Servers still starting may yet publish it, and so may a
			// stale catalog: a tool a notification announced is callable
			// in the same turn.
			if err := waitStarting(ctx, sess.allServers()); err != nil {
				return nil, catalog.Tool{}, callerError(ctx, err)
			}
			if budget.catchUp(ctx, sess, sess.allServers()) {
				return nil, catalog.Tool{}, budget.expired(nil, p.Name)
			}
			ref, ok = sess.snapshot().byName[p.Name]
		}
		if ok && ref.sc.isStale() {
			if budget.catchUp(ctx, sess, []*serverConn{ref.sc}) {
				return nil, catalog.Tool{}, budget.expired(ref.sc, ref.tool.Name)
			}
			ref, ok = sess.snapshot().byName[p.Name]
		}
		if !ok {
			return nil, catalog.Tool{}, sess.unknownName(ctx, p.Name)
		}
		return sess.bindDormant(ctx, ref.sc, ref.tool)
	case p.Server != "" && p.Tool != "":
		sc, err := sess.server(p.Server)
		if err != nil {
			return nil, catalog.Tool{}, err
		}
		if err := waitStarting(ctx, []*serverConn{sc}); err != nil {
			return nil, catalog.Tool{}, callerError(ctx, err)
		}
		if budget.catchUp(ctx, sess, []*serverConn{sc}) {
			return nil, catalog.Tool{}, budget.expired(sc, p.Tool)
		}
		if err := sc.usable(ctx); err != nil {
			return nil, catalog.Tool{}, err
		}
		t, ok := sc.tool(p.Tool)
		if !ok {
			return nil, catalog.Tool{}, sc.unknownTool(p.Tool)
		}
		return sess.bindDormant(ctx, sc, t)
	default:
		return nil, catalog.Tool{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "tools/call needs name, or server and tool")
	}
}

// unknownName explains a qualified name the catalog does not have. A name
// the session gave to a tool that left the catalog is never given to
// another (catalog.Names), so it is that tool's: its server's state says
// why it is gone, or the tool was removed.
func (sess *Session) unknownName(ctx context.Context, name string) error {
	if sess.closing() {
		return sess.closedError()
	}
	sess.rebuildMu.Lock()
	server, tool, held := sess.qualified.Holder(name)
	sess.rebuildMu.Unlock()
	if !held {
		// A server that never listed (it failed, needs authorization, is
		// disabled) gave no name to any tool: a name of its form is
		// answered with why the server cannot take calls.
		if sc := sess.serverNamedIn(name); sc != nil {
			if err := sc.usable(ctx); err != nil {
				return callerError(ctx, err)
			}
		}
		return protocol.NewError(protocol.CodeUnknownTool, protocol.KindUnknownTool,
			fmt.Sprintf("unknown tool %q in session %q", name, sess.id)).WithServer("", name)
	}
	sc, err := sess.server(server)
	if err != nil {
		return err
	}
	if err := sc.usable(ctx); err != nil {
		return callerError(ctx, err)
	}
	return protocol.NewError(protocol.CodeUnknownTool, protocol.KindUnknownTool,
		fmt.Sprintf("tool %q of server %q (named %q) is no longer in the catalog: the server removed it", tool, server, name)).WithServer(server, tool)
}

// serverNamedIn returns the session's server whose qualified names the
// qualified name name has the form of (mcp__<server>__...), the longest
// such server name where several fit; nil if none does.
func (sess *Session) serverNamedIn(name string) *serverConn {
	var best *serverConn
	for _, n := range sess.names {
		if strings.HasPrefix(name, "mcp__"+n+"__") && (best == nil || len(n) > len(best.name)) {
			best = sess.servers[n]
		}
	}
	return best
}

// bindDormant starts a dormant server before binding: its cached catalog
// is only a promise, so the call binds to the live definition; a tool the
// live server no longer has is unknown (-32013).
func (sess *Session) bindDormant(ctx context.Context, sc *serverConn, t catalog.Tool) (*serverConn, catalog.Tool, error) {
	sc.mu.Lock()
	dormant := sc.state == protocol.StateDormant
	sc.mu.Unlock()
	if !dormant {
		return sc, t, nil
	}
	if _, err := sc.ready(ctx); err != nil {
		return nil, catalog.Tool{}, callerError(ctx, err)
	}
	live, ok := sc.tool(t.Name)
	if !ok {
		return nil, catalog.Tool{}, sc.unknownTool(t.Name)
	}
	return sc, live, nil
}

// usable reports why a server that failed, was cancelled or is disabled
// cannot take a call; such a server's error says more than "unknown tool".
func (sc *serverConn) usable(ctx context.Context) error {
	sc.mu.Lock()
	st := sc.state
	sc.mu.Unlock()
	switch st {
	case protocol.StateFailed, protocol.StateCancelled, protocol.StateDisabled, protocol.StateInvalid, protocol.StateNeedsAuthorization:
		_, err := sc.ready(ctx)
		return err
	}
	return nil
}

func (sc *serverConn) unknownTool(name string) *protocol.Error {
	if sc.sess.closing() {
		return sc.sessionClosedError().WithServer(sc.name, name)
	}
	msg := fmt.Sprintf("server %q has no tool %q", sc.name, name)
	if !catalog.FilterOf(sc.cfg).Allows(name) {
		msg = fmt.Sprintf("tool %q of server %q is disabled by enabled_tools/disabled_tools", name, sc.name)
	}
	return protocol.NewError(protocol.CodeUnknownTool, protocol.KindUnknownTool, msg).WithServer(sc.name, name)
}

func (sc *serverConn) tool(name string) (catalog.Tool, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if i, ok := sc.toolAt[name]; ok {
		return sc.tools[i], true
	}
	return catalog.Tool{}, false
}

// setTools replaces the server's catalog. sc.mu must be held.
func (sc *serverConn) setTools(tools []catalog.Tool) {
	sc.tools = tools
	sc.toolAt = make(map[string]int, len(tools))
	for i, t := range tools {
		if _, dup := sc.toolAt[t.Name]; !dup { // the first of a repeated name, as a scan would find
			sc.toolAt[t.Name] = i
		}
	}
}

// checkBinding refuses a call whose tool changed or disappeared since it
// was bound (docs/protocol.md, "Authority and binding"). A tool is the same
// when its object is byte for byte what it was; a catalog rebuilt from the
// same listing shares the bytes, and the comparison is then immediate.
func (sc *serverConn) checkBinding(bound *catalog.Tool) error {
	sc.mu.Lock()
	i, ok := sc.toolAt[bound.Name]
	same := ok && string(sc.tools[i].Raw) == string(bound.Raw)
	sc.mu.Unlock()
	if same {
		return nil
	}
	what := "was removed"
	if ok {
		what = "changed"
	}
	return protocol.NewError(protocol.CodeBindingChanged, protocol.KindBindingChanged,
		fmt.Sprintf("tool %q of server %q %s since the call was bound; list tools again", bound.Name, sc.name, what)).WithServer(sc.name, bound.Name).Retry()
}

func (sess *Session) allServers() []*serverConn {
	scs := make([]*serverConn, 0, len(sess.names))
	for _, n := range sess.names {
		scs = append(scs, sess.servers[n])
	}
	return scs
}

// callerError maps the end of the caller's own context (host cancel) to
// -32800 and leaves other errors alone.
func callerError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cancelledError()
	}
	return err
}

// callError maps an error of a forwarded request, with the server's
// secrets scrubbed from what the server wrote into it.
func (sc *serverConn) callError(ctx context.Context, conn *mcpclient.Conn, tool string, err error) error {
	return sc.scrubbed(sc.mapCallError(ctx, conn, tool, err))
}

func (sc *serverConn) mapCallError(ctx context.Context, conn *mcpclient.Conn, tool string, err error) error {
	if ctx.Err() != nil {
		return cancelledError()
	}
	if sc.sess.closing() {
		// The close closed the connection under the request.
		return sc.sessionClosedError().WithServer(sc.name, tool)
	}
	if pe, ok := sc.callAuthorizationError(err); ok {
		pe.Data.Tool = tool
		return pe
	}
	var se *mcpclient.ServerError
	if errors.As(err, &se) {
		code := se.Code
		e := protocol.NewError(code, protocol.KindServerError, se.Message).WithServer(sc.name, tool)
		e.Data.ServerCode = &code
		e.Data.ServerData = se.Data
		return e
	}
	if errors.Is(err, mcpclient.ErrUnreachable) {
		// The HTTP server did not answer; the connection stays, and the
		// next call tries again.
		return protocol.NewError(protocol.CodeConnectionLost, protocol.KindConnectionLost, err.Error()).WithServer(sc.name, tool).Retry()
	}
	if errors.Is(err, mcpclient.ErrConnectionLost) {
		sc.lost(conn)
		// mcpclient's errors already name the server and say the
		// connection was lost.
		e := protocol.NewError(protocol.CodeConnectionLost, protocol.KindConnectionLost, err.Error()).WithServer(sc.name, tool).Retry()
		e.Data.Stderr = conn.StderrTail()
		return e
	}
	if errors.Is(err, mcpclient.ErrMalformedResult) || errors.Is(err, mcpclient.ErrMessageTooLarge) || errors.Is(err, mcpclient.ErrRedirectRefused) {
		// The server answered, with something no host should be handed.
		msg := err.Error()
		if tool != "" {
			msg = fmt.Sprintf("tool %q: %s", tool, msg)
		}
		return protocol.NewError(protocol.CodeInternalError, protocol.KindServerError, msg).WithServer(sc.name, tool)
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, fmt.Sprintf("server %q", sc.name)) {
		msg = fmt.Sprintf("server %q: %s", sc.name, msg)
	}
	return protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, msg).WithServer(sc.name, tool)
}

// sessionServer resolves the session and the server a per-server request
// names.
func (s *Server) sessionServer(ctx context.Context, rq *request, sessionID, server string) (*Session, *serverConn, error) {
	sess, err := s.session(ctx, rq.session, sessionID)
	if err != nil {
		return nil, nil, err
	}
	if server == "" {
		return nil, nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "server is required")
	}
	sc, err := sess.server(server)
	if err != nil {
		return nil, nil, err
	}
	return sess, sc, nil
}

// serverRequest resolves the session and server of a per-server request,
// admits it against the session's bounds, and returns a live connection and
// the release the caller must call when done.
func (s *Server) serverRequest(ctx context.Context, rq *request, sessionID, server string) (*serverConn, *mcpclient.Conn, func(), error) {
	sess, sc, err := s.sessionServer(ctx, rq, sessionID, server)
	if err != nil {
		return nil, nil, nil, err
	}
	release, err := sess.admit(sc)
	if err != nil {
		return nil, nil, nil, err
	}
	conn, err := sc.ready(ctx)
	if err != nil {
		release()
		return nil, nil, nil, callerError(ctx, err)
	}
	return sc, conn, release, nil
}

// errRequestTimeout ends a request forwarded to a server that did not
// answer within its tool_timeout_sec.
var errRequestTimeout = errors.New("tool_timeout_sec elapsed")

// requestContext bounds a request the sidecar forwards to sc for the host
// (resources, prompts, completion, tasks; tools/call has its own,
// toolcall.go) by the server's tool_timeout_sec, from when it is sent: a
// server that never answers holds none of the session's places for ever.
func (sc *serverConn) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, sc.cfg.ToolTimeout(), errRequestTimeout)
}

// requestError maps the error of a request (method) forwarded within
// reqCtx, a requestContext of ctx, the host's request.
func (sc *serverConn) requestError(ctx, reqCtx context.Context, conn *mcpclient.Conn, method string, err error) error {
	if ctx.Err() == nil && errors.Is(context.Cause(reqCtx), errRequestTimeout) {
		return protocol.NewError(protocol.CodeToolTimeout, protocol.KindToolTimeout,
			fmt.Sprintf("server %q did not answer %s within tool_timeout_sec (%s)", sc.name, method, formatSeconds(sc.cfg.ToolTimeout()))).WithServer(sc.name, "").Retry()
	}
	return sc.callError(ctx, conn, "", err)
}

// forward runs one request (method) on a server's live connection, within
// the server's tool_timeout_sec, and returns its result as the server sent
// it.
func (s *Server) forward(ctx context.Context, rq *request, method, sessionID, server string, do func(context.Context, *mcpclient.Conn) (json.RawMessage, error)) (result, error) {
	sc, conn, release, err := s.serverRequest(ctx, rq, sessionID, server)
	if err != nil {
		return result{}, err
	}
	defer release()
	reqCtx, cancel := sc.requestContext(ctx)
	defer cancel()
	raw, err := do(reqCtx, conn)
	if err != nil {
		return result{}, sc.requestError(ctx, reqCtx, conn, method, err)
	}
	return result{value: raw}, nil
}

// listMethod forwards resources/list, resources/templates/list and
// prompts/list: one page as the server sent it, or every page when all
// (all of them within the server's tool_timeout_sec).
func (s *Server) listMethod(method, key string) handlerFunc {
	return func(ctx context.Context, rq *request) (result, error) {
		var p protocol.ServerRequestParams
		if err := decodeParams(rq.params, &p); err != nil {
			return result{}, err
		}
		sc, conn, release, err := s.serverRequest(ctx, rq, p.SessionID, p.Server)
		if err != nil {
			return result{}, err
		}
		defer release()
		reqCtx, cancel := sc.requestContext(ctx)
		defer cancel()
		fetch := pageFetcher(conn, key)
		if !p.All {
			raw, err := fetch(reqCtx, p.Cursor)
			if err != nil {
				return result{}, sc.requestError(ctx, reqCtx, conn, method, err)
			}
			return result{value: raw}, nil
		}
		items, err := catalog.Paginate(reqCtx, key, catalog.DefaultPageLimits(), fetch)
		if err != nil {
			return result{}, sc.requestError(ctx, reqCtx, conn, method, err)
		}
		return result{value: map[string][]json.RawMessage{key: nonNil(items)}}, nil
	}
}

func pageFetcher(conn *mcpclient.Conn, key string) func(context.Context, string) (json.RawMessage, error) {
	switch key {
	case "resources":
		return conn.ListResourcesPage
	case "resourceTemplates":
		return conn.ListResourceTemplatesPage
	case "prompts":
		return conn.ListPromptsPage
	default:
		return conn.ListToolsPage
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) resourcesRead(ctx context.Context, rq *request) (result, error) {
	var p protocol.ResourcesReadParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	if p.URI == "" {
		return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "uri is required")
	}
	return s.forward(ctx, rq, protocol.MethodResourcesRead, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
		return conn.ReadResource(ctx, p.URI)
	})
}

// Resource kinds that early discovery looks for by default.
var discoverMimeTypes = []string{"mcp/plugin", "mcp/skill"}

func (s *Server) resourcesDiscover(ctx context.Context, rq *request) (result, error) {
	var p protocol.ResourcesDiscoverParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	mimeTypes := p.MimeTypes
	if len(mimeTypes) == 0 {
		mimeTypes = discoverMimeTypes
	}
	sess, sc, err := s.sessionServer(ctx, rq, p.SessionID, p.Server)
	if err != nil {
		return result{}, err
	}
	release, err := sess.admit(sc)
	if err != nil {
		return result{}, err
	}
	defer release()
	var conn *mcpclient.Conn
	var a *startAttempt // the startup whose connection conn is
	if sess.env.feature(FeatureEarlyDiscovery) {
		conn, a, err = sc.initializedConn(ctx)
	} else {
		conn, err = sc.ready(ctx)
	}
	if err != nil {
		return result{}, callerError(ctx, err)
	}
	sc.mu.Lock()
	if a == nil && sc.conn == conn {
		a = sc.attempt
	}
	gen := sc.resourceGen
	sc.mu.Unlock()
	// A result is assembled from pages of one connection and one resource
	// generation, or rejected: never mixed. Only a newer startup of the
	// server (servers/reconnect, a restart) or
	// notifications/resources/list_changed rejects it; a startup that
	// fails, times out or is ended by session/close is reported as itself.
	rejection := func() *protocol.Error {
		sc.mu.Lock()
		moved := sc.resourceGen != gen
		replaced := sc.attempt != a
		sc.mu.Unlock()
		switch {
		case replaced:
			return discoveryRejected(sc.name, "the connection was replaced")
		case moved:
			return discoveryRejected(sc.name, "the server's resources changed (notifications/resources/list_changed)")
		}
		return nil
	}
	fetch := func(ctx context.Context, cursor string) (json.RawMessage, error) {
		if err := rejection(); err != nil {
			return nil, err
		}
		return conn.ListResourcesPage(ctx, cursor)
	}
	reqCtx, cancel := sc.requestContext(ctx)
	defer cancel()
	items, err := catalog.Paginate(reqCtx, "resources", catalog.DefaultPageLimits(), fetch)
	if err != nil {
		if why := sc.whyConnEnded(ctx, conn, a); why != nil {
			return result{}, why
		}
	}
	if rej := rejection(); rej != nil {
		sc.mu.Lock()
		sc.attempt.earlyRejected = true // the retry waits for readiness
		sc.mu.Unlock()
		return result{}, rej
	}
	if err != nil {
		return result{}, sc.requestError(ctx, reqCtx, conn, protocol.MethodResourcesDiscover, err)
	}
	found := []json.RawMessage{}
	for _, it := range items {
		var r struct {
			MimeType string `json:"mimeType"`
		}
		if json.Unmarshal(it, &r) == nil && slices.Contains(mimeTypes, r.MimeType) {
			found = append(found, it)
		}
	}
	return result{value: map[string][]json.RawMessage{"resources": found}}, nil
}

// whyConnEnded explains a request that failed because conn, the
// connection of startup attempt a, ended: the startup failed or timed out
// (its own error), or the session closed. It returns nil when conn is
// still open or ended otherwise (a crash, a replacement).
func (sc *serverConn) whyConnEnded(ctx context.Context, conn *mcpclient.Conn, a *startAttempt) error {
	select {
	case <-conn.Done():
	default:
		return nil
	}
	if a != nil {
		// A startup closes its connection before it records why.
		select {
		case <-a.done:
		case <-ctx.Done():
			return cancelledError()
		}
	}
	if sc.sess.ctx.Err() != nil {
		return sc.sessionClosedError()
	}
	var pe *protocol.Error
	if a != nil && errors.As(a.err, &pe) && pe.Data.Kind != protocol.KindStartupSuperseded {
		return pe
	}
	return nil
}

func discoveryRejected(server, why string) *protocol.Error {
	return protocol.NewError(protocol.CodeDiscoveryRejected, protocol.KindDiscoveryRejected,
		fmt.Sprintf("resource discovery of server %q rejected: %s while pages were fetched; discover again", server, why)).WithServer(server, "").Retry()
}

func (s *Server) promptsGet(ctx context.Context, rq *request) (result, error) {
	var p protocol.PromptsGetParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	if p.Name == "" {
		return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "name is required")
	}
	return s.forward(ctx, rq, protocol.MethodPromptsGet, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
		return conn.GetPrompt(ctx, p.Name, p.Arguments)
	})
}

// complete forwards completion/complete; params other than sessionId and
// server go to the server as they are.
func (s *Server) complete(ctx context.Context, rq *request) (result, error) {
	var p protocol.ServerRequestParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rq.params, &fields); err != nil {
		return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "invalid params: "+err.Error())
	}
	delete(fields, "sessionId")
	delete(fields, "server")
	if err := checkCompleteParams(fields); err != nil {
		return result{}, err
	}
	body, _ := json.Marshal(fields)
	return s.forward(ctx, rq, protocol.MethodCompletionComplete, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
		return conn.Complete(ctx, body)
	})
}

func (s *Server) serversRefresh(ctx context.Context, rq *request) (result, error) {
	var p protocol.ServerRequestParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	sc, _, release, err := s.serverRequest(ctx, rq, p.SessionID, p.Server)
	if err != nil {
		return result{}, err
	}
	defer release()
	if err := sc.refresh(ctx); err != nil {
		return result{}, err
	}
	return result{value: sc.sess.listing([]*serverConn{sc}, true)}, nil
}

func (s *Server) serversReconnect(ctx context.Context, rq *request) (result, error) {
	var p protocol.ServerRequestParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	sess, sc, err := s.sessionServer(ctx, rq, p.SessionID, p.Server)
	if err != nil {
		return result{}, err
	}
	if !sc.cfg.Valid() {
		return result{}, invalidError(sc.name, sc.cfg)
	}
	if !sc.cfg.IsEnabled() {
		return result{}, protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, fmt.Sprintf("server %q is disabled (enabled = false)", sc.name)).WithServer(sc.name, "")
	}
	// Replace whatever runs now with a fresh, eager, live startup. The
	// server is marked starting before its old connection goes, so no
	// request ever sees it ready without a connection.
	launch := sess.prepareRound([]string{sc.name})
	sc.mu.Lock()
	a := sc.attempt
	old := sc.conn
	sc.conn = nil
	sc.restarts++
	sc.crashes = 0
	sc.backoff = 0
	sc.mu.Unlock()
	if old != nil {
		old.Close()
	}
	// A connection the server lost is being torn down: the replacement
	// starts once nothing of the old one runs.
	sc.waitEnded()
	go launch()
	select {
	case <-a.done:
	case <-ctx.Done():
		return result{}, cancelledError()
	}
	if a.err != nil {
		return result{}, a.err
	}
	return result{value: protocol.ReconnectResult{State: protocol.StateReady}}, nil
}

func (s *Server) serversStatus(ctx context.Context, rq *request) (result, error) {
	var p protocol.SessionParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	sess, err := s.session(ctx, rq.session, p.SessionID)
	if err != nil {
		return result{}, err
	}
	launcher := sess.env.launcher.Current().Report()
	res := protocol.ServersStatusResult{Servers: []protocol.ServerStatus{}, Launcher: launcher}
	size := sess.snapshot().catalogSize()
	for _, sc := range sess.allServers() {
		st := sc.status(launcher)
		st.Authorization = sc.authorizationStatus(st.State)
		if sc.hasCatalog() {
			n := size[sc.name]
			tools, tokens := n[0], n[1]
			st.Tools, st.Tokens = &tools, &tokens
			res.Tokens += tokens
		}
		res.Servers = append(res.Servers, st)
	}
	return result{value: res}, nil
}

// status reports sc; launcher is the sidecar's launcher verdict, which
// applies to local stdio servers only.
func (sc *serverConn) status(launcher protocol.LauncherStatus) protocol.ServerStatus {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := protocol.ServerStatus{
		Name:         sc.name,
		State:        sc.state,
		Transport:    sc.cfg.Transport(),
		Required:     sc.cfg.Required,
		Capabilities: json.RawMessage("{}"),
		Restarts:     sc.restarts,
		LastError:    sc.lastErr,

		SupportsParallelToolCalls: sc.cfg.SupportsParallelToolCalls,
		Approval:                  approvalOf(sc.cfg),
	}
	if sc.cfg.Origin.Path != "" {
		origin := originOf(sc.cfg.Origin)
		st.Source = &origin
	}
	if !sc.cfg.Valid() {
		st.ConfigErrors = problemsOf(sc.cfg.Problems)
	}
	st.SkippedStdoutLines, st.FirstSkippedStdoutLine = sc.skipped, sc.firstSkipped
	st.Instructions = sc.instructions
	st.ExcludedTools = sc.excluded
	if sc.conn != nil {
		st.PID = sc.conn.PID()
		st.ProtocolVersion = sc.conn.ProtocolVersion()
		st.Era = eraName(sc.conn.Era())
		if caps := sc.conn.Capabilities(); len(caps) > 0 {
			st.Capabilities = caps
		}
		st.Sandbox = sc.sandboxCap.String()
	}
	if !sc.startedAt.IsZero() {
		st.StartedAt = sc.startedAt.UTC().Format(time.RFC3339Nano)
	}
	st.Stale = sc.isStaleLocked()
	if run := sc.list.run; run != nil {
		st.RefreshingSince = run.startedAt.UTC().Format(time.RFC3339Nano)
	}
	if sc.cfg.Transport() == config.TransportStdio {
		st.Launcher = &launcher
	} else {
		st.Launcher = &protocol.LauncherStatus{Status: "unavailable", Reason: "the launcher is only for local stdio servers"}
	}
	return st
}
