package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/memrelease"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/launcherprobe"
	"github.com/mcp-sidecar/mcp-sidecar/oauth"
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
	// Environ is the sidecar's whole environment ("NAME=value"): what a
	// stdio server of Claude Code's, Cursor's or VS Code's files starts
	// from, as those tools pass theirs (config.ChildEnv), and what a
	// header helper runs with. Nil: os.Environ.
	Environ func() []string
	// Keyring is the OS keychain of the servers whose
	// mcp_oauth_credentials_store is "keyring" or "auto"; nil: the
	// system's (oauth.OSKeyring).
	Keyring oauth.Keyring
	// Logger receives the sidecar's own logs (stderr in production).
	Logger *slog.Logger
	// Prober verifies the launcher candidate; nil means a fresh prober.
	Prober *launcherprobe.Prober
	// MaxFrameBytes bounds a host frame; zero means the default (64 MiB).
	MaxFrameBytes int64
	// InlineSource names initialize.servers where problems and messages
	// say where a server is defined; empty is "initialize". The commands
	// for people, whose inline server is one given on their command line,
	// name it so.
	InlineSource string
	// StartupTimeout, when positive, bounds every server's startup in
	// place of its startup_timeout_sec (the commands for people's
	// --startup-timeout).
	StartupTimeout time.Duration
	// Reaper registers the server processes, when this process serves the
	// host protocol as its job (the serve command): see internal/process/reaper.
	// Nil: each connection still ends its servers' process trees.
	Reaper *reaper.Reaper

	hooks *testHooks // tests only (export_test.go)
}

// Server is one host connection and everything it owns.
type Server struct {
	opts   Options
	logger *slog.Logger
	conn   *protocol.Conn

	// ctx is cancelled when the host connection ends; it parents every
	// session and startup.
	ctx    context.Context
	cancel context.CancelFunc

	// mu is a leaf of the lock order (written at Session.mu): nothing
	// else is locked while it is held.
	mu           sync.Mutex
	initializing bool
	initialized  bool
	shutdown     bool
	exited       bool
	env          *environment // set once by initialize
	sessions     map[string]*Session
	nextSession  int
	logLimiter   *logLimiter

	// opening holds the session/open calls in progress by the id each
	// reserved; sessionsEnded is set once every session was closed for good
	// (shutdown, or the host went away): no session opens after it.
	// Guarded by mu.
	opening       map[string]*openingSession
	sessionsEnded bool

	// work tracks request goroutines, so that Serve returns only after
	// every reply was written or abandoned.
	work sync.WaitGroup

	// deadlines times out the tool calls sent from the read loop.
	deadlines callDeadlines

	// mem returns a large payload's memory to the OS: told of the host's
	// frames, the servers' messages and the results cut to their limit
	// (outputlimit.go), so that a large result is followed by a release
	// whichever way it went.
	mem *memrelease.Releaser

	exitCode atomic.Int32
	done     chan struct{}
	doneOnce sync.Once
}

// Serve speaks the host protocol on r and w until the host sends exit or
// closes its end, then ends every session (and so every child process) and
// returns the process exit code: 0 after shutdown+exit or EOF following
// shutdown, 1 when the host exits or disappears without shutdown (as LSP).
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) int {
	s := newServer(ctx, opts)
	r, w, closeOut := hostStdio(r, w)
	defer closeOut()
	// The connection must not close w when the host closes stdin: replies
	// to requests in flight still go out (a host may half-close).
	s.conn = protocol.NewConn(r, writeOnly{w}, protocol.ConnOptions{
		MaxFrameBytes: opts.MaxFrameBytes,
		Logger:        s.logger,
		// initialize is not cancellable: a $/cancelRequest naming it is
		// ignored, and the host gets the normal answer. Cancelling it
		// half-way would leave either a sidecar that is initialized
		// although the host was told otherwise, or one the host must
		// configure again; an answer the host can rely on is simpler.
		Uncancellable: []string{protocol.MethodInitialize},
		// A large result's memory goes back to the OS once it was
		// relayed, rather than staying with the process for minutes.
		FrameSize: s.mem.Note,
	})
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := s.conn.Serve(s.ctx, s); err != nil {
			s.logger.Warn("reading from the host failed", "err", err)
		}
	}()
	select {
	case <-served:
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
	// Records that carry what a host or a server sent are rate-limited
	// here, for every layer below (see internal/peerlog).
	opts.Logger = peerlog.Limit(opts.Logger)
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
		logLimiter: newLogLimiter(50, 200),
		done:       make(chan struct{}),
	}
	mem := memrelease.Options{Above: releaseMemoryAbove}
	if h := s.hook().memory; h != nil {
		mem = *h
	}
	s.mem = memrelease.New(mem)
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
	// A reply may be queued behind others when its goroutine ends: the
	// connection's flush waits for it, within the same grace.
	end := time.Now().Add(replyGrace)
	written := false
	select {
	case <-done:
		written = s.conn.Flush(time.Until(end))
	case <-time.After(replyGrace):
	}
	if !written {
		s.logger.Warn("replies still unwritten at exit: the host stopped reading", "grace", replyGrace)
	}
	// Launcher probes run on s.ctx, cancelled above; wait for them to end.
	if env := s.environment(); env != nil {
		env.launcher.Close()
		env.auth.Close() // flows waiting for a user end with the host
	}
	s.conn.Close()
	s.mem.Close()
}

// replyGrace bounds how long stop waits for the last replies.
const replyGrace = 5 * time.Second

// releaseMemoryAbove is the size of a payload (a message to or from the
// host or a server, a result cut to its limit) after which the sidecar
// returns free memory to the OS (internal/memrelease).
const releaseMemoryAbove = 8 << 20

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

// Handle is called by the host connection in read order, on its read loop.
// It must not block: notifications that only record state run here (and
// the connection has already handled a $/cancelRequest, in order, before
// any later message), everything else runs in a goroutine.
func (s *Server) Handle(ctx context.Context, req *protocol.Request) {
	if req.IsNotification() {
		s.handleNotification(req)
		return
	}
	// The session a request names is looked up here, in the order the
	// host sent its requests, not in the order their goroutines run; so is
	// the id a session/open reserves (session.go, sessionRef).
	var rq *request
	if req.Method != protocol.MethodToolsCall { // the hot path allocates none unless it must wait
		rq = &request{params: req.Params}
	}
	var sessionID string
	named := false
	switch req.Method {
	case protocol.MethodInitialize, protocol.MethodShutdown, protocol.MethodToolsCall:
		// No session, or found by sendToolCall.
	default:
		sessionID, named = sessionIDOf(req.Params)
	}
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
	case s.shutdown:
		// A second shutdown too: LSP refuses every request after the first.
		s.mu.Unlock()
		s.replyError(req.ID, protocol.NewError(protocol.CodeInvalidRequest, protocol.KindInvalidRequest,
			fmt.Sprintf("%s after shutdown", req.Method)))
		return
	case req.Method == protocol.MethodShutdown:
		// Recorded in the read loop, so an exit that follows at once sees it.
		s.shutdown = true
	}
	var handler handlerFunc
	if req.Method != protocol.MethodToolsCall { // the hot path needs no handler value
		var ok bool
		if handler, ok = s.method(req.Method); !ok {
			s.mu.Unlock()
			s.replyError(req.ID, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound,
				fmt.Sprintf("unknown method %q", req.Method)))
			return
		}
		switch {
		case req.Method == protocol.MethodSessionOpen:
			if named {
				rq.open = s.reserveSessionLocked(sessionID)
			}
		case named:
			rq.session = s.sessionRefLocked(sessionID)
		}
	}
	s.work.Add(1)
	s.mu.Unlock()
	if req.Method == protocol.MethodToolsCall {
		var ref sessionRef
		if s.sendToolCall(ctx, req, &ref) {
			return // sent without a goroutine of its own (toolcall.go)
		}
		rq = &request{params: req.Params, session: ref}
		handler = s.toolsCall
	}

	go func() {
		defer s.work.Done()
		res, err := s.invoke(ctx, req.Method, handler, rq)
		// A request the host cancelled was answered -32800 already: the
		// connection drops this answer. Its after-work (e.g. a startup
		// round) still runs, since the state it completes was set up.
		if err != nil {
			s.replyError(req.ID, err)
		} else if err := s.conn.Reply(req.ID, res.value); err != nil {
			s.logger.Debug("reply not written", "method", req.Method, "err", err)
		}
		if res.after != nil {
			res.after()
		}
	}()
}

// invoke runs a handler, turning a panic into an internal error: host input
// must never take the process down.
func (s *Server) invoke(ctx context.Context, method string, h handlerFunc, rq *request) (res result, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("handler panic", "method", method, "panic", r, "stack", string(debug.Stack()))
			err = protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, fmt.Sprintf("internal error in %s: %v", method, r))
		}
	}()
	defer rq.open.abandon(s) // a session/open that did not publish frees its id
	return h(ctx, rq)
}

func (s *Server) handleNotification(req *protocol.Request) {
	switch req.Method {
	case protocol.MethodInitialized, protocol.MethodCancelRequest:
		// Nothing to do: startup begins per session, and the connection
		// cancelled and answered the request.
	case protocol.MethodExit:
		s.mu.Lock()
		s.exited = true
		if s.shutdown {
			s.exitCode.Store(0)
		}
		s.mu.Unlock()
		s.finish()
	default:
		s.logger.Debug("ignoring notification", peerlog.String("method", req.Method))
	}
}

func cancelledError() *protocol.Error {
	return protocol.NewError(protocol.CodeRequestCancelled, protocol.KindCancelled, "request cancelled")
}

// replyError answers the request id with err; an error that is not a
// *protocol.Error becomes an internal error (-32603), so that every answer
// has a code and data.kind.
func (s *Server) replyError(id json.RawMessage, err error) {
	if err := s.conn.ReplyError(id, err); err != nil {
		s.logger.Debug("error reply not written", "err", err)
	}
}

// notify sends a notification to the host; failures (host gone) are logged
// only, since there is no one left to tell.
func (s *Server) notify(method string, params any) {
	if err := s.conn.Notify(method, params); err != nil {
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
	return s.conn.Call(ctx, method, params)
}

// result is what a handler produces: the value to reply with, and work to
// run after the reply was written (so that events caused by a request
// follow its response on the wire).
type result struct {
	value any
	after func()
}

type handlerFunc func(ctx context.Context, rq *request) (result, error)

// request is a host request as its handler gets it: its params, and what
// Handle looked up for it in the order the host sent its requests.
type request struct {
	params json.RawMessage
	// session is the session the params' sessionId named when the request
	// was read (every method but initialize, shutdown and session/open).
	session sessionRef
	// open is the id a session/open reserved when it was read; nil when
	// its params have no readable sessionId (the handler reports them).
	open *openReservation
}

// decodeParams decodes params into v, rejecting unknown shapes with -32602
// (protocol.DecodeParams: integers may be written 2.0 or 5e3).
func decodeParams(params json.RawMessage, v any) error {
	return protocol.DecodeParams(params, v)
}

func (s *Server) shutdownMethod(ctx context.Context, _ *request) (result, error) {
	s.closeAllSessions()
	return result{value: nil}, nil
}

func (s *Server) method(name string) (handlerFunc, bool) {
	switch name {
	case protocol.MethodInitialize:
		return s.initialize, true
	case protocol.MethodShutdown:
		return s.shutdownMethod, true
	case protocol.MethodSessionOpen:
		return s.sessionOpen, true
	case protocol.MethodSessionClose:
		return s.sessionClose, true
	case protocol.MethodToolsList:
		return s.toolsList, true
	case protocol.MethodToolsCall:
		return s.toolsCall, true
	case protocol.MethodToolsSearch:
		return s.toolsSearch, true
	case protocol.MethodToolsGet:
		return s.toolsGet, true
	case protocol.MethodResourcesList:
		return s.listMethod(name, "resources"), true
	case protocol.MethodResourceTemplates:
		return s.listMethod(name, "resourceTemplates"), true
	case protocol.MethodPromptsList:
		return s.listMethod(name, "prompts"), true
	case protocol.MethodResourcesRead:
		return s.resourcesRead, true
	case protocol.MethodResourcesDiscover:
		return s.resourcesDiscover, true
	case protocol.MethodPromptsGet:
		return s.promptsGet, true
	case protocol.MethodCompletionComplete:
		return s.complete, true
	case protocol.MethodServersRefresh:
		return s.serversRefresh, true
	case protocol.MethodServersReconnect:
		return s.serversReconnect, true
	case protocol.MethodServersStatus:
		return s.serversStatus, true
	case protocol.MethodServersLogout:
		return s.serversLogout, true
	case protocol.MethodResourcesSubscribe:
		return s.resourcesSubscribe, true
	case protocol.MethodResourcesUnsubscribe:
		return s.resourcesUnsubscribe, true
	case protocol.MethodTasksGet, protocol.MethodTasksResult, protocol.MethodTasksCancel:
		return s.taskMethod(name), true
	case protocol.MethodTasksList:
		return s.tasksList, true
	}
	return nil, false
}
