package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/oauthtest"
)

// fakeKeyring is an OS keychain in memory; with err set, every call fails
// as a keychain that cannot be reached does.
type fakeKeyring struct {
	mu      sync.Mutex
	entries map[string]string // service + "\x00" + account
	err     error
	calls   atomic.Int32
}

func newFakeKeyring() *fakeKeyring { return &fakeKeyring{entries: map[string]string{}} }

func (k *fakeKeyring) Get(service, account string) (string, error) {
	k.calls.Add(1)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return "", k.err
	}
	v, ok := k.entries[service+"\x00"+account]
	if !ok {
		return "", ErrKeyringNotFound
	}
	return v, nil
}

func (k *fakeKeyring) Set(service, account, secret string) error {
	k.calls.Add(1)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return k.err
	}
	k.entries[service+"\x00"+account] = secret
	return nil
}

func (k *fakeKeyring) Delete(service, account string) error {
	k.calls.Add(1)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return k.err
	}
	if _, ok := k.entries[service+"\x00"+account]; !ok {
		return ErrKeyringNotFound
	}
	delete(k.entries, service+"\x00"+account)
	return nil
}

func (k *fakeKeyring) get(account string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.entries[keyringService+"\x00"+account]
	return v, ok
}

func (k *fakeKeyring) fail(err error) {
	k.mu.Lock()
	k.err = err
	k.mu.Unlock()
}

// The account is Codex's: the server's name and the start of the SHA-256
// of {"headers":{},"type":"http","url":...} as serde_json writes it
// (digests computed apart, with Python's hashlib).
func TestKeyringAccountIsCodexs(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		sorted    bool
		want      string
	}{
		{"test-server", "https://example.test", true, "test-server|3462539a3f539c2e"},
		{"test-server", "https://example.test", false, "test-server|8c45d89ea13b3919"},
		// serde_json does not escape <, > or &, as Go's encoder does by default.
		{"x", "https://mcp.example.com/a?b=<c>&d", true, "x|be4d2dcf59041bf7"},
	} {
		if got := tc.name + "|" + keyringDigest(tc.url, tc.sorted); got != tc.want {
			t.Errorf("account of %s at %s (sorted %v) = %s, want %s", tc.name, tc.url, tc.sorted, got, tc.want)
		}
	}
	if got := keyringAccount("test-server", "https://example.test"); got != "test-server|3462539a3f539c2e" {
		t.Errorf("keyringAccount = %s", got)
	}
}

// An entry Codex wrote (its StoredOAuthTokens, as serde writes it) is
// read: its access token is used until it expires; without the token
// endpoint, which Codex does not keep, it is not refreshed.
func TestKeyringReadsCodexEntry(t *testing.T) {
	srv := Server{Name: "test-server", URL: "https://example.test"}
	codex := `{"server_name":"test-server","url":"https://example.test","client_id":"client-id","token_response":{"access_token":"access-token","token_type":"bearer","expires_in":3600,"refresh_token":"refresh-token","scope":"scope-b scope-a"},"expires_at":1796112000000}`
	c, ok, err := decodeKeyring(srv, codex)
	if err != nil || !ok {
		t.Fatalf("decode: %v, %v", ok, err)
	}
	want := &Credentials{Server: "test-server", URL: "https://example.test", ClientID: "client-id", AccessToken: "access-token", TokenType: "bearer",
		GrantedScopes: []string{"scope-a", "scope-b"}, Expiry: time.UnixMilli(1796112000000)}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	// Another URL under the same account is not this server's.
	if _, ok, _ := decodeKeyring(Server{Name: "test-server", URL: "https://other.test"}, codex); ok {
		t.Error("an entry of another URL was taken")
	}
}

// What the sidecar writes Codex reads (its members, with Codex's types),
// and the sidecar reads it back whole.
func TestKeyringEntryRoundTrip(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	srv := Server{Name: "gh", URL: "https://api.example.com/mcp", Resource: "https://api.example.com/", Scopes: []string{"repo"}}
	c := &Credentials{Server: "gh", URL: srv.URL, Resource: srv.Resource, Scopes: []string{"repo"}, ClientID: "cid", ClientSecret: "cs",
		Issuer: "https://as.example.com", TokenURL: "https://as.example.com/token", AuthStyle: 1, AccessToken: "at", TokenType: "Bearer", RefreshToken: "rt",
		Expiry: now.Add(time.Hour), GrantedScopes: []string{"read", "repo"}, ObtainedAt: now}
	secret, err := encodeKeyring(srv, c, now)
	if err != nil {
		t.Fatal(err)
	}
	var codex struct {
		ServerName    string `json:"server_name"`
		URL           string `json:"url"`
		ClientID      string `json:"client_id"`
		ExpiresAt     uint64 `json:"expires_at"`
		TokenResponse struct {
			AccessToken  string `json:"access_token"`
			TokenType    string `json:"token_type"`
			ExpiresIn    uint64 `json:"expires_in"`
			RefreshToken string `json:"refresh_token"`
			Scope        string `json:"scope"`
		} `json:"token_response"`
	}
	if err := json.Unmarshal([]byte(secret), &codex); err != nil {
		t.Fatal(err)
	}
	if codex.ServerName != "gh" || codex.URL != srv.URL || codex.ClientID != "cid" || codex.ExpiresAt != uint64(now.Add(time.Hour).UnixMilli()) ||
		codex.TokenResponse.AccessToken != "at" || codex.TokenResponse.TokenType != "bearer" || codex.TokenResponse.ExpiresIn != 3600 ||
		codex.TokenResponse.RefreshToken != "rt" || codex.TokenResponse.Scope != "read repo" {
		t.Errorf("as Codex reads it: %+v", codex)
	}
	back, ok, err := decodeKeyring(srv, secret)
	if err != nil || !ok {
		t.Fatalf("decode: %v, %v", ok, err)
	}
	want := *c
	want.TokenType = "bearer"
	if diff := cmp.Diff(&want, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Tokens the sidecar got for other scopes are not these.
	if _, ok, _ := decodeKeyring(Server{Name: "gh", URL: srv.URL, Resource: srv.Resource, Scopes: []string{"admin"}}, secret); ok {
		t.Error("tokens of other scopes were taken")
	}
}

// newKeyringEnv is newEnv whose server keeps its tokens where store says.
func newKeyringEnv(t *testing.T, store string) (*env, *fakeKeyring) {
	t.Helper()
	e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
	kr := newFakeKeyring()
	e.m.opts.Keyring = kr
	e.srv.CredentialsStore, e.srv.StoreSource = store, "/home/u/.codex/config.toml"
	return e, kr
}

// With "keyring" the tokens go to the keychain, as Codex's entry, and
// never to the file; another process (a new Manager) finds them there, and
// a refresh and a logout reach them.
func TestKeyringStoreKeepsTokensInTheKeychain(t *testing.T) {
	e, kr := newKeyringEnv(t, StoreKeyring)
	s, presented := e.connectBrowsing(t)
	echo(t, s, "echo", "hi")
	if presented.Load() != 1 {
		t.Fatalf("%d authorizations, want 1", presented.Load())
	}
	secret, ok := kr.get(keyringAccount("remote", e.server.URL()))
	if !ok || !strings.Contains(secret, `"access_token"`) {
		t.Fatalf("no Codex entry in the keychain: %q", secret)
	}
	if data, err := os.ReadFile(filepath.Join(e.store.Dir, storeFile)); err == nil && bytes.Contains(data, []byte("accessToken")) {
		t.Errorf("a token went to the file too: %s", data)
	}

	other := NewManager(Options{Store: e.store, Now: e.clock.Now, Keyring: kr})
	t.Cleanup(other.Close)
	if st, err := other.Status(e.srv); err != nil || !st.Authorized || !st.Refreshable {
		t.Fatalf("another process: status %+v, %v; want authorized and refreshable", st, err)
	}

	e.clock.Advance(2 * time.Hour) // expired: refreshed through the keychain
	echo(t, s, "echo", "again")
	if c := e.as.Counts(); c.Refreshes != 1 || c.Authorizations != 1 {
		t.Errorf("counts %+v, want one refresh", c)
	}
	after, _ := kr.get(keyringAccount("remote", e.server.URL()))
	if after == secret {
		t.Error("the refreshed token did not reach the keychain")
	}

	if removed, err := e.m.Logout(e.srv); err != nil || !removed {
		t.Fatalf("logout = %v, %v", removed, err)
	}
	if _, ok := kr.get(keyringAccount("remote", e.server.URL())); ok {
		t.Error("logout left the keychain entry")
	}
}

// With "keyring" and no keychain, a server that needs no authorization
// still works, and one that does fails, before any browser, with what to
// change; with "auto" the file takes the tokens.
func TestKeyringUnavailable(t *testing.T) {
	noBus := errors.New(`exec: "dbus-launch": executable file not found in $PATH`)
	t.Run("keyring", func(t *testing.T) {
		e, kr := newKeyringEnv(t, StoreKeyring)
		kr.fail(noBus)
		presented := new(atomic.Int32)
		_, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: browse(presented)}))
		var ke *KeyringError
		if !errors.As(err, &ke) {
			t.Fatalf("connect: %v, want a *KeyringError", err)
		}
		for _, want := range []string{`server "remote": mcp_oauth_credentials_store = "keyring" in /home/u/.codex/config.toml, but the OS keychain cannot be used`, "dbus-launch", `set it to "auto"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if presented.Load() != 0 {
			t.Error("the user was sent to the browser for a token that cannot be kept")
		}
		// The token source asks nothing of a server that needs no token.
		tok, err := tokenSource{h: e.m.Handler(e.srv, HandlerOptions{})}.Token()
		if tok != nil || err != nil {
			t.Errorf("token source = %v, %v; want none and no error", tok, err)
		}
	})
	t.Run("auto", func(t *testing.T) {
		e, kr := newKeyringEnv(t, StoreAuto)
		kr.fail(noBus)
		s, _ := e.connectBrowsing(t)
		echo(t, s, "echo", "hi")
		data, err := os.ReadFile(filepath.Join(e.store.Dir, storeFile))
		if err != nil || !bytes.Contains(data, []byte("accessToken")) {
			t.Fatalf("the file did not take the token: %v %s", err, data)
		}
		// The failed keychain is not asked again at every request.
		n := kr.calls.Load()
		echo(t, s, "echo", "again")
		if kr.calls.Load() != n {
			t.Errorf("the keychain was asked %d more times within keyringRetry", kr.calls.Load()-n)
		}
	})
	t.Run("auto with a keychain", func(t *testing.T) {
		e, kr := newKeyringEnv(t, StoreAuto)
		s, _ := e.connectBrowsing(t)
		echo(t, s, "echo", "hi")
		if _, ok := kr.get(keyringAccount("remote", e.server.URL())); !ok {
			t.Error("auto did not use the keychain it has")
		}
	})
}
