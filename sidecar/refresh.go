package sidecar

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// maxOvertakenListings bounds how often one refresh lists again because a
// notification overtook it; past that the catalog stays marked stale and
// the next discovery tries again.
const maxOvertakenListings = 5

// listState is the tools/list_changed bookkeeping of one server connection
// (docs/protocol.md, "tools/list_changed"). Guarded by serverConn.mu.
type listState struct {
	// changes counts list_changed notifications in transport order;
	// listed is the value of changes when the catalog in use was listed.
	changes, listed uint64
	failedAt        time.Time // last failed refresh, for the cooldown
	refreshing      chan struct{}
	bgPending       bool
}

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
	notification := sc.list.changes
	// During startup it only counts: the startup lists again if its
	// listing was overtaken, and a catalog still stale when the server
	// becomes ready is refreshed then.
	start := sc.claimRefresherLocked()
	sc.mu.Unlock()
	// Any shared startup listing of this scope is now outdated.
	sc.sess.env.shared.Invalidate(sc.scopeKey)
	// The disk is not touched on this goroutine (a write in progress
	// holds cacheMu), unless the session is closing: then nothing else
	// would remove the entry.
	if !sc.sess.track(func() { sc.invalidateDisk(notification) }) {
		sc.invalidateDisk(notification)
	}
	if start {
		sc.startRefresher()
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
		sc.refreshIfStale(ctx)
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

// wantsRefresh reports a catalog that is stale and not cooling down after
// a failed refresh.
func (sc *serverConn) wantsRefresh() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.isStaleLocked() && !sc.coolingLocked()
}

// coolingLocked reports a failed refresh whose cooldown still runs.
func (sc *serverConn) coolingLocked() bool {
	return sc.sess.srv.now().Sub(sc.list.failedAt) < sc.sess.env.cooldown
}

// refreshIfStale refreshes a catalog marked stale by a notification, unless
// a failed refresh is cooling down (then the previous catalog is served,
// marked stale).
func (sc *serverConn) refreshIfStale(ctx context.Context) {
	sc.mu.Lock()
	stale := sc.isStaleLocked()
	cooling := sc.coolingLocked()
	conn := sc.conn
	sc.mu.Unlock()
	if !stale || cooling || conn == nil {
		return
	}
	_ = sc.refresh(ctx, conn, protocol.ReasonListChanged) // failures are reported inside
}

// refresh lists the server's tools again and swaps the catalog in one step.
// Concurrent refreshes coalesce: a list_changed refresh that finds the
// catalog current after waiting for another one does nothing. A listing
// overtaken by a notification is discarded and retried, so a catalog is
// never assembled from pages of two versions.
func (sc *serverConn) refresh(ctx context.Context, conn *mcpclient.Conn, reason string) error {
	for {
		sc.mu.Lock()
		if ch := sc.list.refreshing; ch != nil {
			sc.mu.Unlock()
			if f := sc.sess.srv.hook().refreshJoined; f != nil {
				f(sc.sess.id, sc.name)
			}
			select {
			case <-ch:
				// A list_changed refresh is answered by the one it waited
				// for: by its catalog, or, if it failed, by the previous
				// catalog marked stale while the cooldown it started runs.
				// It lists again only for a notification that came after
				// (an explicit refresh always lists).
				if reason == protocol.ReasonListChanged && !sc.wantsRefresh() {
					return nil
				}
				continue
			case <-ctx.Done():
				return cancelledError()
			}
		}
		ch := make(chan struct{})
		sc.list.refreshing = ch
		sc.mu.Unlock()
		err := sc.listAndSwap(ctx, conn, reason)
		sc.mu.Lock()
		sc.list.refreshing = nil
		sc.mu.Unlock()
		close(ch)
		return err
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
			if ctx.Err() != nil {
				return cancelledError()
			}
			if sc.sess.closing() {
				// The close ended the listing, not the server.
				return sc.sessionClosedError()
			}
			msg := sc.listingFailed(err)
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
		sc.mu.Unlock()
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
// failure is servers/status's lastError until the next startup.
func (sc *serverConn) listingFailed(err error) string {
	sc.mu.Lock()
	notification := sc.list.changes
	sc.mu.Unlock()
	sc.invalidateDisk(notification)
	msg := sc.secrets().String(fmt.Sprintf("refreshing the catalog of server %q failed (previous catalog kept): %v", sc.name, err))
	sc.mu.Lock()
	sc.list.failedAt = sc.sess.srv.now()
	sc.lastErr = msg
	sc.mu.Unlock()
	sc.sess.srv.logServer(sc.sess.id, sc.name, "error", msg)
	return msg
}
