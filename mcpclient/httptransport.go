package mcpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"sync/atomic"
	"syscall"

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
	// dynErr is the helper's failure before it ever gave headers: every
	// later request of the connection fails with it rather than run the
	// helper again (a helper that fails or hangs does so each time, and the
	// first failure says why).
	dynErr error
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
	if t.dynGen == 0 && t.dynErr != nil {
		return nil, 0, t.dynErr
	}
	h, err := t.dynamic(ctx, refresh)
	if err != nil {
		err = fmt.Errorf("%s: %w", t.prefix(), err)
		if t.dynGen == 0 {
			t.dynErr = err
		}
		return nil, t.dynGen, err
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
		switch {
		case t.dynamic != nil:
			what = fmt.Sprintf("%s answered %s: the server refused the headers of its header helper (http_headers_helper, headersHelper in .mcp.json), those it gave when run again after a 401 too: check what the helper prints, and the token's scopes", t.url, resp.Status)
		case t.headers.Get("Authorization") != "":
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

func (e *originError) Error() string { return e.msg }

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

// helperFailed reports whether the header helper failed before it ever
// gave headers: no request of the connection can be sent, so no other
// handshake is worth trying.
func (t *headerTransport) helperFailed() bool {
	if t.dynamic == nil {
		return false
	}
	t.dynMu.Lock()
	defer t.dynMu.Unlock()
	return t.dynErr != nil
}

// refusedAuth reports whether the last POST was refused for its
// authorization (401, 403).
func (t *headerTransport) refusedAuth() bool {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	return t.lastAuth
}
