package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestServerRoundsReachModernClient: a modern server's input-required
// result reaches a client of 2026-07-28 as the server made it (its key,
// its requestState), and the client's retry with its answers reaches the
// server, which then completes the call.
func TestServerRoundsReachModernClient(t *testing.T) {
	servers := map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("ask", fixture.BehaviorElicit)}})}
	g := start(t, setup{servers: servers})
	cs := connect(t, g, "", &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "colour?"}}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() {
		t.Fatalf("first round answered %q, want an input-required result", text(t, res))
	}
	var keys []string
	for k := range res.InputRequests {
		keys = append(keys, k)
	}
	// The fixture's own key: the gateway's would be of its own making.
	if diff := cmp.Diff([]string{"elicit"}, keys); diff != "" {
		t.Errorf("input request keys (-want +got):\n%s", diff)
	}
	if _, ok := res.InputRequests["elicit"].(*mcp.ElicitParams); !ok {
		t.Errorf("input request %T, want the server's elicitation", res.InputRequests["elicit"])
	}
	retry := *params
	retry.InputResponses = mcp.InputResponseMap{"elicit": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "blue"}}}
	retry.RequestState = res.RequestState
	res, err = cs.CallTool(ctx, &retry)
	if err != nil {
		t.Fatal(err)
	}
	if res.NeedsInput() || !strings.Contains(text(t, res), `"blue"`) {
		t.Errorf("second round answered %q (input required: %v), want the client's answer", text(t, res), res.NeedsInput())
	}
}

// TestServerToldRequestCapabilities: a modern server is told the
// capabilities of the client that made the request, not what the gateway
// could relay: it does not ask for what the client lacks.
func TestServerToldRequestCapabilities(t *testing.T) {
	servers := map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("roots", fixture.BehaviorRoots), tool("meta", fixture.BehaviorMeta)}})}
	for _, v := range []string{legacy, ""} {
		t.Run("protocol "+v, func(t *testing.T) {
			g := start(t, setup{servers: servers})
			cs := connect(t, g, v, &mcp.ClientOptions{
				Capabilities:   &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
				MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			})
			ctx := context.Background()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			var meta map[string]any
			if err := jsonUnmarshal(res, &meta); err != nil {
				t.Fatal(err)
			}
			got, _ := meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
			if diff := cmp.Diff(map[string]any{"sampling": map[string]any{}}, got); diff != "" {
				t.Errorf("capabilities the server was told (-want +got):\n%s", diff)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(text(t, res), "does not support roots") {
				t.Errorf("roots call answered %q (input required: %v), want the server's refusal: the client has no roots", text(t, res), res.NeedsInput())
			}
		})
	}
}

// TestServerRoundsRunForLegacyClient: a client of an earlier revision
// cannot answer an input-required result; the gateway asks it over its
// session and sends the call again.
func TestServerRoundsRunForLegacyClient(t *testing.T) {
	servers := map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("sample", fixture.BehaviorSample)}})}
	g := start(t, setup{servers: servers})
	asked := 0
	cs := connect(t, g, legacy, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked++
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, res), "sampled") || asked != 1 {
		t.Errorf("call answered %q after %d samplings, want the client's one answer", text(t, res), asked)
	}
}

func jsonUnmarshal(res *mcp.CallToolResult, v any) error {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return json.Unmarshal([]byte(b.String()), v)
}

// TestPromptRounds: prompts/get runs in rounds as tools/call does: a
// modern client answers the server's input-required result itself, a
// legacy client is asked over its session.
func TestPromptRounds(t *testing.T) {
	servers := map[string]any{"alpha": server(fixture.Spec{Prompts: []fixture.PromptSpec{{Name: "greet", Text: "your name?", Ask: true}}})}
	for _, v := range []string{legacy, ""} {
		t.Run("protocol "+v, func(t *testing.T) {
			g := start(t, setup{servers: servers})
			asked := 0
			cs := connect(t, g, v, &mcp.ClientOptions{
				Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
				},
			})
			ctx := context.Background()
			res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
			if err != nil {
				t.Fatal(err)
			}
			if v != legacy {
				if !res.NeedsInput() || res.InputRequests["confirm"] == nil {
					t.Fatalf("first round %+v, want the server's input-required result (key confirm)", res)
				}
				res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{
					Name:           "greet",
					InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}},
					RequestState:   res.RequestState,
				})
				if err != nil {
					t.Fatal(err)
				}
			} else if asked != 1 {
				t.Errorf("the legacy client was asked %d times, want 1", asked)
			}
			if len(res.Messages) != 1 {
				t.Fatalf("prompt %+v, want one message", res)
			}
			got, _ := res.Messages[0].Content.(*mcp.TextContent)
			if got == nil || got.Text != `your name? answer={"answer":"Ada"}` {
				t.Errorf("prompt message %+v, want the text with the answer", res.Messages[0].Content)
			}
		})
	}
}
