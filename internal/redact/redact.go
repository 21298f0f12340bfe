// Package redact removes secrets from what is shown: a server URL may
// carry a token expanded into its query (?api_key=${API_KEY}), its
// userinfo (https://user:${PASS}@host) or its path (a hosted "secret URL",
// https://mcp.example.com/sk-abc123/mcp), and error messages, logs and
// status reports must not repeat it (URL). A server's own words may quote
// what it was sent (a bearer token, a header, an environment value):
// Secrets replaces every such value in them.
package redact

import (
	"net/url"
	"strings"
)

// Placeholder stands for a removed secret.
const Placeholder = "REDACTED"

// URL is raw with its userinfo, the value of every query parameter and
// every path segment that looks like a secret (PathSegmentSecret) replaced
// by Placeholder, and its fragment dropped; scheme, host and the rest of
// the path stay, so that a person can still tell which server it is. Text
// that does not parse as a URL is not shown at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme)
		b.WriteString("://")
	}
	if u.User != nil {
		b.WriteString(Placeholder)
		b.WriteByte('@')
	}
	b.WriteString(u.Host)
	b.WriteString(Path(u.EscapedPath()))
	if q := Query(u.RawQuery); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String()
}

// Path is an escaped URL path with every segment that looks like a secret
// (PathSegmentSecret) replaced by Placeholder.
func Path(escaped string) string {
	if escaped == "" {
		return ""
	}
	segs := strings.Split(escaped, "/")
	changed := false
	for i, s := range segs {
		if PathSegmentSecret(s) {
			segs[i], changed = Placeholder, true
		}
	}
	if !changed {
		return escaped
	}
	return strings.Join(segs, "/")
}

// Query is a raw query with every value replaced by Placeholder. A
// key=value part keeps its key; a part with no "=" is replaced whole,
// since a secret is often put there bare (?sk-abc123, ?${TOKEN}) and the
// text alone cannot tell a flag from a token.
func Query(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if name, _, hasValue := strings.Cut(p, "="); hasValue {
			parts[i] = name + "=" + Placeholder
		} else if p != "" {
			parts[i] = Placeholder
		}
	}
	return strings.Join(parts, "&")
}

// Endpoint is raw as a URL to hand to code that may put it into errors
// (an HTTP client, an SDK): Query's and Path's redaction and no userinfo.
// It is still a URL to the same host; the caller swaps the real URL in
// where the request is sent (see mcpclient).
func Endpoint(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	u.User = nil
	u.RawQuery = Query(u.RawQuery)
	u.Fragment, u.RawFragment = "", ""
	if p := Path(u.EscapedPath()); p != u.EscapedPath() {
		unescaped, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		u.Path, u.RawPath = unescaped, p
	}
	return u.String(), true
}

// The configuration does not say which part of a URL came from a variable
// (Codex's config.toml has no variables at all, and people paste a hosted
// server's secret URL whole), so a path segment is judged by its look:
// what key formats look like, and what random tokens look like next to
// the words and versions paths are made of.

// secretPrefixes begin the API keys and tokens of common services.
var secretPrefixes = []string{
	"sk-", "sk_", "pk_", "rk_", // OpenAI, Anthropic (sk-ant-), Stripe, Zapier (sk-ak-)
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", // GitHub
	"glpat-",                                             // GitLab
	"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-", // Slack
	"AKIA", "ASIA", // AWS access key ids
	"AIza",  // Google API keys
	"ya29.", // Google OAuth access tokens
	"eyJ",   // a JWT (base64url of `{"`)
	"npm_", "pypi-", "hf_", "lin_api_", "ntn_", "secret_", "shpat_", "dop_v1_",
}

// PathSegmentSecret reports whether one segment of a URL path (escaped or
// not) looks like a secret: it starts with a known key prefix and has more
// after it; or it is a run of token characters (letters, digits, -._~+=/)
// at least 12 long that switches between lower case, upper case and
// digits at least 4 times, as random tokens, UUIDs and hex keys do and
// words, dates and versions ("server-2024", "v1beta", "2025-06-18") do not;
// or such a run at least 32 long, whatever its look.
func PathSegmentSecret(seg string) bool {
	if s, err := url.PathUnescape(seg); err == nil {
		seg = s
	}
	for _, p := range secretPrefixes {
		if len(seg) > len(p)+2 && strings.HasPrefix(seg, p) {
			return true
		}
	}
	if len(seg) < 12 {
		return false
	}
	const (
		none = iota
		lower
		upper
		digit
	)
	last, switches := none, 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		class := none
		switch {
		case 'a' <= c && c <= 'z':
			class = lower
		case 'A' <= c && c <= 'Z':
			class = upper
		case '0' <= c && c <= '9':
			class = digit
		case strings.IndexByte("-._~+=/", c) >= 0: // "/" escaped in a segment: base64
			continue
		default:
			return false // not a token: words with spaces, @scopes, ...
		}
		if last != none && class != last {
			switches++
		}
		last = class
	}
	return switches >= 4 || len(seg) >= 32
}
