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
		{"http://s3cr3t@h/p?flag#s3cr3t", "http://REDACTED@h/p?flag"},
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
	got, ok := Endpoint("https://u:s3cr3t@h:9/mcp?token=s3cr3t")
	if !ok || got != "https://h:9/mcp?token=REDACTED" {
		t.Errorf("Endpoint = %q, %v", got, ok)
	}
}
