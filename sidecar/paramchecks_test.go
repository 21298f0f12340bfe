package sidecar_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A timeoutMs beyond tool_timeout_sec means tool_timeout_sec, however large
// it is: MAX_SAFE_INTEGER (a JavaScript host's "no limit of mine") and
// MaxInt64 used to overflow into an expired deadline (redteam F15).
func TestCallTimeoutMsHuge(t *testing.T) {
	h := newHarness(t)
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo"), tool("sleep", "sleep")}})
	cfg.ToolTimeoutSec = seconds(0.3)
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	for _, tc := range []struct {
		name      string
		timeoutMs json.RawMessage
	}{
		{"MAX_SAFE_INTEGER", json.RawMessage("9007199254740991")},
		{"MaxInt64", json.RawMessage("9223372036854775807")},
		{"just past the overflow", json.RawMessage("9223372036855")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{"x": 1}, "timeoutMs": tc.timeoutMs})
			if err != nil {
				t.Fatalf("echo with timeoutMs %s: %v", tc.timeoutMs, err)
			}
			if !strings.Contains(string(res), `\"x\":1`) {
				t.Errorf("result %s", res)
			}
			// A call that runs past tool_timeout_sec times out by it.
			_, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"ms": 60000}, "timeoutMs": tc.timeoutMs})
			je := errorCode(t, err, protocol.CodeToolTimeout)
			if !strings.Contains(je.Message, "tool_timeout_sec (0.3 s)") {
				t.Errorf("timeout message %q does not name tool_timeout_sec (0.3 s)", je.Message)
			}
		})
	}
}

// tools/get names are strings: a null among them is invalid params, not a
// name "" reported missing (redteam F13).
func TestToolsGetNamesMustBeStrings(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	for _, names := range []string{`[null]`, `["mcp__s__echo",null]`, `[1]`, `[{}]`, `"mcp__s__echo"`} {
		t.Run(names, func(t *testing.T) {
			var res json.RawMessage
			err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid, "names": json.RawMessage(names)}, &res)
			if err == nil {
				t.Fatalf("names %s answered %s", names, res)
			}
			errorCode(t, err, protocol.CodeInvalidParams)
		})
	}
	var res protocol.ToolsGetResult
	if err := h.call(protocol.MethodToolsGet, map[string]any{"sessionId": sid, "names": []string{"mcp__s__echo", ""}}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || len(res.Missing) != 1 || res.Missing[0] != "" {
		t.Errorf("tools/get of a name and \"\": %+v", res)
	}
}

// completion/complete checks MCP's ref and argument before anything is
// sent: a malformed one is invalid params naming the member, not an
// internal error naming the server twice (redteam F8).
func TestCompletionParamsChecked(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"h": fixture.Config("h", fixture.Spec{
		Prompts: []fixture.PromptSpec{{Name: "greet", Args: []string{"name"}}},
	})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	good := map[string]any{"type": "ref/prompt", "name": "greet"}
	arg := map[string]any{"name": "name", "value": "A"}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"ref a number", map[string]any{"ref": 1, "argument": arg}, "ref"},
		{"ref a string", map[string]any{"ref": "x", "argument": arg}, "ref"},
		{"ref empty", map[string]any{"ref": map[string]any{}, "argument": arg}, "ref"},
		{"ref an array", map[string]any{"ref": []any{}, "argument": arg}, "ref"},
		{"ref true", map[string]any{"ref": true, "argument": arg}, "ref"},
		{"ref missing", map[string]any{"argument": arg}, "ref"},
		{"ref of an unknown type", map[string]any{"ref": map[string]any{"type": "ref/tool", "name": "x"}, "argument": arg}, "ref"},
		{"prompt ref without name", map[string]any{"ref": map[string]any{"type": "ref/prompt"}, "argument": arg}, "ref"},
		{"resource ref without uri", map[string]any{"ref": map[string]any{"type": "ref/resource"}, "argument": arg}, "ref"},
		{"argument a number", map[string]any{"ref": good, "argument": 1}, "argument"},
		{"argument a string", map[string]any{"ref": good, "argument": "x"}, "argument"},
		{"argument missing", map[string]any{"ref": good}, "argument"},
		{"argument without value", map[string]any{"ref": good, "argument": map[string]any{"name": "name"}}, "argument"},
		{"argument value a number", map[string]any{"ref": good, "argument": map[string]any{"name": "name", "value": 1}}, "argument"},
		{"context a string", map[string]any{"ref": good, "argument": arg, "context": "x"}, "context"},
		{"context arguments not strings", map[string]any{"ref": good, "argument": arg, "context": map[string]any{"arguments": map[string]any{"a": 1}}}, "context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"sessionId": sid, "server": "h"}
			for k, v := range tc.params {
				params[k] = v
			}
			var res json.RawMessage
			err := h.call(protocol.MethodCompletionComplete, params, &res)
			je := errorCode(t, err, protocol.CodeInvalidParams)
			if !strings.Contains(je.Message, tc.want) {
				t.Errorf("message %q does not name %s", je.Message, tc.want)
			}
			if strings.Count(je.Message, `server "h"`) > 1 {
				t.Errorf("message %q names the server more than once", je.Message)
			}
		})
	}
	// Well-formed params still reach the server (which has no completions).
	var res json.RawMessage
	err := h.call(protocol.MethodCompletionComplete, map[string]any{"sessionId": sid, "server": "h", "ref": good, "argument": arg, "context": map[string]any{"arguments": map[string]any{"a": "b"}}}, &res)
	var pe *protocol.Error
	if err != nil && (!errors.As(err, &pe) || pe.Data.Kind != protocol.KindServerError) {
		t.Errorf("well-formed completion/complete: %v, want the server's answer", err)
	}
}

// errorCode fails t unless err is a host-protocol error of code with a
// kind, and returns it (the harness's wantCode fails the harness's test,
// which a subtest must not do).
func errorCode(t *testing.T, err error, code int64) *protocol.Error {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("want error %d, got %v", code, err)
	}
	if pe.Code != code || pe.Data.Kind == "" {
		t.Fatalf("want error %d with a kind, got %d: %s (data %+v)", code, pe.Code, pe.Message, pe.Data)
	}
	return pe
}
