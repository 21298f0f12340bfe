package oauth

import (
	"fmt"
	"net/http"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// ConfigError is OAuth configuration of a server that cannot be used (a
// client secret variable that is unset, a credentials store this program
// does not keep); it is reported when the server asks for authorization.
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

// ServerFor describes a configured server to a Manager. ok is false for a
// server OAuth does not apply to: stdio, one configured with its own
// Authorization (bearer_token_env_var, or an Authorization header), or
// one with a header helper (http_headers_helper, headersHelper), whose
// command is how it authenticates: a 401 runs it again. env
// supplies oauth.client_secret_env_var's value; a *ConfigError says what
// cannot be used (srv is still the server's, for its key).
func ServerFor(cfg *config.ServerConfig, env config.Lookup) (srv Server, ok bool, err error) {
	if cfg.Transport() != config.TransportHTTP || cfg.BearerTokenEnvVar != "" || cfg.HTTPHeadersHelper != "" {
		return Server{}, false, nil
	}
	for k := range cfg.HTTPHeaders {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return Server{}, false, nil
		}
	}
	for k := range cfg.EnvHTTPHeaders {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return Server{}, false, nil
		}
	}
	srv = Server{
		Name: cfg.Name, URL: cfg.URL, Scopes: cfg.Scopes, Resource: cfg.OAuthResource, CallbackURL: cfg.OAuthCallbackURL,
		CallbackURLKey: "mcp_oauth_callback_url", CallbackPortKey: "mcp_oauth_callback_port",
	}
	if cfg.OAuthCallbackPort != nil {
		srv.CallbackPort = *cfg.OAuthCallbackPort
	}
	if o := cfg.OAuth; o != nil {
		srv.ClientID = o.ClientID
		if o.CallbackURL != "" {
			srv.CallbackURL, srv.CallbackURLKey = o.CallbackURL, "oauth.callback_url"
		}
		if o.CallbackPort != nil {
			srv.CallbackPort, srv.CallbackPortKey = *o.CallbackPort, "oauth.callback_port"
		}
		if name := o.ClientSecretEnvVar; name != "" {
			v, found := "", false
			if env != nil {
				v, found = env(name)
			}
			if !found || v == "" {
				return srv, true, &ConfigError{fmt.Sprintf("server %q: environment variable %s (oauth.client_secret_env_var) is not set", cfg.Name, name)}
			}
			srv.ClientSecret = v
		}
	}
	srv.CredentialsStore, srv.StoreSource = cfg.OAuthCredentialsStore, cfg.Origin.Path
	if srv.StoreSource == "" {
		srv.StoreSource = cfg.Source
	}
	return srv, true, nil
}
