package oauth

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/oauthtest"
)

// connectMigrating connects as the sidecar does (the handler's Transport
// under the client) through a presenter that approves at once.
func (e *env) connectMigrating(t *testing.T) *atomic.Int32 {
	t.Helper()
	presented := new(atomic.Int32)
	s, err := connectVia(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: browse(presented)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e.session = s
	return presented
}

// storedIssuer is the issuer recorded with the server's credentials.
func (e *env) storedIssuer(t *testing.T) string {
	t.Helper()
	c, err := e.m.stored(e.srv, true)
	if err != nil || c == nil {
		t.Fatalf("stored credentials: %v, %v", c, err)
	}
	return c.Issuer
}

// A server that moves to another authorization server (its protected
// resource metadata names a new one, SEP-2352) is authorized anew there:
// the old refresh token is sent nowhere, the client registers with the new
// server, and no client id, secret or token of the old server reaches the
// new one. Moving back authorizes again with the first server (and the
// client kept for it).
func TestAuthorizationServerMigration(t *testing.T) {
	for _, tc := range []struct {
		name string
		// unbind removes the issuer from the stored credentials, as kept
		// by a sidecar that did not record it.
		unbind bool
	}{
		{name: "issuer recorded"},
		{name: "issuer not recorded", unbind: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
			as1 := e.as
			as2 := oauthtest.NewAuthServer(t, oauthtest.Config{})
			presented := e.connectMigrating(t)
			echo(t, e.session, "echo", "one")
			if got := e.storedIssuer(t); got != as1.URL() {
				t.Errorf("issuer stored %q, want %q", got, as1.URL())
			}
			if tc.unbind {
				e.unbind(t)
			}
			old := as1.Issued()
			oldClient := as1.LastAuthorization().Get("client_id")
			before1 := as1.Counts()

			e.server.MoveTo(as2)
			echo(t, e.session, "echo", "two")

			if diff := cmp.Diff(before1, as1.Counts()); diff != "" {
				t.Errorf("the first authorization server was asked again after the move (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(oauthtest.Counts{Registrations: 1, Authorizations: 1, CodeExchanges: 1}, as2.Counts()); diff != "" {
				t.Errorf("new authorization server counts (-want +got):\n%s", diff)
			}
			if presented.Load() != 2 {
				t.Errorf("presented %d times, want 2 (one authorization per server)", presented.Load())
			}
			if got := as2.LastAuthorization().Get("client_id"); got == oldClient {
				t.Errorf("the new authorization server saw the old client id %q", got)
			}
			for _, form := range as2.TokenRequests() {
				for k, vs := range form {
					for _, v := range vs {
						if v == oldClient || slices.Contains(old, v) {
							t.Errorf("token request to the new authorization server sent %s=%q, the old server's", k, v)
						}
					}
				}
			}
			if got := e.storedIssuer(t); got != as2.URL() {
				t.Errorf("issuer stored %q after the move, want %q", got, as2.URL())
			}
			if last := e.server.Tokens()[len(e.server.Tokens())-1]; !slices.Contains(as2.Issued(), last) {
				t.Errorf("the call after the move went with %q, not a token of the new server", last)
			}

			// Back to the first: authorized there again, with its kept client.
			e.server.MoveTo(as1)
			echo(t, e.session, "echo", "three")
			c1 := as1.Counts()
			if c1.Registrations != 1 || c1.Authorizations != 2 || c1.Refreshes != before1.Refreshes {
				t.Errorf("first authorization server after moving back: %+v; want a second authorization, no new registration, no refresh", c1)
			}
			if got := as1.LastAuthorization().Get("client_id"); got != oldClient {
				t.Errorf("moving back used client %q, want the kept %q", got, oldClient)
			}
			if got := e.storedIssuer(t); got != as1.URL() {
				t.Errorf("issuer stored %q after moving back, want %q", got, as1.URL())
			}
		})
	}
}

// Credentials kept without their issuer are bound to the authorization
// server whose metadata names their token endpoint: a 401 from a server
// that did not move is answered by a refresh, as ever, and the issuer is
// recorded.
func TestCredentialsWithoutIssuerAreBoundOnRefresh(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	presented := e.connectMigrating(t)
	echo(t, e.session, "echo", "one")
	e.unbind(t)
	e.as.RevokeAccess()
	echo(t, e.session, "echo", "two")
	if c := e.as.Counts(); c.Refreshes != 1 || c.Authorizations != 1 || presented.Load() != 1 {
		t.Errorf("counts %+v, presented %d: want the 401 answered by one refresh", c, presented.Load())
	}
	if got := e.storedIssuer(t); got != e.as.URL() {
		t.Errorf("issuer stored %q, want %q", got, e.as.URL())
	}
}

// unbind removes the issuer from the stored credentials.
func (e *env) unbind(t *testing.T) {
	t.Helper()
	err := e.store.Update(func(entries map[string]*Credentials) error {
		for _, c := range entries {
			c.Issuer = ""
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m.invalidate()
}
