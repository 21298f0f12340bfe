package sidecar

import (
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/memrelease"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// Hooks are the test seams of a Server (see testHooks).
type Hooks struct {
	// Now replaces the clock of restart backoff, the refresh cooldown and
	// the log rate limit.
	Now func() time.Time
	// RoundPrepared is called when a startup round of session has been
	// prepared, before it is announced or run.
	RoundPrepared func(session string, round int)
	// BackgroundRefresh is called when a background catalog refresher of
	// server begins; blocking holds it back (release it before the
	// session closes: close waits for it).
	BackgroundRefresh func(session, server string)
	// RefreshJoined is called when a caller begins to wait for a catalog
	// refresh of server that another caller runs.
	RefreshJoined func(session, server string)
	// RefreshStarted is called when a catalog refresh of server begins,
	// on its goroutine, with its bound; expire ends it as the bound's
	// timer (the server's startup_timeout_sec) would, so that a test need
	// not wait for that.
	RefreshStarted func(session, server string, bound time.Duration, expire func())
	// Teardown is called before a background teardown (the process of a
	// failed startup) of server runs; blocking holds it back (release it:
	// session close waits for it).
	Teardown func(session, server string)
	// StartupWait is called when a request begins to wait for a startup
	// of server in flight: for its initialize only (early is true: early
	// resource discovery) or for readiness.
	StartupWait func(session, server string, early bool)
	// SharedListingWait is called when a startup begins to wait for
	// another startup's tools/list of the same discovery scope (again, if
	// it goes round after that listing became unusable).
	SharedListingWait func(scopeKey string)
	// AuthorizationJoined is called when a connection begins to wait for
	// an OAuth flow (of the server at url) another connection started.
	AuthorizationJoined func(url string)
	// StartupSlotWait is called when a startup of server has to wait for
	// a start slot (limits.maxConcurrentStarts), before it waits.
	StartupSlotWait func(session, server string)
	// StartupClock is called when the startup_timeout_sec clock of a
	// startup of server starts: once it has its slot, again after a pause.
	StartupClock func(session, server string)
	// Connecting is called with the options of each connection of
	// server, just before it connects.
	Connecting func(session, server string, opts mcpclient.Options)
	// ToolCallBound is called when a tools/call leaves, with the header
	// declarations of the tool it was bound to.
	ToolCallBound func(session, server, tool string, headers mcpheader.Bindings)
	// ToolCallSent is called when a tools/call is sent to server: from
	// the host's read loop (own false), or from a goroutine of its own
	// (a call that had to wait for something, or a server the read loop
	// cannot send to without waiting).
	ToolCallSent func(session, server string, own bool)
	// ResourceUpdateQueued is called when a server's resource update was
	// queued for the host or merged into one waiting.
	ResourceUpdateQueued func(session, server, uri string)
	// ResourceUpdateSending is called before a queued resource update is
	// sent; blocking holds back the queue (release it before the session
	// closes: close waits for it).
	ResourceUpdateSending func(session, server, uri string)
	// SearchIndexed is called when a session's search index was made (by
	// its first search) or handed a new catalog, with the number of tools
	// analysed for it: those no index of any session had analysed.
	SearchIndexed func(session string, analysed int)
	// BadTransition is called when a server's state changes along a move
	// the state table (serverStates) does not have; the test harness
	// fails the test then.
	BadTransition func(session, server, from, to string)
	// Memory replaces the options of the server's memory releaser: its
	// clock, its timers and what a release does.
	Memory *memrelease.Options
}

// WithHooks returns opts with h installed.
func WithHooks(opts Options, h Hooks) Options {
	opts.hooks = &testHooks{
		now:                 h.Now,
		roundPrepared:       h.RoundPrepared,
		backgroundRefresh:   h.BackgroundRefresh,
		refreshJoined:       h.RefreshJoined,
		refreshStarted:      h.RefreshStarted,
		startupWait:         h.StartupWait,
		sharedListingWait:   h.SharedListingWait,
		authorizationJoined: h.AuthorizationJoined,
		teardown:            h.Teardown,
		toolCallSent:        h.ToolCallSent,
		connecting:          h.Connecting,
		startupSlotWait:     h.StartupSlotWait,
		startupClock:        h.StartupClock,
		toolCallBound:       h.ToolCallBound,

		resourceUpdateQueued:  h.ResourceUpdateQueued,
		resourceUpdateSending: h.ResourceUpdateSending,
		searchIndexed:         h.SearchIndexed,
		badTransition:         h.BadTransition,
		memory:                h.Memory,
	}
	return opts
}
