package mcpclient

import (
	"bufio"
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
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
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

// headerTransport adds the configured headers to every request, captures
// the verbatim responses of calls made under a rawSink (see raw.go), keeps
// the session alive across a server restart (see sessionKeeper), and turns
// transport failures into errors that name the server and its URL.
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
	keeper   sessionKeeper

	// failMu guards failure, the first plain-words failure of a request
	// before the server ever answered with success, which explains a
	// failed startup better than go-sdk's error.
	failMu      sync.Mutex
	failure     error
	established bool
	// oauth supplies the current bearer token when the keeper replays the
	// handshake (the one go-sdk sent may have been refreshed since).
	oauth auth.OAuthHandler
	// onProgress sees the progress notifications of a request's event
	// stream as they pass, before go-sdk reads the response that follows
	// them (go-sdk's own handler runs on another goroutine and can lag
	// behind that response).
	onProgress func(*mcp.ProgressNotificationParams)
	// onTaskStatus sees notifications/tasks/status on every event stream
	// (go-sdk does not know that notification).
	onTaskStatus func(json.RawMessage)
	// subscriptions and resubscribeFailed are Options.Subscriptions and
	// Handlers.ResubscribeFailed: a renewed session subscribes again.
	subscriptions     func() []string
	resubscribeFailed func(uri string, err error)
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
	if err := t.rewrite(req); err != nil {
		return nil, err
	}
	var msg jsonrpc.Message
	sink := sinkFrom(req.Context())
	if req.Method == http.MethodPost && req.GetBody != nil && (sink != nil || t.keeper.learning()) {
		if body, err := req.GetBody(); err == nil {
			data, _ := io.ReadAll(io.LimitReader(body, int64(t.maxMsg)+1))
			body.Close()
			if m, err := jsonrpc.DecodeMessage(data); err == nil {
				msg = m
				t.keeper.learn(req, m, data)
			}
		}
	}
	if r, ok := msg.(*jsonrpc.Request); ok && sink != nil && r.IsCall() {
		sink.expect(r.ID)
	}
	resp, err := t.send(req)
	if err != nil {
		return nil, err
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
	pending := sink != nil && sink.hasPending()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
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
	switch {
	case mt == "application/json" && pending:
		resp.Body = &jsonBodyTap{rc: resp.Body, sink: sink, max: t.maxMsg}
	case mt == "text/event-stream" && (pending || t.onTaskStatus != nil):
		if !pending {
			sink = nil
		}
		resp.Body = &sseBodyTap{rc: resp.Body, sink: sink, max: t.maxMsg, onProgress: t.onProgress, onTaskStatus: t.onTaskStatus}
	}
	return resp, nil
}

// rewrite applies the rewrite of the request's context (request.go) to
// the JSON-RPC call in its body.
func (t *headerTransport) rewrite(req *http.Request) error {
	if req.Context().Value(rewriteKey{}) == nil || req.Method != http.MethodPost || req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(body, int64(t.maxMsg)+1))
	body.Close()
	if err != nil {
		return err
	}
	msg, err := jsonrpc.DecodeMessage(data)
	call, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return nil
	}
	out, err := rewritten(req.Context(), call)
	if err != nil || out == call {
		return err
	}
	data, err = jsonrpc.EncodeMessage(out)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.ContentLength = int64(len(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return nil
}

// send sends req with the session id the server knows now. A 404 for that
// session (the server restarted, or expired the session) is answered by
// initializing a new session, once, and sending req again on it; go-sdk
// keeps using the id it knows and never sees the switch. So is a 400 the
// server confirms is about the session (forgotten).
func (t *headerTransport) send(req *http.Request) (*http.Response, error) {
	outer := req.Header.Get(sessionIDHeader)
	inner := t.keeper.translate(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, t.note(t.describe(req, err))
	}
	t.noteStatus(req, resp)
	t.keeper.observe(resp, outer, inner)
	notFound := resp.StatusCode == http.StatusNotFound
	if !notFound && resp.StatusCode != http.StatusBadRequest || inner == "" || req.Method == http.MethodDelete {
		return resp, nil
	}
	// Keep the answer whole: if no new session can be had, go-sdk gets it
	// and, for a 404, ends the connection (ErrSessionMissing), as it would
	// without us.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	retry, ok := t.retryRequest(req)
	if !ok {
		return resp, nil
	}
	if !notFound {
		// MCP servers answer 404 for a session they no longer know, yet
		// some answer 400, as for a request without a session (the
		// TypeScript SDK's examples, server-everything among them). A
		// ping on the session tells that from a 400 about this request:
		// only a session refused for a ping too is renewed, and go-sdk
		// is shown the 404 the server meant.
		if !t.keeper.forgotten(req.Context(), inner, t) {
			return resp, nil
		}
		t.logger.Info("server answered 400 Bad Request for a session it no longer knows (MCP says 404)", "server", t.server, "url", t.url)
		resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
	}
	id, err := t.keeper.renew(req.Context(), inner, t)
	if err != nil {
		t.logger.Warn("session lost and not renewed", "server", t.server, "url", t.url, peerlog.Err("err", err))
		return resp, nil
	}
	t.logger.Info("server forgot the session (restart?): re-initialized", "server", t.server, "url", t.url)
	retry.Header.Set(sessionIDHeader, id)
	resp2, err := t.base.RoundTrip(retry)
	if err != nil {
		return nil, t.describe(retry, err)
	}
	t.keeper.observe(resp2, outer, retry.Header.Get(sessionIDHeader))
	return resp2, nil
}

// retryRequest is a fresh copy of req to send again on a new session. The
// events of the old session are gone, so a stream resumes from the start.
func (t *headerTransport) retryRequest(req *http.Request) (*http.Request, bool) {
	retry := req.Clone(req.Context())
	retry.Header.Del(lastEventIDHeader)
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, false
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		retry.Body = body
	}
	return retry, true
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
			// A legacy HTTP+SSE URL: as the config error for type "sse" says.
			u := *t.real
			u.Path = strings.TrimSuffix(path, "/sse") + "/mcp"
			what += fmt.Sprintf("; a server that had an SSE endpoint usually serves Streamable HTTP at the same URL with /mcp in place of /sse (try %s)", redact.URL(u.String()))
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

// The Streamable HTTP headers go-sdk uses.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
)

// sessionKeeper lets a connection survive a server that forgets its session
// (MCP Streamable HTTP: the server answers 404 for an unknown session id;
// some answer 400, see send).
// go-sdk treats that as the end of the connection; the keeper instead
// replays the handshake it saw (initialize, notifications/initialized) to
// get a new session, and maps go-sdk's session id (outer) to the one the
// server knows (inner) on every request and response.
type sessionKeeper struct {
	mu          sync.Mutex
	initBody    []byte      // the initialize request, as go-sdk sent it
	initHeader  http.Header // its headers (configured ones included)
	readyBody   []byte      // notifications/initialized
	readyHeader http.Header
	outer       string // the session id go-sdk knows
	inner       string // the session id the server knows
}

// learning reports whether the handshake is still to be seen.
func (k *sessionKeeper) learning() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.initBody == nil || k.readyBody == nil
}

// learn records the handshake messages.
func (k *sessionKeeper) learn(req *http.Request, msg jsonrpc.Message, body []byte) {
	r, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case r.Method == "initialize" && k.initBody == nil && req.Header.Get(sessionIDHeader) == "":
		k.initBody = bytes.Clone(body)
		k.initHeader = req.Header.Clone()
	case r.Method == "notifications/initialized" && k.readyBody == nil:
		k.readyBody = bytes.Clone(body)
		k.readyHeader = req.Header.Clone()
	}
}

// translate puts the server's current session id on req in place of
// go-sdk's and returns the id sent ("" for a request without a session).
func (k *sessionKeeper) translate(req *http.Request) string {
	id := req.Header.Get(sessionIDHeader)
	if id == "" {
		return ""
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if id == k.outer && k.inner != "" && k.inner != k.outer {
		id = k.inner
		req.Header.Set(sessionIDHeader, id)
	}
	return id
}

// observe learns the first session id and shows go-sdk the id it knows on
// responses from a renewed session (go-sdk ends a connection whose session
// id changes).
func (k *sessionKeeper) observe(resp *http.Response, outer, sent string) {
	got := resp.Header.Get(sessionIDHeader)
	if got == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.outer == "" && outer == "" {
		k.outer, k.inner = got, got
		return
	}
	if got == k.inner && k.outer != "" {
		resp.Header.Set(sessionIDHeader, k.outer)
	}
}

// renew replaces the session the server forgot (stale) with a new one,
// unless another request already did. It returns the new session id.
func (k *sessionKeeper) renew(ctx context.Context, stale string, t *headerTransport) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inner != stale {
		return k.inner, nil // renewed meanwhile
	}
	if k.initBody == nil || k.readyBody == nil {
		return "", errors.New("the handshake was not seen: nothing to replay")
	}
	id, err := k.handshake(ctx, t)
	if err != nil {
		return "", err
	}
	// Still under k.mu: no request reaches the new session before its
	// subscriptions are in place, so no update is missed for want of one.
	k.resubscribe(ctx, t, id)
	k.inner = id
	return id, nil
}

// resubscribe subscribes the new session to the resources the forgotten
// one was subscribed to (MCP: a subscription belongs to a session). A
// refusal is reported, not fatal: the session works, without that update.
func (k *sessionKeeper) resubscribe(ctx context.Context, t *headerTransport, session string) {
	if t.subscriptions == nil {
		return
	}
	for i, uri := range t.subscriptions() {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		err := k.call(ctx, t, k.readyHeader, session, fmt.Sprintf("mcp-sidecar-resubscribe-%d", i), "resources/subscribe", params)
		if err != nil {
			t.logger.Warn("resource not subscribed again on the renewed session", "server", t.server, peerlog.String("uri", uri), peerlog.Err("err", err))
			if t.resubscribeFailed != nil {
				t.resubscribeFailed(uri, err)
			}
		}
	}
}

// forgotten reports whether the server no longer knows session, which
// answered a request with 400: it was renewed meanwhile, or the server
// refuses a ping on it as well (400 or 404).
func (k *sessionKeeper) forgotten(ctx context.Context, session string, t *headerTransport) bool {
	k.mu.Lock()
	current := k.inner
	var header http.Header
	if k.readyHeader != nil {
		header = k.readyHeader.Clone()
	}
	k.mu.Unlock()
	if current != session {
		return true
	}
	if header == nil {
		return false // no handshake to replay either
	}
	var se *statusError
	err := k.call(ctx, t, header, session, "mcp-sidecar-session-probe", "ping", nil)
	return errors.As(err, &se) && (se.status == http.StatusBadRequest || se.status == http.StatusNotFound)
}

// call sends a request of the sidecar's own on session, outside go-sdk
// (which knows nothing of the renewal), and waits for its answer in the
// response: with the headers of notifications/initialized (header), and
// an id go-sdk never uses.
func (k *sessionKeeper) call(ctx context.Context, t *headerTransport, header http.Header, session, id, method string, params json.RawMessage) error {
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", id, method, params}
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.real.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	t.currentToken(ctx, req.Header)
	req.Header.Set(sessionIDHeader, session)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return t.describe(req, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{method: method, status: resp.StatusCode, text: resp.Status}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	answer, err := responseIn(resp.Body, mt, t.maxMsg)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if answer.Error != nil {
		return fmt.Errorf("%s: %w", method, answer.Error)
	}
	return nil
}

// statusError is an HTTP status that answered one of the keeper's calls.
type statusError struct {
	method string
	status int
	text   string
}

func (e *statusError) Error() string { return e.method + ": " + e.text }

// handshake sends initialize and notifications/initialized as go-sdk sent
// them the first time, and returns the new session id.
func (k *sessionKeeper) handshake(ctx context.Context, t *headerTransport) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.real.String(), bytes.NewReader(k.initBody))
	if err != nil {
		return "", err
	}
	req.Header = k.initHeader.Clone()
	t.currentToken(ctx, req.Header)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return "", t.describe(req, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: %s", resp.Status)
	}
	id := resp.Header.Get(sessionIDHeader)
	if id == "" {
		return "", errors.New("initialize: the server gave no session id")
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	answer, err := responseIn(resp.Body, mt, t.maxMsg)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	if answer.Error != nil {
		return "", fmt.Errorf("initialize: %w", answer.Error)
	}

	req, err = http.NewRequestWithContext(ctx, http.MethodPost, t.real.String(), bytes.NewReader(k.readyBody))
	if err != nil {
		return "", err
	}
	req.Header = k.readyHeader.Clone()
	t.currentToken(ctx, req.Header)
	req.Header.Set(sessionIDHeader, id)
	resp2, err := t.base.RoundTrip(req)
	if err != nil {
		return "", t.describe(req, err)
	}
	resp2.Body.Close()
	if resp2.StatusCode/100 != 2 {
		return "", fmt.Errorf("notifications/initialized: %s", resp2.Status)
	}
	return id, nil
}

// currentToken puts the OAuth handler's current bearer token on h.
func (t *headerTransport) currentToken(ctx context.Context, h http.Header) {
	if t.oauth == nil {
		return
	}
	ts, err := t.oauth.TokenSource(ctx)
	if err != nil || ts == nil {
		return
	}
	if tok, err := ts.Token(); err == nil && tok != nil {
		h.Set("Authorization", "Bearer "+tok.AccessToken)
	}
}

// responseIn reads the response of a response body, a JSON body or an
// event stream; the requests and notifications a stream may carry before
// it (a server's log, progress) are skipped.
func responseIn(body io.Reader, mediaType string, max int) (*jsonrpc.Response, error) {
	switch mediaType {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(body, int64(max)+1))
		if err != nil {
			return nil, err
		}
		return asResponse(jsonrpc.DecodeMessage(data))
	case "text/event-stream":
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), max)
		var data []byte
		for sc.Scan() {
			line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
			if len(line) == 0 {
				if len(data) > 0 {
					if r, ok := isResponse(data); ok {
						return r, nil
					}
					data = data[:0]
				}
				continue
			}
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		if r, ok := isResponse(data); ok {
			return r, nil
		}
		return nil, errors.New("the event stream ended without a response")
	}
	return nil, fmt.Errorf("unexpected content type %q", mediaType)
}

func isResponse(data []byte) (*jsonrpc.Response, bool) {
	msg, err := jsonrpc.DecodeMessage(data)
	r, ok := msg.(*jsonrpc.Response)
	return r, err == nil && ok
}

func asResponse(msg jsonrpc.Message, err error) (*jsonrpc.Response, error) {
	if err != nil {
		return nil, err
	}
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		return nil, fmt.Errorf("answered with a %T", msg)
	}
	return r, nil
}

// deliverRaw hands a message to the sink if it answers one of its calls.
func deliverRaw(sink *rawSink, data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && sink.expecting(resp.ID) {
		sink.deliver(resp)
	}
}

// jsonBodyTap sees a single-message JSON body as go-sdk reads it, and
// delivers it at EOF, before go-sdk sees the EOF (go-sdk reads to EOF
// before decoding).
type jsonBodyTap struct {
	rc   io.ReadCloser
	sink *rawSink
	max  int
	buf  bytes.Buffer
	over bool
}

func (b *jsonBodyTap) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if !b.over {
		if b.buf.Len()+n > b.max {
			b.over = true
			b.buf = bytes.Buffer{}
		} else {
			b.buf.Write(p[:n])
		}
	}
	if err == io.EOF && !b.over {
		deliverRaw(b.sink, b.buf.Bytes())
		b.over = true // deliver once
	}
	return n, err
}

func (b *jsonBodyTap) Close() error { return b.rc.Close() }

// sseBodyTap parses the event stream as go-sdk reads it; an event is
// delivered when its terminating blank line passes through, which is before
// go-sdk's own scanner can yield it.
type sseBodyTap struct {
	rc   io.ReadCloser
	sink *rawSink
	max  int

	onProgress   func(*mcp.ProgressNotificationParams)
	onTaskStatus func(json.RawMessage)

	line  []byte
	data  []byte
	event string
	over  bool // the current line or event exceeded max: ignore it
}

func (b *sseBodyTap) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			if len(b.line) < b.max {
				b.line = append(b.line, c)
			} else {
				b.over = true
			}
			continue
		}
		b.endLine()
	}
	return n, err
}

func (b *sseBodyTap) endLine() {
	line := bytes.TrimSuffix(b.line, []byte("\r"))
	b.line = b.line[:0]
	if len(line) == 0 {
		if !b.over && len(b.data) > 0 && (b.event == "" || b.event == "message") {
			b.progress(b.data)
			b.taskStatus(b.data)
			if b.sink != nil {
				deliverRaw(b.sink, b.data)
			}
		}
		b.data, b.event, b.over = b.data[:0], "", false
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "data":
		if len(b.data) > 0 {
			b.data = append(b.data, '\n')
		}
		if len(b.data)+len(value) > b.max {
			b.over = true
			return
		}
		b.data = append(b.data, value...)
	case "event":
		b.event = string(value)
	}
}

func (b *sseBodyTap) Close() error { return b.rc.Close() }

// taskStatus hands a notifications/tasks/status event to onTaskStatus.
func (b *sseBodyTap) taskStatus(data []byte) {
	if b.onTaskStatus == nil {
		return
	}
	if req, ok := notificationOf(data, "notifications/tasks/status"); ok {
		b.onTaskStatus(req.Params)
	}
}

// notificationOf returns the event data as the notification method, if it
// is one (the cheap test first: most events are not).
func notificationOf(data []byte, method string) (*jsonrpc.Request, bool) {
	if !bytes.Contains(data, []byte(`"`+method+`"`)) {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.IsCall() || req.Method != method {
		return nil, false
	}
	return req, true
}

// progress hands a notifications/progress event to onProgress.
func (b *sseBodyTap) progress(data []byte) {
	if b.onProgress == nil {
		return
	}
	req, ok := notificationOf(data, "notifications/progress")
	if !ok {
		return
	}
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(req.Params, &p) == nil {
		b.onProgress(&p)
	}
}

// httpTransport is go-sdk's Streamable HTTP client with the configured
// headers and raw capture in its RoundTripper.
func (c *Conn) httpTransport() (mcp.Transport, error) {
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
	client.Timeout = 0 // the standalone SSE stream lives as long as the session
	ht := &headerTransport{
		base: rt, headers: headers, maxMsg: c.opts.MaxLineBytes,
		server: c.name, source: c.opts.Config.Source, url: redact.URL(c.opts.Config.URL), real: real, endpoint: endpoint,
		logger:     c.opts.Logger,
		onProgress: c.opts.Handlers.Progress, onTaskStatus: c.opts.Handlers.TaskStatus,
		oauth:         c.opts.OAuth,
		subscriptions: c.opts.Subscriptions, resubscribeFailed: c.opts.Handlers.ResubscribeFailed,
	}
	c.http = ht
	client.Transport = ht
	return &mcp.StreamableClientTransport{
		Endpoint:     endpoint,
		HTTPClient:   &client,
		OAuthHandler: c.opts.OAuth,
		// A stream that breaks is resumed a few times with backoff; beyond
		// that the connection is lost and the sidecar's restart policy
		// takes over.
		MaxRetries:   3,
		MaxEventSize: c.opts.MaxLineBytes,
	}, nil
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
