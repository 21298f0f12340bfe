package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Requests the sidecar forwards to a server for the host (resources,
// prompts, completion, tasks) end within the server's tool_timeout_sec,
// and a server that never answers holds only its share of the session's
// places.

// TestForwardedRequestsTimeOut: to a server that stopped reading, every
// forwarded request is answered -32014 tool_timeout (retryable, naming the
// server, the method and tool_timeout_sec) once the server's
// tool_timeout_sec has passed, instead of never.
func TestForwardedRequestsTimeOut(t *testing.T) {
	// The server stops reading at the first resources/read: it answers
	// nothing from then on.
	cfg := fixture.Config("s", fixture.Spec{
		Raw: &fixture.RawSpec{StopReadingOn: protocol.MethodResourcesRead},
		Capabilities: map[string]json.RawMessage{
			"resources":   json.RawMessage(`{"subscribe":true}`),
			"prompts":     json.RawMessage(`{}`),
			"completions": json.RawMessage(`{}`),
			"tasks":       json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`),
		},
	})
	cfg.ToolTimeoutSec = seconds(0.2)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]any{"features": map[string]bool{"apps_early_resource_discovery": true}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)

	at := func(extra map[string]any) map[string]any {
		p := map[string]any{"sessionId": sid, "server": "s"}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	requests := []struct {
		method string
		params map[string]any
	}{
		// First, alone: the one that silences the server.
		{protocol.MethodResourcesRead, at(map[string]any{"uri": "file:///a"})},
		{protocol.MethodResourcesList, at(nil)},
		{protocol.MethodResourcesList, at(map[string]any{"all": true})},
		{protocol.MethodResourceTemplates, at(nil)},
		{protocol.MethodPromptsList, at(nil)},
		{protocol.MethodResourcesDiscover, at(nil)},
		{protocol.MethodResourcesSubscribe, at(map[string]any{"uri": "file:///a"})},
		{protocol.MethodResourcesUnsubscribe, at(map[string]any{"uri": "file:///a"})},
		{protocol.MethodPromptsGet, at(map[string]any{"name": "p"})},
		{protocol.MethodCompletionComplete, at(map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "a", "value": "x"}})},
		{protocol.MethodTasksGet, at(map[string]any{"taskId": "t"})},
		{protocol.MethodTasksResult, at(map[string]any{"taskId": "t"})},
		{protocol.MethodTasksList, at(nil)},
		{protocol.MethodTasksCancel, at(map[string]any{"taskId": "t"})},
	}
	check := func(method string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s to a silent server succeeded", method)
			return
		}
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v, want -32014", method, err)
			return
		}
		if pe.Code != protocol.CodeToolTimeout || pe.Data.Kind != protocol.KindToolTimeout || !pe.Data.Retryable || pe.Data.Server != "s" ||
			!strings.Contains(pe.Message, "tool_timeout_sec") || !strings.Contains(pe.Message, method) {
			t.Errorf("%s: %d %q %+v; want -32014 tool_timeout, retryable, naming server s, %s and tool_timeout_sec", method, pe.Code, pe.Message, pe.Data, method)
		}
	}
	first := requests[0]
	check(first.method, h.call(first.method, first.params, nil))
	var wg sync.WaitGroup
	for _, q := range requests[1:] {
		wg.Go(func() { check(q.method, h.call(q.method, q.params, nil)) })
	}
	wg.Wait()
}

// TestSilentServerDoesNotStarveOthers: requests to a server that never
// answers take at most its share of limits.maxPendingPerSession (half of
// the places; the excess is refused -32018 at once, naming the server),
// and a call to the session's other server still gets a place.
func TestSilentServerDoesNotStarveOthers(t *testing.T) {
	const limit = 8
	arrived := newSignals()
	silent := newCtlServer(t, nil, func(ctx context.Context, method string, n int) error {
		if method == protocol.MethodResourcesRead {
			arrived.fire()
			<-ctx.Done() // never answered while the test runs
			return ctx.Err()
		}
		return nil
	})
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"silent": {URL: silent.url},
		"ok":     fixture.Config("ok", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
	}, map[string]any{"limits": map[string]any{"maxPendingPerSession": limit}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)

	refused := make(chan *protocol.Error, limit)
	for range limit {
		_, w, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesRead, map[string]any{"sessionId": sid, "server": "silent", "uri": "file:///r"})
		if err != nil {
			t.Fatal(err)
		}
		go func(w hostclient.Waiter) {
			var pe *protocol.Error
			if err := w.Wait(h.ctx, nil); errors.As(err, &pe) && pe.Code == protocol.CodeTooManyRequests {
				refused <- pe
			}
		}(w)
	}
	// Every read is either in the silent server or refused: count both.
	inServer, nRefused := 0, 0
	for inServer+nRefused < limit {
		select {
		case <-arrived:
			inServer++
		case pe := <-refused:
			nRefused++
			if pe.Data.Server != "silent" || !pe.Data.Retryable || !strings.Contains(pe.Message, "maxPendingPerSession") {
				t.Errorf("refusal %q %+v should be retryable, name the server and limits.maxPendingPerSession", pe.Message, pe.Data)
			}
		case <-h.ctx.Done():
			t.Fatalf("%d reads in the server, %d refused, of %d", inServer, nRefused, limit)
		}
	}
	if inServer != limit/2 {
		t.Errorf("%d reads reached the silent server, want its share, %d of %d", inServer, limit/2, limit)
	}
	if res, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__ok__echo", "arguments": map[string]any{"x": 1}}); err != nil {
		t.Fatalf("tools/call to the other server while the silent one holds its share: %v", err)
	} else if !strings.Contains(string(res), `"x":1`) {
		t.Errorf("tools/call result %s", res)
	}
}
