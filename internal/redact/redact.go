// Package redact removes secrets from URLs before they are shown: a server
// URL may carry a token expanded into its query (?api_key=${API_KEY}) or
// its userinfo (https://user:${PASS}@host), and error messages, logs and
// status reports must not repeat it.
package redact

import (
	"net/url"
	"strings"
)

// Placeholder stands for a removed secret.
const Placeholder = "REDACTED"

// URL is raw with its userinfo and the value of every query parameter
// replaced by Placeholder, and its fragment dropped; scheme, host and path
// stay, so that a person can still tell which server it is. Text that does
// not parse as a URL is not shown at all.
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
	b.WriteString(u.EscapedPath())
	if q := Query(u.RawQuery); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String()
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
// (an HTTP client, an SDK): Query's redaction and no userinfo. It is
// still a URL to the same host and path; the caller swaps the real URL in
// where the request is sent (see mcpclient).
func Endpoint(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	u.User = nil
	u.RawQuery = Query(u.RawQuery)
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}
