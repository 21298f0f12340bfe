package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
)

// ErrCancelled is the errors.Is target of a flow the user declined.
var ErrCancelled = errors.New("authorization cancelled by the user")

// FlowError is an authorization flow that failed on the way: discovery,
// registration, the authorization server's answer, the issuer or state
// checks, the token exchange. Reason is go-sdk's account, without secrets.
type FlowError struct {
	Server string
	Reason string
	// Began says the flow got as far as an authorization URL: the server
	// does OAuth, and the failure is the flow's, not a missing OAuth.
	Began bool
}

func (e *FlowError) Error() string {
	return fmt.Sprintf("server %q: OAuth authorization failed: %s", e.Server, e.Reason)
}

// flow is one authorization in progress for one key.
type flow struct {
	done     chan struct{}
	err      error // set before done closes
	urlReady chan struct{}

	mu  sync.Mutex
	url string // the authorization URL, once urlReady closed
}

func (f *flow) publish(u string) {
	f.mu.Lock()
	f.url = u
	f.mu.Unlock()
	close(f.urlReady)
}

// pendingURL is the authorization URL while the flow waits for it.
func (f *flow) pendingURL() string {
	select {
	case <-f.done:
		return ""
	default:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.url
}

// authorize joins the flow of h's server, starting it when none runs, and
// waits for it as h's options say.
func (m *Manager) authorize(ctx context.Context, h *Handler, ch challenge) error {
	id := h.srv.Key().ID()
	m.mu.Lock()
	f := m.flows[id]
	started := false
	if f == nil {
		if m.ctx.Err() != nil {
			m.mu.Unlock()
			return fmt.Errorf("server %q: authorization: the sidecar is shutting down", h.srv.Name)
		}
		f = &flow{done: make(chan struct{}), urlReady: make(chan struct{})}
		m.flows[id] = f
		started = true
		m.flowWG.Add(1)
		go m.runFlow(f, h, ch)
	}
	m.mu.Unlock()
	if !started && m.opts.Joined != nil {
		m.opts.Joined(h.srv.Key())
	}
	return h.wait(ctx, f, started)
}

// timeoutError ends a flow the user did not complete in time.
type timeoutError struct {
	server string
	after  time.Duration
	key    string
}

func (e *timeoutError) Error() string { return fmt.Sprintf("server %q: %s", e.server, e.reason()) }

func (e *timeoutError) reason() string {
	msg := fmt.Sprintf("not completed within %s", e.after)
	if e.key != "" {
		msg += " (" + e.key + ")"
	}
	return msg
}

func (m *Manager) runFlow(f *flow, h *Handler, ch challenge) {
	defer m.flowWG.Done()
	srv := h.srv
	ctx, cancel := context.WithTimeoutCause(m.ctx, m.opts.Timeout, &timeoutError{server: srv.Name, after: m.opts.Timeout, key: m.opts.TimeoutKey})
	defer cancel()
	err := m.runFlowSteps(ctx, f, h, ch)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, ErrCancelled) {
			var te *timeoutError
			if errors.As(cause, &te) {
				err = &FlowError{Server: srv.Name, Reason: te.reason()}
			}
		}
		var fe *FlowError
		if errors.As(err, &fe) {
			select {
			case <-f.urlReady:
				fe.Began = true
			default:
			}
		}
		m.opts.Logger.Info("authorization failed", "server", srv.Name, peerlog.Err("err", err))
	}
	m.mu.Lock()
	delete(m.flows, srv.Key().ID())
	f.err = err
	m.mu.Unlock()
	close(f.done)
	if err == nil && m.opts.OnAuthorized != nil {
		m.opts.OnAuthorized(srv.Key())
	}
}

// runFlowSteps runs go-sdk's authorization code flow with the sidecar's
// redirect handling and stores what it gets.
func (m *Manager) runFlowSteps(ctx context.Context, f *flow, h *Handler, ch challenge) error {
	srv := h.srv

	// Where the redirect comes back: the loopback listener, unless the
	// presenter catches it.
	plan, err := srv.callbackPlan(h.opts.Present != nil && h.opts.CatchesRedirect, m.lastRegisteredPort())
	if err != nil {
		return err
	}
	redirectURI := plan.redirectURI
	var ln *callbackListener
	if plan.listen != "" {
		ln, err = listenCallback(plan.listen, plan.path)
		if err != nil && plan.fallback != "" {
			ln, err = listenCallback(plan.fallback, plan.path)
		}
		if err != nil {
			return fmt.Errorf("server %q: %w", srv.Name, err)
		}
		defer ln.close()
		if redirectURI == "" {
			redirectURI = fmt.Sprintf("http://127.0.0.1:%d/callback", ln.port())
		}
	}

	// A new authorization keeps what was granted before: a step-up asks
	// for more, never for less. (Credentials of another authorization
	// server were forgotten before the flow.)
	var granted []string
	if prev, err := m.stored(srv, false); err == nil && prev != nil {
		granted = prev.GrantedScopes
	}

	var gotCfg *oauth2.Config
	var got *oauth2.Token
	client, sent := m.flowClient(srv)
	issuers := &issuerTransport{base: client.Transport}
	registrations := &registrationTransport{base: issuers, m: m}
	client.Transport = registrations
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirectURI,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return m.fetchCode(ctx, f, h, ln, redirectURI, args.URL)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{redirectURI},
				ClientName:    m.opts.ClientName,
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			},
		},
		ScopeFilter: func(discovered []string) []string {
			base := discovered
			if len(srv.Scopes) > 0 {
				base = srv.Scopes
				if ch.status == http.StatusForbidden {
					base = union(srv.Scopes, discovered)
				}
			}
			return union(base, granted)
		},
		RequestRefreshToken: true,
		Client:              client,
		NewTokenSource: func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			gotCfg, got = c, t
			return oauth2.StaticTokenSource(t), nil
		},
	}
	fromConfig := false
	switch {
	case srv.ClientID == "":
	case isClientMetadataURL(srv.ClientID):
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: srv.ClientID}
	default:
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: srv.ClientID}
		if srv.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: srv.ClientSecret}
		}
		fromConfig = true
	}
	handler, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return fmt.Errorf("server %q: OAuth client: %w", srv.Name, err)
	}
	// The configured URL, not the request's: the transport may have given
	// go-sdk a redacted one (a secret in the query), and discovery and
	// the resource parameter need the real one.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	if err != nil {
		return fmt.Errorf("server %q: %w", srv.Name, err)
	}
	resp := &http.Response{StatusCode: ch.status, Header: ch.header, Body: http.NoBody, Request: req}
	if err := handler.Authorize(ctx, req, resp); err != nil {
		if endpoint, id := registrations.reused(); endpoint != "" && !errors.Is(err, ErrCancelled) {
			// The authorization server may have forgotten the client (an
			// unknown client is shown the user in the browser, and the
			// flow never hears of it): the next flow registers anew.
			m.forgetRegistration(endpoint, id)
		}
		if errors.Is(err, ErrCancelled) {
			return fmt.Errorf("server %q: %w", srv.Name, err)
		}
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		// go-sdk's errors may quote the server's URL, secrets included,
		// and the authorization server's answer what was sent to it.
		msg := strings.ReplaceAll(sent.scrub(err).Error(), srv.URL, redact.URL(srv.URL))
		msg = redact.NewSecrets(redact.URLValues(srv.URL), nil).String(msg)
		return &FlowError{Server: srv.Name, Reason: msg}
	}
	if got == nil {
		return fmt.Errorf("server %q: authorization ended without a token", srv.Name)
	}
	creds := &Credentials{
		Server: srv.Name, URL: srv.URL, Resource: srv.Resource, Scopes: slices.Clone(srv.Scopes),
		Issuer:   cmpOr(issuers.seen(), ch.issuer),
		ClientID: gotCfg.ClientID, TokenURL: gotCfg.Endpoint.TokenURL, AuthStyle: int(gotCfg.Endpoint.AuthStyle),
		AccessToken: got.AccessToken, TokenType: got.TokenType, RefreshToken: got.RefreshToken,
		Expiry: m.expiryOf(got), GrantedScopes: scopesOf(got), ObtainedAt: m.opts.Now(),
	}
	if creds.GrantedScopes == nil {
		creds.GrantedScopes = slices.Clone(gotCfg.Scopes)
	}
	slices.Sort(creds.GrantedScopes)
	if fromConfig && gotCfg.ClientID == srv.ClientID {
		creds.ClientFromConfig = true
	} else {
		creds.ClientSecret = gotCfg.ClientSecret
	}
	if err := m.keep(srv, creds); err != nil {
		return fmt.Errorf("server %q: keeping the token: %w", srv.Name, err)
	}
	m.opts.Logger.Info("authorized", "server", srv.Name)
	return nil
}

// fetchCode is go-sdk's AuthorizationCodeFetcher: it shows the user the
// URL and waits for the redirect, from the loopback listener or from the
// presenter, whichever comes first.
func (m *Manager) fetchCode(ctx context.Context, f *flow, h *Handler, ln *callbackListener, redirectURI, authURL string) (*auth.AuthorizationResult, error) {
	srv := h.srv
	if srv.Resource != "" {
		authURL = withQuery(authURL, "resource", srv.Resource)
	}
	state := queryOf(authURL).Get("state")
	var fromListener <-chan callbackResult
	if ln != nil {
		ln.expect(state)
		fromListener = ln.result
	}
	f.publish(authURL)

	type answer struct {
		r   PresentResult
		err error
	}
	var answers chan answer
	if h.opts.Present != nil {
		answers = make(chan answer, 1)
		pctx, cancel := context.WithCancel(ctx)
		var presenting sync.WaitGroup
		defer presenting.Wait()
		defer cancel()
		prompt := Prompt{Server: srv.Name, URL: authURL}
		if ln == nil {
			prompt.RedirectURI = redirectURI
		}
		presenting.Go(func() {
			r, err := h.opts.Present(pctx, prompt)
			answers <- answer{r, err}
		})
	}
	for {
		select {
		case res := <-fromListener:
			if res.err != nil {
				return nil, fmt.Errorf("server %q: %w", srv.Name, res.err)
			}
			return &auth.AuthorizationResult{Code: res.r.code, State: res.r.state, Iss: res.r.iss}, nil
		case a := <-answers:
			answers = nil
			switch {
			case a.err != nil:
				return nil, fmt.Errorf("server %q: showing the authorization URL: %w", srv.Name, a.err)
			case a.r.Cancelled:
				return nil, ErrCancelled
			case a.r.RedirectURL != "":
				r, err := redirectFrom(a.r.RedirectURL, redirectURI)
				if err != nil {
					return nil, fmt.Errorf("server %q: %w", srv.Name, err)
				}
				return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
			case ln == nil:
				return nil, fmt.Errorf("server %q: the authorization URL was opened, but no redirect URL came back", srv.Name)
			}
			// Opened: the redirect comes to the listener.
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// redirectFrom reads the authorization response from the redirect URL a
// presenter caught, which must be for the redirect URI the flow gave.
func redirectFrom(got, redirectURI string) (redirect, error) {
	u, err := url.Parse(got)
	if err != nil {
		return redirect{}, fmt.Errorf("the redirect URL is not a URL: %w", err)
	}
	want, err := url.Parse(redirectURI)
	if err != nil {
		return redirect{}, err
	}
	if u.Scheme != want.Scheme || u.Host != want.Host || cmpOr(u.Path, "/") != cmpOr(want.Path, "/") {
		return redirect{}, fmt.Errorf("the redirect URL %s://%s%s is not the redirect URI %s", u.Scheme, u.Host, u.Path, redirectURI)
	}
	return parseRedirect(u.Query())
}

// isClientMetadataURL reports whether a client id is a client ID metadata
// document URL (an https URL with a path).
func isClientMetadataURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/"
}

func queryOf(raw string) url.Values {
	u, err := url.Parse(raw)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

// withQuery sets one query parameter of raw.
func withQuery(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// freePort asks the system for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// union is a and then what b adds, without repeats; nil when empty.
func union(a, b []string) []string {
	var out []string
	for _, s := range slices.Concat(a, b) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// flowClient is the client of srv's authorization and refresh requests.
// With oauth_resource set, the token requests name that resource too, the
// refreshes included, as the authorization request does (RFC 8707 asks for
// the same in both; oauth2's refresh sends none of its own).
// The secrets its token requests send are noted in the sentSecrets it
// returns, for the errors of the flow or the refresh.
func (m *Manager) flowClient(srv Server) (*http.Client, *sentSecrets) {
	c := *m.opts.HTTPClient
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if srv.Resource != "" {
		base = &resourceTransport{base: base, resource: srv.Resource}
	}
	sent := new(sentSecrets)
	c.Transport = &secretsTransport{base: base, sent: sent}
	return &c, sent
}

// resourceTransport sets the resource parameter of the token requests
// (form posts): it replaces go-sdk's in the code exchange and adds one to
// a refresh.
type resourceTransport struct {
	base     http.RoundTripper
	resource string
}

func (t *resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || req.GetBody == nil {
		return t.base.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(body, 1<<20))
	body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil || (!form.Has("resource") && form.Get("grant_type") != "refresh_token") {
		return t.base.RoundTrip(req)
	}
	form.Set("resource", t.resource)
	data := form.Encode()
	req = req.Clone(req.Context())
	req.Body = http.NoBody
	if data != "" {
		req.Body = readCloser(data)
	}
	req.ContentLength = int64(len(data))
	req.GetBody = func() (io.ReadCloser, error) { return readCloser(data), nil }
	return t.base.RoundTrip(req)
}

func readCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
