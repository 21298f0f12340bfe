package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInlineIntegralNumbers: the integer keys of a server given as JSON
// (initialize.servers, .mcp.json, mcp.json) take any number with a zero
// fractional part, as JSON Schema's integer does and as the JavaScript
// tools that read those files do; a fractional one is still refused.
func TestInlineIntegralNumbers(t *testing.T) {
	servers, err := ParseInline(json.RawMessage(`{"g": {"url": "https://h/mcp", "mcp_oauth_callback_port": 7000.0,
		"oauth": {"client_id": "c", "callback_port": 6e3}, "tools": {"t": {"output_token_limit": 2.0e3}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := servers["g"]
	if g.OAuthCallbackPort == nil || *g.OAuthCallbackPort != 7000 || g.OAuth == nil || g.OAuth.CallbackPort == nil || *g.OAuth.CallbackPort != 6000 || g.Tools["t"].OutputTokenLimit != 2000 {
		t.Errorf("got %+v (oauth %+v, tools %+v)", g, g.OAuth, g.Tools)
	}
	for body, want := range map[string]string{
		`"mcp_oauth_callback_port": 7000.5`:                   "mcp_oauth_callback_port",
		`"tools": {"t": {"output_token_limit": 2000.5}}`:      "output_token_limit",
		`"oauth": {"client_id": "c", "callback_port": 1e100}`: "callback_port",
	} {
		_, err := ParseInline(json.RawMessage(`{"g": {"url": "https://h/mcp", ` + body + `}}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", body, err, want)
		}
	}
}
