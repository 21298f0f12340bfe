package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Session is one host session (a chat thread): its own MCP connection per
// server, its own startup rounds and its own qualified catalog.
type Session struct {
	id    string
	srv   *Server
	env   *environment
	scope json.RawMessage
	cwd   string

	// ctx ends when the session closes; it cancels startups in flight.
	ctx    context.Context
	cancel context.CancelFunc

	names   []string // the session's servers, sorted
	servers map[string]*serverConn

	// Lock order of the sidecar core, outer first (a lock is only ever
	// taken while holding those listed before it, never the reverse):
	//
	//	Session.startMu   -> serverConn.mu, Session.mu (startLater, prepareRound)
	//	Session.rebuildMu -> serverConn.mu, Session.mu (rebuildCatalog, searchIndex)
	//	serverConn.cacheMu -> environment.badCacheMu, Server.mu, logLimiter.mu,
	//	                      environment.scrub.mu (storeCacheAt, invalidateDisk: their reports)
	//	serverConn.mu     -> environment.scrub.mu (secrets, under mu in lost and finishStart),
	//	                     then, as redact.Secrets reads the values that change,
	//	                     inputStore.mu, helperSecrets.mu and the OAuth store
	//	sentCall.mu       -> callDeadlines.mu (sentCall.watch)
	//	dynamicHeaders' mu -> helperSecrets.mu (one header helper run at a time)
	//
	// Session.mu and Server.mu are leaves: nothing else is locked while
	// one of them is held. None of these locks is held while a connection
	// is closed or a startup is waited for.
	mu      sync.Mutex
	round   int
	closed  bool
	catalog sessionCatalog

	pending   int        // requests in flight, guarded by mu (admit; serverConn.pending is each server's part)
	startMu   sync.Mutex // serialises startLater; taken before serverConn.mu and mu
	rebuildMu sync.Mutex // serialises rebuildCatalog; taken before serverConn.mu and mu
	// qualified names the session's tools and remembers the names given,
	// so that a name means one tool for the session's life (guarded by
	// rebuildMu).
	qualified catalog.Names

	// rounds tracks startup-round goroutines (and other session work, see
	// track) so close can wait for them; prepared holds the rounds
	// prepared but not yet launched (guarded by mu), which close ends.
	rounds   sync.WaitGroup
	prepared []*startRound
	// watchers tracks the goroutines that watch live connections; close
	// waits for them after closing the connections. A watcher whose
	// connection was lost waits for its teardown (Conn.Close).
	watchers sync.WaitGroup
	// teardowns tracks the teardowns of servers whose startup failed
	// (mcpclient.Options.Background); close waits for them.
	teardowns sync.WaitGroup
	// outputs keeps the session's results cut to their limit, whole, until
	// it closes (outputfiles.go).
	outputs outputFiles
}

func (s *Server) sessionOpen(ctx context.Context, rq *request) (result, error) {
	var p protocol.SessionOpenParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	env := s.environment()
	names := env.order
	if p.Servers != nil {
		names = nil
		for _, n := range p.Servers {
			if _, ok := env.servers[n]; !ok {
				return result{}, protocol.NewError(protocol.CodeUnknownServer, protocol.KindUnknownServer, fmt.Sprintf("unknown server %q", n)).WithServer(n, "")
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
	}
	lazy := env.feature(FeatureLazyStdioStartup)
	switch p.Startup {
	case "":
	case "eager":
		lazy = false
	case "lazy":
		lazy = true
	default:
		return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, fmt.Sprintf("startup must be \"eager\" or \"lazy\", not %q", p.Startup))
	}

	// The session is built in full (every server with its state, eager
	// startups already marked starting) before it is published: a request
	// pipelined behind the open waits for it (sessionRef) and then finds
	// the whole session, never one half filled. Its id was reserved when
	// the open was read (Handle); an open whose params Handle could not
	// read has none, and reserves it now.
	resv := rq.open
	if resv == nil {
		s.mu.Lock()
		resv = s.reserveSessionLocked(p.SessionID)
		s.mu.Unlock()
		rq.open = resv
	}
	if resv.err != nil {
		return result{}, resv.err
	}
	id := resv.id
	sess := &Session{
		id:      id,
		srv:     s,
		env:     env,
		scope:   p.Scope,
		cwd:     p.Cwd,
		names:   names,
		servers: make(map[string]*serverConn, len(names)),

		qualified: catalog.Names{MaxLen: env.maxNameBytes},
	}
	sess.ctx, sess.cancel = context.WithCancel(s.ctx)
	published := false
	defer func() {
		if !published {
			// Failed or panicked before publishing: nobody else can reach
			// this session (the requests waiting for it find no session
			// once invoke abandons the reservation), so it ends here.
			sess.close()
		}
	}()

	// Before anything starts: the values of the inputs its servers use.
	given, err := s.giveInputs(ctx, env, id, names)
	if err != nil {
		return result{}, err
	}
	res := protocol.SessionOpenResult{SessionID: id, Servers: []protocol.ServerState{}}
	var eager []string
	for _, name := range names {
		cfg := env.servers[name]
		if g, ok := given[name]; ok {
			cfg = g
		}
		sc := &serverConn{
			sess:       sess,
			name:       name,
			cfg:        cfg,
			scopeKey:   catalog.ScopeKey(name, cfg, s.opts.Env, p.Scope, sess.fallbackCwd(cfg)),
			catalogSrc: protocol.CatalogNone,
			progress:   map[string]json.RawMessage{},
			subscribed: map[string]bool{},
		}
		sc.updates = newUpdateQueue(sc)
		sess.servers[name] = sc
		switch {
		case !cfg.Valid():
			sc.setStateLocked(protocol.StateInvalid)
		case !cfg.IsEnabled():
			sc.setStateLocked(protocol.StateDisabled)
		case lazy && sess.loadDormant(sc):
			sc.setStateLocked(protocol.StateDormant)
		default:
			eager = append(eager, name)
		}
		res.Servers = append(res.Servers, protocol.ServerState{Name: name, State: sc.state, Instructions: sc.instructions})
	}
	sess.rebuildCatalog()
	// Round 0 always exists (its summary may be empty when every server
	// is dormant or disabled), so hosts can wait for it uniformly.
	launch := sess.prepareRound(eager)
	for i := range res.Servers {
		if slices.Contains(eager, res.Servers[i].Name) {
			res.Servers[i].State = protocol.StateStarting
		}
	}
	if err := s.publishSession(resv, sess); err != nil {
		return result{}, err
	}
	published = true
	return result{value: res, after: launch}, nil
}

// openingSession is a session/open in progress. Requests that name its id
// wait for done, then use sess: the session it published, or nil when the
// open failed (they then find no session, -32001).
type openingSession struct {
	done chan struct{}
	sess *Session // set before done closes
}

// openReservation is the id a session/open reserved when Handle read it,
// or why it could not (err: the id is open or being opened).
type openReservation struct {
	id      string
	opening *openingSession // nil with err
	err     error
	ended   bool // published or abandoned; guarded by Server.mu
}

// reserveSessionLocked reserves id (or a fresh one when id is empty) for
// a session being opened. s.mu must be held.
func (s *Server) reserveSessionLocked(id string) *openReservation {
	if id == "" {
		for {
			s.nextSession++
			id = "s" + strconv.Itoa(s.nextSession)
			if s.sessions[id] == nil && s.opening[id] == nil {
				break
			}
		}
	} else if s.sessions[id] != nil || s.opening[id] != nil {
		return &openReservation{id: id, err: protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, fmt.Sprintf("session %q is already open", id))}
	}
	if s.opening == nil {
		s.opening = map[string]*openingSession{}
	}
	o := &openingSession{done: make(chan struct{})}
	s.opening[id] = o
	return &openReservation{id: id, opening: o}
}

// publishSession makes a complete session visible to requests, and hands
// it to those that wait for it, unless every session was closed meanwhile
// (shutdown, or the host went away): a session published after that would
// never be closed.
func (s *Server) publishSession(r *openReservation, sess *Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessionsEnded {
		return protocol.NewError(protocol.CodeInvalidRequest, protocol.KindInvalidRequest,
			fmt.Sprintf("session %q not opened: the sidecar is shutting down", sess.id))
	}
	s.sessions[sess.id] = sess
	r.opening.sess = sess
	r.endLocked(s)
	return nil
}

// abandon ends a reservation whose open did not publish a session: the id
// is free again, and the requests waiting for it find no session. It does
// nothing to a published or failed reservation, nor to a nil one.
func (r *openReservation) abandon(s *Server) {
	if r == nil || r.opening == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.endLocked(s)
}

func (r *openReservation) endLocked(s *Server) {
	if r.ended {
		return
	}
	r.ended = true
	delete(s.opening, r.id)
	close(r.opening.done)
}

// sessionRef is the session a request's sessionId named when Handle read
// the request: requests are ordered against session/open and
// session/close as the host sent them, whatever order their goroutines run
// in. A request behind a session/open waits for it; one ahead of a
// session/close holds the session the close ends, and is answered -32011
// session_closed, never -32001.
type sessionRef struct {
	id       string
	resolved bool
	sess     *Session        // open when the request was read
	opening  *openingSession // being opened when the request was read
}

// sessionRefLocked looks id up. s.mu must be held.
func (s *Server) sessionRefLocked(id string) sessionRef {
	return sessionRef{id: id, resolved: true, sess: s.sessions[id], opening: s.opening[id]}
}

// sessionIDOf reads the sessionId member of a request's params; ok is
// false for params it cannot read (the handler refuses them, -32602).
func sessionIDOf(params json.RawMessage) (id string, ok bool) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if len(params) == 0 || string(params) == "null" {
		return "", true
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", false
	}
	return p.SessionID, true
}

// session returns the session a request names (id, the sessionId of its
// params, which ref looked up when the request was read), waiting for a
// session/open in progress; -32001 when none is open, -32011
// session_closed when a close ended it since the request was read.
func (s *Server) session(ctx context.Context, ref sessionRef, id string) (*Session, error) {
	if !ref.resolved || ref.id != id {
		// Not looked up when read (params Handle could not read): now.
		s.mu.Lock()
		ref = s.sessionRefLocked(id)
		s.mu.Unlock()
	}
	sess := ref.sess
	if o := ref.opening; o != nil {
		select {
		case <-o.done:
		case <-ctx.Done():
			return nil, cancelledError()
		}
		sess = o.sess
	}
	if sess == nil {
		return nil, unknownSession(id)
	}
	if sess.closing() {
		return nil, sess.closedError()
	}
	return sess, nil
}

func (sess *Session) fallbackCwd(cfg *config.ServerConfig) string {
	if cfg.Transport() != config.TransportStdio || cfg.Cwd != "" {
		return ""
	}
	return sess.cwd
}

func (s *Server) sessionClose(ctx context.Context, rq *request) (result, error) {
	var p protocol.SessionParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	sess, err := s.session(ctx, rq.session, p.SessionID)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Data.Kind == protocol.KindSessionClosed {
			// Another close (or shutdown) ended it first.
			return result{}, unknownSession(p.SessionID)
		}
		return result{}, err
	}
	s.mu.Lock()
	mine := s.sessions[sess.id] == sess
	if mine {
		delete(s.sessions, sess.id)
	}
	s.mu.Unlock()
	if !mine {
		return result{}, unknownSession(p.SessionID)
	}
	sess.close()
	return result{value: struct{}{}}, nil
}

// close cancels the session's startups, closes every connection (their
// process groups end) and waits for the startup rounds to finish.
func (sess *Session) close() {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return
	}
	sess.closed = true
	prepared := sess.prepared
	sess.prepared = nil
	for _, r := range prepared {
		r.claimed = true
	}
	sess.mu.Unlock()
	sess.cancel()
	for _, r := range prepared {
		sess.runRound(r, true)
	}
	sess.rounds.Wait()
	var wg sync.WaitGroup
	for _, sc := range sess.servers {
		sc.mu.Lock()
		conn := sc.conn
		sc.conn = nil
		if sc.state == protocol.StateReady || sc.state == protocol.StateStarting {
			sc.setStateLocked(protocol.StateCancelled)
		}
		sc.mu.Unlock()
		if conn != nil {
			wg.Go(func() { conn.Close() })
		}
	}
	wg.Wait()
	// Connections lost on their own are torn down by their watchers, and
	// failed startups in the background: the session ends when their
	// processes are gone too.
	sess.watchers.Wait()
	sess.teardowns.Wait()
	sess.srv.logLimiter.forgetSession(sess.id)
	if err := sess.outputs.close(); err != nil {
		sess.srv.logger.Warn("results of the session not removed", "session", sess.id, "err", err)
	}
}

// closing reports a session that session/close (or shutdown) ended. What a
// request of it meets from then on (a startup ended, a catalog emptied, a
// connection closed) is the close's doing, and the request is answered as
// such: -32011 session_closed, never unknown_tool nor a retryable
// connection_lost (docs/protocol.md, "Requests").
func (sess *Session) closing() bool {
	return sess.ctx.Err() != nil
}

// closedError is sessionClosedError for a request not bound to a server (a
// tool name the session's catalog, emptied by the close, no longer has).
func (sess *Session) closedError() *protocol.Error {
	return protocol.NewError(protocol.CodeServerNotReady, protocol.KindSessionClosed,
		fmt.Sprintf("session %q was closed while the request was in flight", sess.id))
}

// server looks up one of the session's servers.
func (sess *Session) server(name string) (*serverConn, error) {
	sc := sess.servers[name]
	if sc == nil {
		if _, configured := sess.env.servers[name]; configured {
			return nil, protocol.NewError(protocol.CodeUnknownServer, protocol.KindUnknownServer,
				fmt.Sprintf("server %q is not part of session %q", name, sess.id)).WithServer(name, "")
		}
		return nil, protocol.NewError(protocol.CodeUnknownServer, protocol.KindUnknownServer,
			fmt.Sprintf("unknown server %q", name)).WithServer(name, "")
	}
	return sc, nil
}

func (sess *Session) allServers() []*serverConn {
	scs := make([]*serverConn, 0, len(sess.names))
	for _, n := range sess.names {
		scs = append(scs, sess.servers[n])
	}
	return scs
}
