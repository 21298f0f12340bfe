package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
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

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
	"github.com/mcp-sidecar/mcp-sidecar/oauth"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// oauthSetup is a protected MCP server, its authorization server, and a
// host whose sidecar keeps credentials in a folder of the test.
type oauthSetup struct {
	as       *oauthtest.AuthServer
	server   *oauthtest.Server
	h        *harness
	clock    *testclock.Clock
	credsDir string

	mu        sync.Mutex
	authorize []protocol.AuthorizeParams // mcp/authorize requests seen
}

// newOAuthSetup starts the servers and a harness; answer, when set,
// answers mcp/authorize (after it is recorded).
func newOAuthSetup(t *testing.T, hooks sidecar.Hooks, answer func(ctx context.Context, p protocol.AuthorizeParams) (any, error)) *oauthSetup {
	t.Helper()
	return newOAuthSetupWith(t, oauthOptions{hooks: hooks}, answer)
}

// oauthOptions shape an oauthSetup beyond the defaults.
type oauthOptions struct {
	auth   oauthtest.Config
	server oauthtest.ServerConfig
	hooks  sidecar.Hooks
	logger *slog.Logger // the sidecar's own logs; nil: discarded
	// keyring is the OS keychain; nil: none (noKeychain).
	keyring oauth.Keyring
}

func newOAuthSetupWith(t *testing.T, opts oauthOptions, answer func(ctx context.Context, p protocol.AuthorizeParams) (any, error)) *oauthSetup {
	t.Helper()
	o := &oauthSetup{clock: newFakeClock(), credsDir: filepath.Join(t.TempDir(), "credentials")}
	o.as = oauthtest.NewAuthServer(t, opts.auth)
	o.server = oauthtest.NewServer(t, o.as, opts.server)
	opts.hooks.Now = o.clock.Now
	if opts.logger == nil {
		opts.logger = slog.New(slog.DiscardHandler)
	}
	o.h = newOptionsHarness(t, opts.hooks, opts.logger, func(so *sidecar.Options) {
		if opts.keyring != nil {
			so.Keyring = opts.keyring
		}
	})
	o.h.onRequest = func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if method != protocol.RequestAuthorize {
			return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, method)
		}
		var p protocol.AuthorizeParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		o.mu.Lock()
		o.authorize = append(o.authorize, p)
		o.mu.Unlock()
		return answer(ctx, p)
	}
	return o
}

// browser answers mcp/authorize as a host that opens the URL, where the
// user approves at once.
func browser(ctx context.Context, p protocol.AuthorizeParams) (any, error) {
	if _, _, err := oauthtest.Browse(ctx, p.AuthorizationURL); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (o *oauthSetup) requests() []protocol.AuthorizeParams {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.authorize)
}

// init initializes with one server, "remote", and the host capabilities.
func (o *oauthSetup) init(caps map[string]any, cfg *config.ServerConfig) {
	if cfg == nil {
		cfg = &config.ServerConfig{}
	}
	cfg.URL = o.server.URL()
	extra := map[string]any{"credentialsDir": o.credsDir}
	if caps != nil {
		extra["capabilities"] = caps
	}
	o.h.initialize(map[string]*config.ServerConfig{"remote": cfg}, extra)
}

// startSession initializes with capabilities.authorization and opens
// session s1, whose round 0 it waits for.
func (o *oauthSetup) startSession() {
	o.init(map[string]any{"authorization": map[string]any{}}, nil)
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	o.h.waitComplete("s1", 0)
}

func (o *oauthSetup) status(session string) protocol.ServerStatus {
	o.h.t.Helper()
	var res protocol.ServersStatusResult
	if err := o.h.call(protocol.MethodServersStatus, map[string]any{"sessionId": session}, &res); err != nil {
		o.h.t.Fatal(err)
	}
	return res.Servers[0]
}

func (o *oauthSetup) echo(session, text string) error {
	res, err := o.h.callTool(map[string]any{"sessionId": session, "server": "remote", "tool": "echo", "arguments": map[string]any{"text": text}})
	if err == nil && !bytes.Contains(res, []byte(text)) {
		o.h.t.Errorf("echo %q = %s", text, res)
	}
	return err
}

func TestAuthorizationCodeFlowThroughTheHost(t *testing.T) {
	o := newOAuthSetup(t, sidecar.Hooks{}, browser)
	o.init(map[string]any{"authorization": map[string]any{}}, nil)
	sess := o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	if c := o.h.waitComplete(sess.SessionID, 0); !slices.Equal(c.Ready, []string{"remote"}) {
		t.Fatalf("startupComplete %+v, want remote ready", c)
	}
	reqs := o.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d mcp/authorize requests, want 1", len(reqs))
	}
	u, err := url.Parse(reqs[0].AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if reqs[0].SessionID != "s1" || reqs[0].Server != "remote" || reqs[0].RedirectURI != "" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != o.server.URL() {
		t.Errorf("mcp/authorize %+v: want session s1, server remote, no redirectUri, a PKCE S256 URL for the resource", reqs[0])
	}
	if err := o.echo("s1", "authorized"); err != nil {
		t.Fatal(err)
	}
	if c := o.as.Counts(); c.Authorizations != 1 || c.CodeExchanges != 1 {
		t.Errorf("authorization server counts %+v", c)
	}
	st := o.status("s1")
	want := &protocol.ServerAuthorization{Authorized: true, Refreshable: true, ExpiresAt: o.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	if diff := cmp.Diff(want, st.Authorization); diff != "" {
		t.Errorf("servers/status authorization (-want +got):\n%s", diff)
	}
	// The order a host sees: starting, the request, then ready.
	var order []string
	for _, n := range o.h.notifications() {
		if n.Method == protocol.NotifyStartupStatus {
			var p protocol.StartupStatusParams
			json.Unmarshal(n.Params, &p)
			order = append(order, p.Status)
		}
	}
	if !slices.Equal(order, []string{"starting", "ready"}) {
		t.Errorf("startup statuses %v", order)
	}
}

func TestAuthorizationWithHostCaughtRedirect(t *testing.T) {
	o := newOAuthSetup(t, sidecar.Hooks{}, func(ctx context.Context, p protocol.AuthorizeParams) (any, error) {
		loc, err := oauthtest.RedirectOf(ctx, p.AuthorizationURL)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(loc, p.RedirectURI+"?") {
			t.Errorf("redirected to %s, not to the redirectUri %s", loc, p.RedirectURI)
		}
		return map[string]any{"redirectUrl": loc}, nil
	})
	o.init(map[string]any{"authorization": map[string]any{"redirect": true}}, nil)
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	if c := o.h.waitComplete("s1", 0); !slices.Equal(c.Ready, []string{"remote"}) {
		t.Fatalf("startupComplete %+v, want remote ready", c)
	}
	if reqs := o.requests(); len(reqs) != 1 || !strings.HasPrefix(reqs[0].RedirectURI, "http://127.0.0.1:") {
		t.Errorf("mcp/authorize %+v: want one, with a loopback redirectUri", reqs)
	}
	if err := o.echo("s1", "x"); err != nil {
		t.Fatal(err)
	}
}

func TestHostWithoutCapabilitySeesNeedsAuthorization(t *testing.T) {
	o := newOAuthSetup(t, sidecar.Hooks{}, nil)
	o.init(nil, nil)
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	c := o.h.waitComplete("s1", 0)
	if len(c.NeedsAuthorization) != 1 || c.NeedsAuthorization[0].Server != "remote" || len(c.Failed) != 0 {
		t.Fatalf("startupComplete %+v: want remote in needsAuthorization, nothing failed", c)
	}
	authURL := c.NeedsAuthorization[0].AuthorizationURL
	if !strings.HasPrefix(authURL, o.as.URL()+"/authorize?") {
		t.Fatalf("authorizationUrl %q is not the authorization server's", authURL)
	}
	st := o.status("s1")
	if st.State != protocol.StateNeedsAuthorization || st.Authorization == nil || st.Authorization.AuthorizationURL != authURL || st.Authorization.Authorized {
		t.Errorf("servers/status %+v (authorization %+v): want needs_authorization with the URL", st, st.Authorization)
	}
	_, data := o.h.wantCode(o.echo("s1", "x"), protocol.CodeServerNotReady)
	if data.Kind != protocol.KindNeedsAuthorization || data.AuthorizationURL != authURL {
		t.Errorf("tools/call error data %+v: want kind needs_authorization with the URL", data)
	}
	// By its qualified name too: the server never listed, so no tool has a
	// name yet, but the name's form says whose it would be.
	_, err := o.h.callTool(map[string]any{"sessionId": "s1", "name": "mcp__remote__echo", "arguments": map[string]any{"text": "x"}})
	if _, data := o.h.wantCode(err, protocol.CodeServerNotReady); data.Kind != protocol.KindNeedsAuthorization {
		t.Errorf("tools/call by qualified name: error data %+v, want kind needs_authorization", data)
	}
	// The user opens the URL by hand: the server starts on its own.
	if _, status, err := oauthtest.Browse(o.h.ctx, authURL); err != nil || status != 200 {
		t.Fatalf("browse: %d, %v", status, err)
	}
	if c := o.h.waitComplete("s1", 1); !slices.Equal(c.Ready, []string{"remote"}) {
		t.Fatalf("round 1 %+v, want remote ready", c)
	}
	if err := o.echo("s1", "now"); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledAuthorizationNeedsAuthorization(t *testing.T) {
	o := newOAuthSetup(t, sidecar.Hooks{}, func(context.Context, protocol.AuthorizeParams) (any, error) {
		return map[string]any{"cancelled": true}, nil
	})
	o.init(map[string]any{"authorization": map[string]any{}}, nil)
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	c := o.h.waitComplete("s1", 0)
	if len(c.NeedsAuthorization) != 1 || c.NeedsAuthorization[0].AuthorizationURL != "" {
		t.Fatalf("startupComplete %+v: want remote in needsAuthorization without a URL", c)
	}
	if st := o.status("s1"); !strings.Contains(st.LastError, "cancelled") {
		t.Errorf("lastError %q does not say the user cancelled", st.LastError)
	}
	// A use asks again (once), and the user declines again.
	_, data := o.h.wantCode(o.echo("s1", "x"), protocol.CodeServerNotReady)
	if data.Kind != protocol.KindNeedsAuthorization || len(o.requests()) != 2 {
		t.Errorf("error %+v after %d requests: want needs_authorization after asking once more", data, len(o.requests()))
	}
}

func TestConcurrentSessionsShareOneAuthorization(t *testing.T) {
	joined := make(chan struct{})
	var once sync.Once
	o := newOAuthSetup(t, sidecar.Hooks{AuthorizationJoined: func(string) { once.Do(func() { close(joined) }) }},
		func(ctx context.Context, p protocol.AuthorizeParams) (any, error) {
			select { // the user takes a while: the other session arrives
			case <-joined:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return browser(ctx, p)
		})
	o.init(map[string]any{"authorization": map[string]any{}}, nil)
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	o.h.open(map[string]any{"sessionId": "s2", "startup": "eager"})
	for _, s := range []string{"s1", "s2"} {
		if c := o.h.waitComplete(s, 0); !slices.Equal(c.Ready, []string{"remote"}) {
			t.Fatalf("%s: startupComplete %+v", s, c)
		}
		if err := o.echo(s, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(o.requests()); n != 1 {
		t.Errorf("%d mcp/authorize requests for two sessions, want 1", n)
	}
	if c := o.as.Counts(); c.Authorizations != 1 || c.Registrations != 1 {
		t.Errorf("authorization server counts %+v, want one flow", c)
	}
}

// A session that joins another session's authorization waits for it
// within its own startup_timeout_sec, and says what it was waiting for;
// the session whose user is in the browser is not hurried by it.
func TestJoinedAuthorizationIsBoundedByTheJoinersStartupTimeout(t *testing.T) {
	asked := make(chan struct{})
	var askedOnce sync.Once
	release := make(chan struct{})
	o := newOAuthSetup(t, sidecar.Hooks{}, func(ctx context.Context, p protocol.AuthorizeParams) (any, error) {
		askedOnce.Do(func() { close(asked) })
		select { // the user of s1 is in the browser until s2 gave up
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return browser(ctx, p)
	})
	o.init(map[string]any{"authorization": map[string]any{}}, &config.ServerConfig{StartupTimeoutSec: seconds(1)})
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	select {
	case <-asked:
	case <-o.h.ctx.Done():
		t.Fatal("s1 never asked the host to authorize")
	}
	o.h.open(map[string]any{"sessionId": "s2", "startup": "eager"})
	c := o.h.waitComplete("s2", 0)
	if len(c.Failed) != 1 {
		t.Fatalf("s2 startupComplete %+v: want remote failed", c)
	}
	if want := "did not start within startup_timeout_sec (1 s): it was waiting for an authorization in progress in another session"; !strings.Contains(c.Failed[0].Error, want) {
		t.Errorf("s2's error %q does not say %q", c.Failed[0].Error, want)
	}
	close(release)
	if c := o.h.waitComplete("s1", 0); !slices.Equal(c.Ready, []string{"remote"}) {
		t.Fatalf("s1 startupComplete %+v: want remote ready", c)
	}
	if n := len(o.requests()); n != 1 {
		t.Errorf("%d mcp/authorize requests, want 1 (s2 joined s1's)", n)
	}
}

// A tool whose scope the user does not grant: each call asks once more,
// then fails as needs_authorization saying which scope is missing, and
// the server's other tools go on working.
func TestStepUpRefusedOncePerCall(t *testing.T) {
	o := newOAuthSetupWith(t, oauthOptions{
		auth:   oauthtest.Config{ScopesSupported: []string{"read", "write"}, MaxScopes: []string{"read"}},
		server: oauthtest.ServerConfig{Scopes: []string{"read"}, ToolScopes: map[string][]string{"publish": {"write"}}},
	}, browser)
	o.startSession()
	for call := 1; call <= 2; call++ {
		_, err := o.h.callTool(map[string]any{"sessionId": "s1", "server": "remote", "tool": "publish", "arguments": map[string]any{"text": "x"}})
		je, data := o.h.wantCode(err, protocol.CodeServerNotReady)
		if data.Kind != protocol.KindNeedsAuthorization || data.Tool != "publish" || !strings.Contains(je.Message, "needs scope write") {
			t.Errorf("call %d: %s (data %+v): want needs_authorization for publish naming scope write", call, je.Message, data)
		}
		if n := len(o.requests()); n != 1+call {
			t.Errorf("after call %d: %d mcp/authorize, want %d (one per call)", call, n, 1+call)
		}
	}
	if err := o.echo("s1", "still works"); err != nil {
		t.Fatal(err)
	}
}

func TestRefreshAndRevocationThroughTheSidecar(t *testing.T) {
	o := newOAuthSetup(t, sidecar.Hooks{}, browser)
	o.startSession()
	if err := o.echo("s1", "one"); err != nil {
		t.Fatal(err)
	}
	o.clock.Advance(time.Hour) // the token expires: refreshed before use
	if err := o.echo("s1", "two"); err != nil {
		t.Fatal(err)
	}
	if c := o.as.Counts(); c.Refreshes != 1 || c.Authorizations != 1 {
		t.Fatalf("after expiry: counts %+v, want one refresh and no new authorization", c)
	}
	o.as.RevokeAll() // the grant is gone: one new authorization
	if err := o.echo("s1", "three"); err != nil {
		t.Fatal(err)
	}
	if c := o.as.Counts(); c.RefreshDenied != 1 || c.Authorizations != 2 || len(o.requests()) != 2 {
		t.Errorf("after revocation: counts %+v, %d mcp/authorize; want one refused refresh and one new authorization", c, len(o.requests()))
	}
}

// lockedBuffer is a bytes.Buffer several goroutines write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.buf.Bytes())
}

// The tokens are in the credentials file and nowhere else a host or a
// person sees: not in answers, notifications, the catalog cache, the
// sidecar's own logs at debug level, nor in the errors of a refresh or an
// authorization that failed at an authorization server that echoes every
// secret it was sent.
func TestTokensNeverLeaveTheCredentialsFile(t *testing.T) {
	var notes, logs lockedBuffer
	o := newOAuthSetupWith(t, oauthOptions{logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, browser)
	o.h.onNotification = func(n hostclient.Notification) { notes.Write(n.Params) }
	o.init(map[string]any{"authorization": map[string]any{}}, nil)
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	o.h.waitComplete("s1", 0)
	if err := o.echo("s1", "one"); err != nil {
		t.Fatal(err)
	}
	o.clock.Advance(time.Hour)
	o.as.RevokeAccess()
	if err := o.echo("s1", "two"); err != nil {
		t.Fatal(err)
	}
	creds, err := os.ReadFile(filepath.Join(o.credsDir, "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	tokens := o.as.Issued()
	if len(tokens) < 4 {
		t.Fatalf("%d tokens issued, want an authorization and a refresh", len(tokens))
	}
	if last := tokens[len(tokens)-2]; !bytes.Contains(creds, []byte(last)) {
		t.Fatalf("the credentials file does not hold the current token: the search below would prove nothing")
	}

	places := map[string][]byte{}
	var status, list json.RawMessage
	o.h.call(protocol.MethodServersStatus, map[string]any{"sessionId": "s1"}, &status)
	o.h.call(protocol.MethodToolsList, map[string]any{"sessionId": "s1"}, &list)
	places["servers/status"], places["tools/list"] = status, list
	failures := []struct {
		name string
		do   func() error
	}{
		{"an unknown tool", func() error {
			_, err := o.h.callTool(map[string]any{"sessionId": "s1", "server": "remote", "tool": "nope"})
			return err
		}},
		{"a refresh the authorization server failed", func() error {
			o.as.FailTokens("server_error")
			o.clock.Advance(time.Hour)
			return o.echo("s1", "three")
		}},
		{"a refused refresh, then a code exchange refused", func() error {
			o.as.FailTokens("invalid_grant")
			return o.echo("s1", "four")
		}},
	}
	for _, f := range failures {
		err := f.do()
		if err == nil {
			t.Fatalf("%s: the call succeeded; the test needs it to fail", f.name)
		}
		places["the error of "+f.name] = []byte(err.Error())
	}
	if c := o.as.Counts(); c.Authorizations != 2 {
		t.Errorf("counts %+v: the refused refresh did not lead to a new authorization, whose failure is searched", c)
	}
	places["notifications"] = notes.Bytes()
	places["the sidecar's logs"] = logs.Bytes()
	if !bytes.Contains(places["the sidecar's logs"], []byte("level=DEBUG")) && !bytes.Contains(places["the sidecar's logs"], []byte("level=INFO")) {
		t.Fatalf("the sidecar logged nothing: the search of its logs would prove nothing")
	}
	filepath.WalkDir(o.h.cacheDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			places["cache file "+path] = data
		}
		return nil
	})
	secrets := slices.Concat(o.as.Issued(), o.as.ClientSecrets())
	for where, data := range places {
		for _, secret := range secrets {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s contains a token or client secret: %s", where, data)
			}
		}
	}
}

func TestLogoutRemovesTheToken(t *testing.T) {
	o := newOAuthSetup(t, sidecar.Hooks{}, browser)
	o.startSession()
	var res protocol.LogoutResult
	if err := o.h.call(protocol.MethodServersLogout, map[string]any{"sessionId": "s1", "server": "remote"}, &res); err != nil || !res.Removed {
		t.Fatalf("servers/logout = %+v, %v; want removed", res, err)
	}
	creds, _ := os.ReadFile(filepath.Join(o.credsDir, "credentials.json"))
	for _, tok := range o.as.Issued() {
		if bytes.Contains(creds, []byte(tok)) {
			t.Errorf("a token is still in the credentials file")
		}
	}
	if a := o.status("s1").Authorization; a != nil && a.Authorized {
		t.Errorf("servers/status still authorized: %+v", a)
	}
	// The next request goes without a token, and the host is asked again.
	if err := o.echo("s1", "again"); err != nil {
		t.Fatal(err)
	}
	if n := len(o.requests()); n != 2 {
		t.Errorf("%d mcp/authorize after logout, want 2", n)
	}
}

// The user's time in the browser does not count against
// startup_timeout_sec.
func TestAuthorizationDoesNotCountAgainstStartupTimeout(t *testing.T) {
	var answered atomic.Bool
	o := newOAuthSetup(t, sidecar.Hooks{}, func(ctx context.Context, p protocol.AuthorizeParams) (any, error) {
		select { // a person longer in the browser than the startup may take
		case <-time.After(1500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		answered.Store(true)
		return browser(ctx, p)
	})
	o.init(map[string]any{"authorization": map[string]any{}}, &config.ServerConfig{StartupTimeoutSec: seconds(1)})
	o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	if c := o.h.waitComplete("s1", 0); !slices.Equal(c.Ready, []string{"remote"}) || !answered.Load() {
		t.Fatalf("startupComplete %+v: want remote ready after the slow user", c)
	}
}

// With mcp_oauth_credentials_store = "keyring" and no keychain, a server
// that asks for authorization fails saying so, before the host is asked
// to open anything; with a keychain, the tokens go there and not to the
// credentials file.
func TestKeyringStore(t *testing.T) {
	t.Run("no keychain", func(t *testing.T) {
		o := newOAuthSetup(t, sidecar.Hooks{}, browser)
		o.init(map[string]any{"authorization": map[string]any{}}, &config.ServerConfig{OAuthCredentialsStore: "keyring"})
		o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
		c := o.h.waitComplete("s1", 0)
		if len(c.Failed) != 1 || !strings.Contains(c.Failed[0].Error, `mcp_oauth_credentials_store = "keyring"`) || !strings.Contains(c.Failed[0].Error, "the OS keychain cannot be used") {
			t.Errorf("startupComplete %+v: want a failure naming the keyring setting", c)
		}
		if len(o.requests()) != 0 {
			t.Errorf("the host was asked to authorize a server whose token could not be kept")
		}
	})
	t.Run("keychain", func(t *testing.T) {
		kc := &memKeychain{entries: map[string]string{}}
		o := newOAuthSetupWith(t, oauthOptions{keyring: kc}, browser)
		o.init(map[string]any{"authorization": map[string]any{}}, &config.ServerConfig{OAuthCredentialsStore: "keyring"})
		o.h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
		if c := o.h.waitComplete("s1", 0); !slices.Equal(c.Ready, []string{"remote"}) {
			t.Fatalf("startupComplete %+v, want remote ready", c)
		}
		if err := o.echo("s1", "hi"); err != nil {
			t.Fatal(err)
		}
		kc.mu.Lock()
		n := len(kc.entries)
		var entry string
		for k, v := range kc.entries {
			if strings.HasPrefix(k, "Codex MCP Credentials\x00remote|") {
				entry = v
			}
		}
		kc.mu.Unlock()
		if n != 1 || !strings.Contains(entry, `"access_token"`) {
			t.Errorf("keychain entries: %d, Codex's entry of remote %q", n, entry)
		}
		if data, err := os.ReadFile(filepath.Join(o.credsDir, "credentials.json")); err == nil && bytes.Contains(data, []byte("accessToken")) {
			t.Errorf("the token went to the credentials file: %s", data)
		}
	})
}

// noKeychain is a system without an OS keychain.
type noKeychain struct{}

var errNoKeychain = errors.New("no keychain in tests")

func (noKeychain) Get(string, string) (string, error) { return "", errNoKeychain }
func (noKeychain) Set(string, string, string) error   { return errNoKeychain }
func (noKeychain) Delete(string, string) error        { return errNoKeychain }

// memKeychain is an OS keychain in memory.
type memKeychain struct {
	mu      sync.Mutex
	entries map[string]string
}

func (k *memKeychain) Get(service, account string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.entries[service+"\x00"+account]
	if !ok {
		return "", oauth.ErrKeyringNotFound
	}
	return v, nil
}

func (k *memKeychain) Set(service, account, secret string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.entries[service+"\x00"+account] = secret
	return nil
}

func (k *memKeychain) Delete(service, account string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.entries[service+"\x00"+account]; !ok {
		return oauth.ErrKeyringNotFound
	}
	delete(k.entries, service+"\x00"+account)
	return nil
}
