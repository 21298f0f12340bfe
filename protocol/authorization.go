package protocol

// OAuth for Streamable HTTP servers: the sidecar runs discovery,
// registration, PKCE and the token exchange; the browser is the host's.
// A host that declares capabilities.authorization is sent mcp/authorize
// with the URL to open; a host without it sees the server in state
// needs_authorization with the URL (docs/protocol.md, "Authorization").
const (
	RequestAuthorize    = "mcp/authorize"
	MethodServersLogout = "servers/logout"

	// StateNeedsAuthorization is a server that can be used only once a
	// user authorizes it; StatusNeedsAuthorization its mcp/startupStatus.
	StateNeedsAuthorization  = "needs_authorization"
	StatusNeedsAuthorization = "needs_authorization"
	// KindNeedsAuthorization is the -32011 of a request to such a server.
	KindNeedsAuthorization = "needs_authorization"
)

// AuthorizationCapability is the host's capabilities.authorization: it
// opens authorization URLs for its user. With Redirect, it also catches
// the redirect itself and answers mcp/authorize with the redirect URL.
type AuthorizationCapability struct {
	Redirect bool `json:"redirect,omitempty"`
}

// AuthorizeParams are the params of mcp/authorize.
type AuthorizeParams struct {
	SessionID        string `json:"sessionId"`
	Server           string `json:"server"`
	AuthorizationURL string `json:"authorizationUrl"`
	// RedirectURI is where the authorization server sends the browser,
	// given only to a host that catches the redirect (redirect: true).
	RedirectURI string `json:"redirectUri,omitempty"`
}

// AuthorizeResult is the host's answer to mcp/authorize: {} once the URL
// is open, {cancelled: true} when the user declined, {redirectUrl} (hosts
// with redirect: true) with the full URL the browser was sent to.
type AuthorizeResult struct {
	Cancelled   bool   `json:"cancelled,omitempty"`
	RedirectURL string `json:"redirectUrl,omitempty"`
}

// ServerAuthorization is a server's OAuth state in servers/status. It
// never holds a token.
type ServerAuthorization struct {
	// Authorized: a token is stored for the server.
	Authorized bool `json:"authorized"`
	// ExpiresAt is the access token's expiry (RFC 3339), when known.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Refreshable: the token can be renewed without the user.
	Refreshable bool     `json:"refreshable,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
	// AuthorizationURL is the URL to open while a flow waits for it.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
}

// NeedsAuthorizationServer is one server of mcp/startupComplete's
// needsAuthorization.
type NeedsAuthorizationServer struct {
	Server           string `json:"server"`
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
}

// LogoutResult is the result of servers/logout.
type LogoutResult struct {
	// Removed: credentials were stored, and are gone.
	Removed bool `json:"removed"`
}
