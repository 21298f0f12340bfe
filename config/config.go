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
)

// ServerConfig is one MCP server, with Codex's keys. Whatever file format it
// came from, it is normalised into this shape.
type ServerConfig struct {
	// Name is the server's name (the key in its file); Source says where it
	// was read from: a file path or "initialize".
	Name   string `json:"-" toml:"-"`
	Source string `json:"-" toml:"-"`

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

	// shared
	Enabled           *bool    `json:"enabled,omitempty" toml:"enabled"`
	Required          bool     `json:"required,omitempty" toml:"required"`
	StartupTimeoutSec *float64 `json:"startup_timeout_sec,omitempty" toml:"startup_timeout_sec"`
	ToolTimeoutSec    *float64 `json:"tool_timeout_sec,omitempty" toml:"tool_timeout_sec"`
	EnabledTools      []string `json:"enabled_tools,omitempty" toml:"enabled_tools"`
	DisabledTools     []string `json:"disabled_tools,omitempty" toml:"disabled_tools"`
	StartupReadiness  string   `json:"startup_readiness,omitempty" toml:"startup_readiness"`
	ProtocolVersion   string   `json:"protocol_version,omitempty" toml:"protocol_version"`
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
