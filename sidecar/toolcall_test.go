package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// sentCalls records which way each tools/call went to its server (the
// ToolCallSent hook): "server read-loop" or "server goroutine".
type sentCalls chan string

func (s sentCalls) hook(_, server string, own bool) {
	way := "read-loop"
	if own {
		way = "goroutine"
	}
	s <- server + " " + way
}

func (s sentCalls) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case got := <-s:
		return got
	case <-time.After(testTimeout):
		t.Fatalf("%s: no tools/call was sent", what)
		return ""
	}
}

// TestToolCallWays: a tools/call that needs nothing it would wait for is
// sent from the host's read loop, without a goroutine of its own; one that
// would wait (its server still starting, a catalog a notification made
// stale, a tool not yet listed) or whose server the read loop cannot write
// to without waiting (Streamable HTTP) runs on a goroutine of its own.
// Both answer alike.
func TestToolCallWays(t *testing.T) {
	// The HTTP server goes after the sidecar (cleanups run last first).
	web := newCtlServer(t, []string{"hello"}, func(context.Context, string, int) error { return nil })
	sent := make(sentCalls, 16)
	starting, refreshing := newSignals(), newSignals()
	hold := make(chan struct{})
	h := newHookedHarness(t, sidecar.Hooks{
		ToolCallSent:      sent.hook,
		StartupWait:       func(string, string, bool) { starting.fire() },
		BackgroundRefresh: func(string, string) { refreshing.fire(); <-hold },
	})
	t.Cleanup(func() { close(hold) }) // before the harness closes the sessions
	gate := tempFile(t, "gate")
	h.initialize(map[string]*config.ServerConfig{
		"a":   fixture.Config("a", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", fixture.BehaviorEcho), tool("add", fixture.BehaviorAddTool)}}),
		"b":   fixture.Config("b", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", fixture.BehaviorEcho)}, BlockListUntilFile: gate}),
		"web": {URL: web.url},
	}, map[string]any{"features": map[string]bool{"mcp_tool_list_changed": true}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	for _, server := range []string{"a", "web"} {
		h.waitFor(server+" ready", func(n hostclient.Notification) bool {
			var p protocol.StartupStatusParams
			return n.Method == protocol.NotifyStartupStatus && json.Unmarshal(n.Params, &p) == nil && p.Server == server && p.Status == protocol.StatusReady
		})
	}
	call := func(name string, args map[string]any) {
		t.Helper()
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": name, "arguments": args}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var got []string

	call("mcp__a__echo", nil) // ready: from the read loop
	got = append(got, sent.next(t, "a ready"))

	// b waits for its gate: the call waits for its startup on a goroutine.
	_, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{"sessionId": sid, "name": "mcp__b__echo"})
	if err != nil {
		t.Fatal(err)
	}
	starting.wait(t, 1, "the call waiting for b's startup")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(h.ctx, nil); err != nil {
		t.Fatalf("call of b while it started: %v", err)
	}
	got = append(got, sent.next(t, "b starting"))
	call("mcp__b__echo", nil) // ready now
	got = append(got, sent.next(t, "b ready"))

	// A tool added: a's catalog is stale until listed again (its
	// background refresher is held), so the next call lists first.
	call("mcp__a__add", map[string]any{"name": "late"})
	got = append(got, sent.next(t, "add"))
	refreshing.wait(t, 1, "a's background refresher")
	call("mcp__a__echo", nil)
	got = append(got, sent.next(t, "a stale"))
	call("mcp__a__late", nil) // listed by that call's refresh
	got = append(got, sent.next(t, "late"))

	call("mcp__web__hello", nil)
	got = append(got, sent.next(t, "web"))

	want := []string{
		"a read-loop",
		"b goroutine", "b read-loop",
		"a read-loop", "a goroutine", "a read-loop",
		"web goroutine",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ways the calls went (-want +got):\n%s", diff)
	}
}

// TestToolCallToServerNotReadingItsInput: a server stops reading its stdin,
// leaving it open, at its first tools/call. The host goes on calling it
// from the read loop, many times what the pipe holds (one call's
// arguments larger than the part the read loop writes in place): the host
// link stays live, another server's call and servers/status are answered,
// and session/close ends the stuck calls and the server.
func TestToolCallToServerNotReadingItsInput(t *testing.T) {
	var mu sync.Mutex
	ways := map[string]int{}
	h := newHookedHarness(t, sidecar.Hooks{ToolCallSent: func(_, server string, own bool) {
		mu.Lock()
		ways[fmt.Sprintf("%s %v", server, own)]++
		mu.Unlock()
	}})
	h.initialize(map[string]*config.ServerConfig{
		"stuck": fixture.Config("stuck", fixture.Spec{Raw: &fixture.RawSpec{StopReadingOn: "tools/call"}}),
		"ok":    fixture.Config("ok", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", fixture.BehaviorEcho)}}),
	}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	dispatch := func(args map[string]any) hostclient.Waiter {
		t.Helper()
		_, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{"sessionId": sid, "name": "mcp__stuck__echo", "arguments": args})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	stuck := []hostclient.Waiter{dispatch(nil)}
	h.waitFor("the server stopped reading", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "stopped reading")
	})

	// The host's writes go through a synchronous pipe: a read loop that
	// blocked would hold them up, so they run aside.
	sentAll := make(chan []hostclient.Waiter)
	go func() {
		var ws []hostclient.Waiter
		for i := range 16 {
			n := 60 << 10
			if i == 7 {
				n = 200 << 10
			}
			ws = append(ws, dispatch(map[string]any{"data": strings.Repeat("x", n)}))
		}
		sentAll <- ws
	}()
	select {
	case ws := <-sentAll:
		stuck = append(stuck, ws...)
	case <-time.After(testTimeout):
		t.Fatal("the host link blocked behind a server that does not read its input")
	}
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__ok__echo"}); err != nil {
		t.Fatalf("another server's call: %v", err)
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": sid}, &st); err != nil {
		t.Fatalf("servers/status: %v", err)
	}
	mu.Lock()
	fromLoop := ways["stuck false"]
	mu.Unlock()
	if fromLoop != len(stuck) {
		t.Errorf("%d of the %d calls to the stuck server were sent from the read loop: the test proves nothing", fromLoop, len(stuck))
	}

	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	for i, w := range stuck {
		if err := w.Wait(h.ctx, nil); err == nil {
			t.Errorf("stuck call %d answered with a result", i)
		}
	}
}

// TestToolCallFromReadLoopEnds: a call sent from the host's read loop ends
// in every way a call on its own goroutine does: its answer (after the
// progress the server sent before it), its timeoutMs (-32014, and the
// server is told), the host's cancellation (-32800, and the server is
// told), the server's crash (-32015 with its last stderr).
func TestToolCallFromReadLoopEnds(t *testing.T) {
	sent := make(sentCalls, 16)
	h := newHookedHarness(t, sidecar.Hooks{ToolCallSent: sent.hook})
	events := tempFile(t, "events")
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		EventsFile: events,
		Tools: []fixture.ToolSpec{tool("echo", fixture.BehaviorEcho), tool("sleep", fixture.BehaviorSleep),
			tool("progress", fixture.BehaviorProgress), tool("crash", fixture.BehaviorCrash)},
	})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	serverTold := func(tag string) {
		t.Helper()
		h.waitFor("the server's cancellation of "+tag, func(n hostclient.Notification) bool {
			return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "cancelled sleep "+tag)
		})
	}

	t.Run("answer", func(t *testing.T) {
		res, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{"x": "hello"}})
		if err != nil || !strings.Contains(string(res), `"x":"hello"`) {
			t.Errorf("echo: %s, %v", res, err)
		}
	})
	t.Run("progress before the answer", func(t *testing.T) {
		before := len(h.notifications())
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__progress", "arguments": map[string]any{"count": 3}, "meta": map[string]any{"progressToken": "p-ends"}}); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, note := range h.notifications()[before:] {
			if note.Method == protocol.NotifyProgress && strings.Contains(string(note.Params), "p-ends") {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%d progress notifications had arrived with the answer, want 3", n)
		}
	})
	t.Run("timeoutMs", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"tag": "late"}, "timeoutMs": 100})
		je, data := h.wantCode(err, protocol.CodeToolTimeout)
		if !strings.Contains(je.Message, "timeoutMs") || data.Tool != "sleep" || !data.Retryable {
			t.Errorf("timeout %q %+v: want timeoutMs named, the tool, retryable", je.Message, data)
		}
		serverTold("late")
	})
	t.Run("cancel", func(t *testing.T) {
		id, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{
			"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"tag": "dropped"},
			"meta": map[string]any{"progressToken": "sleeping"},
		})
		if err != nil {
			t.Fatal(err)
		}
		h.waitFor("the sleep running", func(n hostclient.Notification) bool {
			return n.Method == protocol.NotifyProgress && strings.Contains(string(n.Params), "sleeping")
		})
		if err := h.client.Cancel(h.ctx, id); err != nil {
			t.Fatal(err)
		}
		h.wantCode(w.Wait(h.ctx, nil), protocol.CodeRequestCancelled)
		serverTold("dropped")
	})
	t.Run("crash", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__crash"})
		_, data := h.wantCode(err, protocol.CodeConnectionLost)
		if !strings.Contains(data.Stderr, "crashing in crash") || !data.Retryable {
			t.Errorf("data %+v: want the server's last stderr, retryable", data)
		}
	})
	for range 5 {
		if got := sent.next(t, "the calls"); got != "s read-loop" {
			t.Errorf("a call went %q, want from the read loop", got)
		}
	}
}
