package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

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
		sc.mu.Lock()
		conn := sc.conn
		sc.mu.Unlock()
		sc.noteListen(conn)
		st := sc.status(launcher)
		if conn != nil && st.Era != "" {
			st.ListenRefused = sc.listenRefusal(conn)
		}
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
