package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

func TestSamplingRelayedToHost(t *testing.T) {
	h := newHarness(t)
	asked := make(chan protocol.SampleParams, 1)
	h.onRequest = func(_ context.Context, method string, params json.RawMessage) (any, error) {
		if method != protocol.RequestSample {
			t.Errorf("unexpected host request %s", method)
			return nil, nil
		}
		var p protocol.SampleParams
		if err := json.Unmarshal(params, &p); err != nil {
			t.Errorf("mcp/sample params %s: %v", params, err)
		}
		asked <- p
		return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "sampled <&> é"}, "model": "host-model", "stopReason": "endTurn"}, nil
	}
	spec := fixture.Spec{Tools: []fixture.ToolSpec{tool("sample", fixture.BehaviorSample)}}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{"capabilities": map[string]any{"sampling": map[string]any{}}})
	open := h.open(map[string]any{"startup": "eager"})
	res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__sample", "arguments": map[string]any{"prompt": "write a haiku"}})
	if err != nil {
		t.Fatal(err)
	}
	p := <-asked
	if p.SessionID != open.SessionID || p.Server != "s" {
		t.Errorf("mcp/sample names session %q server %q, want %q and s", p.SessionID, p.Server, open.SessionID)
	}
	if !strings.Contains(string(p.Params), `"write a haiku"`) || !strings.Contains(string(p.Params), `"maxTokens":100`) {
		t.Errorf("mcp/sample params %s are not the server's request", p.Params)
	}
	var out struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "sampled <&> é"}, "model": "host-model", "stopReason": "endTurn"}
	if diff := cmp.Diff(want, out.StructuredContent); diff != "" {
		t.Errorf("the server got (-want +got):\n%s", diff)
	}
}

// A server that gives up on its request (here because its tool call was
// cancelled) has the host's request cancelled too: $/cancelRequest, and
// the host's handler context ends.
func TestServerCancellationReachesHost(t *testing.T) {
	for _, c := range []struct{ behavior, method string }{
		{fixture.BehaviorSample, protocol.RequestSample},
		{fixture.BehaviorElicit, protocol.RequestElicit},
	} {
		t.Run(c.behavior, func(t *testing.T) {
			h := newHarness(t)
			arrived := make(chan json.RawMessage, 1) // the request's id
			ended := make(chan error, 1)
			h.onRequest = func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
				if method != c.method {
					t.Errorf("host got %s, want %s", method, c.method)
				}
				arrived <- hostclient.RequestID(ctx)
				<-ctx.Done()
				ended <- ctx.Err()
				return nil, ctx.Err()
			}
			spec := fixture.Spec{Tools: []fixture.ToolSpec{tool("ask", c.behavior)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
				"capabilities": map[string]any{"sampling": map[string]any{}, "elicitation": true},
			})
			open := h.open(map[string]any{"startup": "eager"})
			h.waitComplete(open.SessionID, 0)
			id, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{"sessionId": open.SessionID, "name": "mcp__s__ask"})
			if err != nil {
				t.Fatal(err)
			}
			asked := <-arrived
			if len(asked) == 0 {
				t.Fatalf("%s came without an id", c.method)
			}
			if err := h.client.Cancel(h.ctx, id); err != nil {
				t.Fatal(err)
			}
			h.wantCode(w.Wait(h.ctx, nil), protocol.CodeRequestCancelled)
			if err := <-ended; err == nil {
				t.Fatal("host request not cancelled")
			}
			n := h.waitFor("$/cancelRequest from the sidecar", func(n hostclient.Notification) bool {
				return n.Method == protocol.MethodCancelRequest
			})
			var p protocol.CancelParams
			if err := json.Unmarshal(n.Params, &p); err != nil {
				t.Fatal(err)
			}
			if string(p.ID) != string(asked) {
				t.Errorf("$/cancelRequest names id %s, want %s, the id of the %s it cancels", p.ID, asked, c.method)
			}
		})
	}
}

// Each client capability reaches a server's handshake (initialize, or the
// _meta of server/discover and of every request at 2026-07-28) only when
// the host declared that it handles it.
func TestClientCapabilitiesFollowTheHost(t *testing.T) {
	for _, c := range []struct {
		name string
		host map[string]any
		want map[string]any
	}{
		{"none", map[string]any{}, map[string]any{}},
		{"elicitation true is form", map[string]any{"elicitation": true}, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}},
		{"elicitation {}", map[string]any{"elicitation": map[string]any{}}, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}},
		{"elicitation url", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}},
		{"elicitation both", map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
			map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}}},
		{"sampling", map[string]any{"sampling": map[string]any{}}, map[string]any{"sampling": map[string]any{}}},
		{"sampling with tools", map[string]any{"sampling": map[string]any{"tools": map[string]any{}}}, map[string]any{"sampling": map[string]any{"tools": map[string]any{}}}},
		{"roots", map[string]any{"roots": true}, map[string]any{"roots": map[string]any{}}},
		{"false is none", map[string]any{"elicitation": false, "roots": false, "sampling": false}, map[string]any{}},
	} {
		for _, legacy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s legacy=%v", c.name, legacy), func(t *testing.T) {
				raw := tempFile(t, "raw.log")
				h := newHarness(t)
				h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Legacy: legacy, RawLogFile: raw})}, map[string]any{"capabilities": c.host})
				open := h.open(map[string]any{"startup": "eager"})
				h.waitComplete(open.SessionID, 0)
				var got map[string]any
				handshake := "server/discover"
				if legacy {
					handshake = "initialize"
				}
				for _, line := range fixture.ReadLines(raw) {
					var msg struct {
						Method string `json:"method"`
						Params struct {
							Capabilities map[string]any `json:"capabilities"`
							Meta         struct {
								Capabilities map[string]any `json:"io.modelcontextprotocol/clientCapabilities"`
							} `json:"_meta"`
						} `json:"params"`
					}
					if json.Unmarshal([]byte(line), &msg) == nil && msg.Method == handshake {
						got = msg.Params.Capabilities
						if !legacy {
							got = msg.Params.Meta.Capabilities
						}
					}
				}
				if got == nil {
					t.Fatalf("no %s seen", handshake)
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("client capabilities (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestBadHostCapabilitiesAreRefused(t *testing.T) {
	for _, caps := range []string{`{"elicitation": "yes"}`, `{"sampling": 3}`} {
		h := newHarness(t)
		err := h.call(protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "t"}, "capabilities": json.RawMessage(caps)}, nil)
		h.wantCode(err, protocol.CodeInvalidParams)
	}
}

// When the host accepts a form and leaves fields out, the server gets the
// schema's defaults for them (SEP-1034) and the host's own values as they
// were; an answer that does not match the schema is refused to the server
// (2025-11-25: as the error answering its request; 2026-07-28: the call
// fails, and the server is not sent it).
func TestElicitationDefaultsAndValidation(t *testing.T) {
	const schema = `{"type":"object","properties":{"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},"verified":{"type":"boolean","default":true}}}`
	for _, c := range []struct {
		name    string
		legacy  bool
		content map[string]any
		want    string // in the answer line the server read, or the call's error
	}{
		{"defaults filled", true, map[string]any{"age": 41}, `"content":{"age":41,"name":"John Doe","verified":true}`},
		{"invalid refused", true, map[string]any{"age": "forty"}, `does not match requested schema`},
		{"defaults filled 2026-07-28", false, map[string]any{"age": 41}, `"inputResponses":{"elicit":{"action":"accept","content":{"age":41,"name":"John Doe","verified":true}}}`},
		{"invalid refused 2026-07-28", false, map[string]any{"age": "forty"}, `does not match requested schema`},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := tempFile(t, "raw.log")
			h := newHarness(t)
			h.onRequest = func(context.Context, string, json.RawMessage) (any, error) {
				return map[string]any{"action": "accept", "content": c.content}, nil
			}
			spec := fixture.Spec{Legacy: c.legacy, RawLogFile: raw, Tools: []fixture.ToolSpec{tool("ask", fixture.BehaviorElicit)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{"capabilities": map[string]any{"elicitation": true}})
			open := h.open(map[string]any{"startup": "eager"})
			_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__ask", "arguments": map[string]any{"schema": json.RawMessage(schema)}})
			if !c.legacy && strings.Contains(c.name, "invalid") {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("call: %v, want the error saying the answer %s", err, c.want)
				}
				for _, line := range fixture.ReadLines(raw) {
					if strings.Contains(line, `"inputResponses"`) {
						t.Errorf("the server was sent the invalid answer: %s", line)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var answer string
			for _, line := range fixture.ReadLines(raw) {
				if strings.Contains(line, `"action"`) || strings.Contains(line, `"error"`) || strings.Contains(line, `"inputResponses"`) {
					answer = line
				}
			}
			if !strings.Contains(answer, c.want) {
				t.Errorf("the server read %s; want it to contain %s", answer, c.want)
			}
		})
	}
}

// An accepted form whose content does not match the schema is not sent to
// the server, and the host hears of it: an mcp/log warning for that server
// naming the fields that are wrong and why, so that its user can be asked
// again; the values are not quoted (a form may ask for a password). A
// 2025-11-25 server asked in a request of its own and gets -32602 (the tool
// then reports it); a 2026-07-28 server asked in an input-required result,
// which has no place for an error: the call fails with the same words.
func TestRefusedElicitationAnswerIsReportedToTheHost(t *testing.T) {
	const schema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`
	for _, legacy := range []bool{true, false} {
		name := map[bool]string{true: "2025-11-25", false: "2026-07-28"}[legacy]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.onRequest = func(context.Context, string, json.RawMessage) (any, error) {
				return map[string]any{"action": "accept", "content": map[string]any{"age": "forty-s3cr3t"}}, nil
			}
			spec := fixture.Spec{Legacy: legacy, Tools: []fixture.ToolSpec{tool("ask", fixture.BehaviorElicit)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{"capabilities": map[string]any{"elicitation": true}})
			open := h.open(map[string]any{"startup": "eager"})
			res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__ask", "arguments": map[string]any{"schema": json.RawMessage(schema)}})
			said := string(res)
			if legacy {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if err == nil {
					t.Fatalf("the call answered %s; want it to fail: the server cannot be sent the invalid answer", res)
				}
				said = err.Error()
			}
			if !strings.Contains(said, "does not match requested schema") || strings.Contains(said, "s3cr3t") {
				t.Errorf("the call said %s: want the answer refused, without its values", said)
			}
			n := h.waitFor("an mcp/log warning about the refused answer", func(n hostclient.Notification) bool {
				var p protocol.LogParams
				return n.Method == protocol.NotifyLog && json.Unmarshal(n.Params, &p) == nil && p.Server == "s" && p.Level == "warning" &&
					strings.Contains(string(p.Data), "elicitation/create")
			})
			var p protocol.LogParams
			json.Unmarshal(n.Params, &p)
			var msg string
			json.Unmarshal(p.Data, &msg)
			for _, want := range []string{`field \"name\" is required`, `field \"age\" does not match its schema`} {
				if !strings.Contains(string(p.Data), want) {
					t.Errorf("mcp/log %s does not say %s", p.Data, want)
				}
			}
			if strings.Contains(msg, "s3cr3t") {
				t.Errorf("mcp/log %q quotes the answer", msg)
			}
		})
	}
}
