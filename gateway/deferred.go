package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// The tools of deferred mode (Options.Deferred): a client sees these
// three, whatever the number of servers, and finds the others with the
// host's tools/search, reads their definitions with tools/get and calls
// them with tools/call.
const (
	toolSearch   = "search_tools"
	toolDescribe = "describe_tools"
	toolCall     = "call_tool"
)

func deferredTools() []*mcp.Tool {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	return []*mcp.Tool{
		{
			Name:        toolSearch,
			Title:       "Search tools",
			Description: "Find tools of the connected MCP servers for a task. Returns the best matches: name, server, score and a short description. Then read a tool's definition with " + toolDescribe + " and run it with " + toolCall + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what the tool should do, in words; or /regex/ over names; or select:name1,name2"},"limit":{"type":"integer","minimum":1,"description":"most results (default 5)"}},"required":["query"]}`),
			Annotations: ro,
		},
		{
			Name:        toolDescribe,
			Title:       "Describe tools",
			Description: "The full definitions (description, input schema) of tools named by " + toolSearch + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"description":"tool names from search results"}},"required":["names"]}`),
			Annotations: ro,
		},
		{
			Name:        toolCall,
			Title:       "Call a tool",
			Description: "Run a tool found with " + toolSearch + ", with arguments matching its input schema from " + toolDescribe + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the tool's name"},"arguments":{"type":"object","description":"the tool's arguments"}},"required":["name"]}`),
		},
	}
}

func (c *client) searchTools(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
	var p struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(orEmpty(args), &p); err != nil || strings.TrimSpace(p.Query) == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolSearch + ` needs {"query": "..."}`}
	}
	id, err := c.hostSession(ctx)
	if err != nil {
		return nil, err
	}
	var res protocol.ToolsSearchResult
	if err := c.call(ctx, protocol.MethodToolsSearch, protocol.ToolsSearchParams{SessionID: id, Query: p.Query, Limit: p.Limit}, &res); err != nil {
		return toolError(ctx, err)
	}
	if res.Results == nil {
		res.Results = []protocol.ToolSearchResult{}
	}
	return jsonToolResult(res)
}

func (c *client) describeTools(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
	var p struct {
		Names []string `json:"names"`
	}
	if err := json.Unmarshal(orEmpty(args), &p); err != nil || len(p.Names) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolDescribe + ` needs {"names": ["..."]}`}
	}
	id, err := c.hostSession(ctx)
	if err != nil {
		return nil, err
	}
	var res struct {
		Tools   []json.RawMessage `json:"tools"`
		Missing []string          `json:"missing"`
	}
	if err := c.call(ctx, protocol.MethodToolsGet, protocol.ToolsGetParams{SessionID: id, Names: p.Names}, &res); err != nil {
		return toolError(ctx, err)
	}
	out := struct {
		Tools   []*mcp.Tool `json:"tools"`
		Missing []string    `json:"missing,omitempty"`
	}{Tools: []*mcp.Tool{}, Missing: res.Missing}
	for _, raw := range res.Tools {
		t, err := toolOf(raw, false)
		if err != nil {
			continue
		}
		out.Tools = append(out.Tools, t)
	}
	return jsonToolResult(out)
}

// jsonToolResult is v as a tool's result: JSON text for the model, and
// the same as structured content.
func jsonToolResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}
