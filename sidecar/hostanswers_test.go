package sidecar_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// The host's answers to mcp/roots, mcp/elicit and mcp/sample reach the
// server only when they have MCP's shape (ListRootsResult, ElicitResult
// with its action enum, CreateMessageResult); a malformed one is answered
// to the server as a JSON-RPC error and reported to the host in mcp/log.
// An error the host answers reaches the server with its code and message
// (redteam F14).
func TestHostAnswersChecked(t *testing.T) {
	type answer struct {
		result string          // the host's result, raw JSON
		err    *protocol.Error // or its error
	}
	hostErr := func() *protocol.Error {
		return protocol.NewError(-32042, "host_refused", "host does not do that")
	}
	// go-sdk words every -32601 its own way ("method not found: ..."):
	// the code is what the server gets of it.
	notFound := func() *protocol.Error {
		return protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "host does not do that")
	}
	for _, tc := range []struct {
		name   string
		tool   string // a fixture behaviour
		answer answer
		// what the server receives: the result as the host wrote it, or
		// an error of this code (and message, when set)
		result  string
		code    int64
		message string
	}{
		{"roots valid", fixture.BehaviorRoots, answer{result: `{"roots":[{"uri":"file:///a","name":"a"}]}`}, `{"roots":[{"uri":"file:///a","name":"a"}]}`, 0, ""},
		{"roots empty", fixture.BehaviorRoots, answer{result: `{"roots":[]}`}, `{"roots":[]}`, 0, ""},
		{"roots null", fixture.BehaviorRoots, answer{result: `null`}, "", -32603, "roots/list"},
		{"roots missing", fixture.BehaviorRoots, answer{result: `{"action":"bogus"}`}, "", -32603, "roots"},
		{"roots not an array", fixture.BehaviorRoots, answer{result: `{"roots":"file:///a"}`}, "", -32603, "roots"},
		{"root without uri", fixture.BehaviorRoots, answer{result: `{"roots":[{"name":"a"}]}`}, "", -32603, "uri"},
		{"root not an object", fixture.BehaviorRoots, answer{result: `{"roots":[1]}`}, "", -32603, "roots[0]"},
		{"root name not a string", fixture.BehaviorRoots, answer{result: `{"roots":[{"uri":"file:///a","name":5}]}`}, "", -32603, "name"},
		{"roots: host error", fixture.BehaviorRoots, answer{err: hostErr()}, "", -32042, "host does not do that"},
		{"roots: host -32601", fixture.BehaviorRoots, answer{err: notFound()}, "", -32601, ""},

		{"elicit decline", fixture.BehaviorElicit, answer{result: `{"action":"decline"}`}, `{"action":"decline"}`, 0, ""},
		{"elicit null", fixture.BehaviorElicit, answer{result: `null`}, "", -32603, "elicitation/create"},
		{"elicit bogus action", fixture.BehaviorElicit, answer{result: `{"action":"bogus"}`}, "", -32603, "action"},
		{"elicit no action", fixture.BehaviorElicit, answer{result: `{}`}, "", -32603, "action"},
		{"elicit content not an object", fixture.BehaviorElicit, answer{result: `{"action":"accept","content":"blue"}`}, "", -32603, "content"},
		{"elicit an array", fixture.BehaviorElicit, answer{result: `[]`}, "", -32603, "not an object"},
		{"elicit: host error", fixture.BehaviorElicit, answer{err: hostErr()}, "", -32042, "host does not do that"},

		{"sample null", fixture.BehaviorSample, answer{result: `null`}, "", -32603, "sampling/createMessage"},
		{"sample: host error", fixture.BehaviorSample, answer{err: hostErr()}, "", -32042, "host does not do that"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tempFile(t, "raw.log")
			h := newHarness(t)
			if tc.answer.err == nil && tc.result == "" {
				for _, m := range []string{protocol.RequestRoots, protocol.RequestElicit, protocol.RequestSample} {
					h.checker.HostAnswersMalformed(m)
				}
			}
			var mu sync.Mutex
			asked := 0
			h.onRequest = func(_ context.Context, method string, _ json.RawMessage) (any, error) {
				mu.Lock()
				asked++
				mu.Unlock()
				if tc.answer.err != nil {
					return nil, tc.answer.err
				}
				return json.RawMessage(tc.answer.result), nil
			}
			// The server's own requests and their JSON-RPC answers are
			// MCP 2025-11-25's (2026-07-28 asks in its results, and gets
			// the answers in the request sent again: see mcpclient).
			spec := fixture.Spec{Legacy: true, RawLogFile: raw, Tools: []fixture.ToolSpec{tool("ask", tc.tool)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
				"capabilities": map[string]any{"roots": true, "elicitation": true, "sampling": map[string]any{}},
			})
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			mark := len(h.notifications())
			if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__ask"}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			n := asked
			mu.Unlock()
			if n != 1 {
				t.Fatalf("the host was asked %d times", n)
			}
			got := lastResponse(t, raw)
			if tc.result != "" {
				if string(got.Result) != tc.result || got.Error != nil {
					t.Errorf("the server got %s, want the result %s", got.line, tc.result)
				}
				return
			}
			if got.Error == nil || got.Error.Code != tc.code || !strings.Contains(got.Error.Message, tc.message) {
				t.Fatalf("the server got %s, want an error %d saying %q", got.line, tc.code, tc.message)
			}
			if tc.answer.err != nil {
				if tc.message == "" {
					return
				}
				if diff := cmp.Diff(tc.answer.err.Message, got.Error.Message); diff != "" {
					t.Errorf("the host's message did not reach the server whole (-want +got):\n%s", diff)
				}
				return
			}
			// A malformed answer is the host's bug: it hears of it.
			h.waitForSince(mark, "mcp/log of the malformed answer", func(n hostclient.Notification) bool {
				return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "malformed")
			})
		})
	}
}

type rawResponse struct {
	line   string
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// lastResponse is the last JSON-RPC response the server read (what the
// client answered to its last request).
func lastResponse(t *testing.T, rawLog string) rawResponse {
	t.Helper()
	lines := fixture.ReadLines(rawLog)
	for i := len(lines) - 1; i >= 0; i-- {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(lines[i]), &m) != nil || m["method"] != nil || m["id"] == nil {
			continue
		}
		r := rawResponse{line: lines[i]}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Fatalf("the server read no response: %q", lines)
	return rawResponse{}
}
