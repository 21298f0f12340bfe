package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// TestCallerRunsRounds: with Rounds.Own a modern server's input-required
// result is the caller's, as the server sent it (its keys, its
// requestState byte for byte), and the caller's retry reaches the server;
// Rounds.Capabilities are what the server is told of that request. Over
// stdio (a started call) and Streamable HTTP, for tools/call and
// prompts/get.
func TestCallerRunsRounds(t *testing.T) {
	bin := buildEverything(t)
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) *config.ServerConfig
	}{
		{"stdio", func(*testing.T) *config.ServerConfig { return &config.ServerConfig{Command: bin} }},
		{"http", func(t *testing.T) *config.ServerConfig {
			return &config.ServerConfig{URL: serveEverything(t, bin, true)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t, Options{
				Config:      tc.cfg(t),
				Elicitation: true,
				Roots:       true,
				Handlers: Handlers{
					Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) {
						t.Error("the connection answered an input request the caller runs")
						return nil, ErrMalformedResult
					},
				},
			})
			ctx := testCtx(t)
			type inputRequired struct {
				ResultType    string `json:"resultType"`
				InputRequests map[string]struct {
					Method string `json:"method"`
				} `json:"inputRequests"`
				RequestState json.RawMessage `json:"requestState"`
			}
			first := func(what string, res json.RawMessage, err error) inputRequired {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				var ir inputRequired
				if err := json.Unmarshal(res, &ir); err != nil || ir.ResultType != resultInputRequired {
					t.Fatalf("%s: %s (%v), want an input-required result", what, res, err)
				}
				return ir
			}
			keys := func(ir inputRequired) map[string]string {
				m := map[string]string{}
				for k, r := range ir.InputRequests {
					m[k] = r.Method
				}
				return m
			}

			call := ToolCall{Name: "test_input_required_result_request_state", Rounds: Rounds{Own: true}}
			res, err := c.CallToolWith(ctx, call)
			ir := first("tools/call", res, err)
			if diff := cmp.Diff(map[string]string{"confirm": "elicitation/create"}, keys(ir)); diff != "" {
				t.Errorf("input requests (-want +got):\n%s", diff)
			}
			if string(ir.RequestState) != `"request_state"` {
				t.Errorf("requestState %s, want the server's", ir.RequestState)
			}
			call.Rounds.InputResponses = json.RawMessage(`{"confirm":{"action":"accept","content":{"ok":true}}}`)
			call.Rounds.RequestState = ir.RequestState
			if res, err := c.CallToolWith(ctx, call); err != nil || !strings.Contains(string(res), "state-ok") {
				t.Errorf("retry: %s (%v), want the server's state-ok", res, err)
			}

			// The request's capabilities, not the connection's (which
			// has elicitation and roots).
			caps := ToolCall{Name: "test_input_required_result_capabilities", Rounds: Rounds{Own: true, Capabilities: json.RawMessage(`{"sampling": {}}`)}}
			res, err = c.CallToolWith(ctx, caps)
			ir = first("tools/call with capabilities", res, err)
			if diff := cmp.Diff(map[string]string{"greeting": "sampling/createMessage"}, keys(ir)); diff != "" {
				t.Errorf("input requests for a sampling-only request (-want +got):\n%s", diff)
			}

			own := Rounds{Own: true}
			res, err = c.GetPromptWith(ctx, "test_input_required_result_prompt", nil, own)
			ir = first("prompts/get", res, err)
			if diff := cmp.Diff(map[string]string{"user_context": "elicitation/create"}, keys(ir)); diff != "" {
				t.Errorf("prompt input requests (-want +got):\n%s", diff)
			}
			own.InputResponses = json.RawMessage(`{"user_context":{"action":"accept","content":{"context":"tests"}}}`)
			if res, err := c.GetPromptWith(ctx, "test_input_required_result_prompt", nil, own); err != nil || !strings.Contains(string(res), "Context: tests") {
				t.Errorf("prompt retry: %s (%v), want the prompt with the context", res, err)
			}
		})
	}
}
