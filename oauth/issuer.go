package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Credentials belong to the authorization server that issued them (MCP
// 2026-07-28, SEP-2352): a resource may move to another authorization
// server, which its protected resource metadata (RFC 9728) says, and a
// client must then not present what the old one issued (the refresh
// token, the registered client) to the new one, nor take the old tokens
// for good. Credentials.Issuer records the issuer of each authorization;
// a 401 reads the resource's metadata before anything is refreshed, and
// credentials of another issuer are forgotten, the flow that follows
// discovering the new authorization server and registering with it (the
// clients kept for registration are by registration endpoint, so one
// authorization server's client never reaches another; registrations.go).

// sameIssuer compares issuer identifiers as go-sdk does when it checks
// authorization server metadata: a trailing slash does not count.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// authorizationServer is the authorization server srv's protected
// resource metadata names now, found as go-sdk's flow finds it: the
// resource_metadata URL of the challenge in header, then the well-known
// URLs at the endpoint's path and at the root; without metadata (MCP
// 2025-03-26) the server's origin. "" when the metadata names none (the
// flow then fails saying so).
func (m *Manager) authorizationServer(ctx context.Context, srv Server, header http.Header) string {
	var fromChallenge string
	if cs, err := oauthex.ParseWWWAuthenticate(header.Values("WWW-Authenticate")); err == nil {
		for _, c := range cs {
			if u := c.Params["resource_metadata"]; u != "" {
				fromChallenge = u
				break
			}
		}
	}
	for _, p := range metadataURLs(fromChallenge, srv.URL) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, p.url, p.resource, m.opts.HTTPClient)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return ""
		}
		return prm.AuthorizationServers[0]
	}
	u, err := url.Parse(srv.URL)
	if err != nil {
		return ""
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = "", "", "", ""
	return u.String()
}

// metadataURL is where protected resource metadata may be, and the
// resource it must name there.
type metadataURL struct{ url, resource string }

// metadataURLs are the places of protected resource metadata in go-sdk's
// order (auth.AuthorizationCodeHandler's discovery, which it does not
// export).
func metadataURLs(fromChallenge, resource string) []metadataURL {
	var out []metadataURL
	if fromChallenge != "" {
		out = append(out, metadataURL{fromChallenge, resource})
	}
	ru, err := url.Parse(resource)
	if err != nil {
		return out
	}
	mu := *ru
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	out = append(out, metadataURL{mu.String(), resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	ru.Path = ""
	return append(out, metadataURL{mu.String(), ru.String()})
}

// boundTo reports whether c may be used with the authorization server
// issuer names: it issued them. Credentials without an issuer (kept
// before issuers were recorded) belong to it when its metadata names
// their token endpoint; they are then bound to it in the store. When that
// cannot be told (issuer unknown, its metadata unreachable, no token
// endpoint kept) they are taken as its: a refresh goes to the token
// endpoint that issued them, never to another server.
func (m *Manager) boundTo(ctx context.Context, srv Server, c *Credentials, issuer string) bool {
	switch {
	case issuer == "":
		return true
	case c.Issuer != "":
		return sameIssuer(c.Issuer, issuer)
	case c.TokenURL == "":
		return true
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, m.opts.HTTPClient)
	if err != nil {
		return true
	}
	tokenURL := strings.TrimSuffix(issuer, "/") + "/token" // go-sdk's fallback without metadata
	if asm != nil {
		tokenURL = asm.TokenEndpoint
	}
	if tokenURL != c.TokenURL {
		return false
	}
	m.bind(srv, c, issuer)
	return true
}

// bind records issuer as the issuer of srv's stored credentials, if they
// are still c's.
func (m *Manager) bind(srv Server, c *Credentials, issuer string) {
	now, err := m.stored(srv, true)
	if err != nil || now == nil || now.AccessToken != c.AccessToken || now.RefreshToken != c.RefreshToken {
		return
	}
	now.Issuer = issuer
	if err := m.keep(srv, now); err != nil {
		m.opts.Logger.Warn("the issuer of the credentials not recorded", "server", srv.Name, "err", err)
	}
}

// forgetMoved forgets srv's credentials c, which another authorization
// server issued than the one the server names now, unless they were
// replaced meanwhile.
func (m *Manager) forgetMoved(srv Server, c *Credentials, issuer string) {
	m.opts.Logger.Info("the server names another authorization server: its credentials are not used, authorizing again",
		"server", srv.Name, "issuer", c.Issuer, "now", issuer)
	now, err := m.stored(srv, true)
	if err != nil || now == nil || now.AccessToken != c.AccessToken || now.RefreshToken != c.RefreshToken {
		return
	}
	if _, err := m.forget(srv, c.RefreshToken); err != nil {
		m.opts.Logger.Warn("credentials not removed", "server", srv.Name, "err", err)
	}
}

// issuerTransport notes the issuer of the authorization server metadata a
// flow reads: go-sdk uses the first document it gets (after checking its
// issuer), and does not say which.
type issuerTransport struct {
	base http.RoundTripper

	mu     sync.Mutex
	issuer string
}

func (t *issuerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		!strings.Contains(req.URL.Path, "/.well-known/oauth-authorization-server") && !strings.Contains(req.URL.Path, "/.well-known/openid-configuration") {
		return resp, err
	}
	t.mu.Lock()
	seen := t.issuer != ""
	t.mu.Unlock()
	if seen {
		return resp, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if err != nil {
		return resp, nil // go-sdk reads what is left, and says what is wrong
	}
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if json.Unmarshal(data, &meta) == nil && meta.Issuer != "" {
		t.mu.Lock()
		if t.issuer == "" {
			t.issuer = meta.Issuer
		}
		t.mu.Unlock()
	}
	return resp, nil
}

// seen is the issuer noted, "" when none.
func (t *issuerTransport) seen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.issuer
}
