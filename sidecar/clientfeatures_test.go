package sidecar_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// resourceUpdated matches mcp/resourceUpdated for uri.
func resourceUpdated(session, uri string) func(hostclient.Notification) bool {
	return func(n hostclient.Notification) bool {
		var p protocol.ResourceUpdatedParams
		return n.Method == protocol.NotifyResourceUpdated && json.Unmarshal(n.Params, &p) == nil &&
			p.SessionID == session && p.Server == "s" && p.URI == uri
	}
}

func TestResourceSubscriptions(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "2026-07-28", true: "2025-11-25"}[legacy], func(t *testing.T) {
			events := tempFile(t, "events")
			h := newHarness(t)
			spec := fixture.Spec{Legacy: legacy, Subscriptions: true, EventsFile: events, Tools: []fixture.ToolSpec{tool("update", fixture.BehaviorUpdate)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			sub := func(method, uri string) {
				t.Helper()
				var res json.RawMessage
				if err := h.call(method, map[string]any{"sessionId": sid, "server": "s", "uri": uri}, &res); err != nil {
					t.Fatalf("%s %s: %v", method, uri, err)
				}
				if string(res) != "{}" {
					t.Errorf("%s result %s, want {}", method, res)
				}
			}
			update := func(uri string) {
				t.Helper()
				if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__update", "arguments": map[string]any{"uri": uri}}); err != nil {
					t.Fatal(err)
				}
			}

			sub(protocol.MethodResourcesSubscribe, "file:///a")
			update("file:///a")
			h.waitFor("update of a", resourceUpdated(sid, "file:///a"))

			// A new connection (here a reconnect) subscribes again.
			if err := h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"}, nil); err != nil {
				t.Fatal(err)
			}
			mark := len(h.notifications())
			update("file:///a")
			h.waitForSince(mark, "update of a after reconnect", resourceUpdated(sid, "file:///a"))

			// None after unsubscribing: b's update, sent later on the same
			// connection, arrives after where a's would have.
			sub(protocol.MethodResourcesUnsubscribe, "file:///a")
			mark = len(h.notifications())
			update("file:///a")
			sub(protocol.MethodResourcesSubscribe, "file:///b")
			update("file:///b")
			h.waitFor("update of b", resourceUpdated(sid, "file:///b"))
			for _, n := range h.notifications()[mark:] {
				if resourceUpdated(sid, "file:///a")(n) {
					t.Errorf("update of a after unsubscribing: %s", n.Params)
				}
			}
			want := []string{"subscribe file:///a", "subscribe file:///a", "unsubscribe file:///a", "subscribe file:///b"}
			got := fixture.ReadLines(events)
			if !legacy {
				// A 2026-07-28 server learns of the end of the old connection's
				// subscriptions/listen stream too, as that connection ends: while
				// the new one starts, so the order of those two is not known.
				want = append(want, "unsubscribe file:///a")
				slices.Sort(want)
				got = slices.Sorted(slices.Values(got))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("server events (-want +got):\n%s", diff)
			}

			for _, bad := range []map[string]any{{"sessionId": sid, "server": "s"}, {"sessionId": sid, "server": "nope", "uri": "x:"}} {
				err := h.call(protocol.MethodResourcesSubscribe, bad, nil)
				if err == nil {
					t.Errorf("subscribe %v succeeded", bad)
				}
			}
		})
	}
}

func TestURLElicitation(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var asked []protocol.ElicitParams
	h.onRequest = func(_ context.Context, method string, params json.RawMessage) (any, error) {
		var p protocol.ElicitParams
		_ = json.Unmarshal(params, &p)
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		return map[string]any{"action": "accept"}, nil
	}
	// The elicitation's id and its completion notification are MCP
	// 2025-11-25's (2026-07-28 has neither): a server of that protocol.
	spec := fixture.Spec{Legacy: true, Tools: []fixture.ToolSpec{tool("consent", fixture.BehaviorURLElicit)}}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
		"capabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}},
	})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID

	t.Run("request path", func(t *testing.T) {
		res, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__consent", "arguments": map[string]any{"elicitationId": "e-1", "complete": true}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), `"action":"accept"`) {
			t.Errorf("result %s does not carry the host's answer", res)
		}
		mu.Lock()
		got := asked[len(asked)-1]
		mu.Unlock()
		var params map[string]any
		_ = json.Unmarshal(got.Params, &params)
		want := map[string]any{"mode": "url", "url": "https://example.com/consent", "message": "open the link", "elicitationId": "e-1"}
		if diff := cmp.Diff(want, params); diff != "" || got.SessionID != sid || got.Server != "s" {
			t.Errorf("mcp/elicit %s %s params (-want +got):\n%s", got.SessionID, got.Server, diff)
		}
		h.waitFor("mcp/elicitationComplete", func(n hostclient.Notification) bool {
			var p protocol.ElicitationCompleteParams
			return n.Method == protocol.NotifyElicitationComplete && json.Unmarshal(n.Params, &p) == nil &&
				p == protocol.ElicitationCompleteParams{SessionID: sid, Server: "s", ElicitationID: "e-1"}
		})
	})

	t.Run("error path", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__consent", "arguments": map[string]any{"elicitationId": "e-2", "errorPath": true}})
		je, data := h.wantCode(err, -32042)
		if data.Kind != protocol.KindServerError || data.ServerCode == nil || *data.ServerCode != -32042 {
			t.Errorf("error %s: data %+v", je.Message, data)
		}
		var sd struct {
			Elicitations []map[string]any `json:"elicitations"`
		}
		if err := json.Unmarshal(data.ServerData, &sd); err != nil || len(sd.Elicitations) != 1 {
			t.Fatalf("serverData %s: %v", data.ServerData, err)
		}
		want := map[string]any{"mode": "url", "url": "https://example.com/consent", "message": "open the link", "elicitationId": "e-2"}
		if diff := cmp.Diff(want, sd.Elicitations[0]); diff != "" {
			t.Errorf("elicitation in the error data (-want +got):\n%s", diff)
		}
	})

	t.Run("form refused when only url was declared", func(t *testing.T) {
		h2 := newHarness(t)
		h2.onRequest = func(context.Context, string, json.RawMessage) (any, error) {
			t.Error("the host was asked for a form it does not handle")
			return nil, nil
		}
		spec := fixture.Spec{Tools: []fixture.ToolSpec{tool("ask", fixture.BehaviorElicit)}}
		h2.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
			"capabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}},
		})
		sid := h2.open(map[string]any{"startup": "eager"}).SessionID
		res, err := h2.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__ask"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), "isError") {
			t.Errorf("a form elicitation reached a url-only host: %s", res)
		}
	})

	t.Run("url refused when only form was declared", func(t *testing.T) {
		h2 := newHarness(t)
		h2.onRequest = func(context.Context, string, json.RawMessage) (any, error) {
			t.Error("the host was asked for a URL elicitation it does not handle")
			return nil, nil
		}
		h2.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
			"capabilities": map[string]any{"elicitation": true},
		})
		sid := h2.open(map[string]any{"startup": "eager"}).SessionID
		res, err := h2.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__consent"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), "isError") {
			t.Errorf("a URL elicitation reached a form-only host: %s", res)
		}
	})

	t.Run("url refused by the sidecar when a server asks a form-only host anyway", func(t *testing.T) {
		// go-sdk's server does not send what the client did not declare; a
		// raw server does.
		h2 := newHarness(t)
		h2.onRequest = func(context.Context, string, json.RawMessage) (any, error) {
			t.Error("the host was asked for a URL elicitation it does not handle")
			return nil, nil
		}
		raw := fixture.Spec{Raw: &fixture.RawSpec{AskOnCall: json.RawMessage(`{"jsonrpc":"2.0","method":"elicitation/create",` +
			`"params":{"mode":"url","url":"https://example.com/consent","message":"open the link","elicitationId":"e-3"}}`)}}
		h2.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", raw)}, map[string]any{
			"capabilities": map[string]any{"elicitation": true},
		})
		sid := h2.open(map[string]any{"startup": "eager"}).SessionID
		res, err := h2.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo"})
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(res, &out); err != nil || len(out.Content) != 1 {
			t.Fatalf("result %s: %v", res, err)
		}
		var answer struct {
			ID    string `json:"id"`
			Error struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(out.Content[0].Text), &answer); err != nil {
			t.Fatalf("the server got %q: %v", out.Content[0].Text, err)
		}
		if answer.ID != fixture.AskID || answer.Error.Code != -32602 || !strings.Contains(answer.Error.Message, `"url"`) {
			t.Errorf("the server got %s, want -32602 naming the url mode", out.Content[0].Text)
		}
	})
}

func TestTaskAugmentedCalls(t *testing.T) {
	raw := tempFile(t, "raw.log")
	tools := []fixture.ToolSpec{
		rawTool(`{"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`, fixture.BehaviorEcho),
		rawTool(`{"name":"maybe","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`, fixture.BehaviorEcho),
		tool("plain", fixture.BehaviorEcho),
	}
	h := newHarness(t)
	// Tasks of MCP 2025-11-25 (the task parameter, tasks/list, blocking
	// tasks/result): servers of that protocol.
	spec := fixture.Spec{Legacy: true, RawLogFile: raw, Tools: tools, Experimental: map[string]json.RawMessage{"codex/sandbox-state": json.RawMessage(`{}`)},
		Capabilities: map[string]json.RawMessage{"tasks": json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)}}
	// The same tools on a server that does not declare task-augmented
	// tools/call.
	noTasksRaw := tempFile(t, "notasks.log")
	noTasks := fixture.Spec{Legacy: true, RawLogFile: noTasksRaw, Tools: tools}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec), "n": fixture.Config("n", noTasks)}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)

	t.Run("required without task is refused", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__research"})
		je, data := h.wantCode(err, protocol.CodeInvalidParams)
		if !strings.Contains(je.Message, `taskSupport is "required"`) || data.Tool != "research" {
			t.Errorf("message %q, data %+v: want the requirement named", je.Message, data)
		}
	})
	t.Run("task on a tool without task support is refused", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__plain", "task": map[string]any{}})
		je, _ := h.wantCode(err, protocol.CodeInvalidParams)
		if !strings.Contains(je.Message, `"forbidden"`) {
			t.Errorf("message %q", je.Message)
		}
	})
	t.Run("task refused by a server without tasks.requests.tools.call", func(t *testing.T) {
		for _, name := range []string{"mcp__n__maybe", "mcp__n__research"} {
			_, err := h.callTool(map[string]any{"sessionId": sid, "name": name, "task": map[string]any{}})
			je, data := h.wantCode(err, protocol.CodeInvalidParams)
			if !strings.Contains(je.Message, "tasks.requests.tools.call") || data.Server != "n" {
				t.Errorf("%s: message %q, data %+v: want the missing capability named", name, je.Message, data)
			}
		}
		for _, line := range fixture.ReadLines(noTasksRaw) {
			if strings.Contains(line, `"tools/call"`) {
				t.Errorf("a refused call reached the server: %s", line)
			}
		}
	})
	t.Run("taskSupport is not considered without the capability", func(t *testing.T) {
		// MCP: without tasks.requests.tools.call a client uses no task on
		// the server's tools, whatever their taskSupport.
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__n__research"}); err != nil {
			t.Fatalf("a call without task to a server that takes none: %v", err)
		}
	})
	t.Run("task must be an object", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__maybe", "task": 5})
		h.wantCode(err, protocol.CodeInvalidParams)
	})
	t.Run("task and sandbox metadata reach the server", func(t *testing.T) {
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__research", "task": map[string]any{"ttl": 60000},
			"arguments": map[string]any{"q": 1}, "sandboxState": map[string]any{"mode": "read-only"}}); err != nil {
			t.Fatal(err)
		}
		var sent map[string]any
		for _, line := range fixture.ReadLines(raw) {
			if strings.Contains(line, `"tools/call"`) && strings.Contains(line, `"research"`) {
				var msg struct {
					Params map[string]any `json:"params"`
				}
				_ = json.Unmarshal([]byte(line), &msg)
				sent = msg.Params
			}
		}
		if diff := cmp.Diff(map[string]any{"ttl": float64(60000)}, sent["task"]); diff != "" {
			t.Errorf("task (-want +got):\n%s", diff)
		}
		meta, _ := sent["_meta"].(map[string]any)
		if diff := cmp.Diff(map[string]any{"mode": "read-only"}, meta["codex/sandbox-state"]); diff != "" {
			t.Errorf("sandbox metadata of a task-augmented call (-want +got):\n%s", diff)
		}
	})
	t.Run("tasks methods are forwarded", func(t *testing.T) {
		for _, c := range []struct {
			method string
			params map[string]any
			sent   string
		}{
			{protocol.MethodTasksGet, map[string]any{"taskId": "t-1"}, `"method":"tasks/get","params":{"taskId":"t-1"}`},
			{protocol.MethodTasksResult, map[string]any{"taskId": "t-1"}, `"method":"tasks/result","params":{"taskId":"t-1"}`},
			{protocol.MethodTasksCancel, map[string]any{"taskId": "t-1"}, `"method":"tasks/cancel","params":{"taskId":"t-1"}`},
			{protocol.MethodTasksList, map[string]any{"cursor": "c2"}, `"method":"tasks/list","params":{"cursor":"c2"}`},
		} {
			params := map[string]any{"sessionId": sid, "server": "s"}
			for k, v := range c.params {
				params[k] = v
			}
			// The go-sdk fixture has no tasks: its own error comes back.
			err := h.call(c.method, params, nil)
			_, data := h.wantCode(err, -32601)
			if data.Kind != protocol.KindServerError || data.Server != "s" {
				t.Errorf("%s: data %+v", c.method, data)
			}
			found := false
			for _, line := range fixture.ReadLines(raw) {
				found = found || strings.Contains(line, c.sent)
			}
			if !found {
				t.Errorf("%s: the server never read %s", c.method, c.sent)
			}
		}
		err := h.call(protocol.MethodTasksGet, map[string]any{"sessionId": sid, "server": "s"}, nil)
		h.wantCode(err, protocol.CodeInvalidParams)
	})
}

// A server restarted after a crash is subscribed again before it serves.
func TestResourceSubscriptionsSurviveACrash(t *testing.T) {
	var clock struct {
		sync.Mutex
		now time.Time
	}
	clock.now = time.Now()
	now := func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		return clock.now
	}
	events := tempFile(t, "events")
	h := newHookedHarness(t, sidecar.Hooks{Now: now})
	spec := fixture.Spec{Subscriptions: true, EventsFile: events, Tools: []fixture.ToolSpec{tool("update", fixture.BehaviorUpdate), tool("crash", fixture.BehaviorCrash)}}
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	if err := h.call(protocol.MethodResourcesSubscribe, map[string]any{"sessionId": sid, "server": "s", "uri": "file:///a"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__crash"})
	h.wantCode(err, protocol.CodeConnectionLost)
	clock.Lock()
	clock.now = clock.now.Add(time.Minute) // past the restart backoff
	clock.Unlock()
	mark := len(h.notifications())
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__update", "arguments": map[string]any{"uri": "file:///a"}}); err != nil {
		t.Fatal(err)
	}
	h.waitForSince(mark, "update of a from the restarted server", resourceUpdated(sid, "file:///a"))
	if diff := cmp.Diff([]string{"subscribe file:///a", "subscribe file:///a"}, fixture.ReadLines(events)); diff != "" {
		t.Errorf("server events (-want +got):\n%s", diff)
	}
}

// A task-augmented call is answered with the server's CreateTaskResult as
// it sent it: key order, big numbers, escapes and members MCP does not
// define survive.
func TestCreateTaskResultAsSent(t *testing.T) {
	const created = `{"task":{"status":"working","taskId":"t-1","ttl":60000,"createdAt":"2026-01-01T00:00:00Z",` +
		`"lastUpdatedAt":"2026-01-01T00:00:00Z","pollInterval":1000,"x-big":123456789012345678901234567890,"x-num":1.50,"x-esc":"caf\u00e9 <&>"},` +
		`"_meta":{"z":1,"io.modelcontextprotocol/model-immediate-response":"working on it"}}`
	spec := fixture.Spec{
		Capabilities: map[string]json.RawMessage{"tasks": json.RawMessage(`{"requests":{"tools":{"call":{}}}}`)},
		Raw: &fixture.RawSpec{
			Tools:   json.RawMessage(`[{"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]`),
			Results: map[string]json.RawMessage{"tools/call": json.RawMessage(created)},
		},
	}
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	res, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__research", "task": map[string]any{"ttl": 60000}})
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(t, string(res)); got != created {
		t.Errorf("CreateTaskResult\n got %s\nwant %s", got, created)
	}
}
