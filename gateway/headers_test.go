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
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// regionTool declares Mcp-Param-Region (SEP-2243), as go-sdk's conformance
// everything-server's tool does for the official suite's
// http-custom-header-server-validation scenario.
var regionTool = fixture.ToolSpec{Def: json.RawMessage(`{"name":"where","inputSchema":{"type":"object",
	"properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}},"required":["region"]}}`)}

// TestParamHeaders: a tools/call of MCP 2026-07-28 over HTTP whose
// Mcp-Param-* headers disagree with its arguments is refused with HTTP 400
// and HeaderMismatch (-32020), whether the gateway is a transparent proxy
// (the server's own tool names) or serves several servers (qualified
// names); one whose headers agree is called.
func TestParamHeaders(t *testing.T) {
	two := fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "")}}
	for _, tc := range []struct {
		name    string
		servers map[string]any
		tool    string
	}{
		{"one server", map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{regionTool}})}, "where"},
		{"several servers", map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{regionTool}}), "beta": server(two)}, "mcp__alpha__where"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := start(t, setup{servers: tc.servers})
			srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
			t.Cleanup(srv.Close)
			for _, c := range []struct {
				name    string
				args    string
				headers map[string]string
				refused bool
			}{
				{"agree", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "Hello"}, false},
				{"base64", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="}, false},
				{"base64 with bad padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, true},
				{"base64 with bad characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, true},
				{"missing", `{"region":"test-value"}`, nil, true},
				{"another value", `{"region":"us-west1"}`, map[string]string{"mcp-param-region": "eu-west1"}, true},
				{"for an absent argument", `{"query":"q"}`, map[string]string{"Mcp-Param-Region": "x"}, true},
			} {
				t.Run(c.name, func(t *testing.T) {
					status, body := post2026(t, srv.URL+"/mcp", tc.tool, c.args, c.headers)
					var resp struct {
						Result *struct {
							IsError bool `json:"isError"`
						} `json:"result"`
						Error *struct {
							Code int `json:"code"`
						} `json:"error"`
					}
					if err := json.Unmarshal(body, &resp); err != nil {
						t.Fatalf("HTTP %d, body %s: %v", status, body, err)
					}
					if c.refused {
						if status != http.StatusBadRequest || resp.Error == nil || resp.Error.Code != -32020 {
							t.Errorf("HTTP %d, body %s; want 400 with error -32020", status, body)
						}
						return
					}
					if status != http.StatusOK || resp.Result == nil || resp.Result.IsError {
						t.Errorf("HTTP %d, body %s; want the tool's result", status, body)
					}
				})
			}
		})
	}
}

// post2026 sends one tools/call of MCP 2026-07-28 (send2026).
func post2026(t *testing.T, url, tool, args string, extra map[string]string) (int, []byte) {
	t.Helper()
	return send2026(t, url, "tools/call", tool, `{"name":"`+tool+`","arguments":`+args+`}`, extra)
}

// send2026 sends one request of MCP 2026-07-28 over HTTP, params a JSON
// object to which the request's _meta is added, with the standard headers
// go-sdk checks (Mcp-Name when name is not "") and the extra ones given;
// it returns the status and the JSON-RPC message of the answer (JSON, or
// the one event of an SSE stream).
func send2026(t *testing.T, url, method, name, params string, extra map[string]string) (int, []byte) {
	t.Helper()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
		"io.modelcontextprotocol/clientCapabilities":{}}`
	params = strings.TrimSpace(params)
	if !strings.HasPrefix(params, "{") || !strings.HasSuffix(params, "}") {
		t.Fatalf("params %s: not an object", params)
	}
	if inner := strings.TrimSpace(params[1 : len(params)-1]); inner != "" {
		params = "{" + inner + "," + meta + "}"
	} else {
		params = "{" + meta + "}"
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
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
	for k, v := range extra {
		req.Header.Set(k, v)
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
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range bytes.Lines(b) {
			if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok && len(bytes.TrimSpace(data)) > 0 {
				b = bytes.TrimSpace(data)
			}
		}
	}
	return resp.StatusCode, b
}

// TestParamHeadersBodyBound: a tools/call body past go-sdk's bound
// (mcp.DefaultMaxRequestBodyBytes), which the header check reads only up
// to that bound, still reaches go-sdk whole and is refused there (413).
func TestParamHeadersBodyBound(t *testing.T) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{regionTool}})}})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	big := `{"region":"` + strings.Repeat("x", mcp.DefaultMaxRequestBodyBytes) + `"}`
	status, body := post2026(t, srv.URL+"/mcp", "where", big, map[string]string{"Mcp-Param-Region": "x"})
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("HTTP %d, body %.200s; want 413", status, body)
	}
}
