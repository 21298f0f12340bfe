package sidecar_test

// A server that misbehaves on its pipes costs
// the sidecar bounded resources and gets the errors every lost connection
// gets.

import (
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestCallToServerThatClosedItsStdin: a server closes its stdin on the
// first tools/call (left unanswered) and lives on. The next call cannot be
// written: it gets -32015 connection_lost with the server's last stderr,
// not -32603, and so does the call the server swallowed.
func TestCallToServerThatClosedItsStdin(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"s": fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{CloseStdinOn: "tools/call"}}),
	}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	_, first, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{"sessionId": sid, "name": "mcp__s__echo"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the server's stdin closed", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "stdin closed")
	})
	_, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo"})
	_, data := h.wantCode(err, protocol.CodeConnectionLost)
	if !strings.Contains(data.Stderr, "fixture: stdin closed") || !data.Retryable {
		t.Errorf("call after the close: data %+v, want the stderr tail, retryable", data)
	}
	_, data = h.wantCode(first.Wait(h.ctx, nil), protocol.CodeConnectionLost)
	if !strings.Contains(data.Stderr, "fixture: stdin closed") {
		t.Errorf("swallowed call: data %+v, want the stderr tail", data)
	}
}
