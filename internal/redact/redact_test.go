package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://api.example.com/mcp", "https://api.example.com/mcp"},
		{"https://api.example.com/mcp?api_key=s3cr3t&mode=x", "https://api.example.com/mcp?api_key=REDACTED&mode=REDACTED"},
		{"http://alice:s3cr3t@127.0.0.1:8080/mcp", "http://REDACTED@127.0.0.1:8080/mcp"},
		{"http://s3cr3t@h/p?flag#s3cr3t", "http://REDACTED@h/p?REDACTED"},
		// A bare part may be the secret itself.
		{"https://h/mcp?s3cr3t", "https://h/mcp?REDACTED"},
		{"https://h/mcp?sk-s3cr3t&mode=x&token", "https://h/mcp?REDACTED&mode=REDACTED&REDACTED"},
		{"https://h/mcp?s3cr3t%3Dx", "https://h/mcp?REDACTED"},
		{"https://h/mcp?&&s3cr3t&", "https://h/mcp?&&REDACTED&"},
		{"https://h/mcp?=s3cr3t", "https://h/mcp?=REDACTED"},
		{"https://h/mcp?a=b=s3cr3t;c=s3cr3t", "https://h/mcp?a=REDACTED"},
		// Fragments are dropped, whatever they hold.
		{"https://h/cb#access_token=s3cr3t&token_type=bearer", "https://h/cb"},
		{"https://h/cb?state=s3cr3t#access_token=s3cr3t", "https://h/cb?state=REDACTED"},
		{"https://h/cb#?token=s3cr3t", "https://h/cb"},
		{"http://h/%7Euser/mcp", "http://h/%7Euser/mcp"},
		{"http://[::1:bad", "(a URL that does not parse)"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("URL(%q) shows the secret", tc.in)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://u:s3cr3t@h:9/mcp?token=s3cr3t", "https://h:9/mcp?token=REDACTED"},
		{"https://h:9/mcp?s3cr3t&mode=x", "https://h:9/mcp?REDACTED&mode=REDACTED"},
		{"https://h:9/mcp#access_token=s3cr3t", "https://h:9/mcp"},
	} {
		got, ok := Endpoint(tc.in)
		if !ok || got != tc.want {
			t.Errorf("Endpoint(%q) = %q, %v, want %q", tc.in, got, ok, tc.want)
		}
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("Endpoint(%q) shows the secret", tc.in)
		}
	}
}

func TestQuery(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"api_key=s3cr3t", "api_key=REDACTED"},
		{"s3cr3t", "REDACTED"},
		{"token", "REDACTED"},
		{"a=1&s3cr3t&b=", "a=REDACTED&REDACTED&b=REDACTED"},
	} {
		if got := Query(tc.in); got != tc.want {
			t.Errorf("Query(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
