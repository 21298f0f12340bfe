package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// post2026Request sends one request of MCP 2026-07-28 over HTTP (params
// a JSON object, its _meta added) and returns the members of its result.
func post2026Request(t *testing.T, url, method, name, params string) map[string]json.RawMessage {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "t", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndex(b, []byte("data:")); i >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b = bytes.TrimSpace(b[i+len("data:"):])
	}
	var got struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Result == nil {
		t.Fatalf("%s: HTTP %d, body %s: %v", method, resp.StatusCode, b, err)
	}
	return got.Result
}
