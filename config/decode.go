package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/suggest"
)

// dialect is the flavour of one server definition: which keys it may use,
// which variables it expands, and whether unknown keys are errors.
type dialect int

const (
	dialectCodex  dialect = iota // [mcp_servers.NAME] in config.toml
	dialectInline                // initialize.servers
	dialectClaude                // mcpServers in .mcp.json, ~/.cursor/mcp.json
	dialectVSCode                // servers in .vscode/mcp.json
)

// clientFile reports whether the dialect is a JSON file shared with other
// MCP clients, whose keys we tolerate.
func (d dialect) clientFile() bool { return d == dialectClaude || d == dialectVSCode }

// objectWord names a map in the dialect's own terms.
func (d dialect) objectWord() string {
	if d == dialectCodex {
		return "a table"
	}
	return "an object"
}

// codexKeys are the server keys of Codex's McpServerConfig (codex-rs
// config/src/mcp_types.rs, RawMcpServerConfig) plus the sidecar's own
// (startup_readiness, protocol_version, and output_token_limit, which
// Codex has per tool only); all dialects accept them.
func codexKeys() []string {
	return []string{
		"command", "args", "env", "env_vars", "cwd",
		"url", "bearer_token", "bearer_token_env_var", "http_headers", "env_http_headers", "http_headers_helper",
		"environment_id", "auth", "enabled", "required", "supports_parallel_tool_calls", "omit_tools_from",
		"startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec",
		"default_tools_approval_mode", "enabled_tools", "disabled_tools", "tools",
		"scopes", "oauth", "oauth_resource", "name",
		"startup_readiness", "protocol_version", "output_token_limit", "http_headers_helper_timeout_sec",
	}
}

// fileLevelKeys are Codex's top-level OAuth keys, which inline config
// accepts per server (it has no top level).
func fileLevelKeys() []string {
	return []string{"mcp_oauth_credentials_store", "mcp_oauth_callback_port", "mcp_oauth_callback_url"}
}

// clientKeys are the keys of Claude Code, Cursor and VS Code server entries
// that the sidecar maps onto Codex's.
func clientKeys() []string {
	return []string{"type", "headers", "envFile", "disabled", "headersHelper"}
}

// Enumerations of Codex's config, as its serde names them.
var (
	omitSurfaces     = []string{"code_mode", "deferred", "direct"}
	authModes        = []string{"oauth", "chatgpt"}
	credentialStores = []string{"auto", "file", "keyring"}
	envVarSources    = []string{"local", "remote"}
)

// serverDecoder turns one raw server definition (decoded TOML or JSON) into
// a ServerConfig, collecting every problem rather than stopping at the first.
type serverDecoder struct {
	dialect dialect
	file    string
	name    string
	dir     string    // absolute directory of the file; "" for inline config
	x       *expander // nil where the format has no expansion

	c          *ServerConfig
	keys       map[string]string // Codex key -> key as written, where they differ
	errs       Errors
	warnings   Errors
	typ        string // "type" of client files
	typSet     bool
	envFile    string
	envFileRaw string
	disabled   *bool
	timeout    *float64 // startup_timeout_ms, in seconds
	// oauthScopes are Claude Code's oauth.scopes, applied by finish.
	oauthScopes []string
}

func (sd *serverDecoder) errorf(key, format string, args ...any) {
	sd.errs = append(sd.errs, &Error{File: sd.file, Server: sd.name, Key: key, Message: fmt.Sprintf(format, args...)})
}

func (sd *serverDecoder) warnf(key, format string, args ...any) {
	sd.warnings = append(sd.warnings, &Error{File: sd.file, Server: sd.name, Key: key, Message: fmt.Sprintf(format, args...)})
}

// decodeServer decodes raw, the value of one server entry. It returns the
// config, with Problems set when the definition is invalid, and the
// warnings (keys ignored).
func decodeServer(sd *serverDecoder, raw any) (*ServerConfig, Errors) {
	sd.c = &ServerConfig{Name: sd.name, Source: sd.file}
	obj, ok := raw.(map[string]any)
	if !ok {
		sd.errorf("", "expected %s of server settings, got %s", sd.dialect.objectWord(), sd.kindOf(raw))
		sd.c.Problems = sd.errs
		return sd.c, nil
	}
	sd.keys = make(map[string]string)
	if sd.x != nil {
		sd.x.used = nil // the inputs of this server
		sd.x.values = nil
	}
	for _, key := range sortedKeys(obj) {
		v := obj[key]
		if v == nil {
			continue // JSON null: as if absent
		}
		sd.decodeKey(key, v)
	}
	sd.finish()
	if sd.x != nil {
		for _, id := range sortedKeys(sd.x.used) {
			sd.c.Inputs = append(sd.c.Inputs, sd.x.inputs[id])
		}
		sd.c.Expanded = sd.x.values
	}
	sd.errs = append(sd.errs, validate(sd.c, sd.keys)...)
	sd.c.Problems = sd.errs
	return sd.c, sd.warnings
}

func (sd *serverDecoder) decodeKey(key string, v any) {
	c := sd.c
	client := sd.dialect.clientFile()
	switch key {
	case "command":
		if s, ok := sd.expandedString(key, v); ok {
			if s == "" {
				sd.errorf(key, "must not be empty")
			}
			c.Command = s
		}
	case "args":
		c.Args, _ = sd.stringList(key, v, true)
	case "env":
		c.Env, _ = sd.stringMap(key, v, true)
	case "env_vars":
		c.EnvVars, _ = sd.envVars(key, v)
	case "cwd":
		c.Cwd, _ = sd.expandedString(key, v)
	case "url":
		if s, ok := sd.expandedString(key, v); ok {
			if s == "" {
				sd.errorf(key, "must not be empty")
			}
			c.URL = s
		}
	case "bearer_token":
		sd.errorf(key, "inline bearer tokens are refused; use bearer_token_env_var")
	case "bearer_token_env_var":
		c.BearerTokenEnvVar, _ = sd.str(key, v)
	case "http_headers", "headers":
		if key == "headers" && !client {
			sd.unknown(key)
			return
		}
		if c.HTTPHeaders != nil {
			sd.errorf(key, "set either headers or http_headers, not both")
			return
		}
		c.HTTPHeaders, _ = sd.stringMap(key, v, true)
		sd.rename("http_headers", key)
	case "env_http_headers":
		c.EnvHTTPHeaders, _ = sd.stringMap(key, v, false)
	case "http_headers_helper", "headersHelper":
		// A shell command line, as both tools write it; never expanded
		// (Claude Code does not expand headersHelper): the shell does.
		if key == "headersHelper" && !client {
			sd.unknown(key)
			return
		}
		if c.HTTPHeadersHelper != "" {
			sd.errorf(key, "set either headersHelper or http_headers_helper, not both")
			return
		}
		if s, ok := sd.str(key, v); ok {
			if strings.TrimSpace(s) == "" {
				sd.errorf(key, "must not be empty")
				return
			}
			if strings.ContainsRune(s, 0) {
				sd.errorf(key, "contains a NUL byte")
				return
			}
			c.HTTPHeadersHelper = s
			sd.rename("http_headers_helper", key)
		}
	case "http_headers_helper_timeout_sec":
		if f, ok := sd.number(key, v); ok {
			if !(f > 0) || !validSeconds(f) {
				sd.errorf(key, "must be a number of seconds greater than 0")
				return
			}
			c.HTTPHeadersHelperTimeoutSec = &f
		}
	case "environment_id":
		if s, ok := sd.str(key, v); ok {
			c.EnvironmentID = s
			if s != "local" {
				sd.warnf(key, "mcp-sidecar starts every server on this machine (environment %q is Codex's)", s)
			}
		}
	case "auth":
		if s, ok := sd.enum(key, v, authModes); ok {
			c.Auth = s
			if s == "chatgpt" {
				sd.warnf(key, `"chatgpt" needs a ChatGPT session, which mcp-sidecar does not have; it connects as with "oauth"`)
			}
		}
	case "enabled":
		if b, ok := sd.boolean(key, v); ok {
			c.Enabled = &b
		}
	case "required":
		c.Required, _ = sd.boolean(key, v)
	case "supports_parallel_tool_calls":
		c.SupportsParallelToolCalls, _ = sd.boolean(key, v)
	case "omit_tools_from":
		if list, ok := sd.stringList(key, v, false); ok {
			for i, s := range list {
				if !slices.Contains(omitSurfaces, s) {
					sd.errorf(fmt.Sprintf("%s[%d]", key, i), "must be one of %s", quoteList(omitSurfaces))
					return
				}
			}
			c.OmitToolsFrom = list
		}
	case "startup_timeout_sec":
		if f, ok := sd.number(key, v); ok {
			c.StartupTimeoutSec = &f
			sd.zeroTimeout(key, f, "startup", DefaultStartupTimeout)
		}
	case "startup_timeout_ms":
		// Codex's older spelling; startup_timeout_sec wins when both are set.
		if f, ok := sd.number(key, v); ok {
			if !(f >= 0) {
				sd.errorf(key, "must be a number of milliseconds, 0 or more")
				return
			}
			sec := f / 1000
			sd.timeout = &sec
			sd.zeroTimeout(key, f, "startup", DefaultStartupTimeout)
		}
	case "tool_timeout_sec":
		if f, ok := sd.number(key, v); ok {
			c.ToolTimeoutSec = &f
			sd.zeroTimeout(key, f, "call", DefaultToolTimeout)
		}
	case "default_tools_approval_mode":
		c.DefaultToolsApprovalMode, _ = sd.enum(key, v, ApprovalModes())
	case "tools":
		c.Tools = sd.tools(key, v)
	case "output_token_limit":
		if n, ok := sd.tokenLimit(key, v); ok {
			c.OutputTokenLimit = n
		}
	case "enabled_tools":
		c.EnabledTools, _ = sd.stringList(key, v, false)
	case "disabled_tools":
		c.DisabledTools, _ = sd.stringList(key, v, false)
	case "startup_readiness":
		c.StartupReadiness, _ = sd.str(key, v)
	case "protocol_version":
		c.ProtocolVersion, _ = sd.str(key, v)
	case "scopes":
		c.Scopes, _ = sd.stringList(key, v, false)
	case "oauth_resource":
		c.OAuthResource, _ = sd.str(key, v)
	case "oauth":
		c.OAuth = sd.oauth(key, v)
	case "name":
		// Codex's legacy display name: accepted and unused, as in Codex.
		sd.str(key, v)
	case "mcp_oauth_credentials_store", "mcp_oauth_callback_port", "mcp_oauth_callback_url":
		if sd.dialect != dialectInline {
			sd.unknown(key)
			return
		}
		applyFileLevel(c, key, v, sd.errorf)
	case "type":
		if !client {
			sd.unknown(key)
			return
		}
		sd.typ, sd.typSet = sd.str(key, v)
	case "envFile":
		if !client {
			sd.unknown(key)
			return
		}
		if raw, ok := sd.str(key, v); ok {
			sd.envFileRaw = raw
			sd.envFile, _ = sd.expand(key, raw)
		}
	case "disabled":
		if !client {
			sd.unknown(key)
			return
		}
		if b, ok := sd.boolean(key, v); ok {
			sd.disabled = &b
		}
	default:
		sd.unknown(key)
	}
}

// zeroTimeout warns of a timeout of 0. Codex accepts it and then gives up
// on every startup (or call) at once; mcp-sidecar accepts it too, so as
// not to lose the server, and uses the default instead (seconds).
func (sd *serverDecoder) zeroTimeout(key string, v float64, what string, def time.Duration) {
	if v == 0 {
		sd.warnf(key, "0 would make Codex time out every %s at once; mcp-sidecar uses the default, %g s", what, def.Seconds())
	}
}

// applyFileLevel sets one of Codex's top-level OAuth keys on c, reporting a
// bad value through errorf.
func applyFileLevel(c *ServerConfig, key string, v any, errorf func(key, format string, args ...any)) {
	switch key {
	case "mcp_oauth_credentials_store":
		s, ok := v.(string)
		if !ok || !slices.Contains(credentialStores, s) {
			errorf(key, "must be one of %s", quoteList(credentialStores))
			return
		}
		c.OAuthCredentialsStore = s
	case "mcp_oauth_callback_port":
		if port, ok := portNumber(v); ok {
			c.OAuthCallbackPort = &port
		} else {
			errorf(key, "must be a port number from 0 to 65535")
		}
	case "mcp_oauth_callback_url":
		s, ok := v.(string)
		if !ok {
			errorf(key, "expected a string")
			return
		}
		c.OAuthCallbackURL = s
	}
}

// unknown reports a key the sidecar does not know. As Codex, which
// ignores keys it does not know, it is a warning (with a hint when the key
// looks like a known one), never a reason to drop the server: files are
// shared between clients, which put their own keys there.
func (sd *serverDecoder) unknown(key string) {
	known := codexKeys()
	if sd.dialect.clientFile() {
		known = append(known, clientKeys()...)
	}
	if sd.dialect == dialectInline {
		known = append(known, fileLevelKeys()...)
	}
	sd.warnf(key, "ignored: unknown key%s", hintFor(key, known))
}

// knownElsewhere explains keys of other clients' formats written where
// Codex's keys are expected (config.toml, initialize.servers).
var knownElsewhere = map[string]string{
	"headers":       `; Codex's key for static headers is "http_headers"`,
	"headersHelper": `; Codex's key for a command that prints headers is "http_headers_helper"`,
	"type":          `; Codex's keys have no transport type: a server with "command" is stdio, one with "url" is streamable HTTP`,
	"transport":     `; Codex's keys have no transport type: a server with "command" is stdio, one with "url" is streamable HTTP`,
	"disabled":      `; use "enabled = false"`,
	"envFile":       `; Codex's keys have no env file: use "env" or "env_vars"`,
	"timeout":       `; use "startup_timeout_sec" or "tool_timeout_sec"`,
}

// hintFor is a hint for an unknown key: an explanation for keys of other
// clients, else "did you mean" the closest known key.
func hintFor(key string, known []string) string {
	if h, ok := knownElsewhere[key]; ok && !slices.Contains(known, key) {
		return h
	}
	if best := closest(key, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// rename records that the Codex key codex was written as key.
func (sd *serverDecoder) rename(codex, key string) {
	if codex != key {
		sd.keys[codex] = key
	}
}

// finish applies what depends on several keys: the client "type", envFile,
// disabled, startup_timeout_ms, and paths relative to the file.
func (sd *serverDecoder) finish() {
	c := sd.c
	if sd.oauthScopes != nil {
		if c.Scopes != nil {
			sd.errorf("oauth.scopes", "set either scopes or oauth.scopes, not both")
		} else {
			c.Scopes = sd.oauthScopes
		}
	}
	if sd.typSet {
		sd.checkType()
	}
	if sd.envFile != "" {
		if hasInputMark(sd.envFile) {
			sd.errorf("envFile", "cannot use ${input:...}: the file is read before anyone can be asked")
		} else if c.URL != "" && c.Command == "" {
			sd.errorf("envFile", "not supported for a streamable HTTP server (url); it applies only to stdio servers (command)")
		} else if vars, problem := readEnvFile(resolveAgainst(sd.dir, sd.envFile), sd.x.shown(sd.envFileRaw)); problem != "" {
			sd.errorf("envFile", "%s", problem)
		} else if len(vars) > 0 {
			if c.Env == nil {
				c.Env = make(map[string]string, len(vars))
			}
			for k, v := range vars {
				if _, set := c.Env[k]; !set { // values in env win
					c.Env[k] = v
				}
			}
		}
	}
	if sd.disabled != nil {
		if c.Enabled != nil && *c.Enabled == *sd.disabled {
			sd.errorf("disabled", "contradicts enabled")
		} else {
			enabled := !*sd.disabled
			c.Enabled = &enabled
		}
	}
	if sd.timeout != nil {
		if c.StartupTimeoutSec == nil {
			c.StartupTimeoutSec = sd.timeout
		} else {
			sd.warnf("startup_timeout_ms", "ignored: startup_timeout_sec is also set and wins")
		}
	}
	c.Dir = sd.dir
	// Claude Code, Cursor and VS Code start stdio servers with their
	// whole environment; Codex (and the host's inline config, in Codex's
	// keys) with its allowlist and env_vars.
	c.InheritEnv = sd.dialect.clientFile()
	if sd.dir != "" {
		c.Cwd = resolveAgainst(sd.dir, c.Cwd)
		// A bare command name is looked up in PATH at spawn; one with a
		// slash names a file, relative to the config file like cwd.
		if strings.ContainsRune(c.Command, '/') {
			c.Command = resolveAgainst(sd.dir, c.Command)
		}
	}
}

// checkType maps the client "type" onto Codex's command/url split.
func (sd *serverDecoder) checkType() {
	c := sd.c
	switch sd.typ {
	case "stdio":
		if c.Command == "" && c.URL != "" {
			sd.errorf("type", `is "stdio" but the server has a url and no command`)
		}
	case "http", "streamable-http":
		if sd.typ == "streamable-http" && sd.dialect == dialectVSCode {
			sd.errorf("type", `must be "stdio", "http" or "sse"`)
			return
		}
		if c.URL == "" && c.Command != "" {
			sd.errorf("type", "is %q but the server has a command and no url", sd.typ)
		}
	case "sse":
		// The legacy HTTP+SSE transport, which the three clients still
		// connect to. It ends with 2025-11-25: 2026-07-28 has no such
		// transport, so a server of it is never asked for that version.
		if c.URL == "" && c.Command != "" {
			sd.errorf("type", `is "sse" but the server has a command and no url`)
		}
		if v := c.ProtocolVersion; v > lastSSEVersion {
			sd.errorf("protocol_version", "%s has no HTTP+SSE transport (type \"sse\" speaks %s and earlier): use type \"http\" with the server's Streamable HTTP endpoint for %s", v, lastSSEVersion, v)
		}
		c.SSE = true
	default:
		if sd.dialect == dialectVSCode {
			sd.errorf("type", `must be "stdio", "http" or "sse"`)
		} else {
			sd.errorf("type", `must be "stdio", "http", "streamable-http" or "sse"`)
		}
	}
}

// lastSSEVersion is the last MCP version with the HTTP+SSE transport (kept
// for backwards compatibility since 2025-03-26; 2026-07-28 has only
// Streamable HTTP and stdio).
const lastSSEVersion = "2025-11-25"

// closest suggests a known key for a typo.
func closest(key string, known []string) string { return suggest.Closest(key, known) }
