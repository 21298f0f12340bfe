package oauth

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// An authorization server that offers dynamic client registration (RFC
// 7591) gets one registration from the sidecar, not one per authorization:
// the client it registered is kept in the credentials store, by the
// registration endpoint (which belongs to one authorization server), and
// the next flow with that server, for this server or another it
// authorizes, uses it. go-sdk registers on its own inside its flow; the
// flow's HTTP client (registrationTransport) answers its registration
// request from the store when a kept client fits, and keeps the client an
// authorization server registers.
//
// A registration names its redirect URIs, and the default one has a port
// the system picked: a flow listens on the port of the last registration
// kept (lastRegisteredPort) when it is free, so that the kept client fits.

// Registration is a client an authorization server registered. It holds
// nothing the credentials of the servers it authorized do not: its id and
// the secret the server issued (not the registration access token of RFC
// 7592, which the sidecar never uses).
type Registration struct {
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientSecretExpiresAt is when the secret expires (zero: never).
	ClientSecretExpiresAt time.Time `json:"clientSecretExpiresAt,omitzero"`
	// TokenEndpointAuthMethod is how the client authenticates at the
	// token endpoint ("" is client_secret_basic, RFC 7591).
	TokenEndpointAuthMethod string    `json:"tokenEndpointAuthMethod,omitempty"`
	RedirectURIs            []string  `json:"redirectUris"`
	RegisteredAt            time.Time `json:"registeredAt"`
}

// fits reports whether r can stand for a registration with the redirect
// URIs asked, at now: it has them all, and its secret has not expired.
func (r *Registration) fits(redirectURIs []string, now time.Time) bool {
	if r.ClientID == "" || !r.ClientSecretExpiresAt.IsZero() && !now.Before(r.ClientSecretExpiresAt) {
		return false
	}
	for _, u := range redirectURIs {
		if !slices.Contains(r.RedirectURIs, u) {
			return false
		}
	}
	return true
}

// registration is the client kept for a registration endpoint, or nil.
func (m *Manager) registration(endpoint string) *Registration {
	f, _, err := m.opts.Store.load()
	if err != nil {
		return nil
	}
	return f.Registrations[endpoint]
}

// keepRegistration stores r as the client of a registration endpoint.
func (m *Manager) keepRegistration(endpoint string, r *Registration) {
	err := m.opts.Store.update(func(f *storeFileFormat) error {
		f.Registrations[endpoint] = r
		return nil
	})
	if err != nil {
		m.opts.Logger.Warn("client registration not kept", "err", err)
	}
}

// forgetRegistration removes the client of a registration endpoint if it
// is still clientID: a flow that used it failed, and the authorization
// server may have forgotten it (the next flow registers anew).
func (m *Manager) forgetRegistration(endpoint, clientID string) {
	err := m.opts.Store.update(func(f *storeFileFormat) error {
		if r := f.Registrations[endpoint]; r != nil && r.ClientID == clientID {
			delete(f.Registrations, endpoint)
		}
		return nil
	})
	if err != nil {
		m.opts.Logger.Warn("client registration not removed", "err", err)
	}
}

// lastRegisteredPort is the port of the default loopback redirect URI
// (http://127.0.0.1:PORT/callback) of the latest kept registration, 0 when
// none has one.
func (m *Manager) lastRegisteredPort() int {
	f, _, err := m.opts.Store.load()
	if err != nil {
		return 0
	}
	var latest time.Time
	port := 0
	for _, r := range f.Registrations {
		for _, raw := range r.RedirectURIs {
			u, err := url.Parse(raw)
			if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Path != "/callback" {
				continue
			}
			if p, err := strconv.Atoi(u.Port()); err == nil && p > 0 && (port == 0 || r.RegisteredAt.After(latest)) {
				port, latest = p, r.RegisteredAt
			}
		}
	}
	return port
}

// registrationTransport is the HTTP client of one flow as far as client
// registration goes: a registration request (a JSON POST of client
// metadata) is answered with the kept client of its endpoint when that
// fits, and otherwise sent, the client it gets being kept.
type registrationTransport struct {
	base http.RoundTripper
	m    *Manager

	mu sync.Mutex
	// reusedAt and reusedID are the endpoint and client id of a kept
	// registration this flow used.
	reusedAt, reusedID string
}

// reused is the endpoint and client id of the kept registration the flow
// used ("" when it used none).
func (t *registrationTransport) reused() (endpoint, clientID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reusedAt, t.reusedID
}

func (t *registrationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if req.Method != http.MethodPost || mt != "application/json" || req.GetBody == nil {
		return t.base.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return t.base.RoundTrip(req)
	}
	raw, err := io.ReadAll(io.LimitReader(body, 1<<20))
	body.Close()
	var meta oauthex.ClientRegistrationMetadata
	if err != nil || json.Unmarshal(raw, &meta) != nil || len(meta.RedirectURIs) == 0 {
		return t.base.RoundTrip(req)
	}
	endpoint := req.URL.String()
	if r := t.m.registration(endpoint); r != nil && r.fits(meta.RedirectURIs, t.m.opts.Now()) {
		t.mu.Lock()
		t.reusedAt, t.reusedID = endpoint, r.ClientID
		t.mu.Unlock()
		return registrationResponse(req, r)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return resp, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var got oauthex.ClientRegistrationResponse
	if err != nil || json.Unmarshal(data, &got) != nil || got.ClientID == "" {
		return resp, nil // go-sdk reports what is wrong with it
	}
	r := &Registration{
		ClientID: got.ClientID, ClientSecret: got.ClientSecret, ClientSecretExpiresAt: got.ClientSecretExpiresAt,
		TokenEndpointAuthMethod: got.TokenEndpointAuthMethod, RedirectURIs: got.RedirectURIs, RegisteredAt: t.m.opts.Now(),
	}
	if len(r.RedirectURIs) == 0 {
		r.RedirectURIs = meta.RedirectURIs
	}
	t.m.keepRegistration(endpoint, r)
	return resp, nil
}

// registrationResponse is the answer an authorization server gave when it
// registered r, as go-sdk reads it.
func registrationResponse(req *http.Request, r *Registration) (*http.Response, error) {
	data, err := json.Marshal(&oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: oauthex.ClientRegistrationMetadata{RedirectURIs: r.RedirectURIs, TokenEndpointAuthMethod: r.TokenEndpointAuthMethod},
		ClientID:                   r.ClientID, ClientSecret: r.ClientSecret, ClientSecretExpiresAt: r.ClientSecretExpiresAt,
	})
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status: "201 Created", StatusCode: http.StatusCreated, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(string(data))),
		ContentLength: int64(len(data)),
		Request:       req,
	}, nil
}
