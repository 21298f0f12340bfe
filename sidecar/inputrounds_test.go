package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestHostRunsInputRounds: a host that declared capabilities.inputRequired
// gets a modern server's input-required result as the server sent it
// (its key, its requestState), is never asked through mcp/elicit, and its
// retry with inputResponses and requestState reaches the server; the
// clientCapabilities of a call are what the server is told.
func TestHostRunsInputRounds(t *testing.T) {
	h := newHarness(t)
	h.onRequest = func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		t.Errorf("the host was sent %s: it runs the rounds itself", method)
		return nil, protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, "not asked")
	}
	spec := fixture.Spec{Tools: []fixture.ToolSpec{tool("ask", fixture.BehaviorElicit), tool("meta", fixture.BehaviorMeta)}}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
		"capabilities": map[string]any{"elicitation": true, "inputRequired": true},
	})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID

	call := map[string]any{"sessionId": sid, "name": "mcp__s__ask", "arguments": map[string]any{"message": "colour?"}}
	res, err := h.callTool(call)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
		RequestState json.RawMessage `json:"requestState"`
	}
	if err := json.Unmarshal(res, &first); err != nil {
		t.Fatalf("first round %s: %v", res, err)
	}
	if first.ResultType != "input_required" || first.InputRequests["elicit"].Method != "elicitation/create" || string(first.RequestState) != `"fixture-state/elicit"` {
		t.Fatalf("first round %s, want the server's input-required result (key elicit, its requestState)", res)
	}

	call["inputResponses"] = map[string]any{"elicit": map[string]any{"action": "accept", "content": map[string]any{"answer": "blue"}}}
	call["requestState"] = first.RequestState
	if res, err = h.callTool(call); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res), "input_required") || !strings.Contains(string(res), `\"blue\"`) || strings.Contains(string(res), "isError") {
		t.Errorf("second round %s, want the server's answer with the host's input", res)
	}

	res, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__meta", "clientCapabilities": map[string]any{"sampling": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &meta); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"sampling": map[string]any{}}, meta.StructuredContent["io.modelcontextprotocol/clientCapabilities"]); diff != "" {
		t.Errorf("capabilities the server was told (-want +got):\n%s", diff)
	}

	for _, bad := range []map[string]any{
		{"requestState": 5},
		{"inputResponses": []any{}},
		{"clientCapabilities": "all"},
	} {
		p := map[string]any{"sessionId": sid, "name": "mcp__s__ask"}
		for k, v := range bad {
			p[k] = v
		}
		_, err := h.callTool(p)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams {
			t.Errorf("tools/call with %v: %v, want -32602", bad, err)
		}
	}
}
