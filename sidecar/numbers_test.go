package sidecar_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestIntegralNumbersInParams: every integer member of the host's params
// (initialize's limits, tools/search's limit, tools/call's timeoutMs)
// takes a number with a zero fractional part, which JSON Schema's integer
// is (2.0, 5e3), and refuses a fractional one with -32602 naming the
// member in words, never a Go type.
func TestIntegralNumbersInParams(t *testing.T) {
	h := newHarness(t)
	noGoWords := func(msg string) {
		t.Helper()
		for _, w := range []string{"json:", "Go ", "int64", "int ", "struct", "float64"} {
			if strings.Contains(msg, w) {
				t.Errorf("message %q names a Go type (%q)", msg, w)
			}
		}
	}
	refused := func(err error, want string) {
		t.Helper()
		pe := errorCode(t, err, protocol.CodeInvalidParams)
		if !strings.Contains(pe.Message, want) {
			t.Errorf("message %q lacks %q", pe.Message, want)
		}
		noGoWords(pe.Message)
	}

	// A fractional limit fails initialize, which the host may send again.
	err := h.call(protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "test"}, "cacheDir": h.cacheDir,
		"limits": map[string]any{"maxPendingPerSession": json.RawMessage("8.5")}}, nil)
	refused(err, "limits.maxPendingPerSession must be an integer, not 8.5")

	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo"), tool("sleep", "sleep")}})
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]any{"limits": map[string]any{
		"maxFrameBytes":          json.RawMessage("1e6"),
		"maxToolNameBytes":       json.RawMessage("64.0"),
		"maxConcurrentStarts":    json.RawMessage("4.0"),
		"maxPendingPerSession":   json.RawMessage("8.0"),
		"refreshCooldownMs":      json.RawMessage("2e3"),
		"maxServerRequests":      json.RawMessage("1.6E+1"),
		"authorizationTimeoutMs": json.RawMessage("3.0e5"),
	}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)

	res, err := h.search(map[string]any{"sessionId": sid, "query": "/./", "limit": json.RawMessage("2.0")})
	if err != nil || len(res) != 2 {
		t.Errorf("tools/search with limit 2.0: %v, %d results, want 2", err, len(res))
	}
	_, err = h.search(map[string]any{"sessionId": sid, "query": "/./", "limit": json.RawMessage("2.5")})
	refused(err, "limit must be an integer, not 2.5")

	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{"x": 1}, "timeoutMs": json.RawMessage("5000.0")}); err != nil {
		t.Errorf("tools/call with timeoutMs 5000.0: %v", err)
	}
	// The value is the one written: 3e2 ms.
	_, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"ms": 60000}, "timeoutMs": json.RawMessage("3e2")})
	if pe := errorCode(t, err, protocol.CodeToolTimeout); !strings.Contains(pe.Message, "timeoutMs (0.3 s)") {
		t.Errorf("timeout message %q does not name timeoutMs (0.3 s)", pe.Message)
	}
	_, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{}, "timeoutMs": json.RawMessage("5000.5")})
	refused(err, "timeoutMs must be an integer, not 5000.5")
	_, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{}, "timeoutMs": "5000"})
	refused(err, "timeoutMs must be an integer")
	_, err = h.search(map[string]any{"sessionId": sid, "query": 5})
	refused(err, "query must be a string, not a number")
}
