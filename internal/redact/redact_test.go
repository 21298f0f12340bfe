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
		// Secrets in the path (hosted "secret URL" servers, or ${VAR}
		// expanded into the path): the rest of the path stays.
		{"https://mcp.example.com/sk-s3cr3t/mcp", "https://mcp.example.com/REDACTED/mcp"},
		{"https://actions.example.com/mcp/sk-ak-s3cr3tS3cr3t/sse", "https://actions.example.com/mcp/REDACTED/sse"},
		{"https://h/v1/servers/6a2c1f7e-1d3b-4c8e-9f1a-2b3c4d5e6f70/mcp?s3cr3t", "https://h/v1/servers/REDACTED/mcp?REDACTED"},
		{"https://h/u/ghp_s3cr3tABCDEF0123456789abcdef/mcp", "https://h/u/REDACTED/mcp"},
		{"https://h/s3cr3t%2Fa8F3k2M9x7Q1/mcp", "https://h/REDACTED/mcp"},
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
		{"https://h:9/sk-s3cr3t/mcp?k=s3cr3t", "https://h:9/REDACTED/mcp?k=REDACTED"},
		{"https://h:9/a%2Fb/sk-s3cr3t", "https://h:9/a%2Fb/REDACTED"},
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

// Path segments are judged by their look: keys and random tokens are
// secrets, the words, versions and dates paths are made of are not.
func TestPathSegmentSecret(t *testing.T) {
	for seg, want := range map[string]bool{
		// Keys and tokens.
		"sk-abc":              true,
		"sk-ant-api03-AbCdEf": true,
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a": true,
		"AKIAIOSFODNN7EXAMPLE":                     true,
		"eyJhbGciOiJIUzI1NiJ9":                     true,
		"6a2c1f7e-1d3b-4c8e-9f1a-2b3c4d5e6f70":     true,
		"a8f3k2m9x7q1":                             true,
		"9f86d081884c7d659a2feaa0c55ad015":         true,
		"qwhdjskeirutyfhgkdlsqwhdjskeirutyf":       true, // long: whatever its look
		"s3cr3t%2Fa8F3k2M9x7Q1":                    true, // escaped
		// Words, versions, dates, names.
		"":                           false,
		"mcp":                        false,
		"sse":                        false,
		"v1":                         false,
		"v1beta":                     false,
		"sk-":                        false,
		"2025-06-18":                 false,
		"server-2024":                false,
		"my-project-2024":            false,
		"workspace123":               false,
		"server-sequential-thinking": false,
		"@modelcontextprotocol":      false,
		"%7Euser":                    false,
		"a b c d e f g h i j k l":    false,
	} {
		if got := PathSegmentSecret(seg); got != want {
			t.Errorf("PathSegmentSecret(%q) = %v, want %v", seg, got, want)
		}
	}
}
