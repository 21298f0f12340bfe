package sidecar_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A server's result that is not a JSON object (every MCP result is one) is
// not relayed: the host gets a server_error naming the server (and the
// tool), whichever path the request took: tools/call on stdio's raw path,
// the others through go-sdk (redteam F9).
func TestResultNotAnObjectRefused(t *testing.T) {
	for _, result := range []string{`"not an object"`, `null`, `[1,2]`, `42`, `true`} {
		t.Run(result, func(t *testing.T) {
			h := newHarness(t)
			methods := []string{"tools/call", "resources/read", "prompts/get", "completion/complete"}
			results := map[string]json.RawMessage{}
			for _, m := range methods {
				results[m] = json.RawMessage(result)
			}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{Results: results}})}, nil)
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			for _, tc := range []struct {
				method string
				params map[string]any
				tool   string
			}{
				{protocol.MethodToolsCall, map[string]any{"name": "mcp__s__echo"}, "echo"},
				{protocol.MethodResourcesRead, map[string]any{"server": "s", "uri": "x:/y"}, ""},
				{protocol.MethodPromptsGet, map[string]any{"server": "s", "name": "p"}, ""},
				{protocol.MethodCompletionComplete, map[string]any{"server": "s", "ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "a", "value": "b"}}, ""},
			} {
				params := map[string]any{"sessionId": sid}
				for k, v := range tc.params {
					params[k] = v
				}
				var res json.RawMessage
				err := h.call(tc.method, params, &res)
				if err == nil {
					t.Errorf("%s: relayed the result %s", tc.method, res)
					continue
				}
				pe := errorCode(t, err, protocol.CodeInternalError)
				if pe.Data.Kind != protocol.KindServerError || pe.Data.Server != "s" || pe.Data.Tool != tc.tool {
					t.Errorf("%s: data %+v, want kind server_error, server s, tool %q", tc.method, pe.Data, tc.tool)
				}
				for _, want := range []string{`server "s"`, "not an object", tc.method} {
					if !strings.Contains(pe.Message, want) {
						t.Errorf("%s: message %q does not say %q", tc.method, pe.Message, want)
					}
				}
				if tc.tool != "" && !strings.Contains(pe.Message, `tool "echo"`) {
					t.Errorf("%s: message %q does not name the tool", tc.method, pe.Message)
				}
			}
		})
	}
}
