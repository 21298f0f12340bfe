// Package sidecar is the host side of mcp-sidecar: it owns the host's
// JSON-RPC connection, dispatches its methods, keeps the sessions with their
// MCP server connections and startup rounds, and orders the events the host
// sees.
package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/launcherprobe"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Options configure a Server.
type Options struct {
	// Name and Version are reported in initialize's serverInfo and sent to
	// MCP servers as the client's implementation.
	Name    string
	Version string
	// Env is the sidecar's environment: the source of the children's
	// allowlisted variables, env_vars, bearer tokens and header values.
	Env config.Lookup
	// Logger receives the sidecar's own logs (stderr in production).
	Logger *slog.Logger
	// Prober verifies the launcher candidate; nil means a fresh prober.
	Prober *launcherprobe.Prober
	// MaxFrameBytes bounds a host frame; zero means the default (64 MiB).
	MaxFrameBytes int64
	// Reaper registers the server processes, when this process serves the
	// host protocol as its job (the serve command): see internal/reaper.
	// Nil: each connection still ends its servers' process trees.
	Reaper *reaper.Reaper

	hooks *testHooks // tests only (export_test.go)
}

// Server is one host connection and everything it owns.
type Server struct {
	opts   Options
	logger *slog.Logger
	stream *protocol.Stream
	conn   *jsonrpc2.Conn

	// ctx is cancelled when the host connection ends; it parents every
	// session and startup.
	ctx    context.Context
	cancel context.CancelFunc

	mu           sync.Mutex
	initializing bool
	initialized  bool
	shutdown     bool
	exited       bool
	env          *environment // set once by initialize
	sessions     map[string]*Session
	nextSession  int
	inflight     map[jsonrpc2.ID]*inflightRequest
	logLimiter   *logLimiter

	// opening holds the ids reserved by session/open calls in progress;
	// sessionsEnded is set once every session was closed for good
	// (shutdown, or the host went away): no session opens after it.
	// Guarded by mu.
	opening       map[string]bool
	sessionsEnded bool

	// work tracks request goroutines, so that Serve returns only after
	// every reply was written or abandoned.
	work sync.WaitGroup

	// hostCallSeq numbers the sidecar's requests to the host (callHost).
	hostCallSeq atomic.Uint64

	exitCode atomic.Int32
	// connReady is closed once conn is set: jsonrpc2 starts reading (and
	// calling Handle) before NewConn returns.
	connReady chan struct{}
	done      chan struct{}
	doneOnce  sync.Once
}

type inflightRequest struct {
	cancel  context.CancelCauseFunc
	replied atomic.Bool
}

// errCancelledByHost is the cause recorded when the host sends
// $/cancelRequest, so that handlers can tell it from other cancellations.
var errCancelledByHost = errors.New("request cancelled by the host")

// Serve speaks the host protocol on r and w until the host sends exit or
// closes its end, then ends every session (and so every child process) and
// returns the process exit code: 0 after shutdown+exit or EOF following
// shutdown, 1 when the host exits or disappears without shutdown (as LSP).
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) int {
	s := newServer(ctx, opts)
	// The stream must not close w when the host closes stdin: replies to
	// requests in flight still go out (a host may half-close).
	s.stream = protocol.NewStream(r, writeOnly{w}, protocol.StreamOptions{MaxFrameBytes: opts.MaxFrameBytes, Logger: s.logger, OmitRequestParams: true})
	s.conn = jsonrpc2.NewConn(s.ctx, s.stream, s)
	close(s.connReady)
	select {
	case <-s.conn.DisconnectNotify():
		s.logger.Debug("host connection closed")
	case <-s.done:
	case <-ctx.Done():
		s.logger.Info("stopping", "cause", context.Cause(ctx))
	}
	s.stop()
	return int(s.exitCode.Load())
}

func newServer(ctx context.Context, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Env == nil {
		opts.Env = func(string) (string, bool) { return "", false }
	}
	if opts.Name == "" {
		opts.Name = "mcp-sidecar"
	}
	if opts.Prober == nil {
		opts.Prober = launcherprobe.New()
	}
	s := &Server{
		opts:       opts,
		logger:     opts.Logger,
		sessions:   make(map[string]*Session),
		inflight:   make(map[jsonrpc2.ID]*inflightRequest),
		logLimiter: newLogLimiter(50, 200),
		connReady:  make(chan struct{}),
		done:       make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.exitCode.Store(1)
	return s
}

// stop ends every session, waits for request goroutines (their replies
// are written even after stdin ended) and closes the host connection.
// Sessions end before the goroutines are awaited, so that requests waiting
// on a server return; a host that no longer reads stdout cannot hold the
// exit up for longer than replyGrace.
func (s *Server) stop() {
	s.closeAllSessions()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.work.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(replyGrace):
		s.logger.Warn("replies still unwritten at exit: the host stopped reading", "grace", replyGrace)
	}
	s.conn.Close()
}

// replyGrace bounds how long stop waits for the last replies.
const replyGrace = 5 * time.Second

// writeOnly hides the Close of a writer.
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

func (s *Server) closeAllSessions() {
	s.mu.Lock()
	s.sessionsEnded = true
	sessions := make([]*Session, 0, len(s.sessions))
	for id, sess := range s.sessions {
		sessions = append(sessions, sess)
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sess := range sessions {
		wg.Go(sess.close)
	}
	wg.Wait()
}

func (s *Server) finish() {
	s.doneOnce.Do(func() { close(s.done) })
}

// Handle is called by jsonrpc2 synchronously in its read loop, right after
// the stream read the frame. It must not block: notifications that only
// record state run here (so a $/cancelRequest is never reordered before the
// request it cancels), everything else runs in a goroutine.
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-s.connReady
	if req.Notif {
		s.handleNotification(req)
		return
	}
	// The params as the host sent them (jsonrpc2 gets none: it would
	// re-encode them).
	params := json.RawMessage(s.stream.LastParams())

	s.mu.Lock()
	if s.exited {
		s.mu.Unlock()
		return
	}
	switch {
	case req.Method == protocol.MethodInitialize:
		if s.initializing || s.initialized {
			s.mu.Unlock()
			s.replyError(req.ID, protocol.NewError(protocol.CodeInvalidRequest, protocol.KindInvalidRequest, "initialize was already received"))
			return
		}
		s.initializing = true
	case !s.initialized:
		s.mu.Unlock()
		s.replyError(req.ID, protocol.NewError(protocol.CodeServerNotInitialized, protocol.KindNotInitialized,
			fmt.Sprintf("%s before initialize: send initialize first", req.Method)))
		return
	case req.Method == protocol.MethodShutdown:
		// Recorded in the read loop, so an exit that follows at once sees it.
		s.shutdown = true
	case s.shutdown:
		s.mu.Unlock()
		s.replyError(req.ID, protocol.NewError(protocol.CodeInvalidRequest, protocol.KindInvalidRequest,
			fmt.Sprintf("%s after shutdown", req.Method)))
		return
	}
	handler, ok := s.method(req.Method)
	if !ok {
		s.mu.Unlock()
		s.replyError(req.ID, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound,
			fmt.Sprintf("unknown method %q", req.Method)))
		return
	}
	reqCtx, cancel := context.WithCancelCause(s.ctx)
	ir := &inflightRequest{cancel: cancel}
	if _, dup := s.inflight[req.ID]; dup {
		s.mu.Unlock()
		cancel(nil)
		s.replyError(req.ID, protocol.NewError(protocol.CodeInvalidRequest, protocol.KindInvalidRequest,
			fmt.Sprintf("request id %s is already in flight", req.ID)))
		return
	}
	s.inflight[req.ID] = ir
	s.work.Add(1)
	s.mu.Unlock()

	go func() {
		defer s.work.Done()
		defer func() {
			s.mu.Lock()
			if s.inflight[req.ID] == ir {
				delete(s.inflight, req.ID)
			}
			s.mu.Unlock()
			cancel(nil)
		}()
		res, err := s.invoke(reqCtx, req.Method, handler, params)
		if err != nil && errors.Is(context.Cause(reqCtx), errCancelledByHost) {
			err = cancelledError()
		}
		// A request answered -32800 by $/cancelRequest gets no second reply;
		// its after-work (e.g. a startup round) still runs, since the state
		// it completes was already set up.
		if ir.replied.CompareAndSwap(false, true) {
			if err != nil {
				s.writeError(req.ID, err)
			} else if err := s.stream.WriteResult(req.ID, res.value); err != nil {
				s.logger.Debug("reply not written", "method", req.Method, "err", err)
			}
		}
		if res.after != nil {
			res.after()
		}
	}()
}

// invoke runs a handler, turning a panic into an internal error: host input
// must never take the process down.
func (s *Server) invoke(ctx context.Context, method string, h handlerFunc, params json.RawMessage) (res result, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("handler panic", "method", method, "panic", r, "stack", string(debug.Stack()))
			err = protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, fmt.Sprintf("internal error in %s: %v", method, r))
		}
	}()
	return h(ctx, params)
}

func (s *Server) handleNotification(req *jsonrpc2.Request) {
	switch req.Method {
	case protocol.MethodCancelRequest:
		var p protocol.CancelParams
		if err := json.Unmarshal(s.stream.LastParams(), &p); err != nil || len(p.ID) == 0 {
			s.logger.Warn("malformed $/cancelRequest", "err", err)
			return
		}
		id, ok := s.stream.CanonicalID(p.ID)
		if !ok {
			return
		}
		s.mu.Lock()
		ir := s.inflight[id]
		s.mu.Unlock()
		if ir == nil {
			return // finished already, or never existed: nothing to cancel
		}
		ir.cancel(errCancelledByHost)
		// The host waits for an answer (vscode-jsonrpc does): answer at
		// once, even if the MCP server ignores the cancellation.
		if ir.replied.CompareAndSwap(false, true) {
			s.writeError(id, cancelledError())
		}
	case protocol.MethodInitialized:
		// Nothing to do: startup begins per session.
	case protocol.MethodExit:
		s.mu.Lock()
		s.exited = true
		if s.shutdown {
			s.exitCode.Store(0)
		}
		s.mu.Unlock()
		s.finish()
	default:
		s.logger.Debug("ignoring notification", "method", req.Method)
	}
}

func cancelledError() *protocol.Error {
	return protocol.NewError(protocol.CodeRequestCancelled, protocol.KindCancelled, "request cancelled")
}

func (s *Server) replyError(id jsonrpc2.ID, e *protocol.Error) {
	if err := s.stream.WriteError(id, e.JSONRPC()); err != nil {
		s.logger.Debug("error reply not written", "err", err)
	}
}

func (s *Server) writeError(id jsonrpc2.ID, err error) {
	s.replyError(id, toProtocolError(err))
}

// toProtocolError gives every error a code and data.kind.
func toProtocolError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	return protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, err.Error())
}

// notify sends a notification to the host; failures (host gone) are logged
// only, since there is no one left to tell.
func (s *Server) notify(method string, params any) {
	if err := s.conn.Notify(s.ctx, method, params); err != nil {
		s.logger.Debug("notification not written", "method", method, "err", err)
	}
}

// callHost sends the host a request (a server-to-host request relayed, such
// as mcp/elicit) and returns its raw result. Every host-bound request goes
// through here, so the wire underneath can change without its callers.
//
// When ctx ends first (the server cancelled its request, or its connection
// ended), the host is sent $/cancelRequest for it, as LSP does: the host
// can stop asking its user.
func (s *Server) callHost(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var res json.RawMessage
	// The sidecar picks the id (from a sequence of its own, and every
	// host-bound request comes through here), so that it can name the
	// request in $/cancelRequest.
	id := jsonrpc2.ID{Num: s.hostCallSeq.Add(1)}
	err := s.conn.Call(ctx, method, params, &res, jsonrpc2.PickID(id))
	if err != nil && ctx.Err() != nil {
		s.notify(protocol.MethodCancelRequest, protocol.CancelParams{ID: json.RawMessage(id.String())})
	}
	return res, err
}

// result is what a handler produces: the value to reply with, and work to
// run after the reply was written (so that events caused by a request
// follow its response on the wire).
type result struct {
	value any
	after func()
}

type handlerFunc func(ctx context.Context, params json.RawMessage) (result, error)

// decodeParams decodes params into v, rejecting unknown shapes with -32602.
func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "invalid params: "+err.Error())
	}
	return nil
}
