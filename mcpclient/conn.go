// Package mcpclient is one MCP connection of the sidecar: it starts a stdio
// server in a process group of its own (or dials a Streamable HTTP server),
// agrees on a protocol with it (MCP 2026-07-28 where the server speaks it,
// the initialize handshake of 2025-11-25 and earlier otherwise), relays the
// server's notifications and requests to the caller's handlers, and returns
// every result as the raw bytes the server sent.
//
// One wire (wire.go) carries every message of a connection: one id table,
// one read loop per underlying connection, in-order dispatch. Underneath it
// is go-sdk's mcp.Connection: our own over the server's pipes for stdio
// (lineconn.go), go-sdk's Streamable HTTP client connection, with our
// http.RoundTripper, for HTTP (http.go). docs/architecture.md follows one
// call through it.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
)

// DefaultProtocolVersion is the version a connection asks for in the
// initialize handshake of a server that does not speak the modern protocol
// (unless its config sets protocol_version).
const DefaultProtocolVersion = "2025-11-25"

// legacyVersions are the handshake versions this client speaks, newest
// first.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Defaults of Options.
const (
	DefaultStderrBytes  = 64 << 10
	DefaultMaxLineBytes = 64 << 20
	DefaultCloseGrace   = 2 * time.Second
	DefaultTermGrace    = 2 * time.Second
)

// cancelWait bounds a notifications/cancelled POSTed to a legacy HTTP
// server, and the other notifications the connection sends on its own.
const cancelWait = 5 * time.Second

// ErrConnectionLost is the errors.Is target of every error that means the
// connection is gone: the process exited, the stream ended, or Close was
// called.
var ErrConnectionLost = errors.New("connection lost")

// ServerError is a JSON-RPC error the server answered.
type ServerError struct {
	Server  string // the server's name
	Method  string // the request it answered
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server %q: %s: %s (code %d)", e.Server, e.Method, e.Message, e.Code)
}

// Options configure Connect.
type Options struct {
	Name        string               // server name, for errors and logs
	Config      *config.ServerConfig // the server's configuration
	FallbackCwd string               // cwd for a stdio server whose config has none
	// Env is the sidecar's environment: the source of the allowlist,
	// env_vars, the bearer token and env_http_headers. Nil means the
	// process environment.
	Env        config.Lookup
	ClientInfo *mcp.Implementation // the sidecar's name/version
	// The client capabilities to advertise: each only when the host
	// handles it.
	Elicitation    bool // form elicitation
	ElicitationURL bool // URL elicitation (protocol 2025-11-25 and later)
	Roots          bool
	Sampling       bool
	SamplingTools  bool // sampling with tools (sampling.tools)
	// Extensions are the client's extensions (capabilities.extensions of
	// protocol 2026-07-28: MCP Apps, Skills, tasks...), each value the
	// extension's settings object as the host declared it. Sent to modern
	// servers only.
	Extensions map[string]json.RawMessage
	// Era is what the sidecar learnt of the server before (Conn.Era of an
	// earlier connection), or EraUnknown. EraLegacy skips the modern probe
	// (a hint that turns out wrong is probed again once); EraModern probes
	// as EraUnknown does, within the probe's bound. protocol_version, when
	// set, decides instead.
	Era Era
	// MaxServerRequests bounds the server's requests waiting on the host
	// at once (default DefaultMaxServerRequests).
	MaxServerRequests int
	Handlers          Handlers
	Logger            *slog.Logger // nil: discard
	// StderrBytes is the size of the stderr tail kept (default 64 KiB).
	StderrBytes int
	// Secrets are replaced in the server's stderr as it is read, before
	// its lines reach the tail, Handlers.StderrLine or Logger (nil: none).
	Secrets *redact.Secrets
	// MaxLineBytes bounds one message from the server: a stdout line, an
	// HTTP body or SSE event (default 64 MiB).
	MaxLineBytes int
	// MessageSize, when set, is told the size in bytes of each message
	// read from the server (a stdout line; over HTTP, a response's result
	// or a message's params): the sidecar returns a large message's memory
	// to the OS on it (internal/memrelease). It is called on the
	// connection's read loop and must return at once. Nil: none.
	MessageSize func(n int)
	// Reaper registers the server process, when the sidecar serves the
	// host protocol (nil otherwise): see internal/reaper.
	Reaper *reaper.Reaper
	// Background runs work that outlives the call that started it (the
	// teardown of a server whose startup failed) on a goroutine the caller
	// waits for before it considers the server's processes gone. Nil: the
	// call waits for that work itself.
	Background func(f func())
	// HTTPClient is the base client for Streamable HTTP; its Transport is
	// wrapped, its Timeout ignored (streams are long-lived: bound calls
	// with contexts).
	HTTPClient *http.Client
	// Subscriptions lists the resources the connection is subscribed to.
	// A legacy Streamable HTTP server that forgot the session forgot its
	// subscriptions with it: the new session subscribes to these before
	// any other request is sent on it (Handlers.ResubscribeFailed hears of
	// a refusal). Nil: none. It must not call the Conn.
	Subscriptions func() []string
	// OAuth authorizes a Streamable HTTP connection: it supplies the
	// bearer token of every request and is asked to authorize on 401 and
	// 403 (package oauth). Nil: no OAuth.
	OAuth auth.OAuthHandler
	// DynamicHeaders supplies headers of a Streamable HTTP connection
	// that a command computes (Claude Code's headersHelper, Codex's
	// http_headers_helper): it is called before the connection's first
	// request, and again with refresh=true after a request is answered
	// 401, that request being sent once more with the new headers; the
	// headers it returned last are added to every request of the
	// connection (over the configured http_headers of the same name). An
	// error fails the request that needed the headers, naming the server.
	// Its values are secrets: never logged. Nil: none.
	DynamicHeaders func(ctx context.Context, refresh bool) (http.Header, error)
	// CloseGrace is how long Close waits after closing stdin before it
	// sends SIGTERM to the group; TermGrace how long after SIGTERM before
	// SIGKILL. Defaults 2 s each.
	CloseGrace time.Duration
	TermGrace  time.Duration

	clock func() time.Time // the skipped-line log's rate; nil: time.Now (tests)
	// exitWait is how long a startup that failed before its deadline waits
	// to see the server exit, so that the error says it crashed; 0: 500 ms
	// (tests).
	exitWait time.Duration
	// probeWait bounds the wait for the answer to a stdio server's
	// server/discover probe; 0: defaultProbeWait (tests).
	probeWait time.Duration
	// getDelay is the first pause before a legacy HTTP session's GET
	// stream is opened again; 0: getFirstDelay (tests).
	getDelay time.Duration
}

// Handlers receive what the server sends on its own. All are optional.
// The notification handlers and StderrLine/SkippedLine are called in order
// from a single goroutine each (the connection's read loop, the stderr
// reader) and must not block (hand off and return): a slow handler delays
// every later message of the connection. Elicit, Sample and ListRoots run
// on a goroutine of their own per request and may wait on the host; their
// ctx ends when the server cancels the request, the call that asked (a
// modern server's multi round-trip result) ends, or the connection ends.
type Handlers struct {
	// Elicit answers elicitation/create: params are the request's params,
	// the result goes back to the server as returned. A returned
	// *ServerError is answered as that JSON-RPC error.
	Elicit func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// Sample answers sampling/createMessage as Elicit does elicitation.
	Sample func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// ServerRequestRefused is told that a server request was refused
	// because MaxServerRequests were waiting already.
	ServerRequestRefused func(method string, limit int)
	// HostAnswerRefused is told that a handler's answer to a server
	// request (Elicit, ListRoots, Sample) did not have MCP's shape, or
	// that an accepted form's content does not match its requestedSchema
	// (naming the fields, never their values), and why; the server got a
	// JSON-RPC error instead.
	HostAnswerRefused func(method string, why error)
	// ElicitationComplete sees notifications/elicitation/complete.
	ElicitationComplete func(elicitationID string)
	// ResourceUpdated sees notifications/resources/updated.
	ResourceUpdated func(uri string)
	// ResubscribeFailed is told that a resource of Options.Subscriptions
	// could not be subscribed to again on a renewed HTTP session, and why.
	ResubscribeFailed func(uri string, err error)
	// TaskStatus sees notifications/tasks/status, params as received, in
	// wire order.
	TaskStatus func(params json.RawMessage)
	// ListRoots answers roots/list with a ListRootsResult ({"roots":[...]}).
	ListRoots           func(ctx context.Context) (json.RawMessage, error)
	Progress            func(p *mcp.ProgressNotificationParams)
	Log                 func(p *mcp.LoggingMessageParams)
	StderrLine          func(line string)
	SkippedLine         func(line string) // a non-JSON line on the server's stdout
	ToolListChanged     func()
	ResourceListChanged func()
	PromptListChanged   func()
}

// Conn is one MCP connection, past its handshake.
type Conn struct {
	name      string
	transport string
	opts      Options
	w         *wire
	proc      *process   // nil for http
	lc        *lineConn  // nil for http
	http      *httpState // nil for stdio

	// serverReqs holds a token per server request waiting on the host.
	serverReqs chan struct{}
	// inFlight are the server's requests being answered, by id, so that
	// its notifications/cancelled reaches them.
	inFlightMu sync.Mutex
	inFlight   map[jsonrpc.ID]context.CancelFunc

	initRaw      json.RawMessage
	caps         json.RawMessage
	experimental map[string]json.RawMessage
	protocol     string
	serverInfo   *mcp.Implementation
	era          Era
	instructions string
	// meta is the _meta every request of a modern connection carries
	// (members only, without braces), taskMeta the same with the tasks
	// extension declared, and capsRaw the client's capabilities as sent.
	meta     []byte
	taskMeta []byte
	capsRaw  json.RawMessage
	// subs is the modern connection's subscriptions/listen stream, set
	// once the server's DiscoverResult is read (the read loop reads it).
	subs atomic.Pointer[listener]

	// life is cancelled when the connection ends: work of the connection
	// derives from it, so that it stops rather than wait on a dead peer.
	life       context.Context
	cancelLife context.CancelFunc

	done    chan struct{}
	errMu   sync.Mutex
	err     error
	endOnce sync.Once

	// readEnded is closed when the read loop of the connection ended for
	// good (stdio: the server's stdout; HTTP: the session, not renewed);
	// readErr says why.
	readEnded chan struct{}
	readErr   error
	closeReq  chan struct{} // Close was called
	// writeFailed is closed when a write to the server's stdin failed;
	// writeErr says how.
	writeFailed chan struct{}
	writeErr    error
	closeOnce   sync.Once
	cleaned     chan struct{} // everything is torn down
}

// Connect starts the server (stdio: spawn; http: dial) and agrees on a
// protocol with it. ctx bounds the whole startup; on any failure nothing is
// left running, and the error says why in words a user reads (including
// the stderr tail for stdio).
func Connect(ctx context.Context, opts Options) (*Conn, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("server %q: no configuration", opts.Name)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StderrBytes <= 0 {
		opts.StderrBytes = DefaultStderrBytes
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.CloseGrace <= 0 {
		opts.CloseGrace = DefaultCloseGrace
	}
	if opts.TermGrace <= 0 {
		opts.TermGrace = DefaultTermGrace
	}
	if opts.MaxServerRequests <= 0 {
		opts.MaxServerRequests = DefaultMaxServerRequests
	}
	if opts.ClientInfo == nil {
		opts.ClientInfo = &mcp.Implementation{Name: "mcp-sidecar", Version: "dev"}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server %q: %w", opts.Name, err)
	}
	c := newConn(opts)
	var err error
	switch {
	case c.transport == config.TransportHTTP && opts.Config.SSE:
		err = c.connectSSE(ctx)
	case c.transport == config.TransportHTTP:
		err = c.connectHTTP(ctx)
	default:
		err = c.connectStdio(ctx)
	}
	if err != nil {
		return nil, err
	}
	go c.monitor()
	return c, nil
}

func newConn(opts Options) *Conn {
	c := &Conn{
		name:        opts.Name,
		transport:   opts.Config.Transport(),
		opts:        opts,
		done:        make(chan struct{}),
		readEnded:   make(chan struct{}),
		closeReq:    make(chan struct{}),
		writeFailed: make(chan struct{}),
		cleaned:     make(chan struct{}),
		serverReqs:  make(chan struct{}, opts.MaxServerRequests),
		inFlight:    make(map[jsonrpc.ID]context.CancelFunc),
	}
	c.life, c.cancelLife = context.WithCancel(context.Background())
	c.w = newWire(c)
	return c
}

// connectStdio spawns the server and runs the handshake, a probe and a
// second process included (handshake.go).
func (c *Conn) connectStdio(ctx context.Context) error {
	if err := c.spawn(); err != nil {
		return err
	}
	if err := c.handshake(ctx); err != nil {
		return c.startupFailed(ctx, err)
	}
	return nil
}

// spawn starts the server process and its read loop. Each process has its
// own readEnded and writeFailed (a probe may start a second one).
func (c *Conn) spawn() error {
	p, err := startProcess(&c.opts)
	if err != nil {
		return err
	}
	ended, failed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	lc := &lineConn{lines: p.stdout, w: p.stdin, writeFailed: func(err error) {
		// The first failed write to the server's stdin: the monitor ends
		// the connection.
		once.Do(func() {
			c.writeErr = err
			close(failed)
		})
	}}
	c.proc, c.lc, c.readEnded, c.writeFailed = p, lc, ended, failed
	c.w.use(lc)
	go func() {
		c.w.readLines(lc)
		close(ended)
	}()
	return nil
}

// processGone reports whether the stdio server exited or closed its
// output.
func (c *Conn) processGone() bool {
	select {
	case <-c.proc.exited:
		return true
	case <-c.readEnded:
		return true
	default:
		return false
	}
}

// respawn replaces the server process with a new one: the first exited,
// or is in no state to be talked to, after the request died of (the
// probe, or a legacy-hinted initialize), and the next goes to the new one.
func (c *Conn) respawn(died, next string) error {
	old, oldLC, oldEnded := c.proc, c.lc, c.readEnded
	oldLC.Close()
	old.stop(0, c.opts.TermGrace)
	<-oldEnded
	c.opts.Logger.Info("server exited on "+died+": started again for "+next, "server", c.name)
	return c.spawn()
}

// lineConn is the stdio connection, nil for HTTP.
func (c *Conn) lineConn() *lineConn { return c.lc }

// bindLife derives a context that also ends when the connection does.
func (c *Conn) bindLife(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// ErrInitializeTimeout is the errors.Is target of a startup that ended
// because the server had not answered initialize when ctx ended.
var ErrInitializeTimeout = errors.New("did not answer initialize in time")

// startupFailed explains err and has what Connect started torn down
// (through Options.Background, so that the error is reported when it
// happened, not after a server that ignores SIGTERM has been killed).
func (c *Conn) startupFailed(ctx context.Context, err error) error {
	c.cancelLife()
	c.w.fail(ErrConnectionLost)
	if c.proc == nil {
		if c.http != nil {
			c.background(c.http.close)
			if failure := c.http.rt.startupFailure(); failure != nil {
				return &startupError{msg: failure.Error(), causes: []error{failure, err}}
			}
		}
		if ctx.Err() != nil {
			return &startupError{msg: fmt.Sprintf("server %q: %s did not answer initialize in time", c.name, redact.URL(c.opts.Config.URL)), causes: []error{ErrInitializeTimeout, ctx.Err()}}
		}
		if strings.HasPrefix(err.Error(), fmt.Sprintf("server %q", c.name)) {
			return err
		}
		return fmt.Errorf("server %q: initialize: %w", c.name, err)
	}
	p := c.proc
	failedAt := time.Now()
	if d, ok := ctx.Deadline(); ok && ctx.Err() != nil && d.Before(failedAt) {
		failedAt = d
	}
	status := ""
	timedOut := ctx.Err() != nil && !p.exitedBefore(failedAt)
	// A server that crashed during startup usually closed stdout as it
	// died: give the exit a moment to be observed so the error says so.
	// A server that was still running when ctx ended did not answer in
	// time, whatever it does next (closing its stdin makes most servers
	// exit 0 at once).
	exitWait := c.opts.exitWait
	if exitWait == 0 {
		exitWait = 500 * time.Millisecond
	}
	if !timedOut && waitClosed(p.exited, exitWait) {
		p.drainStderr(200 * time.Millisecond)
		status = p.exitStatus()
	}
	fatal := p.stdout.fatalErr()
	tail := p.stderr.String()
	lc := c.lc
	c.background(func() {
		lc.Close()
		p.stop(0, c.opts.TermGrace)
		<-c.readEnded
		c.w.bg.Wait()
	})

	var b strings.Builder
	fmt.Fprintf(&b, "server %q: ", c.name)
	var se *ServerError
	var rp *reprobeError
	switch {
	case status != "":
		fmt.Fprintf(&b, "exited during startup (%s)", status)
	case fatal != nil:
		fmt.Fprintf(&b, "initialize failed: %v", fatal)
	case timedOut:
		b.WriteString("did not answer initialize in time")
	case errors.As(err, &rp):
		b.WriteString(strings.TrimPrefix(rp.Error(), fmt.Sprintf("server %q: ", c.name)))
	case errors.As(err, &se):
		fmt.Fprintf(&b, "%s failed: %s (code %d)", se.Method, se.Message, se.Code)
	default:
		fmt.Fprintf(&b, "initialize failed: %v", strings.TrimPrefix(err.Error(), fmt.Sprintf("server %q: ", c.name)))
	}
	if tail != "" {
		fmt.Fprintf(&b, "; stderr:\n%s", tail)
	}
	causes := []error{err}
	switch {
	case timedOut:
		causes = []error{ErrInitializeTimeout, ctx.Err()}
	case status != "":
		causes = []error{ErrConnectionLost}
	case fatal != nil:
		causes = []error{fatal}
	}
	if ctx.Err() != nil && !timedOut {
		causes = append(causes, ctx.Err())
	}
	return &startupError{msg: b.String(), causes: causes}
}

// background runs f, a teardown, through Options.Background, or waits for
// it when there is none.
func (c *Conn) background(f func()) {
	if c.opts.Background == nil {
		f()
		return
	}
	c.opts.Background(f)
}

type startupError struct {
	msg    string
	causes []error
}

func (e *startupError) Error() string   { return e.msg }
func (e *startupError) Unwrap() []error { return e.causes }

// monitor waits for the connection to end, records why, and tears down.
func (c *Conn) monitor() {
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
	}
	var cause error
	select {
	case <-c.closeReq:
		cause = fmt.Errorf("server %q: %w: connection closed", c.name, ErrConnectionLost)
	case <-exited:
		cause = c.lostProcess()
	case <-c.writeFailed:
		// The server stopped reading its stdin: closed it, or is dying.
		if waitClosed(c.proc.exited, 200*time.Millisecond) {
			cause = c.lostProcess()
		} else {
			cause = fmt.Errorf("server %q: %w: %w%s", c.name, ErrConnectionLost, c.writeErr, c.tailSuffix())
		}
	case <-c.readEnded:
		switch {
		case c.proc != nil && waitClosed(c.proc.exited, 500*time.Millisecond):
			cause = c.lostProcess()
		case c.proc != nil:
			if fatal := c.proc.stdout.fatalErr(); fatal != nil {
				cause = fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, fatal)
			} else {
				cause = fmt.Errorf("server %q: %w: the server closed its output%s", c.name, ErrConnectionLost, c.tailSuffix())
			}
		default:
			werr := c.readErr
			if werr == nil {
				werr = io.EOF
			}
			cause = fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, werr)
		}
	}
	c.end(cause)

	// Tear down: the underlying connection closes (stdin EOF, or the HTTP
	// session's DELETE), the process stops, and every goroutine of the
	// connection ends.
	if c.proc != nil {
		c.lc.Close()
		c.proc.stop(c.opts.CloseGrace, c.opts.TermGrace)
		<-c.readEnded
	} else {
		c.http.close()
	}
	c.w.bg.Wait() // the pipe or the session is closed: they have ended
	close(c.cleaned)
}

func (c *Conn) lostProcess() error {
	if fatal := c.proc.stdout.fatalErr(); fatal != nil {
		// Our reader gave up first; the exit (often SIGPIPE) is its echo.
		return fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, fatal)
	}
	c.proc.drainStderr(200 * time.Millisecond)
	return fmt.Errorf("server %q: %w: the server exited (%s)%s", c.name, ErrConnectionLost, c.proc.exitStatus(), c.tailSuffix())
}

func (c *Conn) tailSuffix() string {
	if c.proc == nil {
		return ""
	}
	if tail := c.proc.stderr.String(); tail != "" {
		return "; stderr:\n" + tail
	}
	return ""
}

// end records why the connection ended, closes Done, and fails in-flight
// calls.
func (c *Conn) end(cause error) {
	c.endOnce.Do(func() {
		c.errMu.Lock()
		c.err = cause
		c.errMu.Unlock()
		close(c.done)
		c.cancelLife()
		if l := c.subs.Load(); l != nil {
			l.shut()
		}
		c.w.fail(cause)
	})
}

// Close ends the connection: stdin EOF, then SIGTERM and SIGKILL to the
// server's process group, and returns once the group is gone. Idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.closeReq) })
	<-c.cleaned
	return nil
}

// Done is closed when the connection ends (crash, EOF, Close).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended; nil while it is alive.
func (c *Conn) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// SkippedLines reports how many non-JSON lines the server wrote on its
// stdout (skipped, never a reason to end the connection) and the first of
// them, cut to 200 bytes; 0 and "" for http.
func (c *Conn) SkippedLines() (count int, first string) {
	if c.proc == nil {
		return 0, ""
	}
	return c.proc.stdout.skippedLines()
}

// StderrTail is the last StderrBytes of the server's stderr ("" for http).
func (c *Conn) StderrTail() string {
	if c.proc == nil {
		return ""
	}
	return c.proc.stderr.String()
}

// InitializeResult is the result that opened the connection, exactly as
// the server sent it: initialize's (legacy), or server/discover's (modern:
// capabilities, instructions, supportedVersions and, in its _meta or as a
// member, serverInfo; no protocolVersion member).
func (c *Conn) InitializeResult() json.RawMessage { return c.initRaw }

// Capabilities is the server's raw capabilities object.
func (c *Conn) Capabilities() json.RawMessage { return c.caps }

// Experimental is capabilities.experimental, each value raw.
func (c *Conn) Experimental() map[string]json.RawMessage { return c.experimental }

// ProtocolVersion is the negotiated protocol version.
func (c *Conn) ProtocolVersion() string { return c.protocol }

// ServerInfo is the server's implementation info; nil when a modern server
// gave none.
func (c *Conn) ServerInfo() *mcp.Implementation { return c.serverInfo }

// Transport is "stdio" or "http".
func (c *Conn) Transport() string { return c.transport }

// PID is the server's process id (the leader of its group); 0 for http.
func (c *Conn) PID() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.pid
}

// writeError turns the failure to send a request (the underlying
// connection's Write) into the request's error.
func (c *Conn) writeError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrRedirectRefused) || errors.Is(err, ErrMessageTooLarge) {
		// go-sdk wraps a transport failure in its ErrRejected, itself a
		// *jsonrpc.Error (-32005): the cause is the error, not that.
		return fmt.Errorf("server %q: %s: %w", c.name, method, err)
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code != codeRejected {
		// The server's JSON-RPC error in the body of an HTTP error status.
		return &ServerError{Server: c.name, Method: method, Code: we.Code, Message: we.Message, Data: we.Data}
	}
	if errors.Is(err, errRejected) {
		// The transport did not send the request (an OAuth authorization
		// that did not complete, a 5xx or 429): what it was told says why.
		return fmt.Errorf("server %q: %s: %w", c.name, method, err)
	}
	if connectionGone(err) {
		// The connection broke under the request; the monitor is about to
		// say why.
		if waitClosed(c.done, 2*time.Second) {
			return c.Err()
		}
		return fmt.Errorf("server %q: %s: %w: %w", c.name, method, ErrConnectionLost, err)
	}
	return fmt.Errorf("server %q: %s: %w", c.name, method, err)
}

// codeRejected is the code of go-sdk's jsonrpc2.ErrRejected, which its
// transports return for a request they did not send or that the server
// refused without breaking the connection.
const codeRejected = -32005

// errRejected matches go-sdk's ErrRejected (a *jsonrpc.Error compares by
// code).
var errRejected = &jsonrpc.Error{Code: codeRejected}

// response turns a response's members into a request's end: the result
// (a JSON object), or the *ServerError.
func (c *Conn) response(method string, result, errv json.RawMessage, respErr error) (json.RawMessage, error) {
	if errv == nil && respErr == nil {
		if err := c.checkResult(method, result); err != nil {
			return nil, err
		}
		return result, nil
	}
	if respErr != nil {
		var we *jsonrpc.Error
		if errors.As(respErr, &we) {
			return nil, &ServerError{Server: c.name, Method: method, Code: we.Code, Message: we.Message, Data: we.Data}
		}
		// go-sdk's own: an event stream that ended without the answer.
		return nil, &unreachableError{prefix: fmt.Sprintf("server %q", c.name), what: fmt.Sprintf("%s: %v", method, respErr), err: respErr}
	}
	var e struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(errv, &e); err != nil {
		return nil, fmt.Errorf("server %q: %s: malformed error %.200s: %w", c.name, method, errv, err)
	}
	return nil, &ServerError{Server: c.name, Method: method, Code: e.Code, Message: e.Message, Data: e.Data}
}

func connectionGone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, errLineTooLong) || errors.Is(err, errInputClosed)
}
