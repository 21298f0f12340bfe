// Package mcpclient is one MCP connection of the sidecar: it starts a stdio
// server in a process group of its own (or dials a Streamable HTTP server),
// completes initialize with the go-sdk client, relays the server's
// notifications and requests to the caller's handlers, and returns every
// result as the raw bytes the server sent.
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
)

// DefaultProtocolVersion is the version a connection asks for unless its
// config sets protocol_version. Pinning it (for HTTP too) skips go-sdk's
// server/discover probe, which some stdio servers answer by exiting, and
// keeps list results uncached and request _meta untouched (both differ on
// 2026-07-28 sessions).
const DefaultProtocolVersion = "2025-11-25"

// Defaults of Options.
const (
	DefaultStderrBytes  = 64 << 10
	DefaultMaxLineBytes = 64 << 20
	DefaultCloseGrace   = 2 * time.Second
	DefaultTermGrace    = 2 * time.Second
)

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
	// earlier connection), or EraUnknown. EraLegacy skips the modern probe;
	// EraModern skips the fallback wait. A hint that turns out wrong is
	// probed again once. protocol_version, when set, decides instead.
	Era Era
	// MaxServerRequests bounds the server's requests waiting on the host
	// at once (default DefaultMaxServerRequests).
	MaxServerRequests int
	Handlers          Handlers
	Logger            *slog.Logger // nil: discard
	// StderrBytes is the size of the stderr tail kept (default 64 KiB).
	StderrBytes int
	// MaxLineBytes bounds one message from the server: a stdout line, an
	// HTTP body or SSE event captured raw (default 64 MiB).
	MaxLineBytes int
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
	// A Streamable HTTP server that forgot the session forgot its
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
}

// Handlers receive what the server sends on its own. All are optional.
// They are called from go-sdk's goroutines; the notification handlers and
// StderrLine/SkippedLine are called in order from a single goroutine each
// and must not block (hand off and return): a slow handler delays every
// later notification of the connection. Elicit and ListRoots run on their
// own goroutine per request and may wait on the host; their ctx ends when
// the server cancels the request or the connection ends.
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

// Conn is one initialized MCP connection.
type Conn struct {
	name      string
	transport string
	opts      Options
	session   *mcp.ClientSession
	proc      *process         // nil for http
	http      *headerTransport // nil for stdio
	raw       *rawConn         // nil for http
	// rawCalls carries tools/call over stdio outside go-sdk (rawcall.go);
	// nil for http.
	rawCalls *rawCalls

	// serverReqs holds a token per server request waiting on the host.
	serverReqs chan struct{}

	initRaw      json.RawMessage
	caps         json.RawMessage
	experimental map[string]json.RawMessage
	protocol     string
	serverInfo   *mcp.Implementation
	era          Era
	instructions string

	// life is cancelled when the connection ends: in-flight calls derive
	// from it, so they fail at once rather than wait on a dead peer (and
	// go-sdk's Close, which waits for in-flight calls, can proceed).
	life       context.Context
	cancelLife context.CancelFunc

	done    chan struct{}
	errMu   sync.Mutex
	err     error
	endOnce sync.Once

	sessionEnded chan struct{} // session.Wait returned
	closeReq     chan struct{} // Close was called
	// writeFailed is closed when a write to the server's stdin failed;
	// writeErr says how.
	writeFailed     chan struct{}
	writeFailedOnce sync.Once
	writeErr        error
	closeOnce       sync.Once
	cleaned         chan struct{} // everything is torn down
}

// Connect starts the server (stdio: spawn; http: dial) and completes
// initialize. ctx bounds the whole startup; on any failure nothing is left
// running, and the error says why in words a user reads (including the
// stderr tail for stdio).
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
	c := &Conn{
		name:         opts.Name,
		transport:    opts.Config.Transport(),
		opts:         opts,
		done:         make(chan struct{}),
		sessionEnded: make(chan struct{}),
		closeReq:     make(chan struct{}),
		writeFailed:  make(chan struct{}),
		cleaned:      make(chan struct{}),
		serverReqs:   make(chan struct{}, opts.MaxServerRequests),
	}
	c.life, c.cancelLife = context.WithCancel(context.Background())

	var transport mcp.Transport
	switch c.transport {
	case config.TransportHTTP:
		t, err := c.httpTransport()
		if err != nil {
			return nil, err
		}
		transport = t
	default:
		p, err := startProcess(&c.opts)
		if err != nil {
			return nil, err
		}
		c.proc = p
		c.rawCalls = &rawCalls{server: opts.Name}
		transport = &rawTransport{
			inner:      &lineTransport{lines: p.stdout, w: p.stdin, raw: c.rawCalls, writeFailed: c.inputClosed},
			onConn:     func(rc *rawConn) { c.raw = rc },
			onProgress: opts.Handlers.Progress,
			onNotify: map[string]func(){
				"notifications/tools/list_changed":     opts.Handlers.ToolListChanged,
				"notifications/resources/list_changed": opts.Handlers.ResourceListChanged,
			},
			onNotifyParams: map[string]func(json.RawMessage){
				// go-sdk does not know this notification: the read path
				// is the only place that sees it.
				"notifications/tasks/status": opts.Handlers.TaskStatus,
			},
		}
	}

	version := opts.Config.ProtocolVersion
	if version == "" {
		version = DefaultProtocolVersion
	}
	client := mcp.NewClient(opts.ClientInfo, c.clientOptions(version))
	client.AddReceivingMiddleware(c.relayRequests)

	sink := &rawSink{}
	session, err := client.Connect(withSink(ctx, sink), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	raw, _, got := sink.seal()
	if err != nil {
		return nil, c.startupFailed(ctx, err)
	}
	c.session = session
	res := session.InitializeResult()
	if !got || len(raw) == 0 {
		// Only if a transport delivered nothing raw (it always should):
		// go-sdk's decoded view is better than nothing.
		raw, _ = json.Marshal(res)
	}
	c.initRaw = raw
	if err := c.parseInitialize(res); err != nil {
		session.Close()
		return nil, c.startupFailed(ctx, err)
	}
	go func() {
		session.Wait()
		close(c.sessionEnded)
	}()
	go c.monitor()
	return c, nil
}

func (c *Conn) clientOptions(version string) *mcp.ClientOptions {
	h := c.opts.Handlers
	caps := &mcp.ClientCapabilities{}
	if c.opts.Roots {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	// Before 2025-11-25 there is only form elicitation, advertised as {}.
	modes := version >= "2025-11-25"
	if c.opts.Elicitation || (c.opts.ElicitationURL && modes) {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		if modes && c.opts.Elicitation {
			caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if modes && c.opts.ElicitationURL {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	if c.opts.Sampling {
		caps.Sampling = &mcp.SamplingCapabilities{}
		if c.opts.SamplingTools {
			caps.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
	}
	o := &mcp.ClientOptions{
		Logger:       c.opts.Logger,
		Capabilities: caps,
	}
	// Progress is delivered by the transport layer in wire order (rawConn
	// for stdio, sseBodyTap for HTTP): go-sdk's handler runs on its own
	// goroutine and can lag behind the response that ends the call, after
	// which the token is unknown and the progress lost.
	if h.Log != nil {
		o.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) {
			h.Log(r.Params)
		}
	}
	// Over stdio, list_changed notifications are counted on the read path
	// too (rawConn.Read), for the same reason as progress: a notification
	// the server sent before answering a call must be known when the host
	// gets that answer, or a tool it announced is not callable in the same
	// turn. Over HTTP go-sdk's handlers see them (the standalone stream
	// included).
	stdio := c.opts.Config.Transport() == config.TransportStdio
	if h.ToolListChanged != nil && !stdio {
		o.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { h.ToolListChanged() }
	}
	if h.ResourceListChanged != nil && !stdio {
		o.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { h.ResourceListChanged() }
	}
	if h.ElicitationComplete != nil {
		o.ElicitationCompleteHandler = func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			h.ElicitationComplete(r.Params.ElicitationID)
		}
	}
	if h.ResourceUpdated != nil {
		o.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			h.ResourceUpdated(r.Params.URI)
		}
	}
	if h.PromptListChanged != nil {
		o.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { h.PromptListChanged() }
	}
	return o
}

// bindLife derives a context that also ends when the connection does.
func (c *Conn) bindLife(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() { stop(); cancel() }
}

func (c *Conn) parseInitialize(res *mcp.InitializeResult) error {
	var wire struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Experimental map[string]json.RawMessage `json:"experimental"`
		} `json:"capabilities"`
		RawCaps json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(c.initRaw, &wire); err != nil {
		return fmt.Errorf("initialize result: %w", err)
	}
	var caps struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(c.initRaw, &caps)
	c.caps = caps.Capabilities
	if len(c.caps) == 0 {
		c.caps = json.RawMessage("{}")
	}
	c.experimental = wire.Capabilities.Experimental
	c.protocol = wire.ProtocolVersion
	c.era = EraLegacy
	if res != nil {
		c.instructions = res.Instructions
		c.serverInfo = res.ServerInfo
		if c.protocol == "" {
			c.protocol = res.ProtocolVersion
		}
	}
	return nil
}

// ErrInitializeTimeout is the errors.Is target of a startup that ended
// because the server had not answered initialize when ctx ended.
var ErrInitializeTimeout = errors.New("did not answer initialize in time")

// startupFailed explains err and has what Connect started torn down
// (through Options.Background, so that the error is reported when it
// happened, not after a server that ignores SIGTERM has been killed).
func (c *Conn) startupFailed(ctx context.Context, err error) error {
	c.cancelLife()
	if c.proc == nil {
		if c.http != nil {
			if failure := c.http.startupFailure(); failure != nil {
				return &startupError{msg: failure.Error(), causes: []error{failure, err}}
			}
		}
		if ctx.Err() != nil {
			return &startupError{msg: fmt.Sprintf("server %q: %s did not answer initialize in time", c.name, redact.URL(c.opts.Config.URL)), causes: []error{ErrInitializeTimeout, ctx.Err()}}
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
	// time, whatever it does next (go-sdk closing its stdin makes most
	// servers exit 0 at once).
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
	c.background(func() { p.stop(0, c.opts.TermGrace) })

	var b strings.Builder
	fmt.Fprintf(&b, "server %q: ", c.name)
	switch {
	case status != "":
		fmt.Fprintf(&b, "exited during startup (%s)", status)
	case fatal != nil:
		fmt.Fprintf(&b, "initialize failed: %v", fatal)
	case timedOut:
		b.WriteString("did not answer initialize in time")
	default:
		fmt.Fprintf(&b, "initialize failed: %v", err)
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
	case <-c.sessionEnded:
		if c.proc != nil && waitClosed(c.proc.exited, 500*time.Millisecond) {
			cause = c.lostProcess()
		} else if c.proc != nil {
			if fatal := c.proc.stdout.fatalErr(); fatal != nil {
				cause = fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, fatal)
			} else {
				cause = fmt.Errorf("server %q: %w: the server closed its output%s", c.name, ErrConnectionLost, c.tailSuffix())
			}
		} else {
			werr := c.session.Wait()
			if werr == nil {
				werr = io.EOF
			}
			cause = fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, werr)
		}
	}
	c.end(cause)

	// Tear down. go-sdk's Close waits for in-flight calls, which end now
	// that life is cancelled; the process stop does not depend on it.
	sessionClosed := make(chan struct{})
	go func() {
		c.session.Close()
		close(sessionClosed)
	}()
	if c.proc != nil {
		c.proc.stop(c.opts.CloseGrace, c.opts.TermGrace)
	}
	if c.rawCalls != nil {
		c.rawCalls.bg.Wait() // the pipe is closed: they have ended
	}
	<-sessionClosed
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

// inputClosed records the first failed write to the server's stdin: the
// monitor ends the connection.
func (c *Conn) inputClosed(err error) {
	c.writeFailedOnce.Do(func() {
		c.writeErr = err
		close(c.writeFailed)
	})
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
		if c.rawCalls != nil {
			c.rawCalls.fail(cause)
		}
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

// InitializeResult is the initialize result exactly as the server sent it.
func (c *Conn) InitializeResult() json.RawMessage { return c.initRaw }

// Capabilities is the server's raw capabilities object.
func (c *Conn) Capabilities() json.RawMessage { return c.caps }

// Experimental is capabilities.experimental, each value raw.
func (c *Conn) Experimental() map[string]json.RawMessage { return c.experimental }

// ProtocolVersion is the negotiated protocol version.
func (c *Conn) ProtocolVersion() string { return c.protocol }

// ServerInfo is the server's implementation info.
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

// ListToolsPage sends one tools/list.
func (c *Conn) ListToolsPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "tools/list", func(ctx context.Context) (any, error) {
		return c.session.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
	})
}

// ListResourcesPage sends one resources/list.
func (c *Conn) ListResourcesPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "resources/list", func(ctx context.Context) (any, error) {
		return c.session.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
	})
}

// ListResourceTemplatesPage sends one resources/templates/list.
func (c *Conn) ListResourceTemplatesPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "resources/templates/list", func(ctx context.Context) (any, error) {
		return c.session.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
	})
}

// ListPromptsPage sends one prompts/list.
func (c *Conn) ListPromptsPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "prompts/list", func(ctx context.Context) (any, error) {
		return c.session.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
	})
}

// ReadResource sends resources/read.
func (c *Conn) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return c.call(ctx, "resources/read", func(ctx context.Context) (any, error) {
		return c.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	})
}

// GetPrompt sends prompts/get.
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	return c.call(ctx, "prompts/get", func(ctx context.Context) (any, error) {
		return c.session.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	})
}

// Complete sends completion/complete with params (a CompleteParams object).
func (c *Conn) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("server %q: completion/complete: invalid params: %w", c.name, err)
	}
	return c.call(ctx, "completion/complete", func(ctx context.Context) (any, error) {
		return c.session.Complete(ctx, &p)
	})
}

// CallTool sends tools/call. args are the raw arguments (nil means {}),
// meta the _meta entries; json.RawMessage values go out with their bytes.
// The map is copied: go-sdk may add keys to the one it sends.
func (c *Conn) CallTool(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	return c.callTool(ctx, ToolCall{Name: name, Arguments: args, Meta: meta})
}

// callTool is CallTool with the task parameter when task is not nil. Over
// stdio it takes the raw path (rawcall.go).
func (c *Conn) callTool(ctx context.Context, call ToolCall) (json.RawMessage, error) {
	name, args, meta, task := call.Name, call.Arguments, call.Meta, call.Task
	args, err := c.checkCallParams(name, args, task)
	if err != nil {
		return nil, err
	}
	if c.rawCallsUsable() {
		return c.callToolRaw(ctx, name, args, meta, task)
	}
	if task != nil {
		ctx = withRewrite(ctx, &rewrite{add: map[string]json.RawMessage{"task": task}})
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if len(meta) > 0 {
		params.Meta = make(mcp.Meta, len(meta))
		for k, v := range meta {
			params.Meta[k] = v
		}
	}
	return c.call(ctx, "tools/call", func(ctx context.Context) (any, error) {
		return c.session.CallTool(ctx, params)
	})
}

// checkCallParams checks the arguments (nil means {}) and the task (nil
// or an object) of a tools/call and returns the arguments to send.
func (c *Conn) checkCallParams(name string, args, task json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	} else if !json.Valid(args) {
		return nil, fmt.Errorf("server %q: tool %q: arguments are not valid JSON", c.name, name)
	}
	if task != nil && (!isObject(task) || !json.Valid(task)) {
		return nil, fmt.Errorf("server %q: tool %q: task is not a JSON object", c.name, name)
	}
	return args, nil
}

// codeRejected is the code of go-sdk's jsonrpc2.ErrRejected, which its
// transports return for a request they did not send. A server's own
// -32005 answer is captured raw and never reaches the check that uses it.
const codeRejected = -32005

// call runs one go-sdk request and returns the raw result the transport
// captured for it.
func (c *Conn) call(ctx context.Context, method string, send func(context.Context) (any, error)) (json.RawMessage, error) {
	select {
	case <-c.done:
		return nil, c.Err()
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sink := &rawSink{}
	cctx, stop := c.bindLife(withSink(ctx, sink))
	typed, err := send(cctx)
	stop()
	raw, werr, got := sink.seal()
	if c.raw != nil && !got {
		c.raw.forget(sink)
	}
	switch {
	case got && werr != nil && ctx.Err() == nil:
		// (A server's error that crosses the caller's cancellation, such
		// as the cancelled handler's own error, is not the answer.)
		return nil, &ServerError{Server: c.name, Method: method, Code: werr.Code, Message: werr.Message, Data: werr.Data}
	case got && (err == nil || ctx.Err() == nil):
		// The server answered. A go-sdk error here is its failure to decode
		// the result into its own types, which does not concern a relay,
		// unless the result is not even an object.
		if err := c.checkResult(method, raw); err != nil {
			return nil, err
		}
		return raw, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		return nil, c.Err()
	default:
	}
	if err == nil {
		// Nothing captured (not expected): fall back to go-sdk's decoding.
		out, merr := json.Marshal(typed)
		if merr != nil {
			return nil, fmt.Errorf("server %q: %s: %w", c.name, method, merr)
		}
		return out, nil
	}
	if errors.Is(err, ErrUnreachable) {
		// go-sdk wraps a transport failure in its ErrRejected, itself a
		// *jsonrpc.Error (-32005): the cause is the error, not that.
		return nil, fmt.Errorf("server %q: %s: %w", c.name, method, err)
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code == codeRejected {
		// go-sdk's own ErrRejected: the transport did not send the request
		// (an OAuth authorization that did not complete, for one). The
		// server said nothing; what the transport was told says why.
		return nil, fmt.Errorf("server %q: %s: %w", c.name, method, err)
	}
	if errors.As(err, &we) {
		return nil, &ServerError{Server: c.name, Method: method, Code: we.Code, Message: we.Message, Data: we.Data}
	}
	if connectionGone(err) {
		// go-sdk fails an in-flight call with a bare EOF as the stream
		// breaks; the monitor is about to say why.
		if waitClosed(c.done, 2*time.Second) {
			return nil, c.Err()
		}
		return nil, fmt.Errorf("server %q: %s: %w: %w", c.name, method, ErrConnectionLost, err)
	}
	return nil, fmt.Errorf("server %q: %s: %w", c.name, method, err)
}

func connectionGone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, errLineTooLong) || errors.Is(err, errInputClosed)
}
