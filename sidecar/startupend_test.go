package sidecar_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
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

// TestReconnectDuringStartup: servers/reconnect while the server's first
// startup hangs (its process waits in tools/list) ends that startup at
// once, its process included, and the requests that waited for it (a
// tools/call by qualified name, one by server and tool, a tools/list)
// follow the new startup: they are answered from it, never -32013 for a
// catalog the superseded startup never filled.
func TestReconnectDuringStartup(t *testing.T) {
	dir := t.TempDir()
	inits, hungPID := filepath.Join(dir, "init"), filepath.Join(dir, "hung.pid")
	// The first process of the server hangs in its first tools/list; the
	// ones after it serve.
	cfg := fixture.Config("s", fixture.Spec{InitCountFile: inits, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	hung := fixture.Config("s", fixture.Spec{InitCountFile: inits, PIDFile: hungPID, BlockListUntilFile: filepath.Join(dir, "never"),
		Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	cfg.Env["HUNG_SPEC"] = hung.Env[fixture.EnvVar]
	cfg.Args = append([]string{"-c", `if mkdir "$0" 2>/dev/null; then MCP_SIDECAR_FIXTURE=$HUNG_SPEC; export MCP_SIDECAR_FIXTURE; fi; exec "$@"`,
		filepath.Join(dir, "first"), cfg.Command}, cfg.Args...)
	cfg.Command = "sh"
	cfg.StartupTimeoutSec = seconds(120) // never the reason anything ends here

	waiting := newSignals()
	h := newHookedHarness(t, sidecar.Hooks{StartupWait: func(session, server string, early bool) {
		if !early {
			waiting.fire()
		}
	}})
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	waitFileLines(t, inits, 1) // the first process initialized and hangs in tools/list
	pid := fixture.ReadPID(t, hungPID)

	var waits []hostclient.Waiter
	for _, q := range []struct {
		method string
		params map[string]any
	}{
		{protocol.MethodToolsCall, map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{"x": 1}}},
		{protocol.MethodToolsCall, map[string]any{"sessionId": sid, "server": "s", "tool": "echo", "arguments": map[string]any{"x": 2}}},
		{protocol.MethodToolsList, map[string]any{"sessionId": sid}},
	} {
		_, w, err := h.client.Dispatch(h.ctx, q.method, q.params)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	waiting.wait(t, len(waits), "three requests waiting for the startup")

	var rc protocol.ReconnectResult
	if err := h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"}, &rc); err != nil || rc.State != protocol.StateReady {
		t.Fatalf("servers/reconnect: %+v, %v", rc, err)
	}
	for i, w := range waits[:2] {
		if err := w.Wait(h.ctx, nil); err != nil {
			t.Errorf("tools/call %d that waited for the superseded startup: %v", i, err)
		}
	}
	var list protocol.ToolsListResult
	if err := waits[2].Wait(h.ctx, &list); err != nil {
		t.Fatalf("tools/list that waited for the superseded startup: %v", err)
	}
	if got := toolNames(list); len(got) != 1 || list.Servers[0].State != protocol.StateReady {
		t.Errorf("tools/list: tools %v, servers %+v; want the new startup's catalog, ready", got, list.Servers)
	}

	// The superseded startup ended when it was superseded, not at its
	// timeout: its round is over and its process is gone.
	if c := h.waitComplete(sid, 0); len(c.Cancelled) != 1 {
		t.Errorf("round 0: %+v, want s cancelled", c)
	}
	if st := startupStatusOf(h, sid, "s", 0, protocol.StatusCancelled); !strings.Contains(st.Error, "superseded") {
		t.Errorf("round 0 status %+v should say the startup was superseded", st)
	}
	deadline := time.Now().Add(testTimeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the superseded startup's process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
