package oauth

import (
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// OAuth applies to a Streamable HTTP server that brings no credentials of
// its own: not to one with a bearer token, an Authorization header, or a
// header helper (whose command is how it authenticates).
func TestServerForOwnCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  config.ServerConfig
		want bool
	}{
		{"plain", config.ServerConfig{Name: "a", URL: "https://h/mcp"}, true},
		{"stdio", config.ServerConfig{Name: "a", Command: "x"}, false},
		{"bearer", config.ServerConfig{Name: "a", URL: "https://h/mcp", BearerTokenEnvVar: "T"}, false},
		{"authorization header", config.ServerConfig{Name: "a", URL: "https://h/mcp", HTTPHeaders: map[string]string{"authorization": "Bearer x"}}, false},
		{"header helper", config.ServerConfig{Name: "a", URL: "https://h/mcp", HTTPHeadersHelper: "print-token"}, false},
	} {
		if _, ok, _ := ServerFor(&tc.cfg, config.MapLookup(nil)); ok != tc.want {
			t.Errorf("%s: OAuth applies %v, want %v", tc.name, ok, tc.want)
		}
	}
}
