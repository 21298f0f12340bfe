package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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

// codexKeys are the server keys of Codex's config plus the sidecar's own
// (startup_readiness, protocol_version); all dialects accept them.
func codexKeys() []string {
	return []string{
		"command", "args", "env", "env_vars", "cwd",
		"url", "bearer_token", "bearer_token_env_var", "http_headers", "env_http_headers",
		"enabled", "required", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec",
		"enabled_tools", "disabled_tools", "startup_readiness", "protocol_version", "scopes",
	}
}

// clientKeys are the keys of Claude Code, Cursor and VS Code server entries
// that the sidecar maps onto Codex's.
func clientKeys() []string {
	return []string{"type", "headers", "envFile", "disabled"}
}

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
	notes      []string
	typ        string // "type" of client files
	typSet     bool
	envFile    string
	envFileRaw string
	disabled   *bool
	timeout    *float64 // startup_timeout_ms, in seconds
}

func (sd *serverDecoder) errorf(key, format string, args ...any) {
	sd.errs = append(sd.errs, &Error{File: sd.file, Server: sd.name, Key: key, Message: fmt.Sprintf(format, args...)})
}

func (sd *serverDecoder) notef(key, format string, args ...any) {
	sd.notes = append(sd.notes, (&Error{File: sd.file, Server: sd.name, Key: key, Message: fmt.Sprintf(format, args...)}).Error())
}

// decodeServer decodes raw, the value of one server entry. It returns the
// config only when there were no problems.
func decodeServer(sd *serverDecoder, raw any) (*ServerConfig, []string, Errors) {
	obj, ok := raw.(map[string]any)
	if !ok {
		sd.errorf("", "expected %s of server settings, got %s", sd.dialect.objectWord(), sd.kindOf(raw))
		return nil, nil, sd.errs
	}
	sd.c = &ServerConfig{Name: sd.name, Source: sd.file}
	sd.keys = make(map[string]string)
	for _, key := range sortedKeys(obj) {
		v := obj[key]
		if v == nil {
			continue // JSON null: as if absent
		}
		sd.decodeKey(key, v)
	}
	sd.finish()
	sd.errs = append(sd.errs, validate(sd.c, sd.keys)...)
	if len(sd.errs) > 0 {
		return nil, sd.notes, sd.errs
	}
	return sd.c, sd.notes, nil
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
		c.EnvVars, _ = sd.stringList(key, v, false)
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
	case "enabled":
		if b, ok := sd.boolean(key, v); ok {
			c.Enabled = &b
		}
	case "required":
		c.Required, _ = sd.boolean(key, v)
	case "startup_timeout_sec":
		if f, ok := sd.number(key, v); ok {
			c.StartupTimeoutSec = &f
		}
	case "startup_timeout_ms":
		// Codex's older spelling; startup_timeout_sec wins when both are set.
		if f, ok := sd.number(key, v); ok {
			if !(f > 0) {
				sd.errorf(key, "must be a number of milliseconds greater than 0")
				return
			}
			sec := f / 1000
			sd.timeout = &sec
		}
	case "tool_timeout_sec":
		if f, ok := sd.number(key, v); ok {
			c.ToolTimeoutSec = &f
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
		// OAuth scopes for `codex mcp login`: the sidecar does no OAuth login.
		if _, ok := sd.stringList(key, v, false); ok {
			sd.notef(key, "ignored: mcp-sidecar does not perform OAuth logins")
		}
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

// unknown reports a key the sidecar does not know: an error in Codex TOML
// and inline config (as Codex, which denies unknown fields), a note in
// files shared with other clients, which put their own keys there
// (autoApprove, alwaysAllow, timeout, description, ...).
func (sd *serverDecoder) unknown(key string) {
	if sd.dialect.clientFile() {
		sd.notef(key, "ignored: not used by mcp-sidecar")
		return
	}
	known := codexKeys()
	if hint := closest(key, known); hint != "" {
		sd.errorf(key, "unknown key (did you mean %q?)", hint)
		return
	}
	sd.errorf(key, "unknown key")
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
	if sd.typSet {
		sd.checkType()
	}
	if sd.envFile != "" {
		if c.URL != "" && c.Command == "" {
			sd.errorf("envFile", "not supported for a streamable HTTP server (url); it applies only to stdio servers (command)")
		} else if vars, problem := readEnvFile(resolveAgainst(sd.dir, sd.envFile), sd.envFileRaw); problem != "" {
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
			sd.notef("startup_timeout_ms", "ignored: startup_timeout_sec is also set and wins")
		}
	}
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
			sd.errorf("type", `must be "stdio" or "http"`)
			return
		}
		if c.URL == "" && c.Command != "" {
			sd.errorf("type", "is %q but the server has a command and no url", sd.typ)
		}
	case "sse":
		sd.errorf("type", `"sse" (the legacy HTTP+SSE transport) is not supported; mcp-sidecar speaks Streamable HTTP: use type "http" with the server's Streamable HTTP endpoint`)
	default:
		if sd.dialect == dialectVSCode {
			sd.errorf("type", `must be "stdio" or "http"`)
		} else {
			sd.errorf("type", `must be "stdio", "http" or "streamable-http"`)
		}
	}
}

func (sd *serverDecoder) kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64, json.Number:
		return "a number"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return sd.dialect.objectWord()
	case time.Time:
		return "a date-time"
	}
	return "a value of another type"
}

func (sd *serverDecoder) str(key string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		sd.errorf(key, "expected a string, got %s", sd.kindOf(v))
	}
	return s, ok
}

// expandedString is str followed by the file's variable expansion.
func (sd *serverDecoder) expandedString(key string, v any) (string, bool) {
	s, ok := sd.str(key, v)
	if !ok {
		return "", false
	}
	return sd.expand(key, s)
}

func (sd *serverDecoder) expand(key, s string) (string, bool) {
	out, problem := sd.x.expand(s)
	if problem != "" {
		sd.errorf(key, "%s", problem)
		return "", false
	}
	return out, true
}

// stringList decodes an array of strings; expand says whether the elements
// are subject to the file's variable expansion. An empty array yields an
// empty, non-nil slice: it was set.
func (sd *serverDecoder) stringList(key string, v any, expand bool) ([]string, bool) {
	var items []any
	switch a := v.(type) {
	case []any:
		items = a
	case []map[string]any:
		sd.errorf(key, "expected an array of strings, got an array of tables")
		return nil, false
	default:
		sd.errorf(key, "expected an array of strings, got %s", sd.kindOf(v))
		return nil, false
	}
	out := make([]string, 0, len(items))
	ok := true
	for i, item := range items {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		s, isStr := item.(string)
		if !isStr {
			sd.errorf(ikey, "expected a string, got %s", sd.kindOf(item))
			ok = false
			continue
		}
		if expand {
			if s, isStr = sd.expand(ikey, s); !isStr {
				ok = false
				continue
			}
		}
		out = append(out, s)
	}
	if !ok {
		return nil, false
	}
	return out, true
}

// stringMap decodes a table/object of string values.
func (sd *serverDecoder) stringMap(key string, v any, expand bool) (map[string]string, bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		sd.errorf(key, "expected %s of strings, got %s", sd.dialect.objectWord(), sd.kindOf(v))
		return nil, false
	}
	out := make(map[string]string, len(m))
	ok := true
	for _, name := range sortedKeys(m) {
		ikey := key + "." + name
		s, isStr := m[name].(string)
		if !isStr {
			sd.errorf(ikey, "expected a string, got %s", sd.kindOf(m[name]))
			ok = false
			continue
		}
		if expand {
			if s, isStr = sd.expand(ikey, s); !isStr {
				ok = false
				continue
			}
		}
		out[name] = s
	}
	if !ok {
		return nil, false
	}
	return out, true
}

func (sd *serverDecoder) boolean(key string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		sd.errorf(key, "expected a boolean, got %s", sd.kindOf(v))
	}
	return b, ok
}

func (sd *serverDecoder) number(key string, v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil && !math.IsInf(f, 0) {
			sd.errorf(key, "expected a number")
			return 0, false
		}
		return f, true
	}
	sd.errorf(key, "expected a number, got %s", sd.kindOf(v))
	return 0, false
}

// closest suggests a known key within two edits of key, for typos.
func closest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt // not a typo of a short key; also bounds the work
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
