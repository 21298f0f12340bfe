package config

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// maxSeconds keeps a timeout convertible to a time.Duration.
const maxSeconds = float64(math.MaxInt64 / int64(time.Second))

// Validate checks one server as Codex does: a valid name, exactly one of
// command and url, no key of the other transport, a usable url, timeouts
// greater than zero, a known startup_readiness, a protocol_version that is
// a date, and environment and header names that can be used. All problems
// are reported together as Errors naming c.Source, c.Name and the key.
func Validate(c *ServerConfig) error {
	return validate(c, nil).asError()
}

// validate is Validate with the keys named as the file wrote them: keys maps
// a Codex key (e.g. "http_headers") to the file's spelling (e.g. "headers").
func validate(c *ServerConfig, keys map[string]string) Errors {
	var errs Errors
	report := func(key, format string, args ...any) {
		if k, ok := keys[key]; ok {
			key = k
		} else if base, rest, found := strings.Cut(key, "."); found {
			if k, ok := keys[base]; ok {
				key = k + "." + rest
			}
		} else if base, rest, found := strings.Cut(key, "["); found {
			if k, ok := keys[base]; ok {
				key = k + "[" + rest
			}
		}
		errs = append(errs, &Error{File: c.Source, Server: c.Name, Key: key, Message: fmt.Sprintf(format, args...)})
	}

	if c.Name == "" {
		report("", "empty server name")
	} else if !validServerName(c.Name) {
		report("", "invalid server name; use only letters, digits, '_' and '-'")
	}

	switch {
	case c.Command != "" && c.URL != "":
		report("url", "both command and url are set; a server is either stdio (command) or streamable HTTP (url)")
	case c.Command == "" && c.URL == "":
		report("command", "neither command nor url is set; a stdio server needs command, a streamable HTTP server needs url")
	case c.URL != "":
		const msg = "not supported for a streamable HTTP server (url); it applies only to stdio servers (command)"
		if c.Args != nil {
			report("args", msg)
		}
		if c.Env != nil {
			report("env", msg)
		}
		if c.EnvVars != nil {
			report("env_vars", msg)
		}
		if c.Cwd != "" {
			report("cwd", msg)
		}
	default:
		const msg = "not supported for a stdio server (command); it applies only to streamable HTTP servers (url)"
		if c.BearerTokenEnvVar != "" {
			report("bearer_token_env_var", msg)
		}
		if c.HTTPHeaders != nil {
			report("http_headers", msg)
		}
		if c.EnvHTTPHeaders != nil {
			report("env_http_headers", msg)
		}
		if c.HTTPHeadersHelper != "" {
			report("http_headers_helper", msg)
		}
		if c.HTTPHeadersHelperTimeoutSec != nil {
			report("http_headers_helper_timeout_sec", msg)
		}
		if c.OAuth != nil {
			report("oauth", msg)
		}
		if c.OAuthResource != "" {
			report("oauth_resource", msg)
		}
		if c.Auth != "" {
			report("auth", msg)
		}
	}

	if strings.ContainsRune(c.Command, 0) {
		report("command", "contains a NUL byte")
	}
	for i, a := range c.Args {
		if strings.ContainsRune(a, 0) {
			report(fmt.Sprintf("args[%d]", i), "contains a NUL byte")
		}
	}
	if strings.ContainsRune(c.Cwd, 0) {
		report("cwd", "contains a NUL byte")
	}
	for _, name := range sortedKeys(c.Env) {
		if !validEnvName(name) {
			report("env."+name, "invalid environment variable name")
		} else if strings.ContainsRune(c.Env[name], 0) {
			report("env."+name, "value contains a NUL byte")
		}
	}
	for i, name := range c.EnvVars {
		if !validEnvName(name) {
			report(fmt.Sprintf("env_vars[%d]", i), "invalid environment variable name")
		}
	}

	// A URL with an input's placeholder is checked once it has its value
	// (WithInputs).
	if c.URL != "" && !hasInputMark(c.URL) {
		u, err := url.Parse(c.URL)
		// The URL is not quoted: its query or userinfo may hold a token.
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			report("url", "must be an http:// or https:// URL with a host")
		}
	}
	if c.BearerTokenEnvVar != "" && !validEnvName(c.BearerTokenEnvVar) {
		report("bearer_token_env_var", "invalid environment variable name")
	}
	for _, name := range sortedKeys(c.HTTPHeaders) {
		if !validHeaderName(name) {
			report("http_headers."+name, "invalid HTTP header name")
		} else if strings.ContainsAny(c.HTTPHeaders[name], "\r\n\x00") {
			report("http_headers."+name, "value contains a line break or NUL byte")
		}
	}
	for _, name := range sortedKeys(c.EnvHTTPHeaders) {
		if !validHeaderName(name) {
			report("env_http_headers."+name, "invalid HTTP header name")
		} else if !validEnvName(c.EnvHTTPHeaders[name]) {
			report("env_http_headers."+name, "value must be the name of an environment variable")
		}
	}

	if c.StartupTimeoutSec != nil && !validSeconds(*c.StartupTimeoutSec) {
		report("startup_timeout_sec", "must be a number of seconds, 0 or more")
	}
	if c.ToolTimeoutSec != nil && !validSeconds(*c.ToolTimeoutSec) {
		report("tool_timeout_sec", "must be a number of seconds, 0 or more")
	}
	switch c.StartupReadiness {
	case "", ReadinessConnection, ReadinessCatalog:
	default:
		report("startup_readiness", `must be "connection" or "catalog"`)
	}
	if c.ProtocolVersion != "" && !validProtocolVersion(c.ProtocolVersion) {
		report("protocol_version", `must be a date like "2025-11-25"`)
	}
	return errs
}

// validSeconds accepts what Codex's Duration::try_from_secs_f64 does
// within maxSeconds: 0 (a warning, see zeroTimeout) and more, not a
// negative, infinite or NaN value.
func validSeconds(v float64) bool {
	return v >= 0 && v <= maxSeconds // false for NaN too
}

// validServerName is ^[a-zA-Z0-9_-]+$.
func validServerName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r == '_', r == '-', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}

// validEnvName accepts any name a process environment can carry.
func validEnvName(s string) bool {
	return s != "" && !strings.ContainsAny(s, "=\x00")
}

// validHeaderName is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func validProtocolVersion(s string) bool {
	if len(s) != len("2006-01-02") {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
