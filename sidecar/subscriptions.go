package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A session's resource subscriptions live in its serverConn (subscribed):
// they outlive a connection, so that each new connection to the server (a
// reconnect, a restart after a crash) subscribes again before the server is
// ready, and so does a renewed HTTP session (mcpclient asks subscriptions),
// and they end with the session.

func (s *Server) resourcesSubscribe(ctx context.Context, rq *request) (result, error) {
	p, err := decodeSubscribe(rq.params)
	if err != nil {
		return result{}, err
	}
	sc, conn, release, err := s.serverRequest(ctx, rq, p.SessionID, p.Server)
	if err != nil {
		return result{}, err
	}
	defer release()
	// Recorded first: a restart that happens meanwhile subscribes it on
	// the new connection too.
	sc.mu.Lock()
	had := sc.subscribed[p.URI]
	sc.subscribed[p.URI] = true
	sc.mu.Unlock()
	reqCtx, cancel := sc.requestContext(ctx)
	defer cancel()
	err = conn.Subscribe(reqCtx, p.URI)
	sc.noteListen(conn)
	if err != nil {
		if !had {
			sc.mu.Lock()
			delete(sc.subscribed, p.URI)
			sc.mu.Unlock()
		}
		return result{}, sc.requestError(ctx, reqCtx, conn, protocol.MethodResourcesSubscribe, err)
	}
	return result{value: struct{}{}}, nil
}

func (s *Server) resourcesUnsubscribe(ctx context.Context, rq *request) (result, error) {
	p, err := decodeSubscribe(rq.params)
	if err != nil {
		return result{}, err
	}
	sess, sc, err := s.sessionServer(ctx, rq, p.SessionID, p.Server)
	if err != nil {
		return result{}, err
	}
	sc.mu.Lock()
	delete(sc.subscribed, p.URI)
	conn := sc.conn
	sc.mu.Unlock()
	// A server that is not running has no subscription to drop: it is not
	// started for this.
	if conn == nil {
		return result{value: struct{}{}}, nil
	}
	release, err := sess.admit(sc)
	if err != nil {
		return result{}, err
	}
	defer release()
	reqCtx, cancel := sc.requestContext(ctx)
	defer cancel()
	if err := conn.Unsubscribe(reqCtx, p.URI); err != nil {
		return result{}, sc.requestError(ctx, reqCtx, conn, protocol.MethodResourcesUnsubscribe, err)
	}
	return result{value: struct{}{}}, nil
}

func decodeSubscribe(params json.RawMessage) (protocol.ResourceSubscribeParams, error) {
	var p protocol.ResourceSubscribeParams
	if err := decodeParams(params, &p); err != nil {
		return p, err
	}
	if p.URI == "" {
		return p, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "uri is required")
	}
	return p, nil
}

// resubscribe subscribes a new connection to the session's resources. A
// refusal is reported, not fatal: the server runs, without that update.
func (sc *serverConn) resubscribe(ctx context.Context, conn *mcpclient.Conn) {
	for _, uri := range sc.subscriptions() {
		if err := conn.Subscribe(ctx, uri); err != nil {
			sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("resource %q of server %q not subscribed again after a new connection: %v", uri, sc.name, err))
		}
	}
}

// subscriptions are the URIs the session is subscribed to on the server,
// sorted.
func (sc *serverConn) subscriptions() []string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return slices.Sorted(maps.Keys(sc.subscribed))
}

// resubscribeFailed reports a subscription a renewed HTTP session of the
// server refused.
func (sc *serverConn) resubscribeFailed(uri string, err error) {
	sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("resource %q of server %q not subscribed again after the server forgot the MCP session: %v", uri, sc.name, err))
}

// onResourceUpdated forwards a server's notifications/resources/updated
// while the session has a subscription on that server (the URI may be a
// part of a subscribed resource, so it is not matched exactly), through the
// server's update queue (updates.go).
func (sc *serverConn) onResourceUpdated(uri string) {
	sc.mu.Lock()
	n := len(sc.subscribed)
	sc.mu.Unlock()
	if n == 0 {
		return
	}
	sc.updates.add(uri)
}
