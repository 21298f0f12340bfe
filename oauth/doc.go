// Package oauth authorizes the sidecar's Streamable HTTP connections with
// OAuth 2.1 as the MCP authorization specification describes. It adds what
// the sidecar's position needs to go-sdk's auth.AuthorizationCodeHandler
// (discovery, registration, PKCE, scope selection, issuer checks): a
// credentials file that outlives the process, refresh before expiry and on
// 401, one authorization flow per server at a time shared by every
// connection that needs it, and the loopback listener that receives the
// redirect. The browser is not this package's: a flow hands its
// authorization URL to a Presenter the caller supplies (the sidecar asks its
// host, the login command prints it), and a caller without one learns the
// URL from a *NeedsAuthorizationError while the flow keeps listening.
//
// A Manager owns the store and the flows; each connection gets a Handler
// from it, which implements auth.OAuthHandler for go-sdk's
// StreamableClientTransport.
package oauth
