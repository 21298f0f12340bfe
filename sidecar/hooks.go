package sidecar

import (
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/memrelease"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// testHooks are the seams tests use to order events without sleeping
// (export_test.go sets them through Options); the zero value is the
// production behaviour.
type testHooks struct {
	// now is the clock of restart backoff, the refresh cooldown and the
	// log rate limit.
	now func() time.Time
	// roundPrepared is called once a startup round has been prepared (its
	// servers marked starting), before anything announces or runs it.
	roundPrepared func(session string, round int)
	// backgroundRefresh is called when a background refresher begins, on
	// its goroutine: blocking holds it back (session close waits for it).
	backgroundRefresh func(session, server string)
	// refreshJoined is called when a caller begins to wait for a refresh
	// another caller is running.
	refreshJoined func(session, server string)
	// refreshStarted is called when a catalog refresh begins, on its
	// goroutine, with its bound (the server's startup_timeout_sec) and the
	// function that ends it as that bound's timer would.
	refreshStarted func(session, server string, bound time.Duration, expire func())
	// teardown is called on the goroutine of a background teardown (the
	// process of a failed startup) before it runs: blocking holds it back
	// (session close waits for it).
	teardown func(session, server string)
	// startupWait is called when a request begins to wait for a startup
	// in flight: for its initialize only (early resource discovery) or for
	// readiness.
	startupWait func(session, server string, early bool)
	// sharedListingWait is catalog.SharedListings.OnWait: a startup began
	// to wait for another startup's listing of its discovery scope.
	sharedListingWait func(scopeKey string)
	// authorizationJoined is called when a connection begins to wait for
	// an OAuth flow (of the server at url) another connection started.
	authorizationJoined func(url string)
	// startupSlotWait is called when a startup has to wait for a start
	// slot (limits.maxConcurrentStarts), before it waits.
	startupSlotWait func(session, server string)
	// startupClock is called when a startup's startup_timeout_sec clock
	// starts: once it has its slot, and again after a pause.
	startupClock func(session, server string)
	// connecting is called with the options of each connection, just
	// before it connects.
	connecting func(session, server string, opts mcpclient.Options)
	// toolCallBound is called when a tools/call leaves, with the header
	// declarations of the tool it was bound to.
	toolCallBound func(session, server, tool string, headers mcpheader.Bindings)
	// toolCallSent is called when a tools/call is sent to its server:
	// from the host's read loop (own false) or from a goroutine of its
	// own (toolcall.go).
	toolCallSent func(session, server string, own bool)
	// resourceUpdateQueued is called when a resource update of a server
	// was queued for the host (or merged into one waiting); blocking holds
	// back the server's notifications.
	resourceUpdateQueued func(session, server, uri string)
	// resourceUpdateSending is called before a queued resource update is
	// sent; blocking holds back the queue (session close waits for it).
	resourceUpdateSending func(session, server, uri string)
	// searchIndexed is called when a session's search index was made or
	// handed a new catalog, with the number of tools analysed for it
	// (search.Index.Analysed).
	searchIndexed func(session string, analysed int)
	// badTransition is called, under the server's lock, when a server's
	// state changes along a move serverStates does not have (a bug).
	badTransition func(session, server, from, to string)
	// memory replaces the options of the server's memory releaser (its
	// clock, timers and release).
	memory *memrelease.Options
}

// hook returns the server's test hooks (the zero value in production).
func (s *Server) hook() testHooks {
	if s.opts.hooks == nil {
		return testHooks{}
	}
	return *s.opts.hooks
}

// now is the sidecar's clock.
func (s *Server) now() time.Time {
	if now := s.hook().now; now != nil {
		return now()
	}
	return time.Now()
}

// budgetHooks are the start budget's seams for sc (none in production).
func (sc *serverConn) budgetHooks() budgetHooks {
	h := sc.sess.srv.hook()
	var b budgetHooks
	if f := h.startupSlotWait; f != nil {
		b.slotWait = func() { f(sc.sess.id, sc.name) }
	}
	if f := h.startupClock; f != nil {
		b.clock = func() { f(sc.sess.id, sc.name) }
	}
	return b
}
