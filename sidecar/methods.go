package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

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
	rounds, err := s.inputRounds(p.InputResponses, p.RequestState, p.ClientCapabilities)
	if err != nil {
		return result{}, err
	}
	return s.forward(ctx, rq, protocol.MethodResourcesRead, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
		return conn.ReadResourceWith(ctx, p.URI, rounds)
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
	rounds, err := s.inputRounds(p.InputResponses, p.RequestState, p.ClientCapabilities)
	if err != nil {
		return result{}, err
	}
	return s.forward(ctx, rq, protocol.MethodPromptsGet, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
		return conn.GetPromptWith(ctx, p.Name, p.Arguments, rounds)
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
