package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// everyCodexKey is a config.toml using every key of Codex's McpServerConfig
// (codex-rs config/src/mcp_types.rs, RawMcpServerConfig) and the top-level
// OAuth keys, as Codex's documentation writes them.
const everyCodexKey = `
model = "gpt-5"
mcp_oauth_credentials_store = "file"
mcp_oauth_callback_port = 5555
mcp_oauth_callback_url = "https://example.com/callback"

[mcp_servers.docs]
name = "Docs"
command = "npx"
args = ["-y", "docs-mcp"]
env = { MODE = "ro" }
env_vars = ["LANG", { name = "DOCS_TOKEN", source = "local" }]
cwd = "/srv/docs"
environment_id = "local"
enabled = true
required = true
supports_parallel_tool_calls = true
omit_tools_from = ["deferred"]
startup_timeout_sec = 20.5
tool_timeout_sec = 90
default_tools_approval_mode = "prompt"
enabled_tools = ["search", "fetch", "write"]
disabled_tools = ["delete"]

[mcp_servers.docs.tools.search]
approval_mode = "auto"

[mcp_servers.docs.tools.write]
approval_mode = "writes"
output_token_limit = 2000

[mcp_servers.github]
url = "https://api.example.com/mcp"
bearer_token_env_var = "GITHUB_TOKEN"
http_headers = { "X-Org" = "acme" }
env_http_headers = { "X-Key" = "GITHUB_KEY" }
http_headers_helper = "print-headers --json"
auth = "oauth"
startup_timeout_ms = 15000
scopes = ["repo", "read:org"]
oauth_resource = "https://api.example.com/"
default_tools_approval_mode = "approve"

[mcp_servers.github.oauth]
client_id = "sidecar-client"
callback_url = "http://127.0.0.1:6000/callback"
callback_port = 6000
`

func TestEveryCodexKeyIsAccepted(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "config.toml", everyCodexKey)
	l := Load(FileSources([]string{path}), nil, MapLookup(testEnv()))
	if len(l.Errors) > 0 || len(l.Warnings) > 0 {
		t.Fatalf("errors %v, warnings %v", l.Errors, l.Warnings)
	}
	port, cbPort := 5555, 6000
	want := map[string]*ServerConfig{
		"docs": {
			Name: "docs", Source: path,
			Command: "npx", Args: []string{"-y", "docs-mcp"}, Env: map[string]string{"MODE": "ro"},
			EnvVars: []string{"LANG", "DOCS_TOKEN"}, Cwd: "/srv/docs", EnvironmentID: "local",
			Enabled: ptr(true), Required: true, SupportsParallelToolCalls: true, OmitToolsFrom: []string{"deferred"},
			StartupTimeoutSec: ptr(20.5), ToolTimeoutSec: ptr(90.0), DefaultToolsApprovalMode: "prompt",
			EnabledTools: []string{"search", "fetch", "write"}, DisabledTools: []string{"delete"},
			Tools: map[string]ToolConfig{
				"search": {ApprovalMode: "auto"},
				"write":  {ApprovalMode: "writes", OutputTokenLimit: 2000},
			},
			OAuthCredentialsStore: "file", OAuthCallbackPort: &port, OAuthCallbackURL: "https://example.com/callback",
			Dir: dir,
		},
		"github": {
			Name: "github", Source: path,
			URL: "https://api.example.com/mcp", BearerTokenEnvVar: "GITHUB_TOKEN",
			HTTPHeaders: map[string]string{"X-Org": "acme"}, EnvHTTPHeaders: map[string]string{"X-Key": "GITHUB_KEY"},
			Auth: "oauth", StartupTimeoutSec: ptr(15.0), Scopes: []string{"repo", "read:org"},
			OAuthResource: "https://api.example.com/", DefaultToolsApprovalMode: "approve",
			OAuth:                 &OAuthConfig{ClientID: "sidecar-client", CallbackURL: "http://127.0.0.1:6000/callback", CallbackPort: &cbPort},
			OAuthCredentialsStore: "file", OAuthCallbackPort: &port, OAuthCallbackURL: "https://example.com/callback",
			HTTPHeadersHelper: "print-headers --json",
			Dir:               dir,
		},
	}
	for _, c := range l.Servers {
		if c.Origin.Path != path {
			t.Errorf("server %q has origin %+v", c.Name, c.Origin)
		}
		c.Origin = Source{}
	}
	if diff := cmp.Diff(want, l.Servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	docs := l.Servers["docs"]
	for tool, mode := range map[string]string{"search": "auto", "write": "writes", "fetch": "prompt"} {
		if got := docs.Approval(tool); got != mode {
			t.Errorf("Approval(%q) = %q, want %q", tool, got, mode)
		}
	}
	if got := (&ServerConfig{}).Approval("x"); got != "" {
		t.Errorf("unconfigured approval = %q, want empty", got)
	}
}

func TestCodexKeyTypes(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"approval enum", `[mcp_servers.a]
command = "x"
default_tools_approval_mode = "ask"
[mcp_servers.a.tools.t]
approval_mode = "never"
output_token_limit = 0`,
			`F: server "a": key "default_tools_approval_mode": must be one of "auto", "prompt", "writes" or "approve"
F: server "a": key "tools.t.approval_mode": must be one of "auto", "prompt", "writes" or "approve"
F: server "a": key "tools.t.output_token_limit": must be a whole number of tokens greater than 0`},
		{"types", `[mcp_servers.a]
command = "x"
supports_parallel_tool_calls = "yes"
omit_tools_from = ["sideways"]
scopes = "repo"
env_vars = [{ name = "X", source = "cloud" }]`,
			`F: server "a": key "env_vars[0].source": must be one of "local" or "remote"
F: server "a": key "omit_tools_from[0]": must be one of "code_mode", "deferred" or "direct"
F: server "a": key "scopes": expected an array of strings, got a string
F: server "a": key "supports_parallel_tool_calls": expected a boolean, got a string`},
		{"oauth on stdio", `[mcp_servers.a]
command = "x"
oauth_resource = "https://r/"
auth = "oauth"
[mcp_servers.a.oauth]
client_id = "c"
callback_port = 70000`,
			`F: server "a": key "oauth.callback_port": must be a port number from 0 to 65535
F: server "a": key "oauth": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)
F: server "a": key "oauth_resource": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)
F: server "a": key "auth": not supported for a stdio server (command); it applies only to streamable HTTP servers (url)`},
		{"top level", `mcp_oauth_credentials_store = "vault"
mcp_oauth_callback_port = -1
[mcp_servers.a]
command = "x"`,
			`F: key "mcp_oauth_credentials_store": must be one of "auto", "file" or "keyring"
F: key "mcp_oauth_callback_port": must be a port number from 0 to 65535`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "config.toml", tt.body)
			l := Load(FileSources([]string{path}), nil, MapLookup(nil))
			want := strings.ReplaceAll(tt.want, "F: ", path+": ")
			if diff := cmp.Diff(want, l.Errors.Error()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnknownKeysAreWarnings: an unknown key never costs a server; it is a
// warning with a hint, in files and inline alike.
func TestUnknownKeysAreWarnings(t *testing.T) {
	path := writeFile(t, t.TempDir(), "config.toml", `[mcp_servers.a]
command = "x"
comand = "y"
type = "stdio"
headers = { A = "b" }
autoApprove = ["t"]
[mcp_servers.a.tools.t]
aproval_mode = "auto"
`)
	inline := json.RawMessage(`{"web": {"url": "https://h/mcp", "type": "http", "headers": {"A": "b"}, "startup_timout_sec": 3}}`)
	l := Load(FileSources([]string{path}), inline, MapLookup(nil))
	if len(l.Errors) > 0 {
		t.Fatalf("errors: %v", l.Errors)
	}
	if len(l.Valid()) != 2 {
		t.Fatalf("valid servers: %v", l.Valid())
	}
	var got []string
	for _, w := range l.Warnings {
		got = append(got, w.Error())
	}
	F := path + ": "
	want := []string{
		F + `server "a": key "autoApprove": ignored: unknown key`,
		F + `server "a": key "comand": ignored: unknown key (did you mean "command"?)`,
		F + `server "a": key "headers": ignored: unknown key; Codex's key for static headers is "http_headers"`,
		F + `server "a": key "tools.t.aproval_mode": ignored: unknown key (did you mean "approval_mode"?)`,
		F + `server "a": key "type": ignored: unknown key; Codex's keys have no transport type: a server with "command" is stdio, one with "url" is streamable HTTP`,
		`initialize: server "web": key "headers": ignored: unknown key; Codex's key for static headers is "http_headers"`,
		`initialize: server "web": key "startup_timout_sec": ignored: unknown key (did you mean "startup_timeout_sec"?)`,
		`initialize: server "web": key "type": ignored: unknown key; Codex's keys have no transport type: a server with "command" is stdio, one with "url" is streamable HTTP`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestInlineFileLevelKeys: inline config has no top level, so it takes
// Codex's top-level OAuth keys per server.
func TestInlineFileLevelKeys(t *testing.T) {
	servers, err := ParseInline(json.RawMessage(`{"g": {"url": "https://h/mcp", "mcp_oauth_credentials_store": "keyring", "mcp_oauth_callback_port": 7000, "oauth": {"client_id": "c"}, "scopes": ["a"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := servers["g"]
	if g.OAuthCredentialsStore != "keyring" || g.OAuthCallbackPort == nil || *g.OAuthCallbackPort != 7000 || g.OAuth.ClientID != "c" || len(g.Scopes) != 1 {
		t.Errorf("got %+v", g)
	}
	// A ServerConfig round-trips through its JSON, as hosts and the
	// commands for people send it inline.
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseInline(json.RawMessage(`{"g": ` + string(b) + `}`))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	g.Source, again["g"].Source = "", ""
	if diff := cmp.Diff(g, again["g"]); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestCodexKeysAcceptedWithAWarning: keys Codex accepts that the sidecar
// does not act on, or acts on differently, keep their server and say so:
// ChatGPT authentication, a remote environment variable
// or environment, and a timeout of 0 (which in Codex times out at once;
// here the default applies).
func TestCodexKeysAcceptedWithAWarning(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		check            func(*ServerConfig) bool
	}{
		{"auth chatgpt", `url = "https://h/mcp"
auth = "chatgpt"`,
			`key "auth": "chatgpt" needs a ChatGPT session, which mcp-sidecar does not have; it connects as with "oauth"`,
			func(c *ServerConfig) bool { return c.Auth == "chatgpt" }},
		{"env_vars remote", `command = "x"
env_vars = [{ name = "TOKEN", source = "remote" }]`,
			`key "env_vars[0].source": "remote" is for Codex's remote environments; mcp-sidecar takes TOKEN from its own environment`,
			func(c *ServerConfig) bool { return len(c.EnvVars) == 1 && c.EnvVars[0] == "TOKEN" }},
		{"environment_id", `command = "x"
environment_id = "cloud-1"`,
			`key "environment_id": mcp-sidecar starts every server on this machine (environment "cloud-1" is Codex's)`,
			func(c *ServerConfig) bool { return c.EnvironmentID == "cloud-1" }},
		{"startup_timeout_sec = 0", `command = "x"
startup_timeout_sec = 0`,
			`key "startup_timeout_sec": 0 would make Codex time out every startup at once; mcp-sidecar uses the default, 30 s`,
			func(c *ServerConfig) bool { return c.StartupTimeout() == DefaultStartupTimeout }},
		{"startup_timeout_ms = 0", `command = "x"
startup_timeout_ms = 0`,
			`key "startup_timeout_ms": 0 would make Codex time out every startup at once; mcp-sidecar uses the default, 30 s`,
			func(c *ServerConfig) bool { return c.StartupTimeout() == DefaultStartupTimeout }},
		{"tool_timeout_sec = 0", `command = "x"
tool_timeout_sec = 0`,
			`key "tool_timeout_sec": 0 would make Codex time out every call at once; mcp-sidecar uses the default, 120 s`,
			func(c *ServerConfig) bool { return c.ToolTimeout() == DefaultToolTimeout }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "config.toml", "[mcp_servers.a]\n"+tc.body+"\n")
			l := Load(FileSources([]string{path}), nil, MapLookup(nil))
			c := l.Servers["a"]
			if len(l.Errors) > 0 || c == nil || !c.Valid() {
				t.Fatalf("errors %v; server %+v", l.Errors, c)
			}
			if diff := cmp.Diff(path+`: server "a": `+tc.want, l.Warnings.Error()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if !tc.check(c) {
				t.Errorf("server %+v", c)
			}
		})
	}
}
