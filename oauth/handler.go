package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	// WaitingForAnother is told when this connection begins (true) and
	// ends (false) waiting for a flow another connection started: a
	// deadline of its own that ends meanwhile can say what it waited for
	// (the wait's error may not reach the caller: go-sdk answers the
	// deadline itself).
	WaitingForAnother func(waiting bool)
	// WaitingForRefresh is told when a request of this connection begins
	// (true) and ends (false) waiting for the authorization server to
	// refresh the access token: a deadline of the request's that ends
	// meanwhile can say what it waited for (go-sdk answers a request whose
	// context ended with the context's error, and the wait's own
	// *RefreshWaitError may not reach the caller).
	WaitingForRefresh func(waiting bool)
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
//
// Token never waits for the authorization server. go-sdk asks for the
// token holding its connection's lock, with the connection's context, not
// the request's: a refresh waited for there would hold every request of
// the connection for as long as the authorization server takes. A token
// due for renewal but still valid is used while its refresh runs in the
// background (startRefresh); an expired one is not used, and the request
// waits for the refresh in the handler's Transport, or in Authorize after
// the 401, each within the request's own context.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenSource{h: h}, nil
}

type tokenSource struct {
	h *Handler
}

func (s tokenSource) Token() (*oauth2.Token, error) {
	h := s.h
	c, err := h.m.stored(h.srv, false)
	var ke *KeyringError
	if errors.As(err, &ke) {
		// No token can be had: the request goes without one, and only a
		// server that asks for authorization (Authorize) hears why.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", h.srv.Name, err)
	}
	if c == nil || c.AccessToken == "" {
		return nil, nil
	}
	if !h.m.expiring(c) {
		return bearer(c), nil
	}
	// Due for renewal. A token that has not expired yet is still good:
	// while it cannot be renewed (no refresh token, the authorization
	// server down or slow), it is used until it expires.
	valid := h.m.valid(c)
	if c.RefreshToken != "" && (!valid || h.m.retryRefresh(h.srv.Key())) {
		h.m.startRefresh(h.srv, c.AccessToken)
	}
	if valid {
		return bearer(c), nil
	}
	return nil, nil
}

// awaitRefresh waits, while ctx lasts, for the refresh of the server's
// token running, if one is, and returns the token it got ("" when none
// runs, or the authorization server refused the refresh token: the
// request goes without, and the 401 starts a new authorization).
func (h *Handler) awaitRefresh(ctx context.Context) (string, error) {
	r := h.m.running(h.srv)
	if r == nil {
		return "", nil
	}
	c, err := h.m.await(ctx, r, h.srv, h.opts.WaitingForRefresh)
	switch {
	case errors.Is(err, errRefreshRejected):
		return "", nil
	case err != nil:
		return "", err
	}
	return c.AccessToken, nil
}

func bearer(c *Credentials) *oauth2.Token {
	return &oauth2.Token{AccessToken: c.AccessToken, TokenType: "Bearer"}
}

// challenge is what a flow needs of the response that asked for
// authorization.
type challenge struct {
	status int
	header http.Header
	// issuer is the authorization server the resource's metadata named
	// when the challenge came ("" when unknown).
	issuer string
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
	c, err := h.m.stored(h.srv, true)
	var ke *KeyringError
	if errors.As(err, &ke) {
		// Before any flow: a token the keychain cannot keep would have the
		// user authorize in the browser for nothing.
		return err
	}
	if err != nil {
		return fmt.Errorf("server %q: %w", h.srv.Name, err)
	}
	if c != nil && c.AccessToken != "" && c.AccessToken != sent && !h.m.expiring(c) {
		return nil // a newer token exists (another connection's flow, or a login)
	}
	// Which authorization server the resource names now, before any
	// refresh: credentials another one issued are not sent anywhere
	// (SEP-2352; issuer.go).
	issuer := h.m.authorizationServer(ctx, h.srv, resp.Header)
	if c != nil && !h.m.boundTo(ctx, h.srv, c, issuer) {
		h.m.forgetMoved(h.srv, c, issuer)
		c = nil
	}
	if resp.StatusCode == http.StatusUnauthorized && c != nil && c.RefreshToken != "" {
		_, err := h.m.refresh(ctx, h.srv, sent, h.opts.WaitingForRefresh)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errRefreshRejected) {
			return err
		}
		h.m.opts.Logger.Info("refresh token rejected: authorizing again", "server", h.srv.Name)
	}
	if err := h.m.authorize(ctx, h, challenge{status: resp.StatusCode, header: resp.Header.Clone(), issuer: issuer}); err != nil {
		return err
	}
	if resp.StatusCode == http.StatusForbidden {
		return h.stillInsufficient(bearerParam(resp.Header, "scope"))
	}
	return nil
}

// stillInsufficient checks a step-up's grant against the scopes the 403
// asked for. go-sdk retries a request once after Authorize and fails the
// whole connection on a second 403 ("Forbidden"); a grant that lacks a
// scope (the user unticked it, a policy withheld it) would get just that,
// so the request fails here instead, saying what is missing, and the
// session lives on. The next call that needs the scope asks again.
func (h *Handler) stillInsufficient(needed string) error {
	c, err := h.m.stored(h.srv, false)
	if err != nil || c == nil {
		return err
	}
	var missing []string
	for _, s := range strings.Fields(needed) {
		if !slices.Contains(c.GrantedScopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &ScopeError{Server: h.srv.Name, Missing: missing, Granted: slices.Clone(c.GrantedScopes)}
}

// ScopeError is a request the server refused for a scope (403
// insufficient_scope) that a new authorization did not grant either.
type ScopeError struct {
	Server           string
	Missing, Granted []string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("server %q answered 403 insufficient_scope: the request needs scope %s, which the new authorization did not grant (granted: %s); the next request that needs it asks again",
		e.Server, strings.Join(e.Missing, " "), cmpOr(strings.Join(e.Granted, " "), "none"))
}

// bearerError is the error parameter of the Bearer challenge.
func bearerError(h http.Header) string { return bearerParam(h, "error") }

// bearerParam is a parameter of the Bearer challenge.
func bearerParam(h http.Header, name string) string {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c.Params[name]
		}
	}
	return ""
}

// wait waits for f on behalf of h. started says h's request started it.
func (h *Handler) wait(ctx context.Context, f *flow, started bool) error {
	if !started && h.opts.WaitingForAnother != nil {
		h.opts.WaitingForAnother(true)
		defer h.opts.WaitingForAnother(false)
	}
	gaveUp := func() error {
		return fmt.Errorf("server %q: waiting for authorization: %w", h.srv.Name, context.Cause(ctx))
	}
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
			return gaveUp()
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
		return gaveUp()
	}
}
