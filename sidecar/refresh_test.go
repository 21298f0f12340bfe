package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// ctlServer is an in-process Streamable HTTP MCP server whose requests
// the test controls: onRequest gets each request's method and number
// (1-based, counted per method) and may block on a channel, fail it (an
// error) or let it through (nil).
type ctlServer struct {
	srv *mcp.Server
	url string

	mu     sync.Mutex
	counts map[string]int
	// ending cancels the requests in flight of an MCP session when its
	// client deletes it: go-sdk's server waits for them before it answers
	// the DELETE, and a handler the test blocks would hold the client's
	// close up.
	ending map[string][]context.CancelFunc
}

func newCtlServer(t *testing.T, tools []string, onRequest func(ctx context.Context, method string, n int) error) *ctlServer {
	t.Helper()
	cs := &ctlServer{srv: mcp.NewServer(&mcp.Implementation{Name: "ctl-server"}, nil), counts: map[string]int{}, ending: map[string][]context.CancelFunc{}}
	for _, name := range tools {
		cs.addTool(name)
	}
	cs.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cs.mu.Lock()
			cs.counts[method]++
			n := cs.counts[method]
			if ss := req.GetSession(); ss != nil {
				cs.ending[ss.ID()] = append(cs.ending[ss.ID()], cancel)
			}
			cs.mu.Unlock()
			if err := onRequest(ctx, method, n); err != nil {
				return nil, err
			}
			return next(ctx, method, req)
		}
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return cs.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			cs.mu.Lock()
			id := r.Header.Get("Mcp-Session-Id")
			for _, cancel := range cs.ending[id] {
				cancel()
			}
			delete(cs.ending, id)
			cs.mu.Unlock()
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		for ss := range cs.srv.Sessions() {
			ss.Close()
		}
	})
	cs.url = ts.URL
	return cs
}

// count is the number of method requests the server received.
func (cs *ctlServer) count(method string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.counts[method]
}

// addTool adds an echo tool; go-sdk then sends tools/list_changed.
func (cs *ctlServer) addTool(name string) {
	cs.srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
	})
}

// signals counts hook calls and lets a test wait for a number of them.
type signals chan struct{}

func newSignals() signals { return make(signals, 1024) }

func (s signals) fire() { s <- struct{}{} }

func (s signals) wait(t *testing.T, n int, what string) {
	t.Helper()
	timeout := time.NewTimer(testTimeout)
	defer timeout.Stop()
	for i := range n {
		select {
		case <-s:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s (%d of %d)", what, i, n)
		}
	}
}

// refreshHarness is a harness whose background refresher is held back
// until the test ends, and whose hooks report notifications seen and
// refreshes joined.
type refreshHarness struct {
	*harness
	clock    *testclock.Clock
	notified signals // a background refresher was woken: a notification was recorded
	joined   signals // a caller waits for another's refresh
}

func newRefreshHarness(t *testing.T) *refreshHarness {
	t.Helper()
	rh := &refreshHarness{clock: newFakeClock(), notified: newSignals(), joined: newSignals()}
	hold := make(chan struct{})
	rh.harness = newHookedHarness(t, sidecar.Hooks{
		Now: rh.clock.Now,
		BackgroundRefresh: func(session, server string) {
			rh.notified.fire()
			<-hold
		},
		RefreshJoined: func(session, server string) { rh.joined.fire() },
	})
	// Cleanups run last first: the refresher is let go before the harness
	// closes the sessions that wait for it.
	t.Cleanup(func() { close(hold) })
	return rh
}

// TestFailedRefreshAnswersAllWaitersOnce: eight
// tools/list find a catalog made stale by a notification; one refresh
// lists and fails; all eight are answered from that one failure with the
// previous catalog marked stale, and the cooldown then holds: nobody lists
// again until it has passed.
func TestFailedRefreshAnswersAllWaitersOnce(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	ls := newCtlServer(t, []string{"a"}, func(_ context.Context, method string, n int) error {
		if method == "tools/list" && n == 2 { // the first refresh
			close(started)
			<-release
			return errors.New("tools/list failed on purpose")
		}
		return nil
	})
	h := newRefreshHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": {URL: ls.url}}, map[string]any{
		"features": map[string]bool{"mcp_tool_list_changed": true},
		"limits":   map[string]any{"refreshCooldownMs": 2000},
	})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	ls.addTool("b")
	h.notified.wait(t, 1, "the list_changed notification")

	const n = 8
	var waits []hostclient.Waiter
	for range n {
		_, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsList, map[string]any{"sessionId": sid})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	<-started
	h.joined.wait(t, n-1, "seven tools/list waiting for the refresh in flight")
	close(release)
	for i, w := range waits {
		var list protocol.ToolsListResult
		if err := w.Wait(h.ctx, &list); err != nil {
			t.Fatalf("tools/list %d: %v", i, err)
		}
		if got := toolNames(list); !slices.Equal(got, []string{"a"}) || !list.Servers[0].Stale {
			t.Errorf("tools/list %d: tools %v stale %v, want the previous catalog marked stale", i, got, list.Servers[0].Stale)
		}
	}
	if got := ls.count("tools/list"); got != 2 {
		t.Fatalf("%d tools/list reached the server, want 2 (startup and one refresh for all eight)", got)
	}
	// The failure started the cooldown: within it nothing lists.
	if list := h.toolsList(sid); !list.Servers[0].Stale || ls.count("tools/list") != 2 {
		t.Errorf("within the cooldown: stale %v, %d listings; want stale and no new listing", list.Servers[0].Stale, ls.count("tools/list"))
	}
	h.clock.Advance(2 * time.Second)
	list := h.toolsList(sid)
	if got := toolNames(list); !slices.Equal(got, []string{"a", "b"}) || list.Servers[0].Stale {
		t.Errorf("after the cooldown: tools %v stale %v, want a and b, current", got, list.Servers[0].Stale)
	}
}

// TestOnDemandRefreshWithBackgroundHeldBack: with the background refresher
// held back, the request itself refreshes a catalog a notification made
// stale: tools/list lists the new tool, and tools/call binds it by
// qualified name and by server and tool, each after exactly one listing.
func TestOnDemandRefreshWithBackgroundHeldBack(t *testing.T) {
	tests := []struct {
		name string
		do   func(h *refreshHarness, sid string) error
	}{
		{"tools/list", func(h *refreshHarness, sid string) error {
			list := h.toolsList(sid)
			if got := toolNames(list); !slices.Equal(got, []string{"a", "b"}) || list.Servers[0].Stale {
				return fmt.Errorf("tools %v stale %v, want a and b, current", got, list.Servers[0].Stale)
			}
			return nil
		}},
		{"tools/call by qualified name", func(h *refreshHarness, sid string) error {
			_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__b"})
			return err
		}},
		{"tools/call by server and tool", func(h *refreshHarness, sid string) error {
			_, err := h.callTool(map[string]any{"sessionId": sid, "server": "s", "tool": "b"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := newCtlServer(t, []string{"a"}, func(context.Context, string, int) error { return nil })
			h := newRefreshHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": {URL: cs.url}}, listChangedOn)
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			h.waitComplete(sid, 0)
			cs.addTool("b")
			h.notified.wait(t, 1, "the list_changed notification")
			if err := tt.do(h, sid); err != nil {
				t.Fatalf("%s after the notification, the background refresher held back: %v", tt.name, err)
			}
			if n := cs.count("tools/list"); n != 2 {
				t.Errorf("%d tools/list, want 2 (startup, and the request's own refresh)", n)
			}
			waitToolsChanged(h.harness, sid, "s", protocol.ReasonListChanged)
		})
	}
}
