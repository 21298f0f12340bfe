package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Tests of lazy stdio startup (docs/protocol.md, "Disk cache and lazy
// startup"; mcp_lazy_stdio_startup).

var lazyFeature = map[string]bool{"mcp_lazy_stdio_startup": true}

// startupStatuses returns the mcp/startupStatus of session, in order.
func startupStatuses(t *testing.T, h *harness, session string) []protocol.StartupStatusParams {
	t.Helper()
	var out []protocol.StartupStatusParams
	for _, n := range h.notifications() {
		if n.Method != protocol.NotifyStartupStatus {
			continue
		}
		var p protocol.StartupStatusParams
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.SessionID == session {
			out = append(out, p)
		}
	}
	return out
}

// statusSeq renders statuses as "round server status" for diffs.
func statusSeq(sts []protocol.StartupStatusParams, keep func(protocol.StartupStatusParams) bool) []string {
	var out []string
	for _, st := range sts {
		if keep(st) {
			out = append(out, fmt.Sprintf("%d %s %s", st.Round, st.Server, st.Status))
		}
	}
	return out
}

// serverTools returns the sorted raw tool names of server in list, and its
// catalog entry.
func serverTools(list protocol.ToolsListResult, server string) ([]string, protocol.ServerCatalog) {
	var names []string
	for _, tl := range list.Tools {
		if tl.Server == server {
			names = append(names, tl.Tool)
		}
	}
	slices.Sort(names)
	var entry protocol.ServerCatalog
	for _, s := range list.Servers {
		if s.Name == server {
			entry = s
		}
	}
	return names, entry
}

func wantNoFile(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %s exists (%v): a process was started", why, filepath.Base(path), err)
	}
}

// TestLazyDormantUntilFirstUse: in a lazy session a cached stdio server runs
// no process while other servers are used; its first call starts it in a
// round of its own, the live catalog replaces the cached one, and a tool
// the live server no longer has is refused.
func TestLazyDormantUntilFirstUse(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	pidFile := filepath.Join(dir, "lazy.pid")
	inits := filepath.Join(dir, "lazy.init")
	lazy := fixture.Config("lazy", fixture.Spec{PIDFile: pidFile, InitCountFile: inits, Tools: []fixture.ToolSpec{
		tool("echo", "echo"), tool("fresh", "echo"), tool("remove_tool", "remove_tool"), tool("add_tool", "add_tool"),
	}})
	other := fixture.Config("other", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})

	// The cached catalog is one the next process will not serve: "fresh"
	// dropped and "ghost" added at runtime, then refreshed (and written).
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": lazy}, func(h *harness, sid string) {
		for _, c := range []map[string]any{
			{"sessionId": sid, "name": "mcp__lazy__remove_tool", "arguments": map[string]any{"name": "fresh"}},
			{"sessionId": sid, "name": "mcp__lazy__add_tool", "arguments": map[string]any{"name": "ghost"}},
		} {
			if _, err := h.callTool(c); err != nil {
				t.Fatal(err)
			}
		}
		var res protocol.ToolsListResult
		if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": sid, "server": "lazy"}, &res); err != nil {
			t.Fatal(err)
		}
		if names, _ := serverTools(res, "lazy"); !slices.Contains(names, "ghost") || slices.Contains(names, "fresh") {
			t.Fatalf("priming: refreshed catalog %q", names)
		}
	})
	os.Remove(pidFile)
	started := len(fixture.ReadLines(inits))

	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"lazy": lazy, "other": other}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	open := h.open(map[string]any{"sessionId": "L"}) // lazy: the feature's default
	want := []protocol.ServerState{{Name: "lazy", State: protocol.StateDormant}, {Name: "other", State: protocol.StateStarting}}
	if diff := cmp.Diff(want, open.Servers); diff != "" {
		t.Fatalf("session/open servers (-want +got):\n%s", diff)
	}
	sum := h.waitComplete("L", 0)
	if diff := cmp.Diff(protocol.StartupCompleteParams{SessionID: "L", Ready: []string{"other"}, Failed: []protocol.FailedServer{}, Cancelled: []string{}}, sum); diff != "" {
		t.Errorf("round 0 summary lists only eager servers (-want +got):\n%s", diff)
	}

	cachedTools := []string{"add_tool", "echo", "ghost", "remove_tool"}
	list := h.toolsList("L")
	names, entry := serverTools(list, "lazy")
	if diff := cmp.Diff(cachedTools, names); diff != "" {
		t.Errorf("dormant server's cached tools (-want +got):\n%s", diff)
	}
	if entry.State != protocol.StateDormant || entry.Catalog != protocol.CatalogCached {
		t.Errorf("dormant server listed as %+v, want dormant with catalog cached", entry)
	}
	// Unrelated use of the session starts nothing.
	for range 3 {
		if _, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__other__echo", "arguments": map[string]any{"x": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	h.toolsList("L")
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": "L"}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Servers[0].Name != "lazy" || st.Servers[0].State != protocol.StateDormant || st.Servers[0].PID != 0 {
		t.Errorf("status of the dormant server: %+v", st.Servers[0])
	}
	wantNoFile(t, pidFile, "dormant server during calls to another server")
	if n := len(fixture.ReadLines(inits)); n != started {
		t.Errorf("dormant server was initialized %d times", n-started)
	}
	if sts := statusSeq(startupStatuses(t, h, "L"), func(st protocol.StartupStatusParams) bool { return st.Server == "lazy" }); len(sts) != 0 {
		t.Errorf("dormant server reported startup statuses %q before its first use", sts)
	}

	// First real use: the call starts it and returns after its ready.
	if _, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__echo", "arguments": map[string]any{"x": 2}}); err != nil {
		t.Fatalf("first call of the dormant server: %v", err)
	}
	lazyStatuses := statusSeq(startupStatuses(t, h, "L"), func(st protocol.StartupStatusParams) bool { return st.Server == "lazy" })
	if diff := cmp.Diff([]string{"1 lazy starting", "1 lazy ready"}, lazyStatuses); diff != "" {
		t.Errorf("statuses of the deferred server when its triggering call returned (-want +got):\n%s", diff)
	}
	if pid := fixture.ReadPID(t, pidFile); !alive(pid) {
		t.Errorf("server %d not running after its first call", pid)
	}
	if n := len(fixture.ReadLines(inits)); n != started+1 {
		t.Errorf("first use started %d processes, want 1", n-started)
	}
	sum = h.waitComplete("L", 1)
	if diff := cmp.Diff([]string{"lazy"}, sum.Ready); diff != "" {
		t.Errorf("round 1 ready (-want +got):\n%s", diff)
	}

	// The live catalog replaced the cached one.
	list = h.toolsList("L")
	names, entry = serverTools(list, "lazy")
	if diff := cmp.Diff([]string{"add_tool", "echo", "fresh", "remove_tool"}, names); diff != "" {
		t.Errorf("tools after the first use (-want +got):\n%s", diff)
	}
	if entry.State != protocol.StateReady || entry.Catalog != protocol.CatalogLive {
		t.Errorf("started server listed as %+v, want ready and live", entry)
	}
	h.waitFor("mcp/toolsChanged for the swapped catalog", func(n hostclient.Notification) bool {
		var p protocol.ToolsChangedParams
		return n.Method == protocol.NotifyToolsChanged && json.Unmarshal(n.Params, &p) == nil &&
			p.SessionID == "L" && p.Server == "lazy" && p.Reason == protocol.ReasonStartup
	})
	_, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__ghost"})
	h.wantCode(err, protocol.CodeUnknownTool)
	_, err = h.callTool(map[string]any{"sessionId": "L", "server": "lazy", "tool": "ghost"})
	h.wantCode(err, protocol.CodeUnknownTool)
	if _, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__fresh"}); err != nil {
		t.Errorf("tool only the live server has: %v", err)
	}
}

// lazyTriggerSpec is a stdio fixture with something of everything, so that
// each kind of first use has something to ask for.
func lazyTriggerSpec(pidFile string) fixture.Spec {
	return fixture.Spec{
		PIDFile:   pidFile,
		Tools:     []fixture.ToolSpec{tool("echo", "echo"), tool("other", "echo")},
		Resources: []fixture.ResourceSpec{{URI: "file:///r.txt", Name: "r", MIMEType: "text/plain", Text: "r"}},
		Prompts:   []fixture.PromptSpec{{Name: "p", Text: "hello"}},
	}
}

// TestLazyFirstUseTriggers: every kind of real use starts a dormant server;
// a call of a tool the live server no longer has starts it and is refused.
func TestLazyFirstUseTriggers(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	pidFile := filepath.Join(dir, "pid")
	cfg := fixture.Config("lazy", lazyTriggerSpec(pidFile))
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": cfg}, nil)
	tests := []struct {
		name    string
		trigger func(h *harness) error
	}{
		{"tools/call", func(h *harness) error {
			_, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__echo"})
			return err
		}},
		{"resources/list", func(h *harness) error {
			return h.call(protocol.MethodResourcesList, map[string]any{"sessionId": "L", "server": "lazy"}, nil)
		}},
		{"resources/read", func(h *harness) error {
			return h.call(protocol.MethodResourcesRead, map[string]any{"sessionId": "L", "server": "lazy", "uri": "file:///r.txt"}, nil)
		}},
		{"prompts/get", func(h *harness) error {
			return h.call(protocol.MethodPromptsGet, map[string]any{"sessionId": "L", "server": "lazy", "name": "p"}, nil)
		}},
		{"servers/refresh", func(h *harness) error {
			var res protocol.ToolsListResult
			if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": "L", "server": "lazy"}, &res); err != nil {
				return err
			}
			if _, entry := serverTools(res, "lazy"); entry.Catalog != protocol.CatalogLive {
				return fmt.Errorf("servers/refresh returned catalog %q, want live", entry.Catalog)
			}
			return nil
		}},
		{"servers/reconnect", func(h *harness) error {
			var res protocol.ReconnectResult
			if err := h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": "L", "server": "lazy"}, &res); err != nil {
				return err
			}
			if res.State != protocol.StateReady {
				return fmt.Errorf("servers/reconnect state %q, want ready", res.State)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(pidFile)
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"lazy": cfg}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
			open := h.open(map[string]any{"sessionId": "L"})
			if diff := cmp.Diff([]protocol.ServerState{{Name: "lazy", State: protocol.StateDormant}}, open.Servers); diff != "" {
				t.Fatalf("session/open (-want +got):\n%s", diff)
			}
			h.waitComplete("L", 0)
			wantNoFile(t, pidFile, "before the first use")
			if err := tc.trigger(h); err != nil {
				t.Fatalf("%s on a dormant server: %v", tc.name, err)
			}
			if pid := fixture.ReadPID(t, pidFile); !alive(pid) {
				t.Errorf("server %d not running after %s", pid, tc.name)
			}
			sum := h.waitComplete("L", 1)
			if diff := cmp.Diff([]string{"lazy"}, sum.Ready); diff != "" {
				t.Errorf("round 1 ready (-want +got):\n%s", diff)
			}
			_, entry := serverTools(h.toolsList("L"), "lazy")
			if entry.State != protocol.StateReady || entry.Catalog != protocol.CatalogLive {
				t.Errorf("after %s: %+v, want ready and live", tc.name, entry)
			}
		})
	}
}

// TestLazyFirstCallOfRemovedTool: the first use is a call of a cached tool
// the live server no longer has: the server starts, the call is -32013.
func TestLazyFirstCallOfRemovedTool(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	pidFile := filepath.Join(dir, "pid")
	cfg := fixture.Config("lazy", fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("echo", "echo"), tool("add_tool", "add_tool")}})
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": cfg}, func(h *harness, sid string) {
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__lazy__add_tool", "arguments": map[string]any{"name": "ghost"}}); err != nil {
			t.Fatal(err)
		}
		if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": sid, "server": "lazy"}, nil); err != nil {
			t.Fatal(err)
		}
	})
	os.Remove(pidFile)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"lazy": cfg}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	h.open(map[string]any{"sessionId": "L"})
	if names, _ := serverTools(h.toolsList("L"), "lazy"); !slices.Contains(names, "ghost") {
		t.Fatalf("cached tools %q should hold ghost", names)
	}
	_, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__ghost"})
	_, data := h.wantCode(err, protocol.CodeUnknownTool)
	if data.Server != "lazy" {
		t.Errorf("error data %+v: want server lazy", data)
	}
	if pid := fixture.ReadPID(t, pidFile); !alive(pid) {
		t.Errorf("server %d not running after the call that started it", pid)
	}
	names, entry := serverTools(h.toolsList("L"), "lazy")
	if diff := cmp.Diff([]string{"add_tool", "echo"}, names); diff != "" || entry.Catalog != protocol.CatalogLive {
		t.Errorf("live catalog %+v (-want +got):\n%s", entry, diff)
	}
}

// TestLazyEagerRegardless: which servers a lazy session still starts at
// once, with a valid cache on disk for every one of them.
func TestLazyEagerRegardless(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	pidFile := filepath.Join(dir, "pid")
	base := fixture.Config("s", fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	// Required, readiness and filters are not part of the discovery scope:
	// every variant below finds the catalog primed here.
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"s": base}, nil)

	variant := func(f func(c *config.ServerConfig)) *config.ServerConfig {
		c := *base
		f(&c)
		return &c
	}
	tests := []struct {
		name    string
		cfg     *config.ServerConfig
		open    map[string]any
		dormant bool
	}{
		{"cached", base, nil, true},
		{"required", variant(func(c *config.ServerConfig) { c.Required = true }), nil, false},
		{"required with startup_readiness catalog", variant(func(c *config.ServerConfig) {
			c.Required = true
			c.StartupReadiness = config.ReadinessCatalog
		}), nil, true},
		{"cache holds no tool its filters pass", variant(func(c *config.ServerConfig) { c.EnabledTools = []string{"not_echo"} }), nil, false},
		{"session asks for eager startup", base, map[string]any{"startup": "eager"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(pidFile)
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": tc.cfg}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
			params := map[string]any{"sessionId": "L"}
			for k, v := range tc.open {
				params[k] = v
			}
			open := h.open(params)
			wantState, wantReady := protocol.StateStarting, []string{"s"}
			if tc.dormant {
				wantState, wantReady = protocol.StateDormant, []string{}
			}
			if diff := cmp.Diff([]protocol.ServerState{{Name: "s", State: wantState}}, open.Servers); diff != "" {
				t.Errorf("session/open (-want +got):\n%s", diff)
			}
			sum := h.waitComplete("L", 0)
			if diff := cmp.Diff(wantReady, sum.Ready); diff != "" {
				t.Errorf("round 0 ready (-want +got):\n%s", diff)
			}
			if tc.dormant {
				wantNoFile(t, pidFile, "dormant server")
			} else if pid := fixture.ReadPID(t, pidFile); !alive(pid) {
				t.Errorf("eager server %d not running", pid)
			}
		})
	}

	t.Run("http", func(t *testing.T) {
		server := mcp.NewServer(&mcp.Implementation{Name: "http-fixture"}, nil)
		server.AddTool(&mcp.Tool{Name: "web", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
		// Cleanups run last-in first-out: the sidecars below hang up their
		// HTTP streams before the server closes.
		t.Cleanup(ts.Close)
		servers := map[string]*config.ServerConfig{"web": {URL: ts.URL}}
		httpCache := filepath.Join(t.TempDir(), "cache")
		primeCache(t, httpCache, servers, nil)
		if files := cacheFiles(t, httpCache); len(files) != 1 {
			// Without a cache file the case below proves nothing.
			t.Fatalf("HTTP server's catalog not cached: %q", files)
		}
		h := newHarness(t)
		h.initialize(servers, map[string]any{"cacheDir": httpCache, "features": lazyFeature})
		open := h.open(map[string]any{"sessionId": "L"})
		if diff := cmp.Diff([]protocol.ServerState{{Name: "web", State: protocol.StateStarting}}, open.Servers); diff != "" {
			t.Errorf("session/open (-want +got):\n%s", diff)
		}
		if sum := h.waitComplete("L", 0); !slices.Equal(sum.Ready, []string{"web"}) {
			t.Errorf("round 0 = %+v, want web ready", sum)
		}
	})
}

// TestLazyStartupRounds: round 0 announces every eager server before any
// terminal status and its summary names only eager servers; a dormant
// server used while round 0 is still running starts in round 1, whose
// events are its own, and the triggering call returns after its ready.
func TestLazyStartupRounds(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	gate := filepath.Join(dir, "gate")
	lazy := fixture.Config("lazy", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": lazy}, nil)

	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"lazy": lazy,
		"fast": fixture.Config("fast", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
		// slow holds round 0 open until the test opens the gate.
		"slow": fixture.Config("slow", fixture.Spec{BlockListUntilFile: gate, Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
	}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	open := h.open(map[string]any{"sessionId": "L"})
	want := []protocol.ServerState{{Name: "fast", State: protocol.StateStarting}, {Name: "lazy", State: protocol.StateDormant}, {Name: "slow", State: protocol.StateStarting}}
	if diff := cmp.Diff(want, open.Servers); diff != "" {
		t.Fatalf("session/open (-want +got):\n%s", diff)
	}
	// fast is ready, slow still listing: round 0 is running.
	h.waitFor("fast ready", func(n hostclient.Notification) bool {
		var p protocol.StartupStatusParams
		return n.Method == protocol.NotifyStartupStatus && json.Unmarshal(n.Params, &p) == nil && p.Server == "fast" && p.Status == protocol.StatusReady
	})
	if _, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__echo"}); err != nil {
		t.Fatalf("call of the dormant server during round 0: %v", err)
	}
	all := func(protocol.StartupStatusParams) bool { return true }
	atReturn := statusSeq(startupStatuses(t, h, "L"), all)
	wantAtReturn := []string{"0 fast starting", "0 slow starting", "0 fast ready", "1 lazy starting", "1 lazy ready"}
	if diff := cmp.Diff(sortedCopy(wantAtReturn), sortedCopy(atReturn)); diff != "" {
		t.Errorf("statuses when the triggering call returned (-want +got):\n%s", diff)
	}
	sum1 := h.waitComplete("L", 1)
	if diff := cmp.Diff(protocol.StartupCompleteParams{SessionID: "L", Round: 1, Ready: []string{"lazy"}, Failed: []protocol.FailedServer{}, Cancelled: []string{}}, sum1); diff != "" {
		t.Errorf("round 1 summary (-want +got):\n%s", diff)
	}

	openGate(t, gate)
	sum0 := h.waitComplete("L", 0)
	if diff := cmp.Diff(protocol.StartupCompleteParams{SessionID: "L", Round: 0, Ready: []string{"fast", "slow"}, Failed: []protocol.FailedServer{}, Cancelled: []string{}}, sum0); diff != "" {
		t.Errorf("round 0 summary: eager servers only (-want +got):\n%s", diff)
	}

	// Per round: every starting before any terminal status, and each server
	// starting once before its one terminal status.
	sts := startupStatuses(t, h, "L")
	for round, servers := range map[int][]string{0: {"fast", "slow"}, 1: {"lazy"}} {
		var seq []string
		terminalSeen := false
		for _, st := range sts {
			if st.Round != round {
				continue
			}
			seq = append(seq, st.Server+" "+st.Status)
			if st.Status == protocol.StatusStarting && terminalSeen {
				t.Errorf("round %d: %s starting after a terminal status: %q", round, st.Server, seq)
			}
			terminalSeen = terminalSeen || st.Status != protocol.StatusStarting
		}
		var wantSeq []string
		for _, s := range servers {
			wantSeq = append(wantSeq, s+" starting", s+" ready")
		}
		if diff := cmp.Diff(sortedCopy(wantSeq), sortedCopy(seq)); diff != "" {
			t.Errorf("round %d statuses (-want +got):\n%s", round, diff)
		}
	}
	// Each round's summary comes after all its statuses.
	lastStatus, complete := map[int]int{}, map[int]int{}
	for i, n := range h.notifications() {
		switch n.Method {
		case protocol.NotifyStartupStatus:
			var p protocol.StartupStatusParams
			json.Unmarshal(n.Params, &p)
			lastStatus[p.Round] = i
		case protocol.NotifyStartupComplete:
			var p protocol.StartupCompleteParams
			json.Unmarshal(n.Params, &p)
			complete[p.Round] = i
		}
	}
	for round := range 2 {
		if complete[round] < lastStatus[round] {
			t.Errorf("round %d: startupComplete before the round's last status", round)
		}
	}
}

// TestLazyFirstUseWithinStartupTimeout: the call that wakes a dormant
// server waits for it only within startup_timeout_sec, and says so.
func TestLazyFirstUseWithinStartupTimeout(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	gate := filepath.Join(dir, "gate")
	cfg := fixture.Config("lazy", fixture.Spec{BlockListUntilFile: gate, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	openGate(t, gate)
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": cfg}, nil)
	// From now on the server never finishes listing; the timeout is not
	// part of the discovery scope, so the primed catalog still applies.
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	short := *cfg
	short.StartupTimeoutSec = seconds(0.5)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"lazy": &short}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	if open := h.open(map[string]any{"sessionId": "L"}); open.Servers[0].State != protocol.StateDormant {
		t.Fatalf("session/open: %+v, want lazy dormant", open.Servers)
	}
	_, err := h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__echo"})
	je, data := h.wantCode(err, protocol.CodeStartupTimeout)
	if data.Server != "lazy" || !strings.Contains(je.Message, "startup_timeout_sec") {
		t.Errorf("error %q data %+v: want server lazy and startup_timeout_sec named", je.Message, data)
	}
	sum := h.waitComplete("L", 1)
	if len(sum.Failed) != 1 || sum.Failed[0].Server != "lazy" {
		t.Errorf("round 1 = %+v, want lazy failed", sum)
	}
}

// TestLazyConcurrentFirstUses: calls that wake one dormant server together
// start it once, in one round.
func TestLazyConcurrentFirstUses(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	inits := filepath.Join(dir, "init")
	cfg := fixture.Config("lazy", fixture.Spec{InitCountFile: inits, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	primeCache(t, cacheDir, map[string]*config.ServerConfig{"lazy": cfg}, nil)
	primed := len(fixture.ReadLines(inits))
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"lazy": cfg}, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	h.open(map[string]any{"sessionId": "L"})
	h.waitComplete("L", 0)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = h.callTool(map[string]any{"sessionId": "L", "name": "mcp__lazy__echo", "arguments": map[string]any{"i": i}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("concurrent first calls: %v", err)
	}
	if got := len(fixture.ReadLines(inits)) - primed; got != 1 {
		t.Errorf("%d concurrent first calls started %d processes, want 1", n, got)
	}
	seq := statusSeq(startupStatuses(t, h, "L"), func(protocol.StartupStatusParams) bool { return true })
	if diff := cmp.Diff([]string{"1 lazy starting", "1 lazy ready"}, seq); diff != "" {
		t.Errorf("startup statuses (-want +got):\n%s", diff)
	}
}
