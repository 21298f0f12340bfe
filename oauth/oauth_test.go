package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
)

// newClock is the clock of token expiry.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
}

type env struct {
	t      *testing.T
	as     *oauthtest.AuthServer
	server *oauthtest.Server
	clock  *testclock.Clock
	store  *Store
	m      *Manager
	srv    Server
	// session is the session of connectMigrating.
	session *mcp.ClientSession

	authorized atomic.Int32
	// authorizedCh receives a key per completed flow.
	authorizedCh chan Key
	// refreshed receives the error of each refresh that ended.
	refreshed chan error
}

func newEnv(t *testing.T, cfg oauthtest.Config, scfg oauthtest.ServerConfig) *env {
	t.Helper()
	e := &env{t: t, clock: newClock(), authorizedCh: make(chan Key, 16), refreshed: make(chan error, 64)}
	e.as = oauthtest.NewAuthServer(t, cfg)
	e.server = oauthtest.NewServer(t, e.as, scfg)
	e.store = &Store{Dir: filepath.Join(t.TempDir(), "credentials")}
	e.m = NewManager(Options{
		// No test reaches the OS keychain.
		Keyring: newFakeKeyring(),
		Store:   e.store, Now: e.clock.Now, TimeoutKey: "limits.authorizationTimeoutMs",
		OnAuthorized: func(k Key) {
			e.authorized.Add(1)
			e.authorizedCh <- k
		},
		Refreshed: func(_ Key, err error) { e.refreshed <- err },
	})
	t.Cleanup(e.m.Close)
	e.srv = Server{Name: "remote", URL: e.server.URL()}
	return e
}

// browse is a presenter that approves at once, as a user in a browser
// would, and counts its calls.
func browse(calls *atomic.Int32) Presenter {
	return func(ctx context.Context, p Prompt) (PresentResult, error) {
		calls.Add(1)
		if _, _, err := oauthtest.Browse(ctx, p.URL); err != nil {
			return PresentResult{}, err
		}
		return PresentResult{}, nil
	}
}

// connectBrowsing connects through a presenter that approves at once and
// counts its calls; the session closes with the test.
func (e *env) connectBrowsing(t *testing.T) (*mcp.ClientSession, *atomic.Int32) {
	t.Helper()
	presented := new(atomic.Int32)
	s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: browse(presented)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, presented
}

// connect opens an MCP session with h as its OAuth handler.
func connect(ctx context.Context, url string, h *Handler) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func echo(t *testing.T, s *mcp.ClientSession, tool, text string) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != text || res.IsError {
		t.Fatalf("call %s = %q (isError %v), want %q", tool, got, res.IsError, text)
	}
}

func TestCodeFlowWithPKCEStoresTokenPrivately(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	s, presented := e.connectBrowsing(t)
	echo(t, s, "echo", "hi")

	got := e.as.Counts()
	if diff := cmp.Diff(oauthtest.Counts{Registrations: 1, Authorizations: 1, CodeExchanges: 1}, got); diff != "" {
		t.Errorf("authorization server counts (-want +got):\n%s", diff)
	}
	// OnAuthorized runs after the flow's waiters are released: wait for it.
	<-e.authorizedCh
	if presented.Load() != 1 || e.authorized.Load() != 1 {
		t.Errorf("presented %d times, OnAuthorized %d times; want 1 and 1", presented.Load(), e.authorized.Load())
	}
	q := e.as.LastAuthorization()
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != e.server.URL() || !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") || !strings.HasSuffix(q.Get("redirect_uri"), "/callback") {
		t.Errorf("authorization request %v: want S256, resource %s and a loopback /callback redirect", q, e.server.URL())
	}
	for path, want := range map[string]os.FileMode{e.store.Dir: 0o700, filepath.Join(e.store.Dir, "credentials.json"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, fi.Mode().Perm(), want)
		}
	}
	st, err := e.m.Status(e.srv)
	if err != nil || !st.Authorized || !st.Refreshable || !st.ExpiresAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Errorf("Status = %+v, %v; want authorized, refreshable, expiring in an hour on the test clock", st, err)
	}
}

func TestRefreshBeforeExpiry(t *testing.T) {
	e := newEnv(t, oauthtest.Config{AccessTTL: time.Hour}, oauthtest.ServerConfig{})
	s, _ := e.connectBrowsing(t)
	echo(t, s, "echo", "one")
	first := e.server.Tokens()[len(e.server.Tokens())-1]

	// Still valid by more than RefreshBefore: no refresh.
	e.clock.Advance(time.Hour - RefreshBefore - time.Second)
	echo(t, s, "echo", "two")
	if n := e.as.Counts().Refreshes; n != 0 {
		t.Fatalf("%d refreshes before the token was due, want 0", n)
	}
	// Within RefreshBefore of its expiry: still used, while the refresh
	// runs in the background; the next call has the new token.
	e.clock.Advance(2 * time.Second)
	echo(t, s, "echo", "three")
	if err := <-e.refreshed; err != nil {
		t.Fatalf("refresh: %v", err)
	}
	echo(t, s, "echo", "four")
	c := e.as.Counts()
	if c.Refreshes != 1 || c.Authorizations != 1 || e.server.Denied() != 1 {
		t.Errorf("counts %+v, denied %d: want 1 refresh, 1 authorization, and only the first 401", c, e.server.Denied())
	}
	if last := e.server.Tokens()[len(e.server.Tokens())-1]; last == first {
		t.Errorf("the call after the refresh used the old token")
	}
}

// An authorization server that is down while the token is due for
// renewal does not stop the server: the token, still valid, is used until
// it expires (the refresh is not tried again for RefreshRetry); once it
// has expired, the request fails saying why.
func TestTokenUsedUntilExpiryWhileRefreshFails(t *testing.T) {
	e := newEnv(t, oauthtest.Config{AccessTTL: time.Hour}, oauthtest.ServerConfig{})
	var tries atomic.Int32
	// down is set by the test once the authorization has completed, not
	// by OnAuthorized: that callback runs after the flow's waiters are
	// released, so a refresh could otherwise come first.
	var down atomic.Bool
	e.m.opts.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/token" && r.Method == http.MethodPost && down.Load() {
			tries.Add(1)
			return nil, errors.New("connection refused")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	s, _ := e.connectBrowsing(t)
	echo(t, s, "echo", "one")
	first := e.server.Tokens()[len(e.server.Tokens())-1]
	down.Store(true) // the authorization server is down from now on

	e.clock.Advance(time.Hour - RefreshBefore/2) // due, not expired
	echo(t, s, "echo", "two")
	if err := <-e.refreshed; err == nil {
		t.Fatal("the refresh succeeded with the authorization server down")
	}
	echo(t, s, "echo", "three")
	if n := tries.Load(); n != 1 {
		t.Errorf("%d refreshes tried, want 1 (none again within RefreshRetry)", n)
	}
	for _, tok := range e.server.Tokens() {
		if tok != first {
			t.Errorf("a request went with %q, not the valid token", tok)
		}
	}
	e.clock.Advance(RefreshRetry)
	echo(t, s, "echo", "four")
	<-e.refreshed
	if n := tries.Load(); n != 2 {
		t.Errorf("%d refreshes tried after RefreshRetry, want 2", n)
	}

	e.clock.Advance(RefreshBefore) // expired: nothing left to use
	_, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "five"}})
	if err == nil || !strings.Contains(err.Error(), "refreshing the access token") {
		t.Errorf("call with the token expired and no refresh possible: %v; want an error saying the refresh failed", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRefreshOn401(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	s, presented := e.connectBrowsing(t)
	echo(t, s, "echo", "one")
	e.as.RevokeAccess() // the server forgets the token before it expires
	echo(t, s, "echo", "two")
	c := e.as.Counts()
	if c.Refreshes != 1 || c.Authorizations != 1 || presented.Load() != 1 {
		t.Errorf("counts %+v, presented %d: want the 401 answered by one refresh, no new authorization", c, presented.Load())
	}
}

func TestRevokedRefreshTokenAuthorizesAgainOnce(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	s, presented := e.connectBrowsing(t)
	echo(t, s, "echo", "one")
	e.as.RevokeAll()
	echo(t, s, "echo", "two")
	c := e.as.Counts()
	if c.RefreshDenied != 1 || c.Authorizations != 2 || c.CodeExchanges != 2 || presented.Load() != 2 {
		t.Errorf("counts %+v, presented %d: want one refused refresh and exactly one new authorization", c, presented.Load())
	}
}

func TestWrongStateIsRejected(t *testing.T) {
	t.Run("on the loopback listener", func(t *testing.T) {
		e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
		var forged int
		present := func(ctx context.Context, p Prompt) (PresentResult, error) {
			loc, err := oauthtest.RedirectOf(ctx, p.URL)
			if err != nil {
				return PresentResult{}, err
			}
			u, _ := url.Parse(loc)
			q := u.Query()
			real := q.Get("state")
			q.Set("state", "forged")
			u.RawQuery = q.Encode()
			_, forged, err = oauthtest.Browse(ctx, u.String())
			if err != nil {
				return PresentResult{}, err
			}
			q.Set("state", real)
			u.RawQuery = q.Encode()
			_, _, err = oauthtest.Browse(ctx, u.String())
			return PresentResult{}, err
		}
		s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if forged != http.StatusBadRequest {
			t.Errorf("redirect with a forged state answered %d, want 400", forged)
		}
		echo(t, s, "echo", "the right state still completes")
	})
	t.Run("caught by the host", func(t *testing.T) {
		e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
		present := func(ctx context.Context, p Prompt) (PresentResult, error) {
			loc, err := oauthtest.RedirectOf(ctx, p.URL)
			if err != nil {
				return PresentResult{}, err
			}
			return PresentResult{RedirectURL: strings.Replace(loc, "state=", "state=x", 1)}, nil
		}
		_, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present, CatchesRedirect: true}))
		if err == nil || !strings.Contains(err.Error(), "state mismatch") {
			t.Fatalf("connect = %v, want a state mismatch", err)
		}
		if n := e.as.Counts().CodeExchanges; n != 0 {
			t.Errorf("%d code exchanges after a wrong state, want 0", n)
		}
	})
}

func TestIssuerMismatchIsRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  oauthtest.Config
		want string
	}{
		{"metadata issuer", oauthtest.Config{Issuer: "https://issuer.example"}, `does not match issuer URL`},
		{"iss on the redirect", oauthtest.Config{IssParameter: true, WrongIss: "https://other.example"}, `does not match expected issuer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg, oauthtest.ServerConfig{})
			var presented atomic.Int32
			_, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: browse(&presented)}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("connect = %v, want an error containing %q", err, tc.want)
			}
			if n := e.as.Counts().CodeExchanges; n != 0 {
				t.Errorf("%d code exchanges, want 0", n)
			}
			if st, _ := e.m.Status(e.srv); st.Authorized {
				t.Errorf("credentials stored after an issuer mismatch")
			}
		})
	}
}

func TestConcurrentConnectionsShareOneFlow(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	joined := make(chan struct{})
	e.m.opts.Joined = func(Key) { close(joined) }
	var presented atomic.Int32
	present := func(ctx context.Context, p Prompt) (PresentResult, error) {
		presented.Add(1)
		select { // the user is slow: the second connection arrives meanwhile
		case <-joined:
		case <-ctx.Done():
			return PresentResult{}, ctx.Err()
		}
		_, _, err := oauthtest.Browse(ctx, p.URL)
		return PresentResult{}, err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present}))
			if err == nil {
				defer s.Close()
				_, err = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if c := e.as.Counts(); presented.Load() != 1 || c.Authorizations != 1 || c.Registrations != 1 {
		t.Errorf("presented %d, counts %+v: want one flow for both connections", presented.Load(), c)
	}
}

func TestWithoutPresenterTheURLIsReportedAndTheFlowWaits(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	_, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{}))
	var na *NeedsAuthorizationError
	if !errors.As(err, &na) || na.URL == "" || na.Server != "remote" {
		t.Fatalf("connect = %v, want a *NeedsAuthorizationError with the URL", err)
	}
	if st, _ := e.m.Status(e.srv); st.PendingURL != na.URL || st.Authorized {
		t.Errorf("Status = %+v, want pending at %s and not authorized", st, na.URL)
	}
	// Someone opens the URL by hand; the flow completes on its own.
	if _, status, err := oauthtest.Browse(t.Context(), na.URL); err != nil || status != http.StatusOK {
		t.Fatalf("browse = %d, %v", status, err)
	}
	select {
	case <-e.authorizedCh:
	case <-t.Context().Done():
		t.Fatal("the flow did not complete")
	}
	s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{}))
	if err != nil {
		t.Fatalf("connect after authorizing: %v", err)
	}
	defer s.Close()
	echo(t, s, "echo", "now authorized")
}

func TestCancelledByTheUser(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	present := func(context.Context, Prompt) (PresentResult, error) { return PresentResult{Cancelled: true}, nil }
	_, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present}))
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("connect = %v, want ErrCancelled", err)
	}
}

func TestStepUpAsksForTheUnionOfScopes(t *testing.T) {
	e := newEnv(t, oauthtest.Config{ScopesSupported: []string{"read", "write"}}, oauthtest.ServerConfig{Scopes: []string{"read"}, ToolScopes: map[string][]string{"publish": {"write"}}})
	s, presented := e.connectBrowsing(t)
	if got := e.as.LastAuthorization().Get("scope"); got != "read" {
		t.Errorf("first authorization asked for %q, want read", got)
	}
	echo(t, s, "publish", "needs write")
	// go-sdk unions scopes through a map: their order is not kept.
	if got := strings.Fields(e.as.LastAuthorization().Get("scope")); !slices.Equal(sorted(got), []string{"read", "write"}) {
		t.Errorf("step-up asked for %q, want read and write", got)
	}
	if presented.Load() != 2 {
		t.Errorf("presented %d times, want 2 (one step-up)", presented.Load())
	}
	st, _ := e.m.Status(e.srv)
	if !slices.Equal(st.Scopes, []string{"read", "write"}) {
		t.Errorf("granted scopes %v, want read and write", st.Scopes)
	}
}

func TestTimeoutNamesItsKey(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	m := NewManager(Options{Store: e.store, Timeout: time.Millisecond, TimeoutKey: "limits.authorizationTimeoutMs"})
	defer m.Close()
	// The host opened the URL, and the user never came back.
	present := func(context.Context, Prompt) (PresentResult, error) { return PresentResult{}, nil }
	_, err := connect(t.Context(), e.server.URL(), m.Handler(e.srv, HandlerOptions{Present: present}))
	if err == nil || !strings.Contains(err.Error(), "limits.authorizationTimeoutMs") {
		t.Fatalf("connect = %v, want the timeout naming limits.authorizationTimeoutMs", err)
	}
}

func TestLogoutForgets(t *testing.T) {
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	e.connectBrowsing(t)
	removed, err := e.m.Logout(e.srv)
	if err != nil || !removed {
		t.Fatalf("Logout = %v, %v; want true", removed, err)
	}
	data, err := os.ReadFile(filepath.Join(e.store.Dir, "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range e.as.Issued() {
		if strings.Contains(string(data), tok) {
			t.Errorf("the credentials file still holds a token after logout")
		}
	}
	if removed, _ := e.m.Logout(e.srv); removed {
		t.Errorf("second Logout removed something")
	}
}

func TestStoreRefusesFilesOthersCanRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "credentials")
	st := &Store{Dir: dir}
	if err := st.Update(func(e map[string]*Credentials) error {
		e["k"] = &Credentials{Server: "s", AccessToken: "secret"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Load(); err != nil {
		t.Fatalf("Load of a private file: %v", err)
	}
	file := filepath.Join(dir, "credentials.json")
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{{file, 0o644}, {dir, 0o755}} {
		if err := os.Chmod(tc.path, tc.mode); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Load(); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Load with %s at mode %o = %v, want ErrUnsafe", filepath.Base(tc.path), tc.mode, err)
		}
		want := os.FileMode(0o600)
		if tc.path == dir {
			want = 0o700
		}
		os.Chmod(tc.path, want)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
