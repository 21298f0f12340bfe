package gateway_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestHTTPBothProtocols: over HTTP a client of MCP 2025-11-25 has a
// session of its own; one of 2026-07-28, whose requests stand alone, is
// served too, its server's questions as input-required rounds.
func TestHTTPBothProtocols(t *testing.T) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", ""), tool("ask", fixture.BehaviorElicit)}})}})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	for _, v := range []string{legacy, "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "over http"}}, nil
				},
			}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("protocol %q, want %q", got, v)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"v": v}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); got != `{"v":"`+v+`"}` {
				t.Errorf("echo: %q", got)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); !strings.Contains(got, "over http") {
				t.Errorf("elicitation: %q", got)
			}
		})
	}
}
