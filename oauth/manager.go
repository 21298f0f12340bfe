package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Defaults of Options.
const (
	DefaultTimeout = 5 * time.Minute
	// RefreshBefore is how long before its expiry a token is refreshed.
	RefreshBefore = time.Minute
	// RefreshRetry is how long after a failed refresh (the authorization
	// server down) the token, still valid, is used without trying again.
	RefreshRetry = 10 * time.Second
	// DefaultRefreshTimeout bounds one refresh of an access token.
	DefaultRefreshTimeout = 30 * time.Second
)

// Options configure a Manager.
type Options struct {
	Store *Store
	// HTTPClient makes the requests to the authorization server
	// (discovery, registration, token); nil is http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock of token expiry; nil is time.Now.
	Now func() time.Time
	// Timeout bounds an authorization flow (the user in the browser);
	// TimeoutKey says how the user sets it, for the error that ends a flow.
	Timeout    time.Duration
	TimeoutKey string
	// ClientName is sent at dynamic client registration.
	ClientName string
	// OnAuthorized is told that a flow stored new credentials for key. It
	// runs on the flow's goroutine and must not block.
	OnAuthorized func(Key)
	// Joined is told that a connection begins to wait for a flow another
	// connection started (tests order events with it).
	Joined func(Key)
	// RefreshTimeout bounds one refresh of an access token, which runs on
	// a goroutine of the Manager's whatever the request that wanted it
	// does; zero is DefaultRefreshTimeout. A request waits for it only
	// while its own context lasts.
	RefreshTimeout time.Duration
	// Refreshed is told that a refresh of key ended, with its error, and
	// AwaitsRefresh that a request begins to wait for one (tests order
	// events with them). Refreshed runs on the refresh's goroutine; neither
	// may block.
	Refreshed     func(Key, error)
	AwaitsRefresh func(Key)
	Logger        *slog.Logger
	// Keyring is the OS keychain, for servers whose
	// mcp_oauth_credentials_store is "keyring" or "auto"; nil is the
	// system's (OSKeyring).
	Keyring Keyring
}

// Manager owns the credentials store and the authorization flows. One
// flow runs per key at a time; every connection that needs it waits for
// it.
type Manager struct {
	opts Options

	ctx    context.Context // ends at Close; parents every flow
	cancel context.CancelFunc
	flowWG sync.WaitGroup
	// refreshWG counts the refreshes running (refreshCall).
	refreshWG sync.WaitGroup

	mu    sync.Mutex
	flows map[string]*flow // running, by Key.ID
	// cache is the store as last read, and its stamp.
	cache     map[string]*Credentials
	cacheAt   stamp
	cacheRead bool

	// refreshes are the refreshes running, by Key.ID: one per key at a
	// time, shared by every caller that wants it.
	refreshes map[string]*refreshCall
	// refreshFailed is when the last refresh of a key (by Key.ID) failed
	// for a reason other than a refused grant, until one succeeds.
	refreshFailed map[string]time.Time
	// keyringCache is the keychain as last read, by account (stores.go);
	// keyringFailed the error of the keychain's last failure, at
	// keyringFailedAt, until a call succeeds.
	keyringCache    map[string]keyringEntry
	keyringFailed   error
	keyringFailedAt time.Time
}

// NewManager returns a Manager; Close ends its flows.
func NewManager(opts Options) *Manager {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = DefaultRefreshTimeout
	}
	if opts.ClientName == "" {
		opts.ClientName = "mcp-sidecar"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Keyring == nil {
		opts.Keyring = OSKeyring{}
	}
	m := &Manager{opts: opts, flows: map[string]*flow{}, refreshes: map[string]*refreshCall{}, refreshFailed: map[string]time.Time{}, keyringCache: map[string]keyringEntry{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Close cancels the flows and refreshes in progress and waits for them
// to end.
func (m *Manager) Close() {
	m.cancel()
	m.flowWG.Wait()
	m.refreshWG.Wait()
}

// Server is what a Manager needs to know of one server.
type Server struct {
	Name     string
	URL      string
	Scopes   []string // configured scopes; none: what the server asks for
	Resource string   // oauth_resource: the RFC 8707 resource to ask for
	// ClientID is a pre-registered client; an https URL names a client ID
	// metadata document instead. ClientSecret is the configured client's
	// secret (read from its environment variable by the caller).
	ClientID     string
	ClientSecret string
	// CallbackURL, when set, is the redirect URI to register; CallbackPort
	// is the port its listener takes (0: the port of a loopback
	// CallbackURL, else any free one). See callbackPlan.
	CallbackPort int
	CallbackURL  string
	// CallbackURLKey and CallbackPortKey are the configuration keys they
	// came from, for the errors that name them.
	CallbackURLKey, CallbackPortKey string
	// CredentialsStore is mcp_oauth_credentials_store: StoreFile (also
	// ""), StoreAuto or StoreKeyring (stores.go); StoreSource the file
	// that sets it, for the errors that name it.
	CredentialsStore, StoreSource string
}

// Key is the server's credentials key.
func (s Server) Key() Key { return Key{URL: s.URL, Resource: s.Resource, Scopes: s.Scopes} }

// Status is what is known of a server's authorization, with no secret in
// it.
type Status struct {
	Authorized bool
	// ExpiresAt is the access token's expiry (zero: unknown or none).
	ExpiresAt time.Time
	// Refreshable says the access token can be renewed without the user.
	Refreshable bool
	Scopes      []string
	ObtainedAt  time.Time
	// PendingURL is the authorization URL of a flow waiting for the user.
	PendingURL string
}

// Status reports srv's authorization.
func (m *Manager) Status(srv Server) (Status, error) {
	var st Status
	key := srv.Key()
	m.mu.Lock()
	if f := m.flows[key.ID()]; f != nil {
		st.PendingURL = f.pendingURL()
	}
	m.mu.Unlock()
	c, err := m.stored(srv, false)
	if err != nil || c == nil {
		return st, err
	}
	st.Authorized = c.AccessToken != "" || c.RefreshToken != ""
	st.ExpiresAt = c.Expiry
	st.Refreshable = c.RefreshToken != ""
	st.Scopes = slices.Clone(c.GrantedScopes)
	st.ObtainedAt = c.ObtainedAt
	return st, nil
}

// Secrets are the secrets stored for srv, its tokens and the secret of a
// client registered for it, for a caller that must keep them out of what
// it shows (a server's error that quotes the request it refused); nil
// when none are stored or the store cannot be read.
func (m *Manager) Secrets(srv Server) []string {
	c, err := m.stored(srv, false)
	if err != nil || c == nil {
		return nil
	}
	var out []string
	for _, v := range []string{c.AccessToken, c.RefreshToken, c.ClientSecret} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Logout forgets srv's credentials, in the keychain and in the file,
// and reports whether there were any.
func (m *Manager) Logout(srv Server) (bool, error) {
	return m.forget(srv, "")
}

// credentials returns the stored credentials of key (nil when none),
// reading the file again only when it changed.
func (m *Manager) credentials(key Key) (*Credentials, error) {
	now, err := m.opts.Store.current()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.cacheRead || !m.cacheAt.same(now) {
		entries, at, err := m.opts.Store.Load()
		if err != nil {
			return nil, err
		}
		m.cache, m.cacheAt, m.cacheRead = entries, at, true
	}
	c := m.cache[key.ID()]
	if c == nil {
		return nil, nil
	}
	cp := *c
	return &cp, nil
}

func (m *Manager) invalidate() {
	m.mu.Lock()
	m.cacheRead = false
	m.mu.Unlock()
}

// save stores c under key.
func (m *Manager) save(key Key, c *Credentials) error {
	err := m.opts.Store.Update(func(entries map[string]*Credentials) error {
		entries[key.ID()] = c
		return nil
	})
	m.invalidate()
	return err
}

// RefreshError is a refresh of an access token that failed for a reason
// other than a refused refresh token: the authorization server is down,
// or answered an error. The token is used while it is valid; a request
// after it expired fails with this.
type RefreshError struct {
	Server, TokenURL string
	Err              error
}

func (e *RefreshError) Error() string {
	return fmt.Sprintf("server %q: refreshing the access token at %s: %v", e.Server, e.TokenURL, e.Err)
}

func (e *RefreshError) Unwrap() error { return e.Err }

// errRefreshRejected is the errors.Is target of a refresh the authorization
// server refused (invalid_grant): the refresh token was revoked or expired.
var errRefreshRejected = errors.New("the refresh token was rejected")

// refreshCall is one refresh of a key's access token, running.
type refreshCall struct {
	done  chan struct{}
	creds *Credentials // set before done closes
	err   error
}

// startRefresh starts a refresh of srv's access token, or returns the one
// running. It runs on a goroutine of m's, bounded by RefreshTimeout and
// by Close, not by any caller's context: an authorization server that
// never answers holds no request past its own context (refresh), and a
// caller giving up does not fail the others. stale is the access token
// the caller found wanting (refreshNow). nil when m is closed.
func (m *Manager) startRefresh(srv Server, stale string) *refreshCall {
	id := srv.Key().ID()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.refreshes[id]; r != nil {
		return r
	}
	if m.ctx.Err() != nil {
		return nil
	}
	r := &refreshCall{done: make(chan struct{})}
	m.refreshes[id] = r
	m.refreshWG.Add(1)
	go func() {
		defer m.refreshWG.Done()
		ctx, cancel := context.WithTimeout(m.ctx, m.opts.RefreshTimeout)
		defer cancel()
		creds, err := m.refreshNow(ctx, srv, stale)
		switch {
		case errors.Is(err, errRefreshRejected):
			m.opts.Logger.Info("refresh token rejected: the server needs a new authorization", "server", srv.Name)
		case err != nil:
			m.opts.Logger.Warn("refreshing the access token failed: a valid token is used until it expires", "server", srv.Name, "err", err)
		}
		m.mu.Lock()
		delete(m.refreshes, id)
		r.creds, r.err = creds, err
		m.mu.Unlock()
		close(r.done)
		if m.opts.Refreshed != nil {
			m.opts.Refreshed(srv.Key(), err)
		}
	}()
	return r
}

// running is the refresh of srv's access token running, or nil.
func (m *Manager) running(srv Server) *refreshCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refreshes[srv.Key().ID()]
}

// refresh renews the access token of srv with its refresh token, waiting
// for it while ctx lasts (startRefresh); waiting is told when the wait
// begins and ends (nil: no one).
func (m *Manager) refresh(ctx context.Context, srv Server, stale string, waiting func(bool)) (*Credentials, error) {
	r := m.startRefresh(srv, stale)
	if r == nil {
		return nil, fmt.Errorf("server %q: refreshing the access token: the sidecar is shutting down", srv.Name)
	}
	return m.await(ctx, r, srv, waiting)
}

// await waits for r, a refresh of srv's token, while ctx lasts.
func (m *Manager) await(ctx context.Context, r *refreshCall, srv Server, waiting func(bool)) (*Credentials, error) {
	select {
	case <-r.done:
		return r.creds, r.err
	default:
	}
	if waiting != nil {
		waiting(true)
		defer waiting(false)
	}
	if m.opts.AwaitsRefresh != nil {
		m.opts.AwaitsRefresh(srv.Key())
	}
	select {
	case <-r.done:
		return r.creds, r.err
	case <-ctx.Done():
		return nil, &RefreshWaitError{Server: srv.Name, Err: context.Cause(ctx)}
	}
}

// RefreshWaitError is a request that gave up waiting for a refresh of the
// access token (its context ended: a deadline, a cancellation) while the
// authorization server had not answered. The refresh goes on, bounded by
// its own timeout, for the requests after it.
type RefreshWaitError struct {
	Server string
	Err    error // the context's cause
}

func (e *RefreshWaitError) Error() string {
	return fmt.Sprintf("server %q: the request ended while waiting for the authorization server to refresh the access token (it has not answered yet): %v", e.Server, e.Err)
}

func (e *RefreshWaitError) Unwrap() error { return e.Err }

func (m *Manager) refreshNow(ctx context.Context, srv Server, stale string) (*Credentials, error) {
	key := srv.Key()
	c, err := m.stored(srv, true)
	if err != nil {
		return nil, err
	}
	if c == nil || c.RefreshToken == "" {
		return nil, fmt.Errorf("server %q: %w: none is stored", srv.Name, errRefreshRejected)
	}
	if c.AccessToken != stale && !m.expiring(c) {
		return c, nil // refreshed meanwhile (here or in another process)
	}
	secret := c.ClientSecret
	if c.ClientFromConfig {
		secret = srv.ClientSecret
	}
	cfg := &oauth2.Config{
		ClientID:     c.ClientID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)},
	}
	// An empty access token makes oauth2 refresh at once, whatever its
	// own clock says: expiry is decided here, by m.opts.Now.
	client, sent := m.flowClient(srv)
	tok, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, client), &oauth2.Token{RefreshToken: c.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			// The grant is gone: forget the tokens, keep nothing that
			// would be tried again.
			m.forgetTokens(srv, c.RefreshToken)
			return nil, fmt.Errorf("server %q: %w (%s)", srv.Name, errRefreshRejected, sent.scrub(re))
		}
		m.noteRefresh(key, err)
		return nil, &RefreshError{Server: srv.Name, TokenURL: c.TokenURL, Err: sent.scrub(err)}
	}
	m.noteRefresh(key, nil)
	next := *c
	next.AccessToken = tok.AccessToken
	next.TokenType = tok.TokenType
	if tok.RefreshToken != "" {
		next.RefreshToken = tok.RefreshToken // rotated
	}
	next.Expiry = m.expiryOf(tok)
	if s := scopesOf(tok); s != nil {
		slices.Sort(s)
		next.GrantedScopes = s
	}
	next.ObtainedAt = m.opts.Now()
	if err := m.keep(srv, &next); err != nil {
		return nil, err
	}
	m.opts.Logger.Info("access token refreshed", "server", srv.Name)
	return &next, nil
}

// forgetTokens removes the tokens of srv if its refresh token is still
// rt (a login elsewhere may have replaced them meanwhile).
func (m *Manager) forgetTokens(srv Server, rt string) {
	if _, err := m.forget(srv, rt); err != nil {
		m.opts.Logger.Warn("credentials not removed", "err", err)
	}
}

// expiring reports whether c's access token is past, or within
// RefreshBefore of, its expiry.
func (m *Manager) expiring(c *Credentials) bool {
	return !c.Expiry.IsZero() && !m.opts.Now().Add(RefreshBefore).Before(c.Expiry)
}

// valid reports whether c's access token has not expired yet.
func (m *Manager) valid(c *Credentials) bool {
	return c.AccessToken != "" && (c.Expiry.IsZero() || m.opts.Now().Before(c.Expiry))
}

// noteRefresh records how the last refresh of key went: a failure lets
// the valid token be used without trying again for RefreshRetry
// (retryRefresh).
func (m *Manager) noteRefresh(key Key, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.refreshFailed, key.ID())
	} else {
		m.refreshFailed[key.ID()] = m.opts.Now()
	}
}

// retryRefresh reports whether a refresh of key may be tried: none failed
// within RefreshRetry.
func (m *Manager) retryRefresh(key Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, failed := m.refreshFailed[key.ID()]
	return !failed || !m.opts.Now().Before(at.Add(RefreshRetry))
}

// expiryOf is tok's expiry on m's clock: oauth2 computes Expiry from
// expires_in on the wall clock, which tests replace.
func (m *Manager) expiryOf(tok *oauth2.Token) time.Time {
	if tok.ExpiresIn > 0 {
		return m.opts.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}

// scopesOf reads the scope member of a token response (nil when absent).
func scopesOf(tok *oauth2.Token) []string {
	s, _ := tok.Extra("scope").(string)
	if s == "" {
		return nil
	}
	return strings.Fields(s)
}

// describeRetrieve is an authorization server's error without the response
// body (which is the server's, and might echo what was sent).
func describeRetrieve(re *oauth2.RetrieveError) string {
	msg := re.ErrorCode
	if re.ErrorDescription != "" {
		msg += ": " + re.ErrorDescription
	}
	if msg == "" && re.Response != nil {
		msg = re.Response.Status
	}
	return msg
}
