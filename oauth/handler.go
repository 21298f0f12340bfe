package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Presenter shows the user an authorization URL: it opens a browser (or
// asks whoever can) and returns once it has, or once the user declined.
// It is called at most once per flow, on the flow's goroutine; ctx ends
// when the flow no longer needs an answer (the redirect arrived, or the
// flow ended).
type Presenter func(ctx context.Context, p Prompt) (PresentResult, error)

// Prompt is what a Presenter shows.
type Prompt struct {
	Server string // the server's name
	URL    string // the authorization URL to open
	// RedirectURI is set when the presenter catches the redirect itself
	// (HandlerOptions.CatchesRedirect): the authorization server sends the
	// browser there, and the presenter returns the full URL it received.
	RedirectURI string
}

// PresentResult is a Presenter's answer.
type PresentResult struct {
	// Cancelled: the user declined; the flow ends.
	Cancelled bool
	// RedirectURL is the full redirect URL the presenter caught (only
	// when it catches redirects). Otherwise the redirect comes to the
	// loopback listener.
	RedirectURL string
}

// HandlerOptions say how a connection's authorization reaches the user.
type HandlerOptions struct {
	// Present opens the authorization URL. Nil means no one can: a flow
	// still starts (discovery, registration, the loopback listener) and
	// waits for a browser someone opens by hand, and Authorize fails at
	// once with a *NeedsAuthorizationError carrying the URL.
	Present Presenter
	// CatchesRedirect says that Present returns the redirect URL itself
	// instead of letting it reach the loopback listener.
	CatchesRedirect bool
	// WaitingForUser is told when this connection begins (true) and ends
	// (false) waiting for a user in a flow it started: time the caller may
	// not want to count against its own deadline.
	WaitingForUser func(waiting bool)
}

// Handler authorizes one connection to one server. It implements
// auth.OAuthHandler for go-sdk's StreamableClientTransport.
type Handler struct {
	m    *Manager
	srv  Server
	opts HandlerOptions
}

var _ auth.OAuthHandler = (*Handler)(nil)

// Handler returns the handler of one connection to srv.
func (m *Manager) Handler(srv Server, opts HandlerOptions) *Handler {
	return &Handler{m: m, srv: srv, opts: opts}
}

// NeedsAuthorizationError says that a server can be used only once a user
// authorizes it. URL is the authorization URL to open, while a flow waits
// for it (empty when none does, e.g. after the user declined).
type NeedsAuthorizationError struct {
	Server string
	URL    string
	// Reason is why no flow waits, when URL is empty.
	Reason string
}

func (e *NeedsAuthorizationError) Error() string {
	switch {
	case e.URL != "":
		return fmt.Sprintf("server %q needs authorization: open %s in a browser", e.Server, e.URL)
	case e.Reason != "":
		return fmt.Sprintf("server %q needs authorization: %s", e.Server, e.Reason)
	}
	return fmt.Sprintf("server %q needs authorization", e.Server)
}

// TokenSource returns the stored token of the handler's server, refreshed
// when it is about to expire. Its Token returns (nil, nil) when there is
// no usable token: the request then goes without one, the server answers
// 401, and Authorize runs.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenSource{h: h, ctx: ctx}, nil
}

type tokenSource struct {
	h   *Handler
	ctx context.Context
}

func (s tokenSource) Token() (*oauth2.Token, error) {
	h := s.h
	c, err := h.m.credentials(h.srv.Key())
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", h.srv.Name, err)
	}
	if c == nil || c.AccessToken == "" {
		return nil, nil
	}
	if h.m.expiring(c) {
		if c.RefreshToken == "" {
			return nil, nil
		}
		c, err = h.m.refresh(s.ctx, h.srv, c.AccessToken)
		switch {
		case errors.Is(err, errRefreshRejected):
			h.m.opts.Logger.Info("refresh token rejected: the server needs a new authorization", "server", h.srv.Name)
			return nil, nil
		case err != nil:
			return nil, err
		}
	}
	return &oauth2.Token{AccessToken: c.AccessToken, TokenType: "Bearer"}, nil
}

// challenge is what a flow needs of the response that asked for
// authorization.
type challenge struct {
	status int
	header http.Header
}

// Authorize answers a 401 or 403 of the handler's server: by a token
// another connection already got, by a refresh, or by an authorization
// flow (one per server at a time, shared). go-sdk calls it once per
// request, so a request is authorized again at most once.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden && bearerError(resp.Header) != "insufficient_scope" {
		return nil // not ours to fix: the retry fails as the server says
	}
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	c, err := h.m.credentials(h.srv.Key())
	if err != nil {
		return fmt.Errorf("server %q: %w", h.srv.Name, err)
	}
	if c != nil && c.AccessToken != "" && c.AccessToken != sent && !h.m.expiring(c) {
		return nil // a newer token exists (another connection's flow, or a login)
	}
	if resp.StatusCode == http.StatusUnauthorized && c != nil && c.RefreshToken != "" {
		_, err := h.m.refresh(ctx, h.srv, sent)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errRefreshRejected) {
			return err
		}
		h.m.opts.Logger.Info("refresh token rejected: authorizing again", "server", h.srv.Name)
	}
	return h.m.authorize(ctx, h, challenge{status: resp.StatusCode, header: resp.Header.Clone()})
}

// bearerError is the error parameter of the Bearer challenge.
func bearerError(h http.Header) string {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c.Params["error"]
		}
	}
	return ""
}

// wait waits for f on behalf of h. started says h's request started it.
func (h *Handler) wait(ctx context.Context, f *flow, started bool) error {
	if h.opts.Present == nil {
		// No one to show the URL to: say where to go as soon as it is
		// known, and let the flow wait for the redirect on its own.
		select {
		case <-f.done:
			return f.err
		case <-f.urlReady:
			select {
			case <-f.done:
				return f.err
			default:
			}
			return &NeedsAuthorizationError{Server: h.srv.Name, URL: f.pendingURL()}
		case <-ctx.Done():
			return fmt.Errorf("server %q: waiting for authorization: %w", h.srv.Name, context.Cause(ctx))
		}
	}
	if started && h.opts.WaitingForUser != nil {
		select {
		case <-f.urlReady:
			h.opts.WaitingForUser(true)
			defer h.opts.WaitingForUser(false)
		case <-f.done:
		case <-ctx.Done():
		}
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fmt.Errorf("server %q: waiting for authorization: %w", h.srv.Name, context.Cause(ctx))
	}
}
