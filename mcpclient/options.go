package mcpclient

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	// host protocol (nil otherwise): see internal/process/reaper.
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
	// error (which says it is the helper's) fails the request that needed
	// the headers, with the server's name before it; one before any
	// headers were given fails every later request of the connection
	// without another call, and ends the handshake at once. Its values
	// are secrets: never logged. Nil: none.
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
