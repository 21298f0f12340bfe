package sidecar_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Startups the host never cancelled: one superseded by
// a servers/reconnect, one ended by session/close. Neither is -32800,
// which means "you cancelled this request"; both are -32011 with a kind
// that says why.

// TestStartupSupersededIsNotCancelled: a servers/reconnect whose startup
// is superseded by a second reconnect is answered -32011
// startup_superseded (retryable), and the superseded startups' statuses
// say why.
func TestStartupSupersededIsNotCancelled(t *testing.T) {
	dir := t.TempDir()
	spec := gatedSpec(dir)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	waitFileLines(t, spec.InitCountFile, 1) // round 0's process is initialized
	_, first, err := h.client.Dispatch(h.ctx, protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	waitFileLines(t, spec.InitCountFile, 2) // the first reconnect's startup runs
	_, second, err := h.client.Dispatch(h.ctx, protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	waitFileLines(t, spec.InitCountFile, 3)
	openGate(t, filepath.Join(dir, "gate"))

	var rc protocol.ReconnectResult
	if err := second.Wait(h.ctx, &rc); err != nil || rc.State != protocol.StateReady {
		t.Fatalf("the last reconnect: %+v, %v", rc, err)
	}
	je, data := h.wantCode(first.Wait(h.ctx, nil), protocol.CodeServerNotReady)
	if data.Kind != protocol.KindStartupSuperseded || !data.Retryable || data.Server != "s" || !strings.Contains(je.Message, "superseded") {
		t.Errorf("superseded reconnect: %q %+v, want kind %s, retryable, naming server s", je.Message, data, protocol.KindStartupSuperseded)
	}
	for _, round := range []int{0, 1} {
		st := startupStatusOf(h, sid, "s", round, protocol.StatusCancelled)
		if !strings.Contains(st.Error, "superseded") {
			t.Errorf("round %d: status %+v should say the startup was superseded", round, st)
		}
	}
}

// TestStartupEndedBySessionClose: a request waiting for a startup that
// session/close ends is answered -32011 session_closed, not -32800.
func TestStartupEndedBySessionClose(t *testing.T) {
	dir := t.TempDir()
	spec := gatedSpec(dir) // the gate never opens
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	waitFileLines(t, spec.InitCountFile, 1)
	// servers/reconnect waits for its own startup, which is in flight once
	// its process initialized.
	_, w, err := h.client.Dispatch(h.ctx, protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	waitFileLines(t, spec.InitCountFile, 2)
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatal(err)
	}
	je, data := h.wantCode(w.Wait(h.ctx, nil), protocol.CodeServerNotReady)
	if data.Kind != protocol.KindSessionClosed || data.Retryable || !strings.Contains(je.Message, "closed") {
		t.Errorf("reconnect ended by session/close: %q %+v, want kind %s, not retryable", je.Message, data, protocol.KindSessionClosed)
	}
	st := startupStatusOf(h, sid, "s", 1, protocol.StatusCancelled)
	if !strings.Contains(st.Error, "closed") {
		t.Errorf("status %+v should say the session was closed", st)
	}
}

// startupStatusOf waits for the mcp/startupStatus of server in round with
// status and returns it.
func startupStatusOf(h *harness, session, server string, round int, status string) protocol.StartupStatusParams {
	h.t.Helper()
	n := h.waitFor("startupStatus "+status, func(n hostclient.Notification) bool {
		var p protocol.StartupStatusParams
		return n.Method == protocol.NotifyStartupStatus && json.Unmarshal(n.Params, &p) == nil &&
			p.SessionID == session && p.Server == server && p.Round == round && p.Status == status
	})
	var p protocol.StartupStatusParams
	_ = json.Unmarshal(n.Params, &p)
	return p
}
