package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/mcp-sidecar/mcp-sidecar/oauth"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// authorizationTimeoutKey is how a host sets the bound of an OAuth flow.
const authorizationTimeoutKey = "limits.authorizationTimeoutMs"

// newAuthManager is the OAuth manager of one initialize: its credentials
// store, its flows' bound, and the restart of servers that waited for a
// flow that completed.
func (s *Server) newAuthManager(p *protocol.InitializeParams) *oauth.Manager {
	dir := p.CredentialsDir
	if dir == "" {
		d, err := oauth.DefaultStoreDir(s.opts.Env)
		if err != nil {
			s.logger.Warn("no OAuth credentials directory: servers that need authorization cannot keep a token", "err", err)
		}
		dir = d
	}
	timeout := oauth.DefaultTimeout
	if p.Limits != nil && p.Limits.AuthorizationTimeoutMs > 0 {
		timeout = millis(p.Limits.AuthorizationTimeoutMs)
	}
	var joined func(oauth.Key)
	if f := s.hook().authorizationJoined; f != nil {
		joined = func(k oauth.Key) { f(k.URL) }
	}
	return oauth.NewManager(oauth.Options{
		Joined:       joined,
		Store:        &oauth.Store{Dir: dir},
		Now:          s.now,
		Timeout:      timeout,
		TimeoutKey:   authorizationTimeoutKey,
		ClientName:   s.opts.Name,
		OnAuthorized: s.authorized,
		Logger:       s.logger,
		Keyring:      s.opts.Keyring,
	})
}

// oauthHandler is the OAuth handler of one connection of sc, or nil when
// OAuth does not apply. budget is the startup the connection belongs to.
func (sc *serverConn) oauthHandler(budget *startBudget) auth.OAuthHandler {
	sess := sc.sess
	srv, ok, err := oauth.ServerFor(sc.cfg, sess.srv.opts.Env)
	if !ok {
		return nil
	}
	if err != nil {
		return refusingHandler{err: err}
	}
	opts := oauth.HandlerOptions{WaitingForUser: budget.waitingForUser, WaitingForAnother: budget.waitingForAnother}
	if caps := sess.env.hostCaps.Authorization; caps != nil {
		opts.CatchesRedirect = caps.Redirect
		opts.Present = func(ctx context.Context, p oauth.Prompt) (oauth.PresentResult, error) {
			raw, err := sess.srv.callHost(ctx, protocol.RequestAuthorize, protocol.AuthorizeParams{
				SessionID: sess.id, Server: sc.name, AuthorizationURL: p.URL, RedirectURI: p.RedirectURI,
			})
			if err != nil {
				return oauth.PresentResult{}, err
			}
			var r protocol.AuthorizeResult
			if err := json.Unmarshal(raw, &r); err != nil {
				return oauth.PresentResult{}, fmt.Errorf("the host's answer to %s is not an AuthorizeResult: %w", protocol.RequestAuthorize, err)
			}
			return oauth.PresentResult{Cancelled: r.Cancelled, RedirectURL: r.RedirectURL}, nil
		}
	}
	return sess.env.auth.Handler(srv, opts)
}

// refusingHandler stands for a server whose OAuth configuration cannot be
// used: it asks for nothing until the server asks for authorization, and
// then says why there is none.
type refusingHandler struct{ err error }

func (refusingHandler) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (h refusingHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return h.err
}

// authorizationError turns an OAuth error of sc's startup into the error
// the host sees; ok is false for errors OAuth has no part in. A server
// that needs a user is needs_authorization; a configuration that cannot
// be used says so alone; a flow that failed is added to what the server
// answered.
func (sc *serverConn) authorizationError(err error) (*protocol.Error, bool) {
	var na *oauth.NeedsAuthorizationError
	var ce *oauth.ConfigError
	var fe *oauth.FlowError
	var se *oauth.ScopeError
	var re *oauth.RefreshError
	var ke *oauth.KeyringError
	switch {
	case errors.As(err, &na):
		return needsAuthorization(sc.name, na.URL, na.Error()), true
	case errors.As(err, &se):
		// One request needs a scope the user did not grant; the server
		// stays as it is for the others.
		return needsAuthorization(sc.name, "", se.Error()), true
	case errors.Is(err, oauth.ErrCancelled):
		return needsAuthorization(sc.name, "", fmt.Sprintf("server %q needs authorization: the user cancelled it (servers/reconnect asks again)", sc.name)), true
	case errors.As(err, &ce):
		return protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, ce.Error()).WithServer(sc.name, ""), true
	case errors.As(err, &ke):
		// A keychain may come back (unlocked, a D-Bus session started).
		return protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, ke.Error()).WithServer(sc.name, "").Retry(), true
	case errors.As(err, &re):
		// The token expired or was refused, and the authorization server
		// cannot renew it now: the next request tries again.
		return protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, re.Error()).WithServer(sc.name, "").Retry(), true
	case errors.As(err, &fe):
		prefix := fmt.Sprintf("server %q: ", sc.name)
		answered := strings.TrimPrefix(err.Error(), prefix)
		why := strings.TrimPrefix(fe.Error(), prefix)
		// A flow that began says it all; one that could not begin (no
		// authorization server found) goes with what the server answered.
		msg := fmt.Sprintf("server %q failed to start: %s", sc.name, why)
		if !fe.Began && !strings.Contains(answered, why) {
			msg = fmt.Sprintf("server %q failed to start: %s; %s", sc.name, answered, why)
		}
		return protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady, msg).WithServer(sc.name, "").Retry(), true
	}
	return nil, false
}

// callAuthorizationError is authorizationError for a request on a live
// connection: an authorization that failed during it (a step-up, a new
// authorization after a revoked grant) leaves the server up, and the
// request is one that needs an authorization it did not get; a 403 no
// authorization changes is the server's refusal of this request.
func (sc *serverConn) callAuthorizationError(err error) (*protocol.Error, bool) {
	var fe *oauth.FlowError
	var fb *oauth.ForbiddenError
	switch {
	case errors.As(err, &fb):
		return protocol.NewError(protocol.CodeInternalError, protocol.KindServerError, fb.Error()).WithServer(sc.name, ""), true
	case errors.As(err, &fe):
		return needsAuthorization(sc.name, "", fe.Error()+"; the next request asks again"), true
	}
	return sc.authorizationError(err)
}

// oauthClient is the base HTTP client of a connection authorized by h:
// its transport keeps a refusal of a request go-sdk sent again after an
// authorization from ending the connection (oauth.Handler.Transport). Nil
// (the default client) without OAuth.
func oauthClient(h auth.OAuthHandler) *http.Client {
	oh, ok := h.(*oauth.Handler)
	if !ok {
		return nil
	}
	return &http.Client{Transport: oh.Transport(nil)}
}

func needsAuthorization(server, url, msg string) *protocol.Error {
	e := protocol.NewError(protocol.CodeServerNotReady, protocol.KindNeedsAuthorization, msg).WithServer(server, "").Retry()
	e.Data.AuthorizationURL = url
	return e
}

// isNeedsAuthorization reports an error of kind needs_authorization.
func isNeedsAuthorization(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Data.Kind == protocol.KindNeedsAuthorization
}

// authorizationURLOf is the URL of a needs_authorization error.
func authorizationURLOf(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Data.AuthorizationURL
	}
	return ""
}

// pendingAuthorization is the URL of sc's flow waiting for the user, if
// one is.
func (sc *serverConn) pendingAuthorization() string {
	srv, ok, err := oauth.ServerFor(sc.cfg, sc.sess.srv.opts.Env)
	if !ok || err != nil {
		return ""
	}
	st, _ := sc.sess.env.auth.Status(srv)
	return st.PendingURL
}

// authorizationStatus is sc's authorization for servers/status: nil for a
// server that neither has a token nor asked for one.
func (sc *serverConn) authorizationStatus(state string) *protocol.ServerAuthorization {
	srv, ok, err := oauth.ServerFor(sc.cfg, sc.sess.srv.opts.Env)
	if !ok || err != nil {
		return nil
	}
	st, err := sc.sess.env.auth.Status(srv)
	if err != nil {
		sc.sess.srv.logger.Warn("credentials store", "server", sc.name, "err", err)
	}
	if !st.Authorized && st.PendingURL == "" && state != protocol.StateNeedsAuthorization {
		return nil
	}
	a := &protocol.ServerAuthorization{Authorized: st.Authorized, Refreshable: st.Refreshable, Scopes: st.Scopes, AuthorizationURL: st.PendingURL}
	if !st.ExpiresAt.IsZero() {
		a.ExpiresAt = st.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return a
}

// authorized restarts, in every session, the servers that wait for the
// authorization of key (a flow no one could present completed: someone
// opened its URL by hand). It runs on the flow's goroutine.
func (s *Server) authorized(key oauth.Key) {
	s.mu.Lock()
	sessions := make([]*Session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	for _, sess := range sessions {
		for _, sc := range sess.allServers() {
			srv, ok, err := oauth.ServerFor(sc.cfg, s.opts.Env)
			if !ok || err != nil || srv.Key().ID() != key.ID() {
				continue
			}
			sc.mu.Lock()
			waiting := sc.state == protocol.StateNeedsAuthorization
			sc.mu.Unlock()
			if waiting {
				sess.startLater(sc)
			}
		}
	}
}

func (s *Server) serversLogout(ctx context.Context, rq *request) (result, error) {
	var p protocol.ServerRequestParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	_, sc, err := s.sessionServer(ctx, rq, p.SessionID, p.Server)
	if err != nil {
		return result{}, err
	}
	srv, ok, _ := oauth.ServerFor(sc.cfg, s.opts.Env)
	if !ok {
		return result{value: protocol.LogoutResult{}}, nil
	}
	removed, err := sc.sess.env.auth.Logout(srv)
	if err != nil {
		return result{}, protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, fmt.Sprintf("server %q: logout: %v", sc.name, err)).WithServer(sc.name, "")
	}
	return result{value: protocol.LogoutResult{Removed: removed}}, nil
}
