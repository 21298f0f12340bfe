package config

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// portNumber reads a u16 as TOML (int64) or JSON (json.Number) gives it.
func portNumber(v any) (int, bool) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case json.Number:
		i, err := protocol.ParseInteger([]byte(x)) // 8080.0 too, as JSON Schema's integer
		if err != nil {
			return 0, false
		}
		n = i
	default:
		return 0, false
	}
	if n < 0 || n > 65535 {
		return 0, false
	}
	return int(n), true
}

// envVars decodes env_vars: names, or Codex's {name, source} tables whose
// source is "local" (the default) or "remote".
func (sd *serverDecoder) envVars(key string, v any) ([]string, bool) {
	var items []any
	switch a := v.(type) {
	case []any:
		items = a
	case []map[string]any:
		for _, m := range a {
			items = append(items, m)
		}
	default:
		sd.errorf(key, "expected an array of variable names, got %s", sd.kindOf(v))
		return nil, false
	}
	out := make([]string, 0, len(items))
	ok := true
	for i, item := range items {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		switch x := item.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			name, isStr := x["name"].(string)
			if !isStr {
				sd.errorf(ikey+".name", "expected the variable's name, a string")
				ok = false
				continue
			}
			if src, set := x["source"]; set {
				s, isStr := src.(string)
				if !isStr || !slices.Contains(envVarSources, s) {
					sd.errorf(ikey+".source", "must be one of %s", quoteList(envVarSources))
					ok = false
					continue
				}
				if s == "remote" {
					sd.warnf(ikey+".source", `"remote" is for Codex's remote environments; mcp-sidecar takes %s from its own environment`, name)
				}
			}
			for _, k := range sortedKeys(x) {
				if k != "name" && k != "source" {
					sd.warnf(ikey+"."+k, "ignored: unknown key%s", hintFor(k, []string{"name", "source"}))
				}
			}
			out = append(out, name)
		default:
			sd.errorf(ikey, "expected a variable name or a table with name and source, got %s", sd.kindOf(item))
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return out, true
}

// tools decodes the per-tool table: tools.TOOL.approval_mode and
// tools.TOOL.output_token_limit.
func (sd *serverDecoder) tools(key string, v any) map[string]ToolConfig {
	m, ok := v.(map[string]any)
	if !ok {
		sd.errorf(key, "expected %s mapping tool names to settings, got %s", sd.dialect.objectWord(), sd.kindOf(v))
		return nil
	}
	out := make(map[string]ToolConfig, len(m))
	for _, tool := range sortedKeys(m) {
		tkey := key + "." + tool
		entry, ok := m[tool].(map[string]any)
		if !ok {
			sd.errorf(tkey, "expected %s of tool settings, got %s", sd.dialect.objectWord(), sd.kindOf(m[tool]))
			continue
		}
		var tc ToolConfig
		for _, k := range sortedKeys(entry) {
			switch k {
			case "approval_mode":
				tc.ApprovalMode, _ = sd.enum(tkey+"."+k, entry[k], ApprovalModes())
			case "output_token_limit":
				if n, ok := sd.tokenLimit(tkey+"."+k, entry[k]); ok {
					tc.OutputTokenLimit = n
				}
			default:
				sd.warnf(tkey+"."+k, "ignored: unknown key%s", hintFor(k, []string{"approval_mode", "output_token_limit"}))
			}
		}
		out[tool] = tc
	}
	return out
}

// tokenLimit reads an output_token_limit: a whole number of tokens, 1 or
// more.
func (sd *serverDecoder) tokenLimit(key string, v any) (int, bool) {
	n, isNum := portLikeInt(v)
	if !isNum || n <= 0 {
		sd.errorf(key, "must be a whole number of tokens greater than 0")
		return 0, false
	}
	return n, true
}

// portLikeInt reads a whole number as TOML or JSON gives it.
func portLikeInt(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case json.Number:
		i, err := protocol.ParseInteger([]byte(x)) // 2000.0 too, as JSON Schema's integer
		return int(i), err == nil && i == int64(int(i))
	}
	return 0, false
}

// oauthKeys are the keys of the oauth table per dialect: Codex's
// McpServerOAuthConfig (plus the sidecar's client_secret_env_var), Claude
// Code's oauth object in .mcp.json, VS Code's in mcp.json.
func (d dialect) oauthKeys() []string {
	switch d {
	case dialectClaude:
		return []string{"clientId", "callbackPort", "scopes", "authServerMetadataUrl", "client_secret_env_var"}
	case dialectVSCode:
		return []string{"clientId", "client_secret_env_var"}
	}
	return []string{"client_id", "callback_url", "callback_port", "client_secret_env_var"}
}

// oauth decodes [mcp_servers.NAME.oauth] (the "oauth" object of client
// files, in their own key names).
func (sd *serverDecoder) oauth(key string, v any) *OAuthConfig {
	m, ok := v.(map[string]any)
	if !ok {
		sd.errorf(key, "expected %s with %s, got %s", sd.dialect.objectWord(), strings.Join(sd.dialect.oauthKeys(), ", "), sd.kindOf(v))
		return nil
	}
	known := sd.dialect.oauthKeys()
	o := &OAuthConfig{}
	for _, k := range sortedKeys(m) {
		ikey := key + "." + k
		if !slices.Contains(known, k) {
			if k == "client_secret" || k == "clientSecret" {
				sd.errorf(ikey, "inline client secrets are refused; name the environment variable that holds it in client_secret_env_var")
				continue
			}
			sd.warnf(ikey, "ignored: unknown key%s", hintFor(k, known))
			continue
		}
		switch k {
		case "client_id", "clientId":
			o.ClientID, _ = sd.expandedString(ikey, m[k])
		case "client_secret_env_var":
			if s, ok := sd.str(ikey, m[k]); ok {
				if s == "" {
					sd.errorf(ikey, "must not be empty")
				}
				o.ClientSecretEnvVar = s
			}
		case "callback_url":
			o.CallbackURL, _ = sd.str(ikey, m[k])
		case "callback_port", "callbackPort":
			if port, ok := portNumber(m[k]); ok {
				o.CallbackPort = &port
			} else {
				sd.errorf(ikey, "must be a port number from 0 to 65535")
			}
		case "scopes": // Claude Code: one space-separated string
			if s, ok := sd.str(ikey, m[k]); ok {
				sd.oauthScopes = strings.Fields(s)
			}
		case "authServerMetadataUrl":
			sd.warnf(ikey, "ignored: mcp-sidecar discovers the authorization server from the MCP server (RFC 9728, RFC 8414)")
		}
	}
	if o.ClientSecretEnvVar != "" && o.ClientID == "" {
		sd.errorf(key+".client_secret_env_var", "needs a client id (%s)", known[0])
	}
	return o
}

// enum decodes a string that must be one of allowed.
func (sd *serverDecoder) enum(key string, v any, allowed []string) (string, bool) {
	s, ok := sd.str(key, v)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, s) {
		sd.errorf(key, "must be one of %s", quoteList(allowed))
		return "", false
	}
	return s, true
}

// quoteList renders `"a", "b" or "c"`.
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
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
