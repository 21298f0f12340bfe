package sidecar_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

var earlyOn = map[string]any{"features": map[string]bool{"apps_early_resource_discovery": true}}

var discoverable = []fixture.ResourceSpec{
	{URI: "plugin://one", Name: "one", MIMEType: "mcp/plugin", Text: "{}"},
	{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain", Text: "n"},
	{URI: "skill://two", Name: "two", MIMEType: "mcp/skill", Text: "s"},
}

func discover(h *harness, session, server string) ([]string, error) {
	var res struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	err := h.call(protocol.MethodResourcesDiscover, map[string]any{"sessionId": session, "server": server, "mimeTypes": []string{"mcp/plugin", "mcp/skill"}}, &res)
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris, err
}

func serverState(h *harness, session, server string) string {
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": session}, &st); err != nil {
		h.t.Fatal(err)
	}
	for _, s := range st.Servers {
		if s.Name == server {
			return s.State
		}
	}
	return ""
}

// TestEarlyDiscoveryWhileToolsListBlocked: discovery answers while the
// server's first tools/list is still pending, for plugins and skills asked
// for at once, on the default protocol version, 2026-07-28 and 2025-11-25;
// readiness still waits for the inventory; the server sees exactly one
// handshake.
func TestEarlyDiscoveryWhileToolsListBlocked(t *testing.T) {
	for _, version := range []string{"", "2026-07-28", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			unblock := tempFile(t, "unblock")
			inits := tempFile(t, "inits")
			cfg := fixture.Config("s", fixture.Spec{
				BlockListUntilFile: unblock, InitCountFile: inits, PageSize: 1,
				Resources: discoverable, Tools: []fixture.ToolSpec{tool("a", "echo")},
			})
			cfg.ProtocolVersion = version
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": cfg}, earlyOn)
			open := h.open(map[string]any{"startup": "eager"})
			// Plugins and skills are discovered concurrently, as a host
			// that looks for both at once does.
			kinds := map[string]string{"mcp/plugin": "plugin://one", "mcp/skill": "skill://two"}
			type found struct {
				uris []string
				err  error
			}
			results := map[string]chan found{}
			for mime := range kinds {
				ch := make(chan found, 1)
				results[mime] = ch
				go func() {
					var res struct {
						Resources []struct {
							URI string `json:"uri"`
						} `json:"resources"`
					}
					err := h.call(protocol.MethodResourcesDiscover, map[string]any{"sessionId": open.SessionID, "server": "s", "mimeTypes": []string{mime}}, &res)
					var f found
					f.err = err
					for _, r := range res.Resources {
						f.uris = append(f.uris, r.URI)
					}
					ch <- f
				}()
			}
			for mime, want := range kinds {
				f := <-results[mime]
				if f.err != nil {
					t.Fatalf("discovering %s: %v", mime, f.err)
				}
				if diff := cmp.Diff([]string{want}, f.uris); diff != "" {
					t.Errorf("discovered %s (-want +got):\n%s", mime, diff)
				}
			}
			if st := serverState(h, open.SessionID, "s"); st != protocol.StateStarting {
				t.Errorf("state %q during the blocked listing: readiness must wait for the inventory", st)
			}
			for _, n := range h.notifications() {
				if n.Method == protocol.NotifyStartupStatus && strings.Contains(string(n.Params), `"ready"`) {
					t.Errorf("ready announced before the tool inventory: %s", n.Params)
				}
			}
			if err := os.WriteFile(unblock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			h.waitComplete(open.SessionID, 0)
			if got := len(h.toolsList(open.SessionID).Tools); got != 1 {
				t.Errorf("%d tools after unblocking", got)
			}
			// One connection, one handshake: initialize, or on 2026-07-28
			// server/discover.
			lines := fixture.ReadLines(inits)
			if len(lines) != 1 {
				t.Fatalf("server saw %d handshakes, want 1: %q", len(lines), lines)
			}
			want := "server/discover 2026-07-28" // the modern protocol first, and a go-sdk v1.8 server speaks it
			switch {
			case version >= "2026-07-28":
				want = "server/discover " + version
			case version != "":
				want = "initialize " + version
			}
			if f := strings.Fields(lines[0]); len(f) != 3 || f[0]+" "+f[2] != want {
				t.Errorf("handshake %q, want %s", lines[0], want)
			}
		})
	}
}

// TestEarlyDiscoveryFeatureOffWaitsForReadiness: with the feature off,
// discovery waits for normal readiness.
func TestEarlyDiscoveryFeatureOffWaitsForReadiness(t *testing.T) {
	unblock := tempFile(t, "unblock")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		BlockListUntilFile: unblock, Resources: discoverable, Tools: []fixture.ToolSpec{tool("a", "echo")},
	})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	_, w, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, map[string]any{"sessionId": open.SessionID, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	// The request cannot finish while the listing is blocked: unblock only
	// after checking it has not.
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	if err := w.Wait(ctx, nil); err != context.Canceled {
		t.Fatalf("discovery finished before readiness: %v", err)
	}
	if err := os.WriteFile(unblock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err := w.Wait(h.ctx, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 2 {
		t.Errorf("got %d resources, want 2", len(res.Resources))
	}
	// Readiness preceded the answer.
	h.waitFor("ready", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyStartupStatus && strings.Contains(string(n.Params), `"ready"`)
	})
}

func TestEarlyDiscoveryStartupFailureAndTimeout(t *testing.T) {
	slow := fixture.Config("slow", fixture.Spec{StartDelayMs: 5000, Resources: discoverable})
	slow.StartupTimeoutSec = seconds(0.3)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"dead": fixture.Config("dead", fixture.Spec{ExitAtStart: true, StderrLines: []string{"no license"}}),
		"slow": slow,
	}, earlyOn)
	open := h.open(map[string]any{"startup": "eager"})
	_, err := discover(h, open.SessionID, "dead")
	je, _ := h.wantCode(err, protocol.CodeServerNotReady)
	if !strings.Contains(je.Message, "no license") {
		t.Errorf("startup error %q should reach the request", je.Message)
	}
	_, err = discover(h, open.SessionID, "slow")
	je, _ = h.wantCode(err, protocol.CodeStartupTimeout)
	if !strings.Contains(je.Message, "startup_timeout_sec") {
		t.Errorf("timeout %q should name startup_timeout_sec", je.Message)
	}
}

func TestEarlyDiscoveryCancelledBySessionClose(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{HangAtStart: true})}, earlyOn)
	open := h.open(map[string]any{"startup": "eager"})
	_, w, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, map[string]any{"sessionId": open.SessionID, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	// Waiting for the startup, the request learns that the session closed
	// (-32011 session_closed: the host cancelled nothing, so not -32800);
	// had it been handled only after the close, the session is unknown
	// (-32001). Either way it ends, and never succeeds.
	err = w.Wait(h.ctx, nil)
	je, data := h.rpcError(err)
	if (je.Code != protocol.CodeServerNotReady || data.Kind != protocol.KindSessionClosed) && je.Code != protocol.CodeUnknownSession {
		t.Errorf("discovery after its session closed: %d %s %+v, want -32011 session_closed (or -32001)", je.Code, je.Message, data)
	}
}

// TestEarlyDiscoveryRejectedWhenResourcesChange: a resources/list_changed
// between pages rejects the result with -32017.
func TestEarlyDiscoveryRejectedWhenResourcesChange(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		PageSize: 1, NotifyResourcesChangedAfterList: 2, Resources: discoverable, Tools: []fixture.ToolSpec{tool("a", "echo")},
	})}, earlyOn)
	open := h.open(map[string]any{"startup": "eager"})
	_, err := discover(h, open.SessionID, "s")
	je, data := h.wantCode(err, protocol.CodeDiscoveryRejected)
	if !data.Retryable || !strings.Contains(je.Message, "resources changed") {
		t.Errorf("rejection %q %+v", je.Message, data)
	}
	// Discovering again (no change this time) succeeds.
	uris, err := discover(h, open.SessionID, "s")
	if err != nil || len(uris) != 2 {
		t.Errorf("second discovery: %v %v", uris, err)
	}
}

// TestEarlyDiscoveryRejectedWhenConnectionReplaced: a reconnect while pages
// are fetched rejects the result with -32017.
func TestEarlyDiscoveryRejectedWhenConnectionReplaced(t *testing.T) {
	count := tempFile(t, "count")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		CountFile: count, PageSize: 1, ResourceListDelayMs: 300, Resources: discoverable, Tools: []fixture.ToolSpec{tool("a", "echo")},
	})}, earlyOn)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	_, w, err := h.client.Dispatch(h.ctx, protocol.MethodResourcesDiscover, map[string]any{"sessionId": open.SessionID, "server": "s"})
	if err != nil {
		t.Fatal(err)
	}
	// Three pages take 900 ms; once the first page was asked for, the
	// reconnect replaces the connection well inside them.
	waitFileLines(t, count, 2) // the startup's tools/list, then the first resources/list
	var st protocol.ReconnectResult
	if err := h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": open.SessionID, "server": "s"}, &st); err != nil {
		t.Fatal(err)
	}
	err = w.Wait(h.ctx, nil)
	je, _ := h.wantCode(err, protocol.CodeDiscoveryRejected)
	if !strings.Contains(je.Message, "replaced") {
		t.Errorf("rejection %q should say the connection was replaced", je.Message)
	}
}
