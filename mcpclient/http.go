package mcpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// httpHeaders builds the static headers of a Streamable HTTP server:
// http_headers, then env_http_headers and the bearer token, which read the
// sidecar's environment. A variable that is named but unset or empty is a
// startup error naming the variable (never its value).
func httpHeaders(opts *Options) (http.Header, error) {
	cfg := opts.Config
	lookup := opts.Env
	if lookup == nil {
		lookup = os.LookupEnv
	}
	h := make(http.Header)
	for k, v := range cfg.HTTPHeaders {
		h.Set(k, v)
	}
	names := make([]string, 0, len(cfg.EnvHTTPHeaders))
	for k := range cfg.EnvHTTPHeaders {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic error for several missing variables
	for _, k := range names {
		envName := cfg.EnvHTTPHeaders[k]
		v, ok := lookup(envName)
		if !ok || v == "" {
			return nil, fmt.Errorf("server %q: environment variable %s (env_http_headers %q) is not set", opts.Name, envName, k)
		}
		h.Set(k, v)
	}
	if name := cfg.BearerTokenEnvVar; name != "" {
		v, ok := lookup(name)
		if !ok || v == "" {
			return nil, fmt.Errorf("server %q: environment variable %s (bearer_token_env_var) is not set", opts.Name, name)
		}
		h.Set("Authorization", "Bearer "+v)
	}
	return h, nil
}

// headerTransport is the http.RoundTripper under go-sdk's Streamable HTTP
// client connection. It does what is ours rather than go-sdk's: the
// configured headers, errors in words that name the server and its URL,
// the refusal of any request or redirect to another origin, the bound on
// an answer's size, the real URL in place of the redacted one go-sdk was
// given; and what go-sdk sets only from its own ClientSession, which this
// client does not use: MCP-Protocol-Version on every request of a legacy
// session, the Mcp-Param-* headers of a tools/call (handed down in the
// request's context), and the check that a 400 is about a session the
// server forgot.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	maxMsg  int
	server  string // the server's name, for errors and logs
	// source is the config file that defined the server, for errors.
	source string
	// url is the server's URL for people (redact.URL); real is the URL
	// requests go to, and endpoint the redacted one go-sdk was given (so
	// that no error go-sdk or net/http writes can hold a secret of the
	// URL): RoundTrip sends requests for endpoint to real.
	url      string
	real     *url.URL
	endpoint string
	logger   *slog.Logger

	// version is the protocol version of a legacy session once its
	// initialize was answered ("" before, and for modern servers, whose
	// requests carry it themselves).
	version atomic.Pointer[string]

	// failMu guards failure, the first plain-words failure of a request
	// before the server ever answered with success, which explains a
	// failed startup better than go-sdk's error.
	failMu      sync.Mutex
	failure     error
	established bool
	lastAuth    bool // the last POST was answered 401 or 403

	// dynamic computes headers (Options.DynamicHeaders): asked once before
	// the first request, and again after a 401. dynMu guards what it
	// returned last (dynHeaders) and how many times it ran (dynGen), so
	// that concurrent 401s run it once.
	dynamic    func(ctx context.Context, refresh bool) (http.Header, error)
	dynMu      sync.Mutex
	dynHeaders http.Header
	dynGen     int
}

// dynamicHeaders returns the helper's headers and their generation: the
// ones it gave last, or, when refresh is set and no other request asked for
// new ones since generation gen was sent (a 401 for a request sent with
// older headers is answered by the newer ones), what it gives when run
// again. It runs with dynMu held: requests wait for a run under way rather
// than start one each.
func (t *headerTransport) dynamicHeaders(ctx context.Context, refresh bool, gen int) (http.Header, int, error) {
	t.dynMu.Lock()
	defer t.dynMu.Unlock()
	if t.dynGen > 0 && (!refresh || t.dynGen != gen) {
		return t.dynHeaders, t.dynGen, nil
	}
	h, err := t.dynamic(ctx, refresh)
	if err != nil {
		return nil, t.dynGen, fmt.Errorf("%s: its header helper failed: %w", t.prefix(), err)
	}
	t.dynHeaders, t.dynGen = h, t.dynGen+1
	return h, t.dynGen, nil
}

// paramHeadersKey is the context key of the Mcp-Param-* headers of a
// request (http.Header): a RoundTripper's per-request data travels in the
// request's context.
type paramHeadersKey struct{}

func withParamHeaders(ctx context.Context, h http.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, paramHeadersKey{}, h)
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	orig := req
	req = req.Clone(req.Context()) // a RoundTripper must not modify its argument
	if req.URL.String() == t.endpoint {
		u := *t.real
		req.URL = &u
	}
	// The configured headers and credentials belong to the configured
	// origin: nothing is sent anywhere else, and no redirect leads there
	// (redirectElsewhere).
	if !sameOrigin(req.URL, t.real) {
		return nil, t.note(t.otherOrigin(req.URL, "a request"))
	}
	for k, v := range t.headers {
		req.Header[k] = v
	}
	// What http.Client does with userinfo, which it never saw.
	if u := t.real.User; u != nil && req.Header.Get("Authorization") == "" {
		pass, _ := u.Password()
		req.SetBasicAuth(u.Username(), pass)
	}
	if v := t.version.Load(); v != nil && req.Header.Get(protocolVersionHeader) == "" {
		req.Header.Set(protocolVersionHeader, *v)
	}
	var dynGen int
	if t.dynamic != nil {
		h, gen, err := t.dynamicHeaders(req.Context(), false, 0)
		if err != nil {
			return nil, t.note(err)
		}
		for k, v := range h {
			req.Header[k] = v
		}
		dynGen = gen
	}
	if h, ok := req.Context().Value(paramHeadersKey{}).(http.Header); ok {
		for k, v := range h {
			req.Header[k] = v
		}
	}
	// A tool or prompt name (or resource URI) that is not header-safe goes
	// in its base64 form, as SEP-2243 says of Mcp-Name; go-sdk copies it.
	if name := req.Header.Get(nameHeader); mcpheader.NeedsEncoding(name) {
		req.Header.Set(nameHeader, mcpheader.EncodeValue(name))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, t.note(t.describe(req, err))
	}
	if resp.StatusCode == http.StatusUnauthorized && t.dynamic != nil {
		// The helper's headers were refused (a token that expired): it is
		// run again, and the request sent once more with what it gives.
		again, err := t.retryWithNewHeaders(req, dynGen)
		if err != nil {
			resp.Body.Close()
			return nil, t.note(err)
		}
		if again != nil {
			resp.Body.Close()
			if resp, err = t.base.RoundTrip(again); err != nil {
				return nil, t.note(t.describe(again, err))
			}
			req = again
		}
	}
	t.noteStatus(req, resp)
	if resp.StatusCode == http.StatusBadRequest && req.Method == http.MethodPost && req.Header.Get(sessionIDHeader) != "" && t.version.Load() != nil {
		t.sessionForgotten(req, resp)
	}
	if err := t.redirectElsewhere(orig, req, resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	// The caller's request, with the URL it knows: errors that quote the
	// response's request (http.Client's) must not show the real URL.
	resp.Request = orig
	if resp.Body == nil {
		return resp, nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" && req.Method == http.MethodPost && req.Header.Get(protocolVersionHeader) >= ModernProtocolVersion {
		// MCP 2026-07-28 has no resumable streams (SEP-2575): a modern
		// server's event ids mean nothing, yet go-sdk resumes a cut
		// stream that had them with a GET, which such a server answers
		// 405, and go-sdk then ends the whole connection. Without the
		// ids, a cut stream fails its request alone.
		resp.Body = &eventIDStripper{rc: resp.Body}
	}
	if mt != "text/event-stream" {
		// A body is one message (or an error page): bounded like a stdout
		// line. An event stream is bounded per event (MaxEventSize). A
		// length known too large fails the request alone; a body found too
		// large while go-sdk reads it fails the connection (go-sdk's way
		// with a body it cannot read).
		if resp.ContentLength > int64(t.maxMsg) {
			resp.Body.Close()
			return nil, t.tooLarge()
		}
		resp.Body = &boundedBody{rc: resp.Body, left: int64(t.maxMsg), t: t}
	}
	return resp, nil
}

// retryWithNewHeaders is req again with the header helper's new headers,
// or nil when req cannot be sent again (its body cannot be had twice).
func (t *headerTransport) retryWithNewHeaders(req *http.Request, gen int) (*http.Request, error) {
	if req.Body != nil && req.GetBody == nil {
		return nil, nil
	}
	h, _, err := t.dynamicHeaders(req.Context(), true, gen)
	if err != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, nil
		}
	}
	for k, v := range h {
		again.Header[k] = v
	}
	return again, nil
}

// sessionForgotten shows go-sdk a 404 for a 400 that answered a request on
// a legacy session the server no longer knows. MCP servers answer 404 for
// a session they no longer know, yet some answer 400, as for a request
// without a session (the TypeScript SDK's examples, server-everything
// among them). A ping on the session tells that from a 400 about the
// request: only a session refused for a ping too is taken as forgotten.
func (t *headerTransport) sessionForgotten(req *http.Request, resp *http.Response) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	probe, err := http.NewRequestWithContext(req.Context(), http.MethodPost, req.URL.String(),
		strings.NewReader(`{"jsonrpc":"2.0","id":"mcp-sidecar-session-probe","method":"ping"}`))
	if err != nil {
		return
	}
	probe.Header = req.Header.Clone()
	probe.Header.Del(methodHeader)
	probe.Header.Del(nameHeader)
	pr, err := t.base.RoundTrip(probe)
	if err != nil {
		return
	}
	io.Copy(io.Discard, io.LimitReader(pr.Body, 64<<10))
	pr.Body.Close()
	if pr.StatusCode != http.StatusBadRequest && pr.StatusCode != http.StatusNotFound {
		return
	}
	t.logger.Info("server answered 400 Bad Request for a session it no longer knows (MCP says 404)", "server", t.server, "url", t.url)
	resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
}

// ErrUnreachable is the errors.Is target of a Streamable HTTP request that
// got no answer: the connection was refused or reset, or timed out.
var ErrUnreachable = errors.New("server unreachable")

// describe names the server and URL in a transport failure and says in
// plain words what happened. The caller's own cancellation or deadline is
// left as it is: the caller knows what it waited for.
func (t *headerTransport) describe(req *http.Request, err error) error {
	if ctxErr := req.Context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return err
	}
	what := fmt.Sprintf("the request to %s failed", t.url)
	var (
		ne      net.Error
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
		record  tls.RecordHeaderError
		certErr *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		what = fmt.Sprintf("nothing is listening at %s (connection refused): is the server running, and is the port right?", t.url)
	case errors.As(err, &unknown), errors.As(err, &certErr) && errors.As(certErr.Err, &unknown):
		what = fmt.Sprintf("the TLS certificate of %s is signed by an authority this machine does not trust", t.url)
	case errors.As(err, &host):
		what = fmt.Sprintf("the TLS certificate of %s is not for this host name", t.url)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		what = fmt.Sprintf("the TLS certificate of %s has expired or is not valid yet (is this machine's clock right?)", t.url)
	case errors.As(err, &invalid):
		what = fmt.Sprintf("the TLS certificate of %s is not valid (%s)", t.url, strings.TrimPrefix(invalid.Error(), "x509: "))
	case errors.As(err, &record):
		what = fmt.Sprintf("%s does not speak TLS at this port (try http:// instead of https://)", t.url)
	case errors.As(err, &ne) && ne.Timeout():
		what = fmt.Sprintf("%s did not answer in time (timed out)", t.url)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		what = fmt.Sprintf("%s closed the connection without an answer", t.url)
	}
	return &unreachableError{prefix: t.prefix(), what: what + t.definedIn(), err: err}
}

// prefix names the server; definedIn the file that defines it.
func (t *headerTransport) prefix() string { return fmt.Sprintf("server %q", t.server) }

func (t *headerTransport) definedIn() string {
	if t.source == "" {
		return ""
	}
	return fmt.Sprintf(" (server defined in %s)", t.source)
}

// note records err as the failure that explains a startup, unless the
// server answered with success before.
func (t *headerTransport) note(err error) error {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	if !t.established && t.failure == nil {
		t.failure = err
	}
	return err
}

// noteStatus records a failing HTTP status (before any success) in plain
// words: a 404 suggests the usual endpoint path, a 401 or 403 names the
// keys that provide authorization.
func (t *headerTransport) noteStatus(req *http.Request, resp *http.Response) {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	if req.Method == http.MethodPost {
		t.lastAuth = resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
	}
	if resp.StatusCode/100 == 2 {
		t.established = true
		return
	}
	if t.established || t.failure != nil || req.Method != http.MethodPost || resp.StatusCode < 400 {
		return
	}
	var what string
	switch resp.StatusCode {
	case http.StatusNotFound:
		what = fmt.Sprintf("%s answered 404 Not Found: there is no MCP endpoint at this URL", t.url)
		if path := strings.TrimSuffix(t.real.Path, "/"); strings.HasSuffix(path, "/sse") {
			// A legacy HTTP+SSE URL configured as Streamable HTTP.
			u := *t.real
			u.Path = strings.TrimSuffix(path, "/sse") + "/mcp"
			what += fmt.Sprintf("; a server that had an SSE endpoint usually serves Streamable HTTP at the same URL with /mcp in place of /sse (try %s), or give this URL type \"sse\" (the legacy HTTP+SSE transport)", redact.URL(u.String()))
		} else if !strings.HasSuffix(path, "/mcp") {
			u := *t.real
			u.Path = path + "/mcp"
			what += fmt.Sprintf("; servers usually serve it at /mcp (try %s)", redact.URL(u.String()))
		} else {
			what += "; check the URL in the server's documentation"
		}
	case http.StatusUnauthorized, http.StatusForbidden:
		what = fmt.Sprintf("%s answered %s: the server needs authorization; give it with bearer_token_env_var (a variable holding the token), env_http_headers or http_headers (\"headers\" in .mcp.json and VS Code's mcp.json)", t.url, resp.Status)
		if t.headers.Get("Authorization") != "" {
			what = fmt.Sprintf("%s answered %s: the server refused the authorization sent (from bearer_token_env_var, env_http_headers or http_headers): check the token and its scopes", t.url, resp.Status)
		}
	case http.StatusMethodNotAllowed:
		what = fmt.Sprintf("%s answered 405 Method Not Allowed to a POST: this is not a Streamable HTTP endpoint (a legacy SSE server? Those usually serve Streamable HTTP at /mcp)", t.url)
	default:
		what = fmt.Sprintf("%s answered %s", t.url, resp.Status)
	}
	t.failure = &httpStatusError{prefix: t.prefix(), what: what + t.definedIn(), status: resp.StatusCode}
}

// startupFailure is the failure noted before the server ever answered
// with success, or nil.
func (t *headerTransport) startupFailure() error {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	return t.failure
}

type unreachableError struct {
	prefix, what string
	err          error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%s: %s", e.prefix, e.what)
}

type httpStatusError struct {
	prefix, what string
	status       int
}

func (e *httpStatusError) Error() string { return e.prefix + ": " + e.what }

func (e *unreachableError) Unwrap() []error { return []error{ErrUnreachable, e.err} }

// The Streamable HTTP headers this client reads or sets.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
	methodHeader          = "Mcp-Method"
	nameHeader            = "Mcp-Name"
)

// httpState is a Streamable HTTP connection: go-sdk's client transport
// over our RoundTripper, and, for a legacy session, its standalone GET
// stream and its renewal when the server forgets it.
type httpState struct {
	c         *Conn
	rt        *headerTransport
	client    *http.Client // with rt: go-sdk's requests and the GET stream
	transport *mcp.StreamableClientTransport
	// initParams are the params of the legacy session's initialize, sent
	// again to renew it.
	initParams json.RawMessage
	// live is set once Connect returned: a session lost during startup is
	// a failed startup, not renewed.
	live atomic.Bool

	renewMu sync.Mutex // one renewal at a time
	mu      sync.Mutex
	stopGet context.CancelFunc // the GET stream of the current session
	lost    sync.Once          // the read loop of the connection ended for good
}

// connectHTTP dials a Streamable HTTP server and runs the handshake.
func (c *Conn) connectHTTP(ctx context.Context) error {
	h, err := c.newHTTP()
	if err != nil {
		return err
	}
	c.http = h
	conn, err := h.transport.Connect(ctx)
	if err != nil {
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	gen := c.w.use(conn)
	c.w.goBG(func() { c.readHTTP(conn, gen) })
	if err := c.handshake(ctx); err != nil {
		return c.startupFailed(ctx, err)
	}
	h.live.Store(true)
	return nil
}

// newHTTP builds go-sdk's transport with the configured headers and our
// RoundTripper.
func (c *Conn) newHTTP() (*httpState, error) {
	headers, err := httpHeaders(&c.opts)
	if err != nil {
		return nil, err
	}
	base := c.opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	real, err := url.Parse(c.opts.Config.URL)
	if err != nil {
		return nil, fmt.Errorf("server %q: url does not parse", c.name)
	}
	endpoint, _ := redact.Endpoint(c.opts.Config.URL)
	client := *base
	client.Timeout = 0 // streams live as long as the session
	ht := &headerTransport{
		base: rt, headers: headers, maxMsg: c.opts.MaxLineBytes,
		server: c.name, source: c.opts.Config.Source, url: redact.URL(c.opts.Config.URL), real: real, endpoint: endpoint,
		logger: c.opts.Logger, dynamic: c.opts.DynamicHeaders,
	}
	client.Transport = ht
	return &httpState{
		c:      c,
		rt:     ht,
		client: &client,
		transport: &mcp.StreamableClientTransport{
			Endpoint:     endpoint,
			HTTPClient:   &client,
			OAuthHandler: c.opts.OAuth,
			// A response stream that breaks is resumed a few times with
			// backoff; beyond that the connection is lost and the
			// sidecar's restart policy takes over.
			MaxRetries:   3,
			MaxEventSize: c.opts.MaxLineBytes,
			// The standalone stream is opened by go-sdk's ClientSession
			// only; this client opens it itself (getStream).
			DisableStandaloneSSE: true,
		},
	}, nil
}

// legacySession notes that the session is a legacy one of version: every
// request carries the version from now on.
func (h *httpState) legacySession(version string) {
	h.rt.version.Store(&version)
}

// readHTTP reads the underlying connection conn of generation gen until it
// ends. A legacy session the server forgot is renewed; any other end is
// the connection's.
func (c *Conn) readHTTP(conn mcp.Connection, gen uint32) {
	err := c.w.readConn(c.life, conn)
	if _, cur := c.w.current(); cur != gen {
		return // replaced by a renewal, or a renewal that failed
	}
	if c.sessionLost(gen, err) {
		return
	}
	c.http.connLost(err)
}

// connLost ends the connection's read for good with err.
func (h *httpState) connLost(err error) {
	h.lost.Do(func() {
		h.c.readErr = err
		close(h.c.readEnded)
	})
}

// sessionLost renews a legacy session the server forgot (err wraps go-sdk's
// ErrSessionMissing: a 404 for its session) that was generation gen, and
// reports whether the connection goes on, on a renewed session (by this
// call or another). A renewal that fails ends the connection.
func (c *Conn) sessionLost(gen uint32, err error) bool {
	h := c.http
	if h == nil || c.era != EraLegacy || !errors.Is(err, mcp.ErrSessionMissing) || !h.live.Load() {
		return false
	}
	h.renewMu.Lock()
	defer h.renewMu.Unlock()
	select {
	case <-c.readEnded:
		return false // the connection ended meanwhile
	default:
	}
	if _, cur := c.w.current(); cur != gen {
		return true // renewed meanwhile
	}
	if rerr := c.renew(gen); rerr != nil {
		c.opts.Logger.Warn("session lost and not renewed", "server", c.name, "url", h.rt.url, peerlog.Err("err", rerr))
		h.connLost(fmt.Errorf("%w; a new session could not be started: %w", err, rerr))
		return false
	}
	c.opts.Logger.Info("server forgot the session (restart?): re-initialized", "server", c.name, "url", h.rt.url)
	return true
}

// renew starts a new legacy session in place of generation stale: a new
// go-sdk connection, initialize with the params of the first, the
// resources subscribed again (before any other request reaches the new
// session, so that no update is missed for want of one), and its GET
// stream. Requests in flight on the old session end with a retryable
// error: the server forgot them with the session.
func (c *Conn) renew(stale uint32) error {
	h := c.http
	ctx, cancel := context.WithTimeout(c.life, renewWait)
	defer cancel()
	conn, err := h.transport.Connect(ctx)
	if err != nil {
		return err
	}
	t := c.w.reserve(conn)
	c.w.goBG(func() { c.readHTTP(conn, t.gen) })
	raw, err := c.w.callOn(ctx, &t, "initialize", h.initParams)
	if err == nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(raw, &r) != nil || !slices.Contains(legacyVersions, r.ProtocolVersion) {
			err = fmt.Errorf("initialize: the server answered protocol version %q", r.ProtocolVersion)
		}
	}
	if err == nil {
		err = c.w.notifyOn(ctx, &t, "notifications/initialized", json.RawMessage(`{}`))
	}
	if err != nil {
		conn.Close()
		return err
	}
	if c.opts.Subscriptions != nil {
		for _, uri := range c.opts.Subscriptions() {
			params := append(append([]byte(`{"uri":`), jsonString(uri)...), '}')
			if _, err := c.w.callOn(ctx, &t, "resources/subscribe", params); err != nil {
				c.opts.Logger.Warn("resource not subscribed again on the renewed session", "server", c.name, peerlog.String("uri", uri), peerlog.Err("err", err))
				if f := c.opts.Handlers.ResubscribeFailed; f != nil {
					f(uri, err)
				}
			}
		}
	}
	old, _ := c.w.current()
	c.w.publish(t)
	c.w.failGen(stale, &unreachableError{prefix: fmt.Sprintf("server %q", c.name),
		what: "the server forgot the MCP session while the request was in flight (a new session was started: try again)", err: mcp.ErrSessionMissing})
	c.startGetStream()
	c.w.goBG(func() { old.Close() }) // the session is gone: no DELETE
	return nil
}

// renewWait bounds the renewal of a session.
const renewWait = 30 * time.Second

// close ends the HTTP connection: the GET stream, and the session (go-sdk
// sends its DELETE).
func (h *httpState) close() {
	h.mu.Lock()
	if h.stopGet != nil {
		h.stopGet()
	}
	h.mu.Unlock()
	if conn, _ := h.c.w.current(); conn != nil {
		conn.Close()
	}
	h.connLost(ErrConnectionLost)
}

// ErrRedirectRefused is the errors.Is target of a request the server
// redirected to another origin, which is not followed (nor is any other
// request to another origin sent).
var ErrRedirectRefused = errors.New("redirect to another origin refused")

// ErrMessageTooLarge is the errors.Is target of an HTTP response body
// larger than Options.MaxLineBytes.
var ErrMessageTooLarge = errors.New("message too large")

// sameOrigin reports whether u is on the origin of base (RFC 6454: scheme,
// host and port, the default port spelled or not).
func sameOrigin(u, base *url.URL) bool {
	return strings.EqualFold(u.Scheme, base.Scheme) &&
		strings.EqualFold(u.Hostname(), base.Hostname()) &&
		portOf(u) == portOf(base)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// redirectElsewhere is the error for a response that redirects req to
// another origin, or nil. Such a redirect is refused here rather than in
// the client's CheckRedirect, whose error would quote the Location as the
// server wrote it; one within the configured origin is left to the client
// to follow (307 and 308 resend the body, to a server of that origin).
func (t *headerTransport) redirectElsewhere(orig, req *http.Request, resp *http.Response) error {
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return nil
	}
	target, err := req.URL.Parse(loc)
	if err != nil || sameOrigin(target, t.real) {
		return nil // the client reports a Location that does not parse
	}
	return t.note(t.otherOrigin(target, fmt.Sprintf("%s redirected the request", redact.URL(orig.URL.String()))))
}

// otherOrigin is the error of what would have sent a request to u.
func (t *headerTransport) otherOrigin(u *url.URL, what string) error {
	origin := &url.URL{Scheme: t.real.Scheme, Host: t.real.Host}
	return &originError{msg: fmt.Sprintf("%s: %s to %s, another origin: refused, so that the configured headers and credentials go to %s only (if the server moved, configure its new URL)",
		t.prefix(), what, redact.URL(u.String()), origin)}
}

type originError struct{ msg string }

func (e *originError) Error() string        { return e.msg }
func (e *originError) Is(target error) bool { return target == ErrRedirectRefused }

// boundedBody fails the read that would take a body past left bytes, so
// that a server cannot make the client hold more than one message's bound
// in memory.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
	t    *headerTransport
	err  error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		b.err = b.t.tooLarge()
		return 0, b.err
	}
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// tooLarge is the error of an answer over the bound.
func (t *headerTransport) tooLarge() error {
	return t.note(fmt.Errorf("%s: %s answered with more than %d bytes, the limit of one message: %w", t.prefix(), t.url, t.maxMsg, ErrMessageTooLarge))
}

// fresh replaces the HTTP connection with a new go-sdk connection: the
// legacy handshake after a modern probe starts on one the probe's answer
// left nothing on.
func (h *httpState) fresh(ctx context.Context) error {
	old, _ := h.c.w.current()
	conn, err := h.transport.Connect(ctx)
	if err != nil {
		return fmt.Errorf("server %q: %w", h.c.name, err)
	}
	gen := h.c.w.use(conn)
	h.c.w.goBG(func() { h.c.readHTTP(conn, gen) })
	if old != nil {
		old.Close()
	}
	return nil
}

// refusedAuth reports whether the last POST was refused for its
// authorization (401, 403).
func (t *headerTransport) refusedAuth() bool {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	return t.lastAuth
}

// resetFailure forgets the failures noted so far: the modern probe's
// refusal by a legacy server does not explain why its initialize failed.
func (t *headerTransport) resetFailure() {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	t.failure = nil
}

// eventIDStripper passes an event stream on without its id fields (the
// lines "id:..." and "id"), so that the reader keeps no last event id and
// never resumes. Lines end at '\n', as go-sdk's parser reads them.
type eventIDStripper struct {
	rc      io.ReadCloser
	scratch []byte
	out     []byte // filtered bytes not yet read, from pos
	pos     int
	head    []byte // the start of a line not decided yet (a prefix of "id:")
	mode    int
	err     error
}

// The modes of eventIDStripper: at the start of a line, passing a line
// on, dropping an id line.
const (
	lineStart = iota
	linePass
	lineDrop
)

func (s *eventIDStripper) Read(p []byte) (int, error) {
	for {
		if s.pos < len(s.out) {
			n := copy(p, s.out[s.pos:])
			s.pos += n
			return n, nil
		}
		s.out, s.pos = s.out[:0], 0
		if s.err != nil {
			if len(s.head) > 0 { // a last line without its end: not an id line
				s.out = append(s.out, s.head...)
				s.head = s.head[:0]
				continue
			}
			return 0, s.err
		}
		if s.scratch == nil {
			s.scratch = make([]byte, 32<<10)
		}
		n, err := s.rc.Read(s.scratch)
		s.err = err
		s.filter(s.scratch[:n])
	}
}

// filter appends b to out without its id lines.
func (s *eventIDStripper) filter(b []byte) {
	for i := 0; i < len(b); {
		switch s.mode {
		case linePass, lineDrop:
			j := bytes.IndexByte(b[i:], '\n')
			end := len(b)
			if j >= 0 {
				end = i + j + 1
			}
			if s.mode == linePass {
				s.out = append(s.out, b[i:end]...)
			}
			if j >= 0 {
				s.mode = lineStart
			}
			i = end
		case lineStart:
			c := b[i]
			i++
			s.head = append(s.head, c)
			switch h := string(s.head); {
			case h == "i" || h == "id":
				continue // not decided yet
			case h == "id:" || h == "id\r":
				s.mode = lineDrop
			case h == "id\n":
				// an id line of its own, dropped whole
			default:
				s.out = append(s.out, s.head...)
				if c != '\n' {
					s.mode = linePass
				}
			}
			s.head = s.head[:0]
		}
	}
}

func (s *eventIDStripper) Close() error { return s.rc.Close() }
