package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

func (s *Server) toolsList(ctx context.Context, rq *request) (result, error) {
	var p protocol.ToolsListParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	sess, scs, err := s.currentServers(ctx, rq, p.SessionID, p.Servers)
	if err != nil {
		return result{}, err
	}
	schemas := p.Schemas == nil || *p.Schemas
	return result{value: sess.listing(scs, schemas)}, nil
}

// currentServers is the session sessionID and its servers named (all when
// names is nil), each with a current catalog: a catalog is right or it is
// not served, so startups in flight are waited for (each bounded by its
// own startup_timeout_sec) and stale catalogs refreshed. tools/list and
// tools/search answer from it.
func (s *Server) currentServers(ctx context.Context, rq *request, sessionID string, names []string) (*Session, []*serverConn, error) {
	sess, err := s.session(ctx, rq.session, sessionID)
	if err != nil {
		return nil, nil, err
	}
	scs, err := sess.selectServers(names)
	if err != nil {
		return nil, nil, err
	}
	if err := sess.current(ctx, scs); err != nil {
		return nil, nil, err
	}
	return sess, scs, nil
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
