package sidecar_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// TestRequestsRacingSessionClose (red-team finding F7): a request of a
// session that session/close ends under it is answered -32011
// session_closed, not retryable — never -32013 unknown_tool (the host would
// tell the model the tool does not exist) nor a retryable -32015 (for a
// session that is gone); a request that arrives after the close is -32001.
// Each request is known to be in flight (waiting for a startup, or in the
// server) before the close is sent.
func TestRequestsRacingSessionClose(t *testing.T) {
	cases := []struct {
		name string
		// ready: the session's startup completes before the request;
		// otherwise its tools/list stays blocked.
		ready  bool
		method string
		params func(session string) map[string]any
		// inFlight waits until the request waits for the startup or has
		// reached the server.
		inFlight func(t *testing.T, h *harness, c *closeRace)
	}{
		{
			name: "tools/call by name waiting for the startup", method: protocol.MethodToolsCall,
			params: func(sid string) map[string]any {
				return map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{}}
			},
			inFlight: func(t *testing.T, h *harness, c *closeRace) { c.waits.wait(t, 1, "the call waiting for the startup") },
		},
		{
			name: "tools/call by server and tool waiting for the startup", method: protocol.MethodToolsCall,
			params: func(sid string) map[string]any {
				return map[string]any{"sessionId": sid, "server": "s", "tool": "echo", "arguments": map[string]any{}}
			},
			inFlight: func(t *testing.T, h *harness, c *closeRace) { c.waits.wait(t, 1, "the call waiting for the startup") },
		},
		{
			name: "tools/list waiting for the startup", method: protocol.MethodToolsList,
			params: func(sid string) map[string]any { return map[string]any{"sessionId": sid} },
			inFlight: func(t *testing.T, h *harness, c *closeRace) {
				c.waits.wait(t, 1, "the listing waiting for the startup")
			},
		},
		{
			name: "tools/call in the server", ready: true, method: protocol.MethodToolsCall,
			params: func(sid string) map[string]any {
				return map[string]any{"sessionId": sid, "name": "mcp__s__slow", "arguments": map[string]any{},
					"meta": map[string]any{"progressToken": "slow-1"}}
			},
			inFlight: func(t *testing.T, h *harness, c *closeRace) {
				h.waitFor("the call running in the server", func(n hostclient.Notification) bool {
					return n.Method == protocol.NotifyProgress && strings.Contains(string(n.Params), "slow-1")
				})
			},
		},
		{
			name: "servers/refresh in the server", ready: true, method: protocol.MethodServersRefresh,
			params: func(sid string) map[string]any { return map[string]any{"sessionId": sid, "server": "s"} },
			inFlight: func(t *testing.T, h *harness, c *closeRace) {
				// The startup's listing, then the refresh's, now blocked.
				waitFileLines(t, c.spec.CountFile, 2)
			},
		},
		{
			name: "resources/list in the server", ready: true, method: protocol.MethodResourcesList,
			params: func(sid string) map[string]any { return map[string]any{"sessionId": sid, "server": "s"} },
			inFlight: func(t *testing.T, h *harness, c *closeRace) {
				waitFileLines(t, c.spec.CountFile, 2) // tools/list, then resources/list
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCloseRace(t, tc.ready)
			_, w, err := c.h.client.Dispatch(c.h.ctx, tc.method, tc.params(c.sid))
			if err != nil {
				t.Fatal(err)
			}
			tc.inFlight(t, c.h, c)
			if err := c.h.call(protocol.MethodSessionClose, map[string]any{"sessionId": c.sid}, nil); err != nil {
				t.Fatal(err)
			}
			je, data := c.h.wantCode(w.Wait(c.h.ctx, nil), protocol.CodeServerNotReady)
			if data.Kind != protocol.KindSessionClosed || data.Retryable || !strings.Contains(je.Message, "closed") {
				t.Errorf("%s ended by session/close: %q %+v, want kind %s, not retryable, saying the session was closed", tc.method, je.Message, data, protocol.KindSessionClosed)
			}
			_, err = c.h.callTool(tc.params(c.sid))
			c.h.wantCode(err, protocol.CodeUnknownSession)
		})
	}
}

// closeRace is a session of one server s whose startup is complete or, if
// not ready, held in its tools/list; requests that wait for the startup are
// reported on waits.
type closeRace struct {
	h     *harness
	sid   string
	spec  fixture.Spec
	waits signals
}

func newCloseRace(t *testing.T, ready bool) *closeRace {
	t.Helper()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	c := &closeRace{waits: newSignals(), spec: fixture.Spec{
		Tools:               []fixture.ToolSpec{tool("echo", "echo"), tool("slow", "sleep")},
		Resources:           []fixture.ResourceSpec{{URI: "file:///r", Name: "r", Text: "r"}},
		ResourceListDelayMs: 60_000,
		BlockListUntilFile:  gate,
		CountFile:           filepath.Join(dir, "count"),
	}}
	c.h = newHookedHarness(t, sidecar.Hooks{StartupWait: func(session, server string, early bool) { c.waits.fire() }})
	c.h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", c.spec)}, nil)
	if ready {
		openGate(t, gate)
	}
	c.sid = c.h.open(map[string]any{"startup": "eager"}).SessionID
	if ready {
		c.h.waitComplete(c.sid, 0)
		// From now on tools/list blocks again: a refresh stays in flight.
		if err := os.Remove(gate); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
