package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

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

	// mu guards what follows up to cacheMu. It is taken after
	// Session.startMu and Session.rebuildMu, and before
	// environment.scrub.mu (the lock order is written at Session.mu).
	mu sync.Mutex
	// state is one of protocol.State*; it changes only through
	// setStateLocked, along serverStates.
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
	// listenWarned is the last refusal of subscriptions/listen reported
	// in mcp/log (noteListen).
	listenWarned string

	// cacheMu orders the disk cache writes and removals of this server:
	// they run in the background, and neither an older listing nor one a
	// notification outdated may overwrite a newer one. cacheGen is the
	// listState.changes value of the last listing written or notification
	// acted on, cacheWritten the time of that listing (zero after a
	// removal).
	// cacheMu is taken before environment.badCacheMu, Server.mu,
	// logLimiter.mu and environment.scrub.mu (its failures are reported
	// under it), never with mu.
	cacheMu      sync.Mutex
	cacheGen     uint64
	cacheWritten time.Time
}

// serverStates is the state machine of a server in a session: for each
// state (protocol.State*, as session/open and servers/status show it; ""
// is a serverConn that session/open is still building), the states it may
// go to. Every change of serverConn.state goes through setStateLocked,
// which checks it against this table.
//
// A connection is only ever replaced by servers/reconnect, which marks the
// server starting (prepareRound) a moment before it lets go of the old
// connection: a loss of the old one in that moment (lost) makes the new
// startup finish from disconnected or failed, and, in a session that
// closed meanwhile, a round ended at once (prepareRound) may find its
// server cancelled. Those are the rows marked "race".
var serverStates = map[string][]string{
	// session/open: an invalid or disabled configuration, a lazy server
	// served from its disk entry; any other starts (prepareRound).
	"": {protocol.StateInvalid, protocol.StateDisabled, protocol.StateDormant, protocol.StateStarting},
	// Never started: servers/reconnect refuses them and nothing else
	// starts them.
	protocol.StateInvalid:  nil,
	protocol.StateDisabled: nil,
	// First use (startLater).
	protocol.StateDormant: {protocol.StateStarting},
	protocol.StateStarting: {
		protocol.StateStarting,                                                          // servers/reconnect supersedes the startup
		protocol.StateReady,                                                             // finishStart, once the session catalog holds its tools
		protocol.StateFailed, protocol.StateNeedsAuthorization, protocol.StateCancelled, // finishStart; cancelled also Session.close
		protocol.StateDisconnected, // lost: the new connection ended before ready (an early discovery saw it)
	},
	protocol.StateReady: {
		protocol.StateStarting,                           // servers/reconnect
		protocol.StateCancelled,                          // Session.close
		protocol.StateDisconnected, protocol.StateFailed, // lost (failed after maxCrashes)
	},
	protocol.StateDisconnected: {
		protocol.StateStarting, // the next use after the backoff (ready, startLater), servers/reconnect
		// race: the startup servers/reconnect began finishes (finishStart),
		// or its connection is lost.
		protocol.StateReady, protocol.StateFailed, protocol.StateNeedsAuthorization, protocol.StateCancelled, protocol.StateDisconnected,
	},
	protocol.StateFailed: {
		protocol.StateStarting, // servers/reconnect
		// race: as from disconnected.
		protocol.StateReady, protocol.StateFailed, protocol.StateNeedsAuthorization, protocol.StateCancelled, protocol.StateDisconnected,
	},
	// The next use asks again, once; the end of the flow (authorized);
	// servers/reconnect.
	protocol.StateNeedsAuthorization: {protocol.StateStarting},
	protocol.StateCancelled: {
		protocol.StateStarting,  // servers/reconnect
		protocol.StateCancelled, // race: a round of a closed session, ended at once
		// race: the old connection lost while that round ended.
		protocol.StateDisconnected, protocol.StateFailed,
	},
}

// setStateLocked moves sc to state to. A move the table does not have is
// a bug: it is logged (and reported to tests) and made all the same, so
// that the table never changes what the sidecar does. sc.mu must be held
// (or sc not yet published).
func (sc *serverConn) setStateLocked(to string) {
	if !slices.Contains(serverStates[sc.state], to) {
		srv := sc.sess.srv
		srv.logger.Error("server state change not in serverStates", "session", sc.sess.id, "server", sc.name, "from", sc.state, "to", to)
		if f := srv.hook().badTransition; f != nil {
			f(sc.sess.id, sc.name, sc.state, to)
		}
	}
	sc.state = to
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

// sessionClosedError ends a startup, or a request waiting for one or using
// the server, because the session closed. The host cancelled nothing, so it
// is not -32800; the session is gone, so it is not retryable.
func (sc *serverConn) sessionClosedError() *protocol.Error {
	return protocol.NewError(protocol.CodeServerNotReady, protocol.KindSessionClosed,
		fmt.Sprintf("server %q of session %q ended: the session was closed", sc.name, sc.sess.id)).WithServer(sc.name, "")
}

// supersededError ends a startup that a newer one (servers/reconnect)
// replaced; whoever waited for it may wait for the newer one.
func (sc *serverConn) supersededError() *protocol.Error {
	return protocol.NewError(protocol.CodeServerNotReady, protocol.KindStartupSuperseded,
		fmt.Sprintf("startup of server %q was superseded by a newer startup (servers/reconnect)", sc.name)).WithServer(sc.name, "").Retry()
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
	state := protocol.StateDisconnected
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
		state = protocol.StateFailed
		msg = fmt.Sprintf("%s; it crashed %d times in a row, so it is not restarted again (servers/reconnect restarts it)", msg, sc.crashes)
	}
	sc.setStateLocked(state)
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

// usable reports why a server that failed, was cancelled or is disabled
// cannot take a call; such a server's error says more than "unknown tool".
func (sc *serverConn) usable(ctx context.Context) error {
	sc.mu.Lock()
	st := sc.state
	sc.mu.Unlock()
	switch st {
	case protocol.StateFailed, protocol.StateCancelled, protocol.StateDisabled, protocol.StateInvalid, protocol.StateNeedsAuthorization:
		_, err := sc.ready(ctx)
		return err
	}
	return nil
}

func (sc *serverConn) unknownTool(name string) *protocol.Error {
	if sc.sess.closing() {
		return sc.sessionClosedError().WithServer(sc.name, name)
	}
	msg := fmt.Sprintf("server %q has no tool %q", sc.name, name)
	if !catalog.FilterOf(sc.cfg).Allows(name) {
		msg = fmt.Sprintf("tool %q of server %q is disabled by enabled_tools/disabled_tools", name, sc.name)
	}
	return protocol.NewError(protocol.CodeUnknownTool, protocol.KindUnknownTool, msg).WithServer(sc.name, name)
}

func (sc *serverConn) tool(name string) (catalog.Tool, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if i, ok := sc.toolAt[name]; ok {
		return sc.tools[i], true
	}
	return catalog.Tool{}, false
}

// setTools replaces the server's catalog. sc.mu must be held.
func (sc *serverConn) setTools(tools []catalog.Tool) {
	sc.tools = tools
	sc.toolAt = make(map[string]int, len(tools))
	for i, t := range tools {
		if _, dup := sc.toolAt[t.Name]; !dup { // the first of a repeated name, as a scan would find
			sc.toolAt[t.Name] = i
		}
	}
}

// checkBinding refuses a call whose tool changed or disappeared since it
// was bound (docs/protocol.md, "Authority and binding"). A tool is the same
// when its object is byte for byte what it was; a catalog rebuilt from the
// same listing shares the bytes, and the comparison is then immediate.
func (sc *serverConn) checkBinding(bound *catalog.Tool) error {
	sc.mu.Lock()
	i, ok := sc.toolAt[bound.Name]
	same := ok && string(sc.tools[i].Raw) == string(bound.Raw)
	sc.mu.Unlock()
	if same {
		return nil
	}
	what := "was removed"
	if ok {
		what = "changed"
	}
	return protocol.NewError(protocol.CodeBindingChanged, protocol.KindBindingChanged,
		fmt.Sprintf("tool %q of server %q %s since the call was bound; list tools again", bound.Name, sc.name, what)).WithServer(sc.name, bound.Name).Retry()
}
