package oauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zalando/go-keyring"
)

// Codex keeps MCP OAuth tokens where mcp_oauth_credentials_store says:
// "file" (its own file), "keyring" (the OS keychain: macOS Keychain,
// the Secret Service on Linux and BSD, Windows Credential Manager) or
// "auto" (the keychain, else the file). The sidecar does the same with
// its own credentials file in place of Codex's, and with Codex's keychain
// entries, so that a server authorized in one is authorized in the other
// (codex-rs/rmcp-client/src/oauth.rs):
//
//   - service "Codex MCP Credentials";
//   - account "<server name>|<16 hex digits>", the digits the start of the
//     SHA-256 of the JSON {"headers":{},"type":"http","url":"<url>"};
//   - the secret, Codex's StoredOAuthTokens as JSON: {"server_name",
//     "url", "client_id", "token_response": {"access_token",
//     "token_type", "refresh_token", "scope", "expires_in"},
//     "expires_at" (Unix milliseconds)}, to which the sidecar adds what
//     it needs to refresh a token Codex does not keep (the token
//     endpoint, the client's secret and authentication style, the
//     configured resource and scopes) under "mcp_sidecar", a member
//     Codex's reader ignores. An entry Codex wrote has none: its token is
//     used until it expires, and then the server is authorized anew.
//
// The keychain is go-keyring's (github.com/zalando/go-keyring): the one
// maintained Go library that reaches all three keychains without cgo
// (D-Bus on Linux, /usr/bin/security on macOS, the Windows API), so the
// sidecar stays a static binary.

// Credentials stores of mcp_oauth_credentials_store.
const (
	StoreFile    = "file"
	StoreAuto    = "auto"
	StoreKeyring = "keyring"
)

// Keyring is an OS keychain: secrets by service and account.
type Keyring interface {
	// Get returns the secret, or an error matching ErrKeyringNotFound
	// when there is none; any other error says the keychain cannot be
	// used.
	Get(service, account string) (string, error)
	Set(service, account, secret string) error
	// Delete removes the secret; ErrKeyringNotFound when there was none.
	Delete(service, account string) error
}

// ErrKeyringNotFound is a keychain without the entry asked for.
var ErrKeyringNotFound = keyring.ErrNotFound

// OSKeyring is the system's keychain, through go-keyring.
type OSKeyring struct{}

func (OSKeyring) Get(service, account string) (string, error) { return keyring.Get(service, account) }
func (OSKeyring) Set(service, account, secret string) error {
	return keyring.Set(service, account, secret)
}
func (OSKeyring) Delete(service, account string) error { return keyring.Delete(service, account) }

// keyringService is Codex's service name for MCP OAuth tokens.
const keyringService = "Codex MCP Credentials"

// keyringAccount is Codex's account for the tokens of server name at
// url (compute_store_key in codex-rs/rmcp-client/src/oauth.rs).
func keyringAccount(name, url string) string {
	return name + "|" + keyringDigest(url, true)
}

// keyringDigest is the 16 hex digits of Codex's account for url: the
// SHA-256 of {"headers":{},"type":"http","url":url} as serde_json writes
// it, its members sorted (sorted) or in the order Codex inserts them
// (type, url, headers), which a build of Codex with serde_json's
// preserve_order writes; the sidecar writes the first and also reads the
// second.
func keyringDigest(url string, sorted bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // serde_json escapes no '<', '>', '&'
	enc.Encode(url)
	u := strings.TrimSuffix(b.String(), "\n")
	payload := `{"headers":{},"type":"http","url":` + u + `}`
	if !sorted {
		payload = `{"type":"http","url":` + u + `,"headers":{}}`
	}
	sum := sha256.Sum256([]byte(payload))
	return hex.EncodeToString(sum[:])[:16]
}

// codexTokens is Codex's StoredOAuthTokens, with the sidecar's member.
type codexTokens struct {
	ServerName    string             `json:"server_name"`
	URL           string             `json:"url"`
	ClientID      string             `json:"client_id"`
	TokenResponse codexTokenResponse `json:"token_response"`
	ExpiresAt     *int64             `json:"expires_at,omitempty"`
	Sidecar       *sidecarTokenExtra `json:"mcp_sidecar,omitempty"`
}

// codexTokenResponse is oauth2's StandardTokenResponse as serde writes it.
type codexTokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    *int64 `json:"expires_in,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

// sidecarTokenExtra is what the sidecar keeps beside Codex's members.
type sidecarTokenExtra struct {
	Issuer           string    `json:"issuer,omitempty"`
	TokenURL         string    `json:"tokenUrl"`
	AuthStyle        int       `json:"authStyle,omitempty"`
	ClientSecret     string    `json:"clientSecret,omitempty"`
	ClientFromConfig bool      `json:"clientFromConfig,omitempty"`
	Resource         string    `json:"resource,omitempty"`
	Scopes           []string  `json:"scopes,omitempty"`
	ObtainedAt       time.Time `json:"obtainedAt,omitzero"`
}

// encodeKeyring is c as the keychain entry of server srv at now.
func encodeKeyring(srv Server, c *Credentials, now time.Time) (string, error) {
	t := codexTokens{
		ServerName: srv.Name, URL: srv.URL, ClientID: c.ClientID,
		TokenResponse: codexTokenResponse{
			AccessToken: c.AccessToken, TokenType: strings.ToLower(cmpOr(c.TokenType, "bearer")),
			RefreshToken: c.RefreshToken, Scope: strings.Join(c.GrantedScopes, " "),
		},
		Sidecar: &sidecarTokenExtra{
			Issuer: c.Issuer, TokenURL: c.TokenURL, AuthStyle: c.AuthStyle, ClientSecret: c.ClientSecret, ClientFromConfig: c.ClientFromConfig,
			Resource: c.Resource, Scopes: slices.Clone(c.Scopes), ObtainedAt: c.ObtainedAt,
		},
	}
	if !c.Expiry.IsZero() {
		ms := c.Expiry.UnixMilli()
		t.ExpiresAt = &ms
		if in := int64(c.Expiry.Sub(now) / time.Second); in > 0 {
			t.TokenResponse.ExpiresIn = &in
		}
	}
	data, err := json.Marshal(t)
	return string(data), err
}

// decodeKeyring reads a keychain entry of server srv; ok is false for an
// entry that is not for srv as configured (another URL, or tokens the
// sidecar got for another resource or other scopes), which counts as
// none.
func decodeKeyring(srv Server, secret string) (c *Credentials, ok bool, err error) {
	var t codexTokens
	if err := json.Unmarshal([]byte(secret), &t); err != nil {
		return nil, false, fmt.Errorf("the keychain entry of server %q is not Codex's token JSON: %w", srv.Name, err)
	}
	if t.URL != srv.URL {
		return nil, false, nil
	}
	c = &Credentials{
		Server: t.ServerName, URL: t.URL, Resource: srv.Resource, Scopes: slices.Clone(srv.Scopes),
		ClientID: t.ClientID, AccessToken: t.TokenResponse.AccessToken, TokenType: t.TokenResponse.TokenType,
		RefreshToken: t.TokenResponse.RefreshToken, GrantedScopes: strings.Fields(t.TokenResponse.Scope),
	}
	if t.ExpiresAt != nil {
		c.Expiry = time.UnixMilli(*t.ExpiresAt)
	}
	if x := t.Sidecar; x != nil {
		if x.Resource != srv.Resource || !sameScopes(x.Scopes, srv.Scopes) {
			return nil, false, nil
		}
		c.Issuer, c.TokenURL, c.AuthStyle, c.ClientSecret, c.ClientFromConfig, c.ObtainedAt = x.Issuer, x.TokenURL, x.AuthStyle, x.ClientSecret, x.ClientFromConfig, x.ObtainedAt
	}
	if c.TokenURL == "" {
		// Codex's own entry: without the token endpoint the refresh token
		// cannot be used; once the access token expires, the server is
		// authorized anew.
		c.RefreshToken = ""
	}
	slices.Sort(c.GrantedScopes)
	return c, true, nil
}

// sameScopes compares configured scopes as sets.
func sameScopes(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// KeyringError is an OS keychain that cannot be used for a server whose
// mcp_oauth_credentials_store is "keyring".
type KeyringError struct {
	Server string
	// Source is the file that sets the store, for people.
	Source string
	Err    error
}

func (e *KeyringError) Error() string {
	in := ""
	if e.Source != "" {
		in = " in " + e.Source
	}
	return fmt.Sprintf(`server %q: mcp_oauth_credentials_store = "keyring"%s, but the OS keychain cannot be used (%v); set it to "auto" to keep tokens in mcp-sidecar's credentials file when there is no keychain, or to "file"`,
		e.Server, in, e.Err)
}

func (e *KeyringError) Unwrap() error { return e.Err }

// keyringUnavailable reports an error of the keychain other than a
// missing entry.
func keyringUnavailable(err error) bool {
	return err != nil && !errors.Is(err, ErrKeyringNotFound)
}
