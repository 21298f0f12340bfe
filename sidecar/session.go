package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
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

	mu      sync.Mutex
	round   int
	closed  bool
	catalog sessionCatalog

	pending   int        // requests in flight, guarded by mu (admit; serverConn.pending is each server's part)
	startMu   sync.Mutex // serialises startLater
	rebuildMu sync.Mutex // serialises rebuildCatalog
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

// sessionCatalog is the session's qualified view of all its servers' tools,
// rebuilt whenever one server's tools change.
type sessionCatalog struct {
	tools []catalog.Tool    // in server order, then the server's own order
	wire  []json.RawMessage // tools[i] as tools/list shows it, rendered once per rebuild
	// summary is tools[i] as tools/list with schemas: false shows it, and
	// tokens the estimated tokens of wire[i].
	summary []json.RawMessage
	tokens  []int
	byName  map[string]toolRef
	// index ranks the catalog for tools/search. It is made by the
	// session's first search (from the analyses every session shares,
	// environment.searches); from then on every rebuild hands it the new
	// catalog, so it is current before the next search.
	index *search.Index
}

type toolRef struct {
	sc      *serverConn
	tool    catalog.Tool
	wire    json.RawMessage
	summary json.RawMessage
	tokens  int
}

// startAttempt is one startup of one server. done closes when it ends.
type startAttempt struct {
	round int
	done  chan struct{}
	err   error // set before done closes
	// ctx is the attempt's life: a newer startup of the server
	// (servers/reconnect) cancels it with errStartupSuperseded at once, so
	// that its process ends then, not at startup_timeout_sec.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// initialized closes once conn has completed initialize, before the
	// first tools/list: early resource discovery may use it from then on.
	initialized chan struct{}
	conn        *mcpclient.Conn
	// earlyRejected records that an early discovery was rejected (-32017)
	// while this attempt was the server's current one: a retry waits for
	// normal readiness. Guarded by serverConn.mu.
	earlyRejected bool
	// listErr is the failure of listing again after a notification
	// overtook the startup's listing: the server becomes ready with that
	// listing, stale, and this is its lastError.
	listErr string
	// hints and listedAt are the startup's listing's (learnt.go); kept is
	// set when the startup listed nothing, its cached catalog being fresh.
	hints    catalog.CacheHints
	listedAt time.Time
	kept     bool
}

// serverConn is one server in one session.
type serverConn struct {
	sess *Session
	name string
	cfg  *config.ServerConfig
	// scopeKey is the discovery scope (docs/protocol.md, "Sessions, startup and
	// the discovery scope").
	scopeKey string

	// pending counts the session's requests in flight to this server,
	// guarded by Session.mu (admit).
	pending int

	mu    sync.Mutex
	state string
	conn  *mcpclient.Conn
	// ending are connections lost on their own whose teardown may not be
	// finished (their watcher removes them once it is).
	ending     map[*mcpclient.Conn]bool
	attempt    *startAttempt
	tools      []catalog.Tool // filtered, as the server sent them (setTools)
	toolAt     map[string]int // index in tools by raw name
	catalogSrc string
	lastErr    string
	restarts   int
	startedAt  time.Time
	sandboxCap sandbox.Capability
	progress   map[string]json.RawMessage // progress tokens of calls in flight
	// subscribed are the URIs the session subscribed to on this server
	// (subscriptions.go); every new connection subscribes to them again.
	subscribed map[string]bool
	// updates are the server's resource updates waiting for the host
	// (updates.go).
	updates *updateQueue
	// nextRestart is the earliest time a crashed server may be restarted.
	nextRestart time.Time
	backoff     time.Duration
	list        listState
	// resourceGen counts notifications/resources/list_changed: early
	// discovery rejects a result assembled across a change.
	resourceGen uint64
	crashes     int // crashes since the last stable run
	// skipped counts the stdout lines of the current connection that were
	// not JSON-RPC; firstSkipped is the first of them.
	skipped      int
	firstSkipped string
	// hints are the caching hints of the catalog in use (a live listing's
	// over a connection of 2026-07-28, or the disk entry's), listedAt when
	// it was listed (learnt.go).
	hints    catalog.CacheHints
	listedAt time.Time
	// instructions are the server's instructions as the host gets them:
	// the live connection's, or a dormant server's from its disk entry.
	instructions string
	// excluded are the tools the last listing left out; excludedSeen
	// those reported in mcp/log already.
	excluded     []protocol.ExcludedTool
	excludedSeen []protocol.ExcludedTool

	// cacheMu orders the disk cache writes and removals of this server:
	// they run in the background, and neither an older listing nor one a
	// notification outdated may overwrite a newer one. cacheGen is the
	// listState.changes value of the last listing written or notification
	// acted on, cacheWritten the time of that listing (zero after a
	// removal).
	cacheMu      sync.Mutex
	cacheGen     uint64
	cacheWritten time.Time
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
			sc.state = protocol.StateInvalid
		case !cfg.IsEnabled():
			sc.state = protocol.StateDisabled
		case lazy && sess.loadDormant(sc):
			sc.state = protocol.StateDormant
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
			sc.state = protocol.StateCancelled
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

// background runs a teardown of one of sc's processes that the session's
// close waits for. Its callers run inside a startup round, which close
// waits for before it waits for teardowns.
func (sc *serverConn) background(f func()) {
	sess := sc.sess
	sess.teardowns.Add(1)
	go func() {
		defer sess.teardowns.Done()
		if h := sess.srv.hook().teardown; h != nil {
			h(sess.id, sc.name)
		}
		f()
	}()
}

// Admission bounds the requests a session has in flight, so that a host
// that floods one session (or a server that never answers) cannot pile up
// goroutines without end: limits.maxPendingPerSession in all, and, in a
// session of several servers, one server's requests at most half of the
// places its other servers leave free (ceil), so that a server that never
// answers cannot take the places its session's other servers need: one
// silent server holds at most half of them, a second a quarter, and so on.

// admit counts a request to sc against the session's bounds. The caller
// must call the returned release.
func (sess *Session) admit(sc *serverConn) (release func(), err error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if err := sess.admitLocked(); err != nil {
		return nil, err
	}
	if err := sess.assignLocked(sc); err != nil {
		sess.pending--
		return nil, err
	}
	return func() { sess.release(sc) }, nil
}

// tryAdmit counts a request whose server is not known yet (a tools/call
// before binding) against the session's bound; assign then gives it to its
// server. The caller calls release itself.
func (sess *Session) tryAdmit() error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.admitLocked()
}

// admitTo is admit for a caller that calls release(sc) itself (the tool
// call path, which keeps the session rather than a closure).
func (sess *Session) admitTo(sc *serverConn) error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if err := sess.admitLocked(); err != nil {
		return err
	}
	if err := sess.assignLocked(sc); err != nil {
		sess.pending--
		return err
	}
	return nil
}

// assign gives a place tryAdmit took to sc, within sc's share; on an
// error the place is still the caller's (release(nil)).
func (sess *Session) assign(sc *serverConn) error {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.assignLocked(sc)
}

func (sess *Session) admitLocked() error {
	if sess.pending >= sess.env.maxPending {
		return protocol.NewError(protocol.CodeTooManyRequests, protocol.KindTooManyRequests,
			fmt.Sprintf("session %q has %d requests in flight (limits.maxPendingPerSession); try again when some finish", sess.id, sess.pending)).Retry()
	}
	sess.pending++
	return nil
}

// assignLocked counts one of the session's places (already counted in
// pending) against sc's share. sess.mu must be held.
func (sess *Session) assignLocked(sc *serverConn) error {
	if len(sess.names) > 1 {
		others := sess.pending - 1 - sc.pending // places held for other servers (or not bound yet)
		share := (sess.env.maxPending - others + 1) / 2
		if sc.pending >= share {
			return protocol.NewError(protocol.CodeTooManyRequests, protocol.KindTooManyRequests,
				fmt.Sprintf("server %q has %d requests in flight in session %q, its share of limits.maxPendingPerSession (half the places the session's other servers leave free); try again when some finish",
					sc.name, sc.pending, sess.id)).WithServer(sc.name, "").Retry()
		}
	}
	sc.pending++
	return nil
}

// release gives back a place admit, admitTo or tryAdmit took; sc is the
// server it was given to (nil for one never assigned).
func (sess *Session) release(sc *serverConn) {
	sess.mu.Lock()
	sess.pending--
	if sc != nil {
		sc.pending--
	}
	sess.mu.Unlock()
}

// track runs f in a goroutine that close waits for, unless the session is
// closing (then it reports false and f does not run): a WaitGroup must not
// gain work once its Wait has begun.
func (sess *Session) track(f func()) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return false
	}
	sess.rounds.Add(1)
	go func() {
		defer sess.rounds.Done()
		f()
	}()
	return true
}

// startRound is one startup round: its servers were marked starting when
// it was prepared; launching it announces and runs their startups. A
// prepared round is launched exactly once, by its launch function or, if
// that never runs (the session closed first, or the request that prepared
// it failed), by Session.close, so that no attempt is left unfinished.
type startRound struct {
	n        int
	scs      []*serverConn
	attempts []*startAttempt
	claimed  bool // guarded by Session.mu
}

// prepareRound marks names as starting in a new round and returns the
// function that announces and runs the round. Marking first means a request
// that arrives before the announcement already waits for these startups.
func (sess *Session) prepareRound(names []string) (launch func()) {
	r := &startRound{scs: make([]*serverConn, len(names)), attempts: make([]*startAttempt, len(names))}
	sess.mu.Lock()
	r.n = sess.round
	sess.round++
	sess.mu.Unlock()
	for i, name := range names {
		sc := sess.servers[name]
		a := &startAttempt{round: r.n, done: make(chan struct{}), initialized: make(chan struct{})}
		a.ctx, a.cancel = context.WithCancelCause(sess.ctx)
		sc.mu.Lock()
		old := sc.attempt
		sc.state = protocol.StateStarting
		sc.attempt = a
		sc.mu.Unlock()
		if old != nil {
			// A startup still in flight is superseded: it ends now, and
			// whoever waited for it follows this one (waitStarting, ready).
			old.cancel(errStartupSuperseded)
		}
		r.attempts[i], r.scs[i] = a, sc
	}
	sess.mu.Lock()
	closed := sess.closed
	if !closed {
		sess.prepared = append(sess.prepared, r)
	}
	sess.mu.Unlock()
	if f := sess.srv.hook().roundPrepared; f != nil {
		f(sess.id, r.n)
	}
	if closed {
		// close has taken the prepared rounds already: this one ends here.
		r.claimed = true
		sess.runRound(r, true)
		return func() {}
	}
	return func() { sess.launchRound(r) }
}

// launchRound runs a prepared round, unless close has taken it over. A
// round runs while close waits for it (rounds).
func (sess *Session) launchRound(r *startRound) {
	sess.mu.Lock()
	if r.claimed {
		sess.mu.Unlock()
		return
	}
	r.claimed = true
	sess.prepared = slices.DeleteFunc(sess.prepared, func(p *startRound) bool { return p == r })
	sess.rounds.Add(1) // under mu, before close can begin to wait
	sess.mu.Unlock()
	defer sess.rounds.Done()
	sess.runRound(r, false)
}

// runRound announces the round's startups, runs them (or, when closed,
// ends them as cancelled) and announces the summary.
func (sess *Session) runRound(r *startRound, closed bool) {
	// Every "starting" of the round goes out before any terminal status.
	for _, sc := range r.scs {
		sess.srv.notify(protocol.NotifyStartupStatus, protocol.StartupStatusParams{
			SessionID: sess.id, Server: sc.name, Round: r.n, Status: protocol.StatusStarting,
		})
	}
	var wg sync.WaitGroup
	for i, sc := range r.scs {
		if closed {
			sc.finishStart(r.attempts[i], nil, nil, sc.sessionClosedError())
			continue
		}
		wg.Go(func() { sc.start(r.attempts[i]) })
	}
	wg.Wait()
	summary := protocol.StartupCompleteParams{
		SessionID: sess.id, Round: r.n,
		Ready: []string{}, Failed: []protocol.FailedServer{}, Cancelled: []string{},
	}
	for i, sc := range r.scs {
		a := r.attempts[i]
		switch {
		case a.err == nil:
			summary.Ready = append(summary.Ready, sc.name)
		case endedNotFailed(a.err):
			summary.Cancelled = append(summary.Cancelled, sc.name)
		case isNeedsAuthorization(a.err):
			summary.NeedsAuthorization = append(summary.NeedsAuthorization, protocol.NeedsAuthorizationServer{Server: sc.name, AuthorizationURL: authorizationURLOf(a.err)})
		default:
			summary.Failed = append(summary.Failed, protocol.FailedServer{Server: sc.name, Error: a.err.Error(), Required: sc.cfg.Required})
		}
	}
	sess.srv.notify(protocol.NotifyStartupComplete, summary)
}

// endedNotFailed reports a startup that ended without failing: the session
// closed, a newer startup superseded it, or (never in practice) a context
// was cancelled. mcp/startupStatus reports these as "cancelled".
func endedNotFailed(err error) bool {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Data.Kind == protocol.KindSessionClosed || pe.Data.Kind == protocol.KindStartupSuperseded
	}
	return errors.Is(err, context.Canceled)
}

// sessionClosedError ends a startup, or a request waiting for one or using
// the server, because the session closed. The host cancelled nothing, so it
// is not -32800; the session is gone, so it is not retryable.
func (sc *serverConn) sessionClosedError() *protocol.Error {
	return protocol.NewError(protocol.CodeServerNotReady, protocol.KindSessionClosed,
		fmt.Sprintf("server %q of session %q ended: the session was closed", sc.name, sc.sess.id)).WithServer(sc.name, "")
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

// supersededError ends a startup that a newer one (servers/reconnect)
// replaced; whoever waited for it may wait for the newer one.
func (sc *serverConn) supersededError() *protocol.Error {
	return protocol.NewError(protocol.CodeServerNotReady, protocol.KindStartupSuperseded,
		fmt.Sprintf("startup of server %q was superseded by a newer startup (servers/reconnect)", sc.name)).WithServer(sc.name, "").Retry()
}

// start runs one startup attempt: spawn or dial, initialize, first listing,
// all within startup_timeout_sec.
func (sc *serverConn) start(a *startAttempt) {
	sess := sc.sess
	timeout := sc.cfg.StartupTimeout()
	ctx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	defer a.cancel(nil) // the connection, if any, lives on without it
	budget := newStartBudget(ctx, sess.env.startSem, timeout, func() { cancel(errStartupTimeout) })
	defer budget.stop()

	conn, tools, err := sc.connectAndList(ctx, a, budget)
	if err != nil {
		authErr, isAuth := sc.authorizationError(err)
		switch {
		case sess.ctx.Err() != nil:
			err = sc.sessionClosedError()
		case errors.Is(context.Cause(a.ctx), errStartupSuperseded):
			err = sc.supersededError()
		case isAuth:
			err = authErr
		case errors.Is(context.Cause(ctx), errStartupTimeout):
			// mcpclient's errors name the server already.
			why := strings.TrimPrefix(err.Error(), fmt.Sprintf("server %q: ", sc.name))
			if w := budget.describeExpiry(); w != "" {
				why = w
			}
			msg := fmt.Sprintf("server %q did not start within startup_timeout_sec (%s): %s", sc.name, formatSeconds(timeout), why)
			if errors.Is(err, mcpclient.ErrInitializeTimeout) {
				// Whatever the server did after the deadline (most exit
				// when their stdin closes) is not why it failed.
				msg = fmt.Sprintf("server %q did not answer initialize within startup_timeout_sec (%s)%s", sc.name, formatSeconds(timeout),
					strings.TrimPrefix(why, mcpclient.ErrInitializeTimeout.Error()))
			}
			err = protocol.NewError(protocol.CodeStartupTimeout, protocol.KindStartupTimeout, msg).WithServer(sc.name, "").Retry()
		default:
			var pe *protocol.Error
			if !errors.As(err, &pe) {
				// mcpclient's errors name the server already.
				why := strings.TrimPrefix(err.Error(), fmt.Sprintf("server %q: ", sc.name))
				why = sc.withEnvHint(sc.connConfig(), why)
				err = protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady,
					fmt.Sprintf("server %q failed to start: %s", sc.name, why)).WithServer(sc.name, "").Retry()
			}
		}
	}
	sc.finishStart(a, conn, tools, sc.scrubbed(err))
}

var (
	errStartupTimeout    = errors.New("startup_timeout_sec elapsed")
	errStartupSuperseded = errors.New("a newer startup superseded this one")
)

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

func (sc *serverConn) connectAndList(ctx context.Context, a *startAttempt, budget *startBudget) (*mcpclient.Conn, []catalog.Tool, error) {
	if err := budget.acquire(); err != nil {
		return nil, nil, fmt.Errorf("waiting for a startup slot: %w", err)
	}
	opts := sc.clientOptions()
	opts.Config = sc.connConfig()
	if opts.Config.HTTPHeadersHelper != "" {
		opts.DynamicHeaders = sc.dynamicHeaders(opts.Config)
	}
	opts.OAuth = sc.oauthHandler(budget)
	opts.HTTPClient = oauthClient(opts.OAuth)
	opts.Era = sc.eraHint()
	if f := sc.sess.srv.hook().connecting; f != nil {
		f(sc.sess.id, sc.name, opts)
	}
	conn, err := mcpclient.Connect(ctx, opts)
	budget.release()
	if err != nil {
		return nil, nil, err
	}
	sc.sess.env.learnEra(sc.scopeKey, conn.Era(), true)
	a.conn = conn
	close(a.initialized)
	// A cached catalog the server said is still fresh serves the new
	// connection as it is: no listing (docs/protocol.md, "Disk cache and
	// lazy startup").
	sc.mu.Lock()
	if a.kept = sc.freshCatalogLocked(); a.kept {
		tools := sc.tools
		sc.mu.Unlock()
		sc.resubscribe(ctx, conn)
		return conn, tools, nil
	}
	sc.mu.Unlock()
	listing, tools, gen, current, err := sc.listAtStartup(ctx, a, conn)
	if err != nil {
		// The failure is reported now; the process ends after.
		sc.background(func() { conn.Close() })
		return nil, nil, err
	}
	sc.resubscribe(ctx, conn)
	if current {
		sc.storeCacheAt(conn, listing, gen, a.listedAt)
	}
	return conn, tools, nil
}

// listAtStartup makes the startup's listing of conn and reports whether it
// is current: no notification came after it began. An overtaken listing may
// mix versions, so it is listed again, at most maxOvertakenListings times;
// if listing again fails, the overtaken listing is kept, stale, as after a
// failed refresh (a.listErr says why). Notifications that came before the
// listing began are reflected in it. A catalog still stale when the server
// becomes ready is refreshed then (finishStart).
func (sc *serverConn) listAtStartup(ctx context.Context, a *startAttempt, conn *mcpclient.Conn) (listing catalog.Listing, tools []catalog.Tool, gen uint64, current bool, err error) {
	for try := 0; ; try++ {
		sc.mu.Lock()
		began := sc.list.changes
		sc.mu.Unlock()
		// Only the first listing may be shared: the notification that
		// overtook it invalidated the scope's shared listing.
		listedAt := sc.sess.srv.now()
		got, filtered, err := sc.listTools(ctx, conn, try == 0)
		if err != nil {
			if try == 0 || ctx.Err() != nil {
				return catalog.Listing{}, nil, 0, false, err
			}
			a.listErr = sc.listingFailed(err, false)
			return listing, tools, gen, false, nil
		}
		listing, tools, gen = got, filtered, began
		a.hints, a.listedAt = got.Hints, listedAt
		sc.mu.Lock()
		sc.list.listed = gen
		current = sc.list.changes == gen
		sc.mu.Unlock()
		if current || try == maxOvertakenListings {
			return listing, tools, gen, current, nil
		}
	}
}

// storeCacheAt writes a live listing, made at listedAt when
// listState.changes was gen, to the disk cache with what conn learnt of
// the server (its era and protocol version, its instructions), unless the
// server opted out of caching or a newer listing or a later notification
// was acted on already. A failure is reported, never fatal.
func (sc *serverConn) storeCacheAt(conn *mcpclient.Conn, listing catalog.Listing, gen uint64, listedAt time.Time) {
	disk := sc.sess.env.disk
	if disk == nil || !cacheable(conn) {
		return
	}
	entry := &catalog.CacheEntry{Server: sc.name, ScopeKey: sc.scopeKey, ListedAt: listedAt, Tools: listing.Items, Hints: listing.Hints,
		Era: string(conn.Era()), ProtocolVersion: conn.ProtocolVersion(), Instructions: sc.cutInstructions(conn.Instructions())}
	sc.cacheMu.Lock()
	defer sc.cacheMu.Unlock()
	if gen < sc.cacheGen || gen == sc.cacheGen && listedAt.Before(sc.cacheWritten) {
		return
	}
	sc.cacheGen, sc.cacheWritten = gen, listedAt
	if err := disk.Store(sc.scopeKey, entry); err != nil {
		if sc.sess.env.untrustedDir(err) {
			sc.sess.reportUntrustedDir(sc, err)
			return
		}
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("catalog cache for server %q not written: %v", sc.name, err))
		return
	}
	sc.sess.env.cacheRepaired(sc.scopeKey)
}

// invalidateDisk removes the scope's disk entry, which the list_changed
// notification counted as notification outdated, unless a listing that
// began after it was written already; listings that began before it are
// refused from now on. A failure is reported, never fatal.
func (sc *serverConn) invalidateDisk(notification uint64) {
	disk := sc.sess.env.disk
	if disk == nil {
		return
	}
	sc.cacheMu.Lock()
	defer sc.cacheMu.Unlock()
	if notification <= sc.cacheGen {
		return
	}
	sc.cacheGen, sc.cacheWritten = notification, time.Time{}
	if err := disk.Remove(sc.scopeKey); err != nil {
		sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf("outdated catalog cache of server %q not removed: %v", sc.name, err))
	}
}

// listTools fetches the whole catalog of conn; share lets overlapping
// startups of one discovery scope use one listing (the scope is the key:
// a listing, private or not, is never shared beyond it). The listing's
// hints are those of conn's protocol (listingHints); tools with invalid
// x-mcp-header declarations are left out and reported (noteExcluded).
func (sc *serverConn) listTools(ctx context.Context, conn *mcpclient.Conn, share bool) (catalog.Listing, []catalog.Tool, error) {
	list := func(ctx context.Context) (catalog.Listing, error) {
		return catalog.PaginateListing(ctx, "tools", catalog.DefaultPageLimits(), conn.ListToolsPage)
	}
	var listing catalog.Listing
	var err error
	if share && sc.sess.env.feature(FeatureShareStartupListing) && cacheable(conn) {
		listing, _, err = sc.sess.env.shared.ListWith(ctx, sc.scopeKey, list)
	} else {
		listing, err = list(ctx)
	}
	if err != nil {
		return catalog.Listing{}, nil, fmt.Errorf("listing tools of server %q: %w", sc.name, err)
	}
	listing.Hints = listingHints(conn, listing.Hints)
	all, excluded, err := catalog.ParseCatalog(sc.name, listing.Items)
	if err != nil {
		return catalog.Listing{}, nil, err
	}
	sc.noteExcluded(excluded, true)
	return listing, sc.filter(all), nil
}

func (sc *serverConn) filter(all []catalog.Tool) []catalog.Tool {
	tools := catalog.FilterOf(sc.cfg).Apply(all)
	for i := range tools {
		tools[i].Approval = sc.cfg.Approval(tools[i].Name)
	}
	return tools
}

// cacheable reports whether the server allows its catalog to be shared and
// cached: experimental["codex/tool-catalog-cache"].cacheable = false opts out.
func cacheable(conn *mcpclient.Conn) bool {
	raw, ok := conn.Experimental()["codex/tool-catalog-cache"]
	if !ok {
		return true
	}
	var v struct {
		Cacheable *bool `json:"cacheable"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Cacheable == nil {
		return true
	}
	return *v.Cacheable
}

// finishStart records the outcome of a, announces its terminal status and
// wakes everyone waiting on it.
func (sc *serverConn) finishStart(a *startAttempt, conn *mcpclient.Conn, tools []catalog.Tool, err error) {
	sess := sc.sess
	sc.mu.Lock()
	superseded := sc.attempt != a
	closed := sess.ctx.Err() != nil
	// A connection that came up for a startup nobody wants any more is
	// closed here, or its process would outlive the session.
	drop := err == nil && (superseded || closed)
	switch {
	case drop && closed:
		err = sc.sessionClosedError()
	case drop:
		err = sc.supersededError()
	}
	a.err = err
	changed := false
	if !superseded {
		if err == nil {
			// The state stays starting until the session catalog holds
			// these tools: a request must never see the server ready
			// without them.
			changed = sc.catalogSrc == protocol.CatalogCached && !sameTools(sc.tools, tools)
			sc.conn = conn
			sc.setTools(tools)
			if !a.kept {
				sc.hints, sc.listedAt = a.hints, a.listedAt
			}
			sc.instructions = sc.cutInstructions(conn.Instructions())
			sc.catalogSrc = protocol.CatalogLive
			sc.list.stuck = false // a new connection listed
			sc.lastErr = a.listErr
			sc.startedAt = sess.srv.now()
			sc.sandboxCap = sandbox.DetectCapability(conn.Experimental())
		} else if endedNotFailed(err) {
			sc.state = protocol.StateCancelled
		} else if isNeedsAuthorization(err) {
			sc.state = protocol.StateNeedsAuthorization
			sc.lastErr = err.Error()
		} else {
			sc.state = protocol.StateFailed
			sc.lastErr = err.Error()
		}
	}
	sc.mu.Unlock()
	if drop {
		conn.Close()
	}
	if err == nil {
		sess.rebuildCatalog()
		sc.mu.Lock()
		refresh := false
		if sc.attempt == a && sc.conn == conn {
			sc.state = protocol.StateReady
			// A notification the startup's listing does not reflect is
			// followed by a refresh, as it would be had the server been
			// ready when it came.
			refresh = sc.claimRefresherLocked()
		}
		sc.mu.Unlock()
		if refresh {
			sc.startRefresher()
		}
		// Startups run in rounds that close waits for before it waits for
		// the watchers: this Add comes before that Wait.
		sess.watchers.Add(1)
		go func() {
			defer sess.watchers.Done()
			sc.watch(conn)
		}()
	}
	st := protocol.StartupStatusParams{SessionID: sess.id, Server: sc.name, Round: a.round}
	switch {
	case err == nil:
		st.Status = protocol.StatusReady
		n := len(tools)
		st.Tools = &n
	case endedNotFailed(err):
		st.Status = protocol.StatusCancelled
		st.Error = err.Error()
	case isNeedsAuthorization(err):
		st.Status = protocol.StatusNeedsAuthorization
		st.Error = err.Error()
		st.AuthorizationURL = authorizationURLOf(err)
	default:
		st.Status = protocol.StatusFailed
		st.Error = err.Error()
		st.Required = sc.cfg.Required
	}
	sess.srv.notify(protocol.NotifyStartupStatus, st)
	if changed {
		sess.srv.notify(protocol.NotifyToolsChanged, protocol.ToolsChangedParams{SessionID: sess.id, Server: sc.name, Reason: protocol.ReasonStartup})
	}
	close(a.done)
}

// sameTools reports whether two catalogs of one server are identical, byte
// for byte.
func sameTools(a, b []catalog.Tool) bool {
	return slices.EqualFunc(a, b, func(x, y catalog.Tool) bool {
		return x.Name == y.Name && string(x.Raw) == string(y.Raw)
	})
}

// watch notices a connection that ends on its own (a crash, an HTTP session
// lost) and marks the server so that the next use restarts it.
func (sc *serverConn) watch(conn *mcpclient.Conn) {
	<-conn.Done()
	sc.lost(conn)
	// The connection tears its process down on its own once it is lost;
	// this watcher owns that teardown and ends with it, so that whoever
	// waits for the watchers (session close) or for the lost connections
	// (servers/reconnect) waits for the processes too.
	conn.Close()
	sc.mu.Lock()
	delete(sc.ending, conn)
	sc.mu.Unlock()
}

// waitEnded waits until the connections sc lost are torn down.
func (sc *serverConn) waitEnded() {
	sc.mu.Lock()
	ending := make([]*mcpclient.Conn, 0, len(sc.ending))
	for conn := range sc.ending {
		ending = append(ending, conn)
	}
	sc.mu.Unlock()
	for _, conn := range ending {
		conn.Close()
	}
}

// lost marks conn as gone, unless it was closed on purpose or replaced; it
// is idempotent, so both the watcher and a call that saw the loss first
// may report it.
func (sc *serverConn) lost(conn *mcpclient.Conn) {
	sc.mu.Lock()
	if sc.conn != conn {
		sc.mu.Unlock()
		return
	}
	sc.conn = nil
	if sc.ending == nil {
		sc.ending = map[*mcpclient.Conn]bool{}
	}
	sc.ending[conn] = true
	sc.state = protocol.StateDisconnected
	if sc.catalogSrc == protocol.CatalogLive {
		sc.catalogSrc = protocol.CatalogCached
	}
	msg := fmt.Sprintf("server %q connection lost", sc.name)
	if err := conn.Err(); err != nil {
		msg = sc.secrets().String(fmt.Sprintf("server %q connection lost: %v", sc.name, err))
	}
	// Bounded exponential backoff between restarts: 1 s doubling to 30 s;
	// a server that stayed up five minutes starts over at 1 s. A server
	// that keeps crashing is reported failed instead of restarted forever.
	now := sc.sess.srv.now()
	if now.Sub(sc.startedAt) > stableUptime || sc.backoff == 0 {
		sc.backoff = time.Second
		sc.crashes = 0
	} else {
		sc.backoff = min(2*sc.backoff, 30*time.Second)
	}
	sc.crashes++
	if sc.crashes >= maxCrashes {
		sc.state = protocol.StateFailed
		msg = fmt.Sprintf("%s; it crashed %d times in a row, so it is not restarted again (servers/reconnect restarts it)", msg, sc.crashes)
	}
	sc.lastErr = msg
	sc.nextRestart = now.Add(sc.backoff)
	sc.mu.Unlock()
	sc.sess.srv.logServer(sc.sess.id, sc.name, "error", msg)
}

// Crash-loop bounds: a run shorter than stableUptime counts
// towards maxCrashes.
const (
	stableUptime = 5 * time.Minute
	maxCrashes   = 5
)

// ready returns a live connection for sc, waiting for a startup in flight
// and restarting a crashed or dormant server. The wait is bounded by ctx;
// each startup is bounded by startup_timeout_sec on its own.
func (sc *serverConn) ready(ctx context.Context) (*mcpclient.Conn, error) {
	askedAgain := false
	for {
		sc.mu.Lock()
		switch sc.state {
		case protocol.StateNeedsAuthorization:
			msg := sc.lastErr
			sc.mu.Unlock()
			// While a flow waits for the user, its URL is the answer; once
			// it is over (timed out, declined), a use asks again, once.
			if url := sc.pendingAuthorization(); url != "" || askedAgain {
				if url == "" {
					return nil, needsAuthorization(sc.name, "", msg)
				}
				return nil, needsAuthorization(sc.name, url, fmt.Sprintf("server %q needs authorization: open %s in a browser", sc.name, url))
			}
			askedAgain = true
			sc.sess.startLater(sc)
			continue
		case protocol.StateReady:
			conn := sc.conn
			sc.mu.Unlock()
			return conn, nil
		case protocol.StateDisabled:
			sc.mu.Unlock()
			return nil, protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady,
				fmt.Sprintf("server %q is disabled (enabled = false)", sc.name)).WithServer(sc.name, "")
		case protocol.StateInvalid:
			sc.mu.Unlock()
			return nil, invalidError(sc.name, sc.cfg)
		case protocol.StateStarting:
			a := sc.attempt
			sc.mu.Unlock()
			if f := sc.sess.srv.hook().startupWait; f != nil {
				f(sc.sess.id, sc.name, false)
			}
			select {
			case <-a.done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case protocol.StateDormant:
			sc.mu.Unlock()
			sc.sess.startLater(sc)
			continue
		case protocol.StateDisconnected:
			wait := sc.nextRestart.Sub(sc.sess.srv.now())
			if wait > 0 {
				msg := sc.lastErr
				sc.mu.Unlock()
				return nil, protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady,
					fmt.Sprintf("%s; restarting in %s", msg, formatSeconds(wait.Round(100*time.Millisecond)))).WithServer(sc.name, "").Retry()
			}
			sc.restarts++
			sc.mu.Unlock()
			sc.sess.startLater(sc)
			continue
		default: // failed, cancelled
			msg := sc.lastErr
			a := sc.attempt
			sc.mu.Unlock()
			if sc.sess.ctx.Err() != nil {
				return nil, sc.sessionClosedError()
			}
			if a != nil && a.err != nil {
				var pe *protocol.Error
				if errors.As(a.err, &pe) {
					return nil, pe
				}
			}
			if msg == "" {
				msg = fmt.Sprintf("server %q is not running", sc.name)
			}
			return nil, protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, msg).WithServer(sc.name, "").Retry()
		}
	}
}

// initializedConn returns a connection that has completed initialize,
// without waiting for its first tools/list (docs/protocol.md, "Early
// resource discovery"), and the startup attempt whose connection it is. It
// reuses the startup's one connection and handshake; a startup that fails
// or is cancelled passes its error on. A startup whose early discovery was
// rejected (-32017) is not used early again: the retry waits for normal
// readiness, and then the attempt is nil (the caller asks sc for it).
func (sc *serverConn) initializedConn(ctx context.Context) (*mcpclient.Conn, *startAttempt, error) {
	for {
		sc.mu.Lock()
		st, a := sc.state, sc.attempt
		early := st == protocol.StateStarting && !a.earlyRejected
		sc.mu.Unlock()
		switch {
		case early:
			if f := sc.sess.srv.hook().startupWait; f != nil {
				f(sc.sess.id, sc.name, true)
			}
			select {
			case <-a.initialized:
				return a.conn, a, nil
			case <-a.done:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		case st == protocol.StateDormant:
			sc.sess.startLater(sc)
			continue
		default:
			conn, err := sc.ready(ctx)
			return conn, nil, err
		}
	}
}

// startLater starts one server in a new round of its own (a dormant server
// on first use, or a crashed one on next use). It does not wait.
func (sess *Session) startLater(sc *serverConn) {
	// One check-and-mark at a time: two first uses at once start one round.
	sess.startMu.Lock()
	defer sess.startMu.Unlock()
	sc.mu.Lock()
	if sc.state == protocol.StateStarting || sc.state == protocol.StateReady {
		sc.mu.Unlock()
		return
	}
	sc.mu.Unlock()
	launch := sess.prepareRound([]string{sc.name})
	go launch()
}

// waitStarting waits until none of scs is starting (or ctx ends). A
// startup that a newer one superseded (servers/reconnect) is followed by
// the newer one: what its waiters wanted is the server, not that attempt.
func waitStarting(ctx context.Context, scs []*serverConn) error {
	for _, sc := range scs {
		var waited *startAttempt
		for {
			sc.mu.Lock()
			a := sc.attempt
			starting := sc.state == protocol.StateStarting
			sc.mu.Unlock()
			if !starting || a == nil || a == waited {
				break
			}
			if f := sc.sess.srv.hook().startupWait; f != nil {
				f(sc.sess.id, sc.name, false)
			}
			select {
			case <-a.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			waited = a
		}
	}
	return nil
}

// rebuildCatalog recomputes the session's qualified names over every
// server that has a catalog. Rebuilds are serialised, so an older view can
// never overwrite a newer one, and each tool's rendered forms are reused
// from the previous catalog when its name and bytes did not change:
// startup of many servers does not re-render every tool once per server.
// A search index, once a search has built one, is handed the new catalog
// here: it follows every change (startup, refresh, list_changed,
// reconnect) and reuses the analysis of what did not change.
func (sess *Session) rebuildCatalog() {
	sess.rebuildMu.Lock()
	defer sess.rebuildMu.Unlock()
	var all []catalog.Tool
	for _, name := range sess.names {
		sc := sess.servers[name]
		sc.mu.Lock()
		if sc.catalogSrc != protocol.CatalogNone && sc.state != protocol.StateDisabled {
			all = append(all, sc.tools...)
		}
		sc.mu.Unlock()
	}
	sess.qualified.Qualify(all)
	prev := sess.snapshot()
	cat := sessionCatalog{
		tools:   all,
		wire:    make([]json.RawMessage, len(all)),
		summary: make([]json.RawMessage, len(all)),
		tokens:  make([]int, len(all)),
		byName:  make(map[string]toolRef, len(all)),
	}
	for i, t := range all {
		ref, ok := prev.byName[t.Qualified]
		if !ok || ref.tool.Server != t.Server || string(ref.tool.Raw) != string(t.Raw) {
			ref = sess.render(t)
		}
		ref.sc, ref.tool = sess.servers[t.Server], t
		cat.wire[i], cat.summary[i], cat.tokens[i] = ref.wire, ref.summary, ref.tokens
		cat.byName[t.Qualified] = ref
	}
	if prev.index != nil {
		cat.index = sess.indexOf(prev.index, all)
	}
	sess.mu.Lock()
	sess.catalog = cat
	sess.mu.Unlock()
}

// render makes a tool's forms for tools/list, with and without schemas.
func (sess *Session) render(t catalog.Tool) toolRef {
	w, sum, tokens, err := t.Forms()
	if err != nil { // ParseTools accepted the object: cannot happen
		sess.srv.logger.Error("rendering tool", "err", err)
		w, sum = json.RawMessage(`{}`), json.RawMessage(`{}`)
	}
	return toolRef{wire: w, summary: sum, tokens: tokens}
}

func (sess *Session) snapshot() sessionCatalog {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.catalog
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

// reportUntrustedDir reports, once per sidecar, a cache folder refused
// because another user owns it or others may write it.
func (sess *Session) reportUntrustedDir(sc *serverConn, err error) {
	if sess.env.reportBadCache(untrustedDirKey) {
		sess.srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("catalog cache not used (nothing is read from or written to it until it is fixed): %v", err))
	}
}

// loadDormant fills sc from the disk cache when the server may stay dormant
// in a lazy session (docs/protocol.md, "Disk cache and lazy
// startup") and reports whether it may.
func (sess *Session) loadDormant(sc *serverConn) bool {
	cfg := sc.cfg
	if cfg.Transport() != config.TransportStdio {
		return false
	}
	if cfg.Required && cfg.Readiness() != config.ReadinessCatalog {
		return false
	}
	disk := sess.env.disk
	if disk == nil {
		return false
	}
	entry, err := disk.Load(sc.scopeKey)
	var all []catalog.Tool
	var excluded []catalog.Excluded
	if err == nil && entry != nil {
		all, excluded, err = catalog.ParseCatalog(sc.name, entry.Tools)
	}
	if err != nil {
		if sess.env.untrustedDir(err) {
			sess.reportUntrustedDir(sc, err)
		} else if sess.env.reportBadCache(sc.scopeKey) {
			sess.srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("catalog cache for server %q ignored (it is replaced at the next live listing): %v", sc.name, err))
		}
		return false
	}
	if entry == nil {
		return false
	}
	sess.env.learnEra(sc.scopeKey, eraOf(entry.Era), false)
	tools := sc.filter(all)
	if len(tools) == 0 {
		return false
	}
	// Reported when the server lists them live; servers/status shows them
	// meanwhile.
	sc.noteExcluded(excluded, false)
	sc.setTools(tools)
	sc.catalogSrc = protocol.CatalogCached
	sc.hints, sc.listedAt = entry.Hints, entry.ListedAt
	sc.instructions = entry.Instructions
	return true
}
