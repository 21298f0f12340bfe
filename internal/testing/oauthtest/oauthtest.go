// Package oauthtest runs, inside a test, a real OAuth 2.1 authorization
// server and an MCP server that it protects, both over real HTTP
// (httptest): discovery metadata, dynamic client registration,
// authorization with PKCE, code exchange, refresh, revocation and
// step-up, with counters and switches a test asserts on and flips.
package oauthtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Config shapes an AuthServer.
type Config struct {
	// ScopesSupported is advertised in both metadata documents.
	ScopesSupported []string
	// AccessTTL is the access tokens' expires_in (default one hour).
	AccessTTL time.Duration
	// Issuer, when set, is the issuer the metadata claims instead of the
	// server's own URL (an issuer mismatch).
	Issuer string
	// IssParameter advertises RFC 9207 and sends iss on redirects; WrongIss
	// sends that value instead of the issuer.
	IssParameter bool
	WrongIss     string
	// Clients are pre-registered clients: id -> secret ("" for public).
	Clients map[string]string
	// NoRegistration turns dynamic client registration off.
	NoRegistration bool
	// Deny answers authorization requests with error=access_denied.
	Deny bool
	// MaxScopes, when set, are the most a grant carries, whatever was
	// asked: a user who unticks a scope, or a policy.
	MaxScopes []string
	// OnToken is called with each token request's form before it is
	// answered (tests order events with it).
	OnToken func(form url.Values)
}

// AuthServer is the authorization server.
type AuthServer struct {
	srv *httptest.Server
	cfg Config

	mu       sync.Mutex
	seq      int
	clients  map[string]*client
	codes    map[string]*grant
	access   map[string]*token // valid access tokens
	refresh  map[string]*grant // valid refresh tokens
	issued   []string          // every token issued, access and refresh
	counts   Counts
	lastAuth url.Values
	tokenReq []url.Values
	failWith string   // FailTokens
	secrets  []string // client secrets issued at registration
}

type client struct {
	secret       string
	redirectURIs []string
}

type grant struct {
	clientID, redirectURI, challenge, resource string
	scopes                                     []string
}

type token struct {
	scopes []string
}

// Counts are what the authorization server saw.
type Counts struct {
	Registrations  int
	Authorizations int // authorization requests
	CodeExchanges  int // successful authorization_code grants
	Refreshes      int // successful refresh_token grants
	RefreshDenied  int // refresh_token grants refused (invalid_grant)
}

// NewAuthServer starts an authorization server; it stops with the test.
func NewAuthServer(t testing.TB, cfg Config) *AuthServer {
	t.Helper()
	a := StartAuthServer(cfg)
	t.Cleanup(a.Close)
	return a
}

// StartAuthServer starts an authorization server that runs until Close,
// for a program outside a Go test (the clients' tests use it through
// oauthtest/serve).
func StartAuthServer(cfg Config) *AuthServer {
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = time.Hour
	}
	a := &AuthServer{cfg: cfg, clients: map[string]*client{}, codes: map[string]*grant{}, access: map[string]*token{}, refresh: map[string]*grant{}}
	for id, secret := range cfg.Clients {
		a.clients[id] = &client{secret: secret}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	if !cfg.NoRegistration {
		mux.HandleFunc("POST /register", a.register)
	}
	a.srv = httptest.NewServer(mux)
	return a
}

// Close stops the server.
func (a *AuthServer) Close() { a.srv.Close() }

// URL is the server's URL, which is its issuer.
func (a *AuthServer) URL() string { return a.srv.URL }

// Counts returns the counters so far.
func (a *AuthServer) Counts() Counts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.counts
}

// Issued returns every token issued so far (access and refresh).
func (a *AuthServer) Issued() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.issued)
}

// LastAuthorization is the query of the last authorization request.
func (a *AuthServer) LastAuthorization() url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastAuth
}

// ClientSecrets returns the client secrets issued at dynamic registration.
func (a *AuthServer) ClientSecrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.secrets)
}

// TokenRequests are the forms of the token requests so far, in order.
func (a *AuthServer) TokenRequests() []url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tokenReq)
}

// FailTokens makes every token request fail from now on with the OAuth
// error code (invalid_grant, server_error, ...), as carelessly as an
// authorization server can: its error_description echoes everything the
// request sent, secrets included. "" makes them work again.
func (a *AuthServer) FailTokens(code string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failWith = code
}

// RevokeAccess makes every access token issued so far invalid (the
// resource server answers 401), as if they expired early.
func (a *AuthServer) RevokeAccess() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
}

// RevokeAll makes every token issued so far invalid, refresh tokens too.
func (a *AuthServer) RevokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
	clear(a.refresh)
}

// Verify reports the scopes of a valid access token.
func (a *AuthServer) Verify(tok string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.access[tok]
	if !ok {
		return nil, false
	}
	return slices.Clone(t.scopes), true
}

func (a *AuthServer) issuer() string {
	if a.cfg.Issuer != "" {
		return a.cfg.Issuer
	}
	return a.srv.URL
}

func (a *AuthServer) metadata(w http.ResponseWriter, r *http.Request) {
	base := a.srv.URL
	m := map[string]any{
		"issuer":                                a.issuer(),
		"authorization_endpoint":                base + "/authorize",
		"token_endpoint":                        base + "/token",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
	}
	if !a.cfg.NoRegistration {
		m["registration_endpoint"] = base + "/register"
	}
	if a.cfg.ScopesSupported != nil {
		m["scopes_supported"] = a.cfg.ScopesSupported
	}
	if a.cfg.IssParameter {
		m["authorization_response_iss_parameter_supported"] = true
	}
	writeJSON(w, http.StatusOK, m)
}

func (a *AuthServer) next(prefix string) string {
	a.seq++
	return prefix + "-" + strconv.Itoa(a.seq) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
}

func (a *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	a.mu.Lock()
	id := a.next("client")
	c := &client{redirectURIs: meta.RedirectURIs}
	method := meta.TokenEndpointAuthMethod
	if method != "none" {
		c.secret = a.next("secret")
		a.secrets = append(a.secrets, c.secret)
		if method == "" {
			method = "client_secret_basic"
		}
	}
	a.clients[id] = c
	a.counts.Registrations++
	a.mu.Unlock()
	res := map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": method}
	if c.secret != "" {
		res["client_secret"] = c.secret
	}
	writeJSON(w, http.StatusCreated, res)
}

func (a *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	a.counts.Authorizations++
	a.lastAuth = q
	c := a.clients[q.Get("client_id")]
	a.mu.Unlock()
	redirectURI := q.Get("redirect_uri")
	switch {
	case c == nil:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case len(c.redirectURIs) > 0 && !slices.Contains(c.redirectURIs, redirectURI):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	}
	to, err := url.Parse(redirectURI)
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	back := to.Query()
	back.Set("state", q.Get("state"))
	if a.cfg.Deny {
		back.Set("error", "access_denied")
		back.Set("error_description", "the user said no")
	} else {
		a.mu.Lock()
		code := a.next("code")
		scopes := strings.Fields(q.Get("scope"))
		if a.cfg.MaxScopes != nil {
			scopes = slices.DeleteFunc(scopes, func(s string) bool { return !slices.Contains(a.cfg.MaxScopes, s) })
		}
		a.codes[code] = &grant{clientID: q.Get("client_id"), redirectURI: redirectURI, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scopes: scopes}
		a.mu.Unlock()
		back.Set("code", code)
	}
	switch {
	case a.cfg.WrongIss != "":
		back.Set("iss", a.cfg.WrongIss)
	case a.cfg.IssParameter:
		back.Set("iss", a.issuer())
	}
	to.RawQuery = back.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// clientAuth reads the client's credentials (Basic header or form).
func clientAuth(r *http.Request) (id, secret string) {
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		return id, secret
	}
	return r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
}

func (a *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	if a.cfg.OnToken != nil {
		a.cfg.OnToken(r.PostForm)
	}
	id, secret := clientAuth(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokenReq = append(a.tokenReq, r.PostForm)
	if a.failWith != "" {
		status := http.StatusBadRequest
		if a.failWith == "server_error" {
			status = http.StatusInternalServerError
		}
		echo := r.PostForm.Encode()
		if authz := r.Header.Get("Authorization"); authz != "" {
			echo += " with " + authz
		}
		writeJSON(w, status, map[string]string{"error": a.failWith, "error_description": "refused: " + echo})
		return
	}
	c := a.clients[id]
	if c == nil || c.secret != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var g *grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g = a.codes[r.PostForm.Get("code")]
		delete(a.codes, r.PostForm.Get("code")) // one use
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if g == nil || g.clientID != id || g.redirectURI != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "bad code, redirect_uri or code_verifier"})
			return
		}
		a.counts.CodeExchanges++
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		g = a.refresh[rt]
		if g == nil || g.clientID != id {
			a.counts.RefreshDenied++
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token revoked"})
			return
		}
		delete(a.refresh, rt) // rotated
		a.counts.Refreshes++
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := a.next("access"), a.next("refresh")
	a.access[at] = &token{scopes: g.scopes}
	a.refresh[rt] = g
	a.issued = append(a.issued, at, rt)
	res := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": int(a.cfg.AccessTTL.Seconds())}
	if len(g.scopes) > 0 {
		res["scope"] = strings.Join(g.scopes, " ")
	}
	writeJSON(w, http.StatusOK, res)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Browse does what a browser does with an authorization URL when the user
// approves at once: it follows the redirects, to the redirect URI
// included, and returns the last URL and its status.
func Browse(ctx context.Context, authURL string) (last string, status int, err error) {
	resp, err := get(ctx, http.DefaultClient, authURL)
	if err != nil {
		return "", 0, err
	}
	return resp.Request.URL.String(), resp.StatusCode, nil
}

// RedirectOf returns where the authorization server sends the browser for
// authURL, without going there (what a host that catches the redirect
// itself sees).
func RedirectOf(ctx context.Context, authURL string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := get(ctx, c, authURL)
	if err != nil {
		return "", err
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("no redirect: %s", resp.Status)
	}
	return loc, nil
}

// get GETs url with c and reads the body away.
func get(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}
