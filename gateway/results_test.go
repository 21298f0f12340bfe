package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestModernResultMembers: a 2026-07-28 client's resources/read and
// prompts/get results, which the gateway answers past go-sdk's handlers,
// carry resultType "complete" and a cacheScope MCP knows, from a server of
// an earlier protocol that sent neither (the TypeScript SDK's v2 client
// refuses a result without them).
func TestModernResultMembers(t *testing.T) {
	spec := fixture.Spec{Legacy: true,
		Resources: []fixture.ResourceSpec{{URI: "demo://doc", Name: "doc", Text: "hello"}},
		Prompts:   []fixture.PromptSpec{{Name: "greet", Text: "hi"}}}
	g := start(t, setup{servers: map[string]any{"alpha": server(spec), "beta": server(fixture.Spec{})}})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	// The gateway routes a read by the owner its last listing names.
	post2026Request(t, srv.URL+"/mcp", "resources/list", "", `{}`)
	for _, tc := range []struct{ method, name, params string }{
		{"resources/read", "demo://doc", `{"uri":"demo://doc"}`},
		{"prompts/get", "mcp__alpha__greet", `{"name":"mcp__alpha__greet"}`},
	} {
		t.Run(tc.method, func(t *testing.T) {
			res := post2026Request(t, srv.URL+"/mcp", tc.method, tc.name, tc.params)
			if rt := string(res["resultType"]); rt != `"complete"` {
				t.Errorf("resultType = %s, want \"complete\"", rt)
			}
			if cs, ok := res["cacheScope"]; ok && string(cs) != `"public"` && string(cs) != `"private"` {
				t.Errorf("cacheScope = %s, want public or private", cs)
			}
		})
	}
}

// post2026Request sends one request of MCP 2026-07-28 (send2026) and
// returns the members of its result.
func post2026Request(t *testing.T, url, method, name, params string) map[string]json.RawMessage {
	t.Helper()
	status, b := send2026(t, url, method, name, params, nil)
	var got struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Result == nil {
		t.Fatalf("%s: HTTP %d, body %s: %v", method, status, b, err)
	}
	return got.Result
}
