package oauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
)

// The loopback listener takes one redirect: a second one while the flow
// exchanges the code gets 410, and the port closes with the flow.
func TestLoopbackListenerIsOneUse(t *testing.T) {
	var mu sync.Mutex
	var redirect string // where the authorization server sent the browser
	var again int       // the status of a second visit
	var againErr error
	e := newEnv(t, oauthtest.Config{OnToken: func(form url.Values) {
		if form.Get("grant_type") != "authorization_code" {
			return
		}
		// The code is being exchanged: the flow, and its listener, are
		// still there.
		mu.Lock()
		defer mu.Unlock()
		_, again, againErr = oauthtest.Browse(context.Background(), redirect)
	}}, oauthtest.ServerConfig{})
	present := func(ctx context.Context, p Prompt) (PresentResult, error) {
		loc, err := oauthtest.RedirectOf(ctx, p.URL)
		if err != nil {
			return PresentResult{}, err
		}
		mu.Lock()
		redirect = loc
		mu.Unlock()
		// A browser shows the page whether or not the sidecar still
		// waits: not ctx, which ends as the redirect arrives.
		if _, status, err := oauthtest.Browse(context.WithoutCancel(ctx), loc); err != nil || status != http.StatusOK {
			t.Errorf("first redirect: %d, %v; want 200", status, err)
		}
		return PresentResult{}, nil
	}
	s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mu.Lock()
	defer mu.Unlock()
	if againErr != nil || again != http.StatusGone {
		t.Errorf("second redirect during the exchange: %d, %v; want 410", again, againErr)
	}
	if _, _, err := oauthtest.Browse(t.Context(), redirect); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("redirect after the flow: %v; want connection refused (the listener closed)", err)
	}
}

// oauth_resource is the resource of the authorization request and of
// every token request: the code exchange and the refreshes.
func TestConfiguredResourceIsAskedForEverywhere(t *testing.T) {
	const resource = "https://api.example/tenant-7"
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	e.srv.Resource = resource
	var presented atomic.Int32
	s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: browse(&presented)}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	echo(t, s, "echo", "one")
	e.clock.Advance(time.Hour) // refreshed before the next use
	echo(t, s, "echo", "two")

	if got := e.as.LastAuthorization().Get("resource"); got != resource {
		t.Errorf("authorization request resource %q, want %q", got, resource)
	}
	type tokenRequest struct{ Grant, Resource string }
	var got []tokenRequest
	for _, f := range e.as.TokenRequests() {
		got = append(got, tokenRequest{f.Get("grant_type"), f.Get("resource")})
	}
	want := []tokenRequest{{"authorization_code", resource}, {"refresh_token", resource}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
}

// A refresh token the authorization server refuses (invalid_grant) leads
// to one new authorization, whether the refresh was made because the
// server answered 401 or because the token was about to expire.
func TestRefusedRefreshAuthorizesAgainOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fresh func(e *env) // makes the stored access token unusable
	}{
		{"on 401", func(e *env) {}},
		{"before expiry", func(e *env) { e.clock.Advance(time.Hour - RefreshBefore/2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
			s, presented := e.connectBrowsing(t)
			echo(t, s, "echo", "one")
			denied := e.server.Denied()
			e.as.RevokeAll()
			tc.fresh(e)
			echo(t, s, "echo", "two")
			c := e.as.Counts()
			want := oauthtest.Counts{Registrations: 1, Authorizations: 2, CodeExchanges: 2, RefreshDenied: 1}
			if diff := cmp.Diff(want, c); diff != "" || presented.Load() != 2 {
				t.Errorf("presented %d (want 2); authorization server counts (-want +got):\n%s", presented.Load(), diff)
			}
			if n := e.server.Denied() - denied; n != 1 {
				t.Errorf("%d requests denied after the revocation, want 1 (the one that asked again)", n)
			}
		})
	}
}

// A server that keeps answering 403 insufficient_scope (the authorization
// server never grants the scope) gets one new authorization per call, and
// the call fails saying which scopes are missing; the session survives it.
func TestStepUpOncePerCall(t *testing.T) {
	e := newEnv(t, oauthtest.Config{ScopesSupported: []string{"read", "write"}, MaxScopes: []string{"read"}},
		oauthtest.ServerConfig{Scopes: []string{"read"}, ToolScopes: map[string][]string{"publish": {"write"}}})
	s, presented := e.connectBrowsing(t)
	echo(t, s, "echo", "read is granted")
	for call := 1; call <= 2; call++ {
		_, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "publish", Arguments: map[string]any{"text": "x"}})
		if err == nil || !strings.Contains(err.Error(), `server "remote"`) || !strings.Contains(err.Error(), "write") || !strings.Contains(err.Error(), "insufficient_scope") {
			t.Fatalf("call %d: %v; want an error naming the server and the missing scope write", call, err)
		}
		if got, want := presented.Load(), int32(1+call); got != want {
			t.Errorf("after call %d: presented %d times, want %d (one step-up per call)", call, got, want)
		}
	}
	echo(t, s, "echo", "the session still works")
}

// A client registered dynamically is kept, per authorization server, and
// used by every later authorization with that server: a new authorization
// of the same server, and the first of another server it protects. A flow
// that used a kept client and failed forgets it (the authorization server
// may have): the next one registers anew.
func TestClientRegistrationKeptPerAuthorizationServer(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	s, presented := e.connectBrowsing(t)
	echo(t, s, "echo", "one")
	first := e.as.LastAuthorization()

	e.as.RevokeAll() // the grant is gone: a new authorization
	echo(t, s, "echo", "two")
	again := e.as.LastAuthorization()
	if c := e.as.Counts(); c.Registrations != 1 || c.Authorizations != 2 || presented.Load() != 2 {
		t.Errorf("after a new authorization: counts %+v, presented %d; want 2 authorizations and still 1 registration", c, presented.Load())
	}
	for _, k := range []string{"client_id", "redirect_uri"} {
		if first.Get(k) != again.Get(k) {
			t.Errorf("%s: %q, then %q; want the kept client's", k, first.Get(k), again.Get(k))
		}
	}

	// Another server of the same authorization server.
	other := oauthtest.NewServer(t, e.as, oauthtest.ServerConfig{})
	s2, err := connect(t.Context(), other.URL(), e.m.Handler(Server{Name: "other", URL: other.URL()}, HandlerOptions{Present: browse(new(atomic.Int32))}))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	echo(t, s2, "echo", "three")
	if c := e.as.Counts(); c.Registrations != 1 || c.Authorizations != 3 {
		t.Errorf("after another server's authorization: counts %+v; want 3 authorizations and still 1 registration", c)
	}

	// A flow with the kept client fails (here at the code exchange): the
	// next flow registers a new client.
	e.as.RevokeAll()
	e.as.FailTokens("invalid_grant")
	if _, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Fatal("a call whose authorization failed succeeded")
	}
	e.as.FailTokens("")
	echo(t, s, "echo", "four")
	if c := e.as.Counts(); c.Registrations != 2 {
		t.Errorf("after a failed flow with the kept client: counts %+v; want a second registration", c)
	}
}

// connectVia is connect with the handler's Transport under the client, as
// the sidecar connects.
func connectVia(ctx context.Context, url string, h *Handler) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h, HTTPClient: &http.Client{Transport: h.Transport(nil)}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// A request answered 401 (the token revoked early) is refreshed with the
// scopes granted so far; when the server then answers 403
// insufficient_scope (the tool needs more), go-sdk would fail the whole
// connection: under the handler's Transport the step-up is made on the
// same request, and the session lives on.
func TestStepUpAfterA401OnTheSameRequest(t *testing.T) {
	e := newEnv(t, oauthtest.Config{ScopesSupported: []string{"read", "write"}},
		oauthtest.ServerConfig{Scopes: []string{"read"}, ToolScopes: map[string][]string{"publish": {"write"}}})
	presented := new(atomic.Int32)
	h := e.m.Handler(e.srv, HandlerOptions{Present: browse(presented)})
	s, err := connectVia(t.Context(), e.server.URL(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	echo(t, s, "echo", "read is granted")
	e.as.RevokeAccess() // 401, answered by a refresh of the read grant
	echo(t, s, "publish", "stepped up")
	if c := e.as.Counts(); c.Refreshes != 1 || presented.Load() != 2 {
		t.Errorf("counts %+v, presented %d: want one refresh and one step-up", c, presented.Load())
	}
	echo(t, s, "echo", "the session still works")
}

// A 403 that is not insufficient_scope fails its request alone: go-sdk
// sends it again after asking the handler (which has nothing to do), and
// the second 403 would end the connection.
func TestForbiddenFailsTheRequestAlone(t *testing.T) {
	ms := mcp.NewServer(&mcp.Implementation{Name: "forbidding", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"forbidden text"`)) {
			http.Error(w, "not for you", http.StatusForbidden)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	s, err := connectVia(t.Context(), srv.URL, e.m.Handler(Server{Name: "forbidding", URL: srv.URL}, HandlerOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "forbidden text"}})
	var fe *ForbiddenError
	if !errors.As(err, &fe) || fe.Server != "forbidding" {
		t.Fatalf("forbidden call: %v; want a *ForbiddenError naming the server", err)
	}
	echo(t, s, "echo", "the session still works")
}
