// Package config reads MCP server configuration (Codex config.toml, Claude
// and Cursor .mcp.json, VS Code mcp.json, and inline JSON from the host's
// initialize), validates it with errors that name the file, the server and
// the key, and builds the allowlisted environment of stdio children.
package config

import "time"

// Transports a ServerConfig can describe.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Startup readiness values.
const (
	ReadinessConnection = "connection"
	ReadinessCatalog    = "catalog"
)

// Defaults of the contract.
const (
	DefaultStartupTimeout = 30 * time.Second
	DefaultToolTimeout    = 120 * time.Second
	// DefaultHeadersHelperTimeout bounds one run of a header helper, as
	// Claude Code bounds its headersHelper.
	DefaultHeadersHelperTimeout = 10 * time.Second
)

// ServerConfig is one MCP server, with Codex's keys. Whatever file format it
// came from, it is normalised into this shape.
type ServerConfig struct {
	// Name is the server's name (the key in its file); Source says where it
	// was read from: a file path or "initialize".
	Name   string `json:"-" toml:"-"`
	Source string `json:"-" toml:"-"`
	// Origin is the source the definition came from (set by Load).
	Origin Source `json:"-" toml:"-"`

	// stdio
	Command string            `json:"command,omitempty" toml:"command"`
	Args    []string          `json:"args,omitempty" toml:"args"`
	Env     map[string]string `json:"env,omitempty" toml:"env"`
	EnvVars []string          `json:"env_vars,omitempty" toml:"env_vars"`
	Cwd     string            `json:"cwd,omitempty" toml:"cwd"`

	// Streamable HTTP
	URL               string            `json:"url,omitempty" toml:"url"`
	BearerTokenEnvVar string            `json:"bearer_token_env_var,omitempty" toml:"bearer_token_env_var"`
	HTTPHeaders       map[string]string `json:"http_headers,omitempty" toml:"http_headers"`
	EnvHTTPHeaders    map[string]string `json:"env_http_headers,omitempty" toml:"env_http_headers"`
	// SSE says that the server at URL speaks the legacy HTTP+SSE transport
	// (MCP 2024-11-05; "type": "sse" in Claude Code, Cursor and VS Code
	// files) rather than Streamable HTTP. It is a remote server all the
	// same: Transport is "http", and every key of one applies.
	SSE bool `json:"-" toml:"-"`

	// shared
	Enabled           *bool    `json:"enabled,omitempty" toml:"enabled"`
	Required          bool     `json:"required,omitempty" toml:"required"`
	StartupTimeoutSec *float64 `json:"startup_timeout_sec,omitempty" toml:"startup_timeout_sec"`
	ToolTimeoutSec    *float64 `json:"tool_timeout_sec,omitempty" toml:"tool_timeout_sec"`
	EnabledTools      []string `json:"enabled_tools,omitempty" toml:"enabled_tools"`
	DisabledTools     []string `json:"disabled_tools,omitempty" toml:"disabled_tools"`
	StartupReadiness  string   `json:"startup_readiness,omitempty" toml:"startup_readiness"`
	ProtocolVersion   string   `json:"protocol_version,omitempty" toml:"protocol_version"`

	// What a host enforces: whether the model may call this server's tools
	// in parallel, and whether a call needs the user's approval (per tool
	// in Tools, else DefaultToolsApprovalMode; see Approval).
	SupportsParallelToolCalls bool                  `json:"supports_parallel_tool_calls,omitempty" toml:"supports_parallel_tool_calls"`
	DefaultToolsApprovalMode  string                `json:"default_tools_approval_mode,omitempty" toml:"default_tools_approval_mode"`
	Tools                     map[string]ToolConfig `json:"tools,omitempty" toml:"tools"`
	// OutputTokenLimit is the token limit of the results of the server's
	// tools that set none in Tools (0: none here). Codex has the key per
	// tool only; the server's is the sidecar's own.
	OutputTokenLimit int `json:"output_token_limit,omitempty" toml:"output_token_limit"`
	// OmitToolsFrom names Codex's model-facing surfaces (code_mode,
	// deferred, direct) the tools are kept off; the sidecar only carries it.
	OmitToolsFrom []string `json:"omit_tools_from,omitempty" toml:"omit_tools_from"`

	// Codex keys the sidecar accepts and type-checks without acting on
	// them: where Codex runs the server (only "local" exists here) and its
	// ChatGPT authentication mode.
	EnvironmentID string `json:"environment_id,omitempty" toml:"environment_id"`
	Auth          string `json:"auth,omitempty" toml:"auth"`

	// HTTPHeadersHelper is a command whose output, a JSON object, gives
	// headers of a Streamable HTTP server (Codex's http_headers_helper,
	// Claude Code's headersHelper): run through the shell in Dir before
	// the connection's first request and again after a 401, for at most
	// HTTPHeadersHelperTimeoutSec (the sidecar's own key; default
	// DefaultHeadersHelperTimeout).
	HTTPHeadersHelper           string   `json:"http_headers_helper,omitempty" toml:"http_headers_helper"`
	HTTPHeadersHelperTimeoutSec *float64 `json:"http_headers_helper_timeout_sec,omitempty" toml:"http_headers_helper_timeout_sec"`

	// OAuth (streamable HTTP): the scopes to request, the RFC 8707
	// resource, and the client. The flow itself is not this package's job.
	Scopes        []string     `json:"scopes,omitempty" toml:"scopes"`
	OAuthResource string       `json:"oauth_resource,omitempty" toml:"oauth_resource"`
	OAuth         *OAuthConfig `json:"oauth,omitempty" toml:"oauth"`
	// The top-level OAuth keys of the Codex config.toml the server came
	// from (per server in inline config, which has no top level):
	// where tokens are kept (auto, file or keyring), and the port and URL
	// of the loopback redirect. OAuth.CallbackPort, when set, wins over
	// OAuthCallbackPort, as in Codex.
	OAuthCredentialsStore string `json:"mcp_oauth_credentials_store,omitempty" toml:"mcp_oauth_credentials_store"`
	OAuthCallbackPort     *int   `json:"mcp_oauth_callback_port,omitempty" toml:"mcp_oauth_callback_port"`
	OAuthCallbackURL      string `json:"mcp_oauth_callback_url,omitempty" toml:"mcp_oauth_callback_url"`

	// Dir is the folder the definition's relative paths are resolved
	// against: its file's, the project for ~/.claude.json, "" for inline
	// config (the sidecar's working directory). A header helper runs
	// there.
	Dir string `json:"-" toml:"-"`
	// InheritEnv says that the tool whose file defines the server gives
	// stdio servers its whole environment (Claude Code, Cursor and VS
	// Code); Codex and inline config give the allowlist (ChildEnv).
	InheritEnv bool `json:"-" toml:"-"`
	// Environ is the whole environment a server with InheritEnv starts
	// from ("NAME=value"), set by whoever starts it, on its own copy of
	// the definition (nil: the allowlist only).
	Environ []string `json:"-" toml:"-"`

	// Inputs are the VS Code inputs (${input:ID}) the definition uses,
	// sorted by id: until WithInputs gives their values, the definition
	// holds placeholders where they go and cannot be started.
	Inputs []Input `json:"-" toml:"-"`
	// Template is the definition WithInputs made this one from (nil for
	// one read from a file), and InputDigests the SHA-256 of each value it
	// put in, by input id: what the discovery scope is computed from, so
	// that no value enters it (catalog.ScopeKey).
	Template     *ServerConfig     `json:"-" toml:"-"`
	InputDigests map[string]string `json:"-" toml:"-"`

	// Expanded are the values that references to the environment (${VAR},
	// ${env:VAR}) put anywhere into the definition (its URL, path
	// included, headers, args, ...), but those of the variables every
	// child inherits (AllowedEnv): the file does not say which are
	// secrets, so all are taken for secrets and scrubbed from what the
	// server writes (internal/redact.ServerValues).
	Expanded []string `json:"-" toml:"-"`

	// Problems are the errors of an invalid definition: such a server is
	// never started, and the host sees it in state "invalid" with them.
	// The other fields hold what could be read.
	Problems Errors `json:"-" toml:"-"`
}

// ToolConfig is [mcp_servers.NAME.tools.TOOL].
type ToolConfig struct {
	ApprovalMode string `json:"approval_mode,omitempty" toml:"approval_mode"`
	// OutputTokenLimit is the token budget of the tool's output (0: none).
	OutputTokenLimit int `json:"output_token_limit,omitempty" toml:"output_token_limit"`
}

// ToolOutputTokenLimit is the token limit the configuration gives the results
// of tool: its own tools.TOOL.output_token_limit, else the server's
// output_token_limit; 0 when neither is set.
func (c *ServerConfig) ToolOutputTokenLimit(tool string) int {
	if n := c.Tools[tool].OutputTokenLimit; n > 0 {
		return n
	}
	return c.OutputTokenLimit
}

// OAuthConfig is [mcp_servers.NAME.oauth]. A pre-registered client's
// secret is given only by the name of the environment variable that holds
// it (ClientSecretEnvVar); a client id that is an https URL names a client
// ID metadata document.
type OAuthConfig struct {
	ClientID           string `json:"client_id,omitempty" toml:"client_id"`
	ClientSecretEnvVar string `json:"client_secret_env_var,omitempty" toml:"client_secret_env_var"`
	CallbackURL        string `json:"callback_url,omitempty" toml:"callback_url"`
	CallbackPort       *int   `json:"callback_port,omitempty" toml:"callback_port"`
}

// Approval modes of default_tools_approval_mode and tools.TOOL.approval_mode,
// as Codex names them.
const (
	ApprovalAuto    = "auto"
	ApprovalPrompt  = "prompt"
	ApprovalWrites  = "writes"
	ApprovalApprove = "approve"
)

// ApprovalModes lists the approval modes (a fresh slice).
func ApprovalModes() []string {
	return []string{ApprovalAuto, ApprovalPrompt, ApprovalWrites, ApprovalApprove}
}

// Valid reports whether the definition had no problems.
func (c *ServerConfig) Valid() bool { return len(c.Problems) == 0 }

// Approval is the approval mode configured for tool: its own approval_mode,
// else the server's default_tools_approval_mode, else "" (not configured:
// the host applies its own policy).
func (c *ServerConfig) Approval(tool string) string {
	if t, ok := c.Tools[tool]; ok && t.ApprovalMode != "" {
		return t.ApprovalMode
	}
	return c.DefaultToolsApprovalMode
}

// Transport reports "stdio" or "http".
func (c *ServerConfig) Transport() string {
	if c.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}

// IsEnabled reports whether the server is enabled (the default).
func (c *ServerConfig) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// StartupTimeout is startup_timeout_sec, or its default.
func (c *ServerConfig) StartupTimeout() time.Duration {
	return seconds(c.StartupTimeoutSec, DefaultStartupTimeout)
}

// ToolTimeout is tool_timeout_sec, or its default.
func (c *ServerConfig) ToolTimeout() time.Duration {
	return seconds(c.ToolTimeoutSec, DefaultToolTimeout)
}

// HeadersHelperTimeout is http_headers_helper_timeout_sec, or its
// default.
func (c *ServerConfig) HeadersHelperTimeout() time.Duration {
	return seconds(c.HTTPHeadersHelperTimeoutSec, DefaultHeadersHelperTimeout)
}

// Readiness is startup_readiness, or "connection".
func (c *ServerConfig) Readiness() string {
	if c.StartupReadiness == "" {
		return ReadinessConnection
	}
	return c.StartupReadiness
}

func seconds(v *float64, def time.Duration) time.Duration {
	if v == nil || *v <= 0 {
		return def
	}
	return time.Duration(*v * float64(time.Second))
}
