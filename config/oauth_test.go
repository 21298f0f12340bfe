package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOAuthKeysOfEveryFormat: the oauth table in Codex's names, and the
// oauth object of Claude Code's .mcp.json and VS Code's mcp.json in theirs,
// all land in the same OAuthConfig; a client secret is only ever the name
// of an environment variable.
func TestOAuthKeysOfEveryFormat(t *testing.T) {
	port := 8765
	tests := []struct {
		name, file, body string
		want             *ServerConfig
		warnings         string
	}{
		{"codex", "config.toml", `[mcp_servers.linear]
url = "https://mcp.linear.app/mcp"
scopes = ["read", "write"]
oauth_resource = "https://mcp.linear.app/"
[mcp_servers.linear.oauth]
client_id = "sidecar"
client_secret_env_var = "LINEAR_CLIENT_SECRET"
callback_port = 8765`,
			&ServerConfig{URL: "https://mcp.linear.app/mcp", Scopes: []string{"read", "write"}, OAuthResource: "https://mcp.linear.app/",
				OAuth: &OAuthConfig{ClientID: "sidecar", ClientSecretEnvVar: "LINEAR_CLIENT_SECRET", CallbackPort: &port}}, ""},
		{"claude", ".mcp.json", `{"mcpServers": {"linear": {"type": "http", "url": "https://mcp.linear.app/mcp",
  "oauth": {"clientId": "sidecar", "callbackPort": 8765, "scopes": "read write", "authServerMetadataUrl": "https://auth.example/.well-known/oauth-authorization-server"}}}}`,
			&ServerConfig{URL: "https://mcp.linear.app/mcp", Scopes: []string{"read", "write"}, OAuth: &OAuthConfig{ClientID: "sidecar", CallbackPort: &port}},
			`F: server "linear": key "oauth.authServerMetadataUrl": ignored: mcp-sidecar discovers the authorization server from the MCP server (RFC 9728, RFC 8414)`},
		{"vscode", "mcp.json", `{"servers": {"linear": {"type": "http", "url": "https://mcp.linear.app/mcp", "oauth": {"clientId": "sidecar", "callbackPort": 1}}}}`,
			&ServerConfig{URL: "https://mcp.linear.app/mcp", OAuth: &OAuthConfig{ClientID: "sidecar"}},
			`F: server "linear": key "oauth.callbackPort": ignored: unknown key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), tt.file, tt.body)
			l := Load(FileSources([]string{path}), nil, MapLookup(nil))
			if len(l.Errors) > 0 {
				t.Fatalf("errors: %v", l.Errors)
			}
			c := l.Servers["linear"]
			got := &ServerConfig{URL: c.URL, Scopes: c.Scopes, OAuthResource: c.OAuthResource, OAuth: c.OAuth}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("server (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(strings.ReplaceAll(tt.warnings, "F: ", path+": "), l.Warnings.Error()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOAuthKeyErrors(t *testing.T) {
	tests := []struct {
		name, file, body, want string
	}{
		{"inline secret in codex", "config.toml", `[mcp_servers.a]
url = "https://h/mcp"
[mcp_servers.a.oauth]
client_id = "c"
client_secret = "s3cr3t"`,
			`F: server "a": key "oauth.client_secret": inline client secrets are refused; name the environment variable that holds it in client_secret_env_var`},
		{"inline secret in claude", ".mcp.json", `{"mcpServers": {"a": {"type": "http", "url": "https://h/mcp", "oauth": {"clientId": "c", "clientSecret": "s3cr3t"}}}}`,
			`F: server "a": key "oauth.clientSecret": inline client secrets are refused; name the environment variable that holds it in client_secret_env_var`},
		{"secret without client", "config.toml", `[mcp_servers.a]
url = "https://h/mcp"
[mcp_servers.a.oauth]
client_secret_env_var = "S"`,
			`F: server "a": key "oauth.client_secret_env_var": needs a client id (client_id)`},
		{"scopes twice", ".mcp.json", `{"mcpServers": {"a": {"type": "http", "url": "https://h/mcp", "scopes": ["x"], "oauth": {"scopes": "y"}}}}`,
			`F: server "a": key "oauth.scopes": set either scopes or oauth.scopes, not both`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), tt.file, tt.body)
			l := Load(FileSources([]string{path}), nil, MapLookup(nil))
			want := strings.ReplaceAll(tt.want, "F: ", path+": ")
			if diff := cmp.Diff(want, l.Errors.Error()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if strings.Contains(l.Errors.Error(), "s3cr3t") {
				t.Errorf("an error repeats the secret")
			}
		})
	}
}

func TestXDGDir(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x", true},
		{map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config", true}, // a relative value is ignored
		{map[string]string{"HOME": "/h"}, "/h/.config", true},
		{map[string]string{"HOME": "h"}, "", false},
	} {
		got, ok := MapLookup(tc.env).XDGDir("XDG_CONFIG_HOME", ".config")
		if got != tc.want || ok != tc.ok {
			t.Errorf("XDGDir with %v = %q, %v; want %q, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Lookup(nil).XDGDir("XDG_CONFIG_HOME", ".config"); ok {
		t.Errorf("a nil Lookup found a directory")
	}
}
