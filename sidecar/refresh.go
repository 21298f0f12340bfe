package sidecar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// maxOvertakenListings bounds how often one refresh lists again because a
// notification overtook it; past that the last listing is served, marked
// stale, and the cooldown holds the next refresh back.
const maxOvertakenListings = 5

// listState is the tools/list_changed bookkeeping of one server connection
// (docs/protocol.md, "tools/list_changed"). Guarded by serverConn.mu.
type listState struct {
	// changes counts list_changed notifications in transport order;
	// listed is the value of changes when the catalog in use was listed.
	changes, listed uint64
	failedAt        time.Time // last failed refresh, for the cooldown
	// run is the refresh in flight, nil when none; runs counts the
	// refreshes started.
	run  *refreshRun
	runs uint64
	// stuck is set when the last refresh got no answer within its bound,
	// and cleared by a listing that completes: meanwhile a request serves
	// the catalog stale at once instead of waiting for the next refresh.
	stuck     bool
	bgPending bool
	// invalidating is set while a goroutine removes the scope's disk
	// entry for the latest notification (invalidateDiskLatest): a burst of
	// notifications costs one such goroutine, not one each.
	invalidating bool
}

// refreshRun is one refresh of a server's catalog: a listing, listed again
// when a notification overtakes it, bounded as a whole by the server's
// startup_timeout_sec (the time it is given to list its tools). It runs on
// a goroutine of its own that the session owns; requests only wait for it,
// so one that stops waiting (the host cancelled it, its timeoutMs passed)
// leaves the refresh to the others.
type refreshRun struct {
	seq       uint64 // listState.runs when it started
	began     uint64 // listState.changes when it started
	reason    string
	conn      *mcpclient.Conn // the connection it lists
	startedAt time.Time
	done      chan struct{}
	err       error // set before done closes
}

// errRefreshTimeout ends a refresh whose server did not answer within its
// startup_timeout_sec.
var errRefreshTimeout = errors.New("startup_timeout_sec elapsed")

func (sc *serverConn) isStale() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.isStaleLocked()
}

// isStaleLocked reports a catalog a notification marked stale; with
// mcp_tool_list_changed off notifications change nothing, so nothing is
// stale.
func (sc *serverConn) isStaleLocked() bool {
	return sc.sess.env.feature(FeatureToolListChanged) && sc.state == protocol.StateReady && sc.list.changes != sc.list.listed
}

// onToolListChanged runs on go-sdk's notification goroutine: it records and
// wakes a refresher, and never blocks.
//
// With mcp_tool_list_changed off a notification changes nothing: it is not
// counted, so no listing counts as overtaken, the catalog in use is not
// stale and the disk entry stays (it holds what the live sessions serve).
// With it on, the scope's disk entry goes at once, whatever the refresh
// that follows does: a later listing (the startup's own, or a refresh)
// writes it again.
func (sc *serverConn) onToolListChanged() {
	if !sc.sess.env.feature(FeatureToolListChanged) {
		sc.sess.srv.logServer(sc.sess.id, sc.name, "info", fmt.Sprintf("server %q sent notifications/tools/list_changed (ignored: %s is off)", sc.name, FeatureToolListChanged))
		return
	}
	sc.mu.Lock()
	sc.list.changes++
	// During startup it only counts: the startup lists again if its
	// listing was overtaken, and a catalog still stale when the server
	// becomes ready is refreshed then.
	start := sc.claimRefresherLocked()
	invalidate := !sc.list.invalidating
	sc.list.invalidating = true
	sc.mu.Unlock()
	// Any shared startup listing of this scope is now outdated.
	sc.sess.env.shared.Invalidate(sc.scopeKey)
	// The disk is not touched on this goroutine (a write in progress
	// holds cacheMu), unless the session is closing: then nothing else
	// would remove the entry.
	if invalidate && !sc.sess.track(sc.invalidateDiskLatest) {
		sc.invalidateDiskLatest()
	}
	if start {
		sc.startRefresher()
	}
}

// invalidateDiskLatest removes the disk entry for the latest notification,
// again while notifications keep coming: one goroutine serves a burst.
func (sc *serverConn) invalidateDiskLatest() {
	for {
		sc.mu.Lock()
		n := sc.list.changes
		sc.mu.Unlock()
		sc.invalidateDisk(n)
		sc.mu.Lock()
		if sc.list.changes == n {
			sc.list.invalidating = false
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
	}
}

// claimRefresherLocked reports whether the caller must start a background
// refresher: the catalog is stale and none runs.
func (sc *serverConn) claimRefresherLocked() bool {
	if sc.list.bgPending || !sc.isStaleLocked() {
		return false
	}
	sc.list.bgPending = true
	return true
}

// startRefresher runs the background refresher claimed with
// claimRefresherLocked.
func (sc *serverConn) startRefresher() {
	if !sc.sess.track(sc.backgroundRefresh) {
		sc.mu.Lock()
		sc.list.bgPending = false
		sc.mu.Unlock()
	}
}

// Background refreshes wait for a burst of notifications to settle:
// until none came for refreshQuiet, at most refreshQuietMax. Discovery and
// binding do not wait: they refresh a stale catalog at once.
const (
	refreshQuiet    = 20 * time.Millisecond
	refreshQuietMax = 200 * time.Millisecond
)

// backgroundRefresh keeps the catalog current after notifications, so that
// the host hears mcp/toolsChanged without asking. One runs per connection
// at a time; notifications arriving meanwhile are picked up by its next
// round, so a burst costs a few listings, not one each.
func (sc *serverConn) backgroundRefresh() {
	ctx := sc.sess.ctx
	if f := sc.sess.srv.hook().backgroundRefresh; f != nil {
		f(sc.sess.id, sc.name)
	}
	for {
		sc.waitQuiet(ctx)
		sc.sess.catchUp(ctx, []*serverConn{sc}, true)
		sc.mu.Lock()
		if ctx.Err() != nil || sc.coolingLocked() || !sc.isStaleLocked() {
			sc.list.bgPending = false
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
	}
}

func (sc *serverConn) waitQuiet(ctx context.Context) {
	deadline := time.Now().Add(refreshQuietMax)
	for time.Now().Before(deadline) {
		sc.mu.Lock()
		seen := sc.list.changes
		sc.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(refreshQuiet):
		}
		sc.mu.Lock()
		quiet := sc.list.changes == seen
		sc.mu.Unlock()
		if quiet {
			return
		}
	}
}

// coolingLocked reports a failed refresh whose cooldown still runs.
func (sc *serverConn) coolingLocked() bool {
	return sc.sess.srv.now().Sub(sc.list.failedAt) < sc.sess.env.cooldown
}

// catchUp brings the catalogs of scs up to the notifications each had
// counted when catchUp was called, refreshing them at once (a request does
// not wait for the background's pause) and in parallel. For each it waits
// for at most two refreshes: the one in flight, when it began before those
// notifications, and one after it; notifications that come meanwhile are
// the next caller's, so a storm of them cannot keep a request waiting. It
// does not wait where a failed refresh cools down (the previous catalog is
// served, stale), nor, unless background, where the server did not answer
// its last refresh within its bound (stuck: a refresh is started, and the
// previous catalog served stale meanwhile). Each refresh is bounded by the
// server's startup_timeout_sec; ctx bounds the waiting only.
func (sess *Session) catchUp(ctx context.Context, scs []*serverConn, background bool) {
	seen := make([]uint64, len(scs))
	mine := make([]*refreshRun, len(scs)) // the refreshes this call started
	for i, sc := range scs {
		sc.mu.Lock()
		seen[i] = sc.list.changes
		sc.mu.Unlock()
		// Every refresh starts before any is waited for.
		if run, started := sc.nextRun(seen[i], background); started {
			mine[i] = run
		}
	}
	for i, sc := range scs {
		for {
			run, started := sc.nextRun(seen[i], background)
			if run == nil {
				break
			}
			if f := sess.srv.hook().refreshJoined; f != nil && !started && run != mine[i] {
				f(sess.id, sc.name)
			}
			select {
			case <-run.done:
			case <-ctx.Done():
				return
			}
			if run.began >= seen[i] {
				break // the refresh that answers this caller's notifications
			}
		}
	}
}

// refreshExpired starts a refresh of each live catalog among scs that is
// past the TTL its server gave (ttlMs, MCP 2026-07-28) and does not wait
// for it: the catalog in use serves meanwhile, as a stale one does while
// the background refreshes it after list_changed, and mcp/toolsChanged
// (reason expired) follows when the listing differs. A TTL of 0 does not
// count: it is go-sdk's default, sent whatever the catalog does, and would
// list the server at every use; such a catalog is kept current by
// list_changed. Nor does a refresh start where one runs or a failed one
// cools down.
func (sess *Session) refreshExpired(scs []*serverConn) {
	now := sess.srv.now()
	for _, sc := range scs {
		sc.mu.Lock()
		var run *refreshRun
		if sc.state == protocol.StateReady && sc.conn != nil && sc.catalogSrc == protocol.CatalogLive && sc.list.run == nil &&
			sc.hints.TTL() > 0 && sc.hints.Expired(sc.listedAt, now) && !sc.coolingLocked() {
			run = sc.startRunLocked(protocol.ReasonExpired)
		}
		sc.mu.Unlock()
		if run != nil {
			sc.launch(run)
		}
	}
}

// nextRun returns the refresh a caller that saw seen notifications must
// wait for, starting one if none runs (started); nil when it need not wait
// (see catchUp), though it may have started one.
func (sc *serverConn) nextRun(seen uint64, background bool) (run *refreshRun, started bool) {
	sc.mu.Lock()
	if !sc.isStaleLocked() || sc.list.listed >= seen || sc.coolingLocked() || sc.conn == nil {
		sc.mu.Unlock()
		return nil, false
	}
	run = sc.list.run
	if run == nil {
		run, started = sc.startRunLocked(protocol.ReasonListChanged), true
	}
	wait := background || !sc.list.stuck
	sc.mu.Unlock()
	if started {
		sc.launch(run)
	}
	if !wait {
		return nil, started
	}
	return run, started
}

// startRunLocked records a new refresh of sc's connection as the one in
// flight; the caller launches it once sc.mu is released.
func (sc *serverConn) startRunLocked(reason string) *refreshRun {
	sc.list.runs++
	run := &refreshRun{seq: sc.list.runs, began: sc.list.changes, reason: reason, conn: sc.conn, startedAt: sc.sess.srv.now(), done: make(chan struct{})}
	sc.list.run = run
	return run
}

// launch runs a refresh startRunLocked recorded, on a goroutine the
// session owns (its close waits for it; it ends the listing).
func (sc *serverConn) launch(run *refreshRun) {
	switch {
	case run.conn == nil:
		sc.endRun(run, protocol.NewError(protocol.CodeConnectionLost, protocol.KindConnectionLost,
			fmt.Sprintf("server %q: not connected, nothing to refresh", sc.name)).WithServer(sc.name, "").Retry())
	case !sc.sess.track(func() { sc.runRefresh(run) }):
		sc.endRun(run, sc.sessionClosedError())
	}
}

// runRefresh lists the server's tools again within its
// startup_timeout_sec and swaps the catalog in one step.
func (sc *serverConn) runRefresh(run *refreshRun) {
	ctx, cancel := context.WithCancelCause(sc.sess.ctx)
	defer cancel(nil)
	expire := func() { cancel(errRefreshTimeout) }
	bound := sc.cfg.StartupTimeout()
	timer := time.AfterFunc(bound, expire)
	defer timer.Stop()
	if f := sc.sess.srv.hook().refreshStarted; f != nil {
		f(sc.sess.id, sc.name, bound, expire)
	}
	sc.endRun(run, sc.listAndSwap(ctx, run.conn, run.reason))
}

// endRun records the end of a refresh and wakes its waiters.
func (sc *serverConn) endRun(run *refreshRun, err error) {
	sc.mu.Lock()
	run.err = err
	if sc.list.run == run {
		sc.list.run = nil
	}
	sc.mu.Unlock()
	close(run.done)
}

// refresh lists the server's tools again for servers/refresh: always from
// the server, in a refresh that starts after the request (one another
// servers/refresh started meanwhile answers it too), and answers with its
// outcome. A refresh in flight since before is waited for first: one
// listing at a time.
func (sc *serverConn) refresh(ctx context.Context) error {
	sc.mu.Lock()
	after := sc.list.runs
	for {
		run, started := sc.list.run, false
		if run == nil {
			run, started = sc.startRunLocked(protocol.ReasonRefresh), true
		}
		sc.mu.Unlock()
		if started {
			sc.launch(run)
		} else if f := sc.sess.srv.hook().refreshJoined; f != nil {
			f(sc.sess.id, sc.name)
		}
		select {
		case <-run.done:
		case <-ctx.Done():
			return cancelledError()
		}
		if run.seq > after && run.reason == protocol.ReasonRefresh {
			return run.err
		}
		sc.mu.Lock()
	}
}

func (sc *serverConn) listAndSwap(ctx context.Context, conn *mcpclient.Conn, reason string) error {
	for try := 0; ; try++ {
		sc.mu.Lock()
		gen := sc.list.changes
		sc.mu.Unlock()
		listedAt := sc.sess.srv.now()
		listing, tools, err := sc.listTools(ctx, conn, false)
		if err != nil {
			if sc.sess.closing() {
				// The close ended the listing, not the server.
				return sc.sessionClosedError()
			}
			stuck := errors.Is(context.Cause(ctx), errRefreshTimeout)
			if stuck {
				err = fmt.Errorf("server %q did not answer tools/list within startup_timeout_sec (%s)", sc.name, formatSeconds(sc.cfg.StartupTimeout()))
			}
			msg := sc.listingFailed(err, stuck)
			return protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, msg).WithServer(sc.name, "").Retry()
		}
		sc.mu.Lock()
		if sc.conn != conn {
			sc.mu.Unlock()
			if sc.sess.closing() {
				return sc.sessionClosedError()
			}
			return protocol.NewError(protocol.CodeConnectionLost, protocol.KindConnectionLost,
				fmt.Sprintf("server %q: connection replaced during refresh", sc.name)).WithServer(sc.name, "").Retry()
		}
		overtaken := sc.list.changes != gen
		if overtaken && try < maxOvertakenListings {
			sc.mu.Unlock()
			continue // overtaken: this listing may mix versions
		}
		changed := !sameTools(sc.tools, tools)
		sc.setTools(tools)
		sc.catalogSrc = protocol.CatalogLive
		sc.hints, sc.listedAt = listing.Hints, listedAt
		sc.list.listed = gen
		sc.list.failedAt = time.Time{}
		sc.list.stuck = false
		if overtaken {
			// The server changes faster than it can be listed (a storm of
			// notifications): the last listing is served, stale, and the
			// cooldown holds further refreshes back, as after a failure,
			// so that requests do not list over and over meanwhile.
			sc.list.failedAt = sc.sess.srv.now()
		}
		sc.mu.Unlock()
		if overtaken {
			sc.sess.srv.logServer(sc.sess.id, sc.name, "warning", fmt.Sprintf(
				"the catalog of server %q changed during each of %d listings (notifications/tools/list_changed): the last listing is served, marked stale, and listed again after %s",
				sc.name, maxOvertakenListings+1, formatSeconds(sc.sess.env.cooldown)))
		}
		// The disk cache and any shared startup listing of this scope
		// must not publish tools from before this refresh.
		sc.sess.env.shared.Invalidate(sc.scopeKey)
		// The disk write (fsync included) is not in the way of the call or
		// discovery that asked for this refresh.
		// A listing overtaken too often is served, marked stale, but not
		// cached.
		if !overtaken {
			sc.sess.track(func() { sc.storeCacheAt(conn, listing, gen, listedAt) })
		}
		if changed {
			sc.sess.rebuildCatalog()
			sc.sess.srv.notify(protocol.NotifyToolsChanged, protocol.ToolsChangedParams{SessionID: sc.sess.id, Server: sc.name, Reason: reason})
		}
		return nil
	}
}

// listingFailed reports a failed listing of a catalog that stays in use,
// stale: a refresh, or a startup's listing again after a notification
// overtook its first. The disk entry goes if a notification outdated it
// (its own removal may not have run yet), the cooldown starts, and the
// failure is servers/status's lastError until the next startup. stuck
// records a server that did not answer within the refresh's bound.
func (sc *serverConn) listingFailed(err error, stuck bool) string {
	sc.mu.Lock()
	notification := sc.list.changes
	sc.mu.Unlock()
	sc.invalidateDisk(notification)
	msg := sc.secrets().String(fmt.Sprintf("refreshing the catalog of server %q failed (previous catalog kept): %v", sc.name, err))
	sc.mu.Lock()
	sc.list.failedAt = sc.sess.srv.now()
	sc.list.stuck = stuck
	sc.lastErr = msg
	sc.mu.Unlock()
	sc.sess.srv.logServer(sc.sess.id, sc.name, "error", msg)
	return msg
}
