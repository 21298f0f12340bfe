package sidecar_test

import (
	"context"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// BenchmarkToolsListInStorm measures tools/list of a session whose server
// (200 tools, stdio) sends 10,000 notifications/tools/list_changed a
// second all the while, and reports the server's listings per tools/list.
//
//	go test -run '^$' -bench ToolsListInStorm -benchtime 200x ./sidecar/
func BenchmarkToolsListInStorm(b *testing.B) {
	ctx := context.Background()
	c := benchSidecar(b)
	count := b.TempDir() + "/count"
	params := map[string]any{
		"clientInfo": map[string]any{"name": "bench"},
		"cacheDir":   b.TempDir(),
		"features":   map[string]bool{"mcp_tool_list_changed": true},
		"servers": map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
			CountFile: count, ToolCount: 200, Tools: []fixture.ToolSpec{tool("storm", fixture.BehaviorToolsChanged)},
		})},
	}
	var init protocol.InitializeResult
	if err := c.Call(ctx, protocol.MethodInitialize, params, &init); err != nil {
		b.Fatal(err)
	}
	var open protocol.SessionOpenResult
	if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
		b.Fatal(err)
	}
	list := map[string]any{"sessionId": open.SessionID}
	var res protocol.ToolsListResult
	if err := c.Call(ctx, protocol.MethodToolsList, list, &res); err != nil {
		b.Fatal(err)
	}
	// The storm lasts until the benchmark cancels it.
	id, storm, err := c.Dispatch(ctx, protocol.MethodToolsCall, map[string]any{
		"sessionId": open.SessionID, "name": "mcp__s__storm", "arguments": map[string]any{"perMs": 10, "ms": 3_600_000},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Cancel(ctx, id)
		_ = storm.Wait(ctx, nil)
	})
	before, _ := listings(count)
	b.ResetTimer()
	for b.Loop() {
		if err := c.Call(ctx, protocol.MethodToolsList, list, &res); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, _ := listings(count)
	b.ReportMetric(float64(after-before)/float64(b.N), "listings/op")
}
