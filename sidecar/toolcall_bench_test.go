package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// BenchmarkToolCall measures a plain tools/call (an echo, no sandbox
// state) through an in-process sidecar to a stdio fixture server. Its
// allocations are the host client's and the sidecar's: the host's are the
// same from run to run, so a change in allocs/op is the sidecar's call
// path (the server is a process of its own).
func BenchmarkToolCall(b *testing.B) {
	for _, tools := range []int{1, 200} {
		b.Run(fmt.Sprintf("tools=%d", tools), func(b *testing.B) {
			ctx := context.Background()
			c := benchSidecar(b)

			specs := []fixture.ToolSpec{tool("echo", "echo")}
			for i := 1; i < tools; i++ {
				specs = append(specs, tool(fmt.Sprintf("other%d", i), "echo"))
			}
			params := map[string]any{
				"clientInfo": map[string]any{"name": "bench"},
				"cacheDir":   b.TempDir(),
				"servers":    map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: specs})},
			}
			var init protocol.InitializeResult
			if err := c.Call(ctx, protocol.MethodInitialize, params, &init); err != nil {
				b.Fatal(err)
			}
			var open protocol.SessionOpenResult
			if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
				b.Fatal(err)
			}
			call := json.RawMessage(`{"sessionId":"` + open.SessionID + `","name":"mcp__s__echo","arguments":{"text":"hi"}}`)
			var res json.RawMessage
			if err := c.Call(ctx, protocol.MethodToolsCall, call, &res); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Call(ctx, protocol.MethodToolsCall, call, &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
