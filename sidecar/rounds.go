package sidecar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

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
		sc.setStateLocked(protocol.StateStarting)
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

// start runs one startup attempt: spawn or dial, initialize, first listing,
// all within startup_timeout_sec.
func (sc *serverConn) start(a *startAttempt) {
	sess := sc.sess
	timeout := sc.cfg.StartupTimeout()
	ctx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	defer a.cancel(nil) // the connection, if any, lives on without it
	budget := newStartBudget(ctx, sess.env.startSem, timeout, func() { cancel(errStartupTimeout) }, sc.budgetHooks())
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
		if opts.Era != mcpclient.EraUnknown && a.ctx.Err() == nil {
			// A startup that failed from a hint may have failed of it (a
			// server that changed protocol and ignores the hinted
			// handshake): the next one probes.
			sc.forgetEra(opts.Era)
		}
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
			sc.setStateLocked(protocol.StateCancelled)
		} else if isNeedsAuthorization(err) {
			sc.setStateLocked(protocol.StateNeedsAuthorization)
			sc.lastErr = err.Error()
		} else {
			sc.setStateLocked(protocol.StateFailed)
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
			sc.setStateLocked(protocol.StateReady)
			// A notification the startup's listing does not reflect is
			// followed by a refresh, as it would be had the server been
			// ready when it came.
			refresh = sc.claimRefresherLocked()
		}
		sc.mu.Unlock()
		if refresh {
			sc.startRefresher()
		}
		sc.noteListen(conn)
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
