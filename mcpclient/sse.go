package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// The legacy HTTP+SSE transport (MCP 2024-11-05, "HTTP with SSE"; kept
// for backwards compatibility up to 2025-11-25, and gone in 2026-07-28):
// a GET whose event stream carries everything the server sends, its first
// event naming the URL the client POSTs its messages to. Claude Code,
// Cursor and VS Code still connect to such servers ("type": "sse",
// config.ServerConfig.SSE). go-sdk's SSEClientTransport speaks it, over
// the HTTP client of a Streamable HTTP connection (newHTTP: the configured
// headers, the header helper, the refusal of other origins, the bound on
// an answer, errors in words), with what go-sdk's SSE transport lacks
// added here: OAuth, and the words for a stream that does not open.
//
// Such a connection is always legacy: initialize, no server/discover
// probe. There is no session to renew and no second GET stream: when the
// stream ends, the connection does (the sidecar's restart policy takes
// over).

// connectSSE dials a legacy HTTP+SSE server and runs the initialize
// handshake.
func (c *Conn) connectSSE(ctx context.Context) error {
	version := c.opts.Config.ProtocolVersion
	if version == "" {
		version = DefaultProtocolVersion
	}
	if version >= ModernProtocolVersion {
		// config refuses this for files; the check holds for any caller.
		return fmt.Errorf("server %q: protocol version %s has no HTTP+SSE transport (it ends with %s)", c.name, version, DefaultProtocolVersion)
	}
	h, err := c.newHTTP()
	if err != nil {
		return err
	}
	endpoint := h.transport.Endpoint
	// Nothing of Streamable HTTP is used: no renewal, no GET stream of
	// its own, no probe.
	h.transport = nil
	h.client.Transport = &sseTransport{next: h.rt, oauth: c.opts.OAuth, stream: endpoint}
	c.http = h
	t := &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: h.client, MaxEventSize: c.opts.MaxLineBytes}
	// The GET lives as long as the connection; ctx bounds only the wait
	// for its first event.
	streamCtx, cancel := context.WithCancel(c.life)
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.Connect(streamCtx)
	if !stop() && err == nil {
		conn.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return c.startupFailed(ctx, fmt.Errorf("the SSE stream did not open: %w", unwrapURLError(err)))
	}
	sc := &sseConn{Connection: conn, cancel: cancel}
	gen := c.w.use(sc)
	c.w.goBG(func() { c.readHTTP(sc, gen) })
	if err := c.initialize(ctx, version); err != nil {
		return c.startupFailed(ctx, err)
	}
	h.live.Store(true)
	return nil
}

// sseConn is go-sdk's SSE client connection, with its GET's context to
// end, and the errors of its POSTs as the RoundTripper wrote them.
type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

// Write sends msg in a POST to the endpoint the server named. An error of
// the request is the RoundTripper's (it names the server and its URL for
// people) without the URL net/http put before it, which is the endpoint
// as the server wrote it: a secret of the configured URL's path may be in
// it.
func (c *sseConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	return unwrapURLError(c.Connection.Write(ctx, msg))
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sseTransport is the RoundTripper over headerTransport on an SSE
// connection: OAuth as go-sdk's Streamable HTTP transport does it (a token
// on every request; after a 401 or 403, the handler's Authorize and the
// request once more), and the plain-words failure of a stream that does
// not open (headerTransport notes POSTs only).
type sseTransport struct {
	next   *headerTransport
	oauth  auth.OAuthHandler
	stream string // the URL of the GET (the redacted one go-sdk was given)
}

func (t *sseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req, err := t.authorized(req)
	if err != nil {
		return nil, t.next.note(fmt.Errorf("%s: %w", t.next.prefix(), err))
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if t.oauth != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) &&
		(req.Body == nil || req.GetBody != nil) {
		// Authorize reads and closes the body.
		if err := t.oauth.Authorize(req.Context(), req, resp); err != nil {
			return nil, t.next.note(err)
		}
		again := req.Clone(req.Context())
		if req.GetBody != nil {
			if again.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		if again, err = t.authorized(again); err != nil {
			return nil, t.next.note(fmt.Errorf("%s: %w", t.next.prefix(), err))
		}
		if resp, err = t.next.RoundTrip(again); err != nil {
			return nil, err
		}
	}
	if req.Method == http.MethodGet && req.URL.String() == t.stream && resp.StatusCode/100 != 2 {
		t.next.noteStream(resp)
	}
	return resp, nil
}

// authorized is req with the OAuth handler's token, if it has one. A
// refresh token the authorization server no longer takes is no error: the
// request goes without a token, and the 401 it gets runs Authorize.
func (t *sseTransport) authorized(req *http.Request) (*http.Request, error) {
	if t.oauth == nil {
		return req, nil
	}
	ts, err := t.oauth.TokenSource(req.Context())
	if err != nil || ts == nil {
		return req, err
	}
	tok, err := ts.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return req, nil
		}
		return nil, err
	}
	if tok == nil {
		return req, nil
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return req, nil
}

// noteStream records why the SSE stream's GET was refused, in words, as
// noteStatus does for a POST.
func (t *headerTransport) noteStream(resp *http.Response) {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	if t.established || t.failure != nil {
		return
	}
	var what string
	switch resp.StatusCode {
	case http.StatusNotFound:
		what = fmt.Sprintf("%s answered 404 Not Found to the GET that opens an SSE stream: there is no legacy HTTP+SSE endpoint at this URL (if the server speaks Streamable HTTP, use type \"http\")", t.url)
	case http.StatusMethodNotAllowed, http.StatusNotAcceptable, http.StatusBadRequest:
		what = fmt.Sprintf("%s answered %s to the GET that opens an SSE stream: this is not a legacy HTTP+SSE endpoint (a Streamable HTTP server? use type \"http\")", t.url, resp.Status)
	case http.StatusUnauthorized, http.StatusForbidden:
		what = fmt.Sprintf("%s answered %s: the server needs authorization; give it with \"headers\" or a header helper (\"headersHelper\")", t.url, resp.Status)
		if t.headers.Get("Authorization") != "" {
			what = fmt.Sprintf("%s answered %s: the server refused the authorization sent (from \"headers\"): check the token and its scopes", t.url, resp.Status)
		}
	default:
		what = fmt.Sprintf("%s answered %s to the GET that opens an SSE stream", t.url, resp.Status)
	}
	t.failure = &httpStatusError{prefix: t.prefix(), what: what + t.definedIn(), status: resp.StatusCode}
}
