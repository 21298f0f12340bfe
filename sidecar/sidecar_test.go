package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
)

func TestRequestsBeforeInitialize(t *testing.T) {
	h := newHarness(t)
	err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": "x"}, nil)
	h.wantCode(err, protocol.CodeServerNotInitialized)
	err = h.call("no/such/method", nil, nil)
	h.wantCode(err, protocol.CodeServerNotInitialized)
	h.initialize(nil, nil)
	err = h.call("no/such/method", nil, nil)
	h.wantCode(err, protocol.CodeMethodNotFound)
	err = h.call(protocol.MethodToolsList, map[string]any{"sessionId": "x"}, nil)
	h.wantCode(err, protocol.CodeUnknownSession)
	err = h.call(protocol.MethodInitialize, map[string]any{}, nil)
	h.wantCode(err, protocol.CodeInvalidRequest)
}

// TestRequestsAfterShutdown: after shutdown every request, a second
// shutdown included, is -32600 (LSP: "any request after shutdown").
func TestRequestsAfterShutdown(t *testing.T) {
	h := newHarness(t)
	h.initialize(nil, nil)
	if err := h.call(protocol.MethodShutdown, nil, nil); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	err := h.call(protocol.MethodShutdown, nil, nil)
	h.wantCode(err, protocol.CodeInvalidRequest)
	err = h.call(protocol.MethodToolsList, map[string]any{"sessionId": "x"}, nil)
	h.wantCode(err, protocol.CodeInvalidRequest)
}

// TestStartupEventOrdering: three servers, one slow, one failing, one fast.
// Every "starting" of the round precedes every terminal status, and the
// summary sorts them out.
func TestStartupEventOrdering(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"slow": fixture.Config("slow", fixture.Spec{StartDelayMs: 300, Tools: []fixture.ToolSpec{tool("a", "echo")}}),
		"fail": fixture.Config("fail", fixture.Spec{ExitAtStart: true, StderrLines: []string{"fatal: missing API key"}}),
		"fast": fixture.Config("fast", fixture.Spec{Tools: []fixture.ToolSpec{tool("b", "echo"), tool("c", "echo")}}),
	}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	want := []protocol.ServerState{{Name: "fail", State: "starting"}, {Name: "fast", State: "starting"}, {Name: "slow", State: "starting"}}
	if diff := cmp.Diff(want, open.Servers); diff != "" {
		t.Errorf("session/open servers (-want +got):\n%s", diff)
	}
	sum := h.waitComplete(open.SessionID, 0)
	if diff := cmp.Diff([]string{"fast", "slow"}, sum.Ready); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}
	if len(sum.Failed) != 1 || sum.Failed[0].Server != "fail" {
		t.Fatalf("failed = %+v, want only fail", sum.Failed)
	}
	if !strings.Contains(sum.Failed[0].Error, "missing API key") {
		t.Errorf("failure %q should carry the stderr tail", sum.Failed[0].Error)
	}

	var statuses []protocol.StartupStatusParams
	for _, n := range h.notifications() {
		if n.Method == protocol.NotifyStartupStatus {
			var p protocol.StartupStatusParams
			if err := json.Unmarshal(n.Params, &p); err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, p)
		}
	}
	if len(statuses) != 6 {
		t.Fatalf("got %d startup statuses, want 6: %+v", len(statuses), statuses)
	}
	for i, st := range statuses {
		if (i < 3) != (st.Status == protocol.StatusStarting) {
			t.Errorf("status %d is %s %s: all starting must come first", i, st.Server, st.Status)
		}
		if st.Round != 0 || st.SessionID != open.SessionID {
			t.Errorf("status %+v: want round 0 of %s", st, open.SessionID)
		}
	}
	last := statuses[3:]
	terminal := map[string]string{}
	for _, st := range last {
		terminal[st.Server] = st.Status
		if st.Server == "fast" && (st.Tools == nil || *st.Tools != 2) {
			t.Errorf("fast ready should report 2 tools, got %v", st.Tools)
		}
	}
	if diff := cmp.Diff(map[string]string{"slow": "ready", "fast": "ready", "fail": "failed"}, terminal); diff != "" {
		t.Errorf("terminal statuses (-want +got):\n%s", diff)
	}

	list := h.toolsList(open.SessionID)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"mcp__fast__b", "mcp__fast__c", "mcp__slow__a"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	for _, s := range list.Servers {
		if s.Name == "fail" && (s.State != "failed" || s.Error == "") {
			t.Errorf("fail server entry %+v should be failed with an error", s)
		}
	}
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "fail", "tool": "x"})
	h.wantCode(err, protocol.CodeServerNotReady)
}

func TestStartupTimeoutNamesTheKey(t *testing.T) {
	h := newHarness(t)
	cfg := fixture.Config("hang", fixture.Spec{HangAtStart: true})
	cfg.StartupTimeoutSec = seconds(0.3)
	h.initialize(map[string]*config.ServerConfig{"hang": cfg}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	if len(sum.Failed) != 1 || !strings.Contains(sum.Failed[0].Error, "startup_timeout_sec") {
		t.Fatalf("failed = %+v, want hang failing with a message naming startup_timeout_sec", sum.Failed)
	}
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "hang", "tool": "x"})
	je, data := h.wantCode(err, protocol.CodeStartupTimeout)
	if !strings.Contains(je.Message, "startup_timeout_sec") || data.Server != "hang" {
		t.Errorf("error %q data %+v: want startup_timeout_sec named and server hang", je.Message, data)
	}
}

func TestMissingCommand(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"gone": {Command: "/nonexistent/mcp-server-xyz"}}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	if len(sum.Failed) != 1 || !strings.Contains(sum.Failed[0].Error, "mcp-server-xyz") {
		t.Fatalf("failed = %+v, want the missing command named", sum.Failed)
	}
}

func TestQualifiedNamesCollisionsAndLength(t *testing.T) {
	raw := tempFile(t, "raw.log")
	long := strings.Repeat("very_long_tool_name_", 5)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"srv": fixture.Config("srv", fixture.Spec{RawLogFile: raw, Tools: []fixture.ToolSpec{
			tool("read.file", "echo"), tool("read_file", "echo"), tool(long, "echo"), tool("ok", "echo"),
		}}),
	}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	list := h.toolsList(open.SessionID)
	byRaw := map[string]string{}
	seen := map[string]bool{}
	for _, tl := range list.Tools {
		byRaw[tl.Tool] = tl.Name
		if seen[tl.Name] {
			t.Errorf("duplicate qualified name %q", tl.Name)
		}
		seen[tl.Name] = true
		if len(tl.Name) > 64 {
			t.Errorf("qualified name %q is %d bytes, over 64", tl.Name, len(tl.Name))
		}
		if strings.Trim(tl.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("qualified name %q has characters outside [A-Za-z0-9_-]", tl.Name)
		}
	}
	if byRaw["ok"] != "mcp__srv__ok" {
		t.Errorf("ok qualified as %q", byRaw["ok"])
	}
	if byRaw["read.file"] == byRaw["read_file"] {
		t.Errorf("colliding tools share %q", byRaw["read.file"])
	}
	// The raw name is what goes back to the server.
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": byRaw["read.file"], "arguments": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": byRaw[long]}); err != nil {
		t.Fatal(err)
	}
	lines := readCalls(t, raw)
	if diff := cmp.Diff([]string{"read.file", long}, lines); diff != "" {
		t.Errorf("tool names the server received (-want +got):\n%s", diff)
	}
}

// readCalls returns the tool names of the tools/call requests a fixture read.
func readCalls(t *testing.T, rawLog string) []string {
	t.Helper()
	var names []string
	for _, line := range fixture.ReadLines(rawLog) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "tools/call" {
			names = append(names, m.Params.Name)
		}
	}
	return names
}

func TestFilters(t *testing.T) {
	cfg := fixture.Config("f", fixture.Spec{Tools: []fixture.ToolSpec{tool("a", "echo"), tool("b", "echo"), tool("c", "echo")}})
	cfg.EnabledTools = []string{"a", "b"}
	cfg.DisabledTools = []string{"b"}
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"f": cfg}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	list := h.toolsList(open.SessionID)
	if len(list.Tools) != 1 || list.Tools[0].Tool != "a" {
		t.Fatalf("tools = %+v, want only a", list.Tools)
	}
	for _, name := range []string{"b", "c"} {
		_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "f", "tool": name})
		h.wantCode(err, protocol.CodeUnknownTool)
		_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__f__" + name})
		h.wantCode(err, protocol.CodeUnknownTool)
	}
}

func TestPaginationAndRepeatedCursor(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"paged":  fixture.Config("paged", fixture.Spec{ToolCount: 6, PageSize: 2}),
		"repeat": fixture.Config("repeat", fixture.Spec{ToolCount: 2, PageSize: 1, RepeatCursor: true}),
	}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	if len(sum.Failed) != 1 || sum.Failed[0].Server != "repeat" || !strings.Contains(sum.Failed[0].Error, "cursor") {
		t.Fatalf("failed = %+v, want repeat failing on its repeated cursor", sum.Failed)
	}
	list := h.toolsList(open.SessionID)
	if len(list.Tools) != 6 {
		t.Fatalf("got %d tools of the 3-page catalog, want 6", len(list.Tools))
	}
}

// TestRawSchemaFidelity: schemas reach the host as the server sent them.
func TestRawSchemaFidelity(t *testing.T) {
	def := `{"name":"big","description":"d","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890,"x-unknown-keyword":{"z":1,"a":[1.0,2e10]}}},"zzz":"<&>","aaa":"\u00e9"},"outputSchema":{"type":"object","y-extra":true},"annotations":{"readOnlyHint":true},"_meta":{"k":12345678901234567890}}`
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{rawTool(def, "echo")}})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	var raw json.RawMessage
	if err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &raw); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Tools) != 1 {
		t.Fatalf("tools/list result %s: %v", raw, err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal([]byte(def), &want); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"inputSchema", "outputSchema", "annotations", "_meta"} {
		got := unescapeHTML(string(res.Tools[0][key]))
		if got != compact(t, string(want[key])) {
			t.Errorf("%s:\n got %s\nwant %s", key, got, compact(t, string(want[key])))
		}
	}
}

// unescapeHTML undoes json.Marshal's HTML escaping, which changes bytes but
// not meaning.
func unescapeHTML(s string) string {
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	return r.Replace(s)
}

func TestCallTimeoutCancellationAndProgress(t *testing.T) {
	events := tempFile(t, "events")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		EventsFile: events,
		Tools:      []fixture.ToolSpec{tool("sleep", "sleep"), tool("progress", "progress")},
	})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	sid := open.SessionID

	t.Run("timeoutMs", func(t *testing.T) {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"ms": 60000, "tag": "timeout"}, "timeoutMs": 200})
		je, data := h.wantCode(err, protocol.CodeToolTimeout)
		if !strings.Contains(je.Message, "timeoutMs") || data.Tool != "sleep" {
			t.Errorf("timeout error %q %+v should name timeoutMs and the tool", je.Message, data)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		id, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{
			"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"ms": 60000, "tag": "cancel"},
			"meta": map[string]any{"progressToken": "sleep-tok"},
		})
		if err != nil {
			t.Fatal(err)
		}
		// The sleep tool reports progress 0 once it runs: cancel then.
		h.waitFor("sleep started", func(n hostclient.Notification) bool {
			return n.Method == protocol.NotifyProgress && strings.Contains(string(n.Params), "sleep-tok")
		})
		if err := h.client.Cancel(h.ctx, id); err != nil {
			t.Fatal(err)
		}
		err = w.Wait(h.ctx, nil)
		h.wantCode(err, protocol.CodeRequestCancelled)
		// The server learns of it through notifications/cancelled.
		h.waitFor("server-side cancellation", func(n hostclient.Notification) bool {
			return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "cancelled sleep cancel")
		})
		if lines := fixture.ReadLines(events); !slices.Contains(lines, "cancelled sleep cancel") {
			t.Errorf("events %q: the server did not see the cancellation", lines)
		}
	})

	t.Run("progress", func(t *testing.T) {
		res, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__progress", "arguments": map[string]any{"count": 3}, "meta": map[string]any{"progressToken": 42}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), "progress done") {
			t.Errorf("result %s", res)
		}
		var got []protocol.ProgressParams
		for _, n := range h.notifications() {
			if n.Method != protocol.NotifyProgress {
				continue
			}
			var p protocol.ProgressParams
			if err := json.Unmarshal(n.Params, &p); err != nil {
				t.Fatal(err)
			}
			if string(p.Token) == "42" {
				got = append(got, p)
			}
		}
		if len(got) != 3 {
			t.Fatalf("got %d progress notifications for token 42, want 3: %+v", len(got), got)
		}
		for i, p := range got {
			if p.Value.Progress != float64(i+1) || p.Value.Total == nil || *p.Value.Total != 3 {
				t.Errorf("progress %d = %+v", i, p.Value)
			}
		}
	})

	// The sidecar is still healthy after all that.
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__progress"}); err != nil {
		t.Fatal(err)
	}
}

func TestBannerOnStdoutIsSkipped(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"b": fixture.Config("b", fixture.Spec{
		BannerLines: []string{"Welcome to my MCP server v1.2!", "listening on stdio"},
		JunkBetween: "DEBUG: tools requested",
		Tools:       []fixture.ToolSpec{tool("echo", "echo")},
	})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__b__echo", "arguments": map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"x":1`) {
		t.Errorf("echo result %s", res)
	}
	h.waitFor("the banner reported in mcp/log", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyLog && strings.Contains(string(n.Params), "Welcome to my MCP server")
	})
}

func TestToolErrorsReachTheHostAsTheContractSays(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("fail", "fail"), tool("echo", "echo")}})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	// A tool that ran and failed is a result.
	res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__fail"})
	if err != nil {
		t.Fatalf("failing tool: %v", err)
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(res, &r); !r.IsError {
		t.Errorf("result %s should have isError", res)
	}
	// A tool the catalog does not have never reaches the server.
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__nope"})
	h.wantCode(err, protocol.CodeUnknownTool)
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "server": "nope", "tool": "x"})
	h.wantCode(err, protocol.CodeUnknownServer)
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__echo", "arguments": []int{1}})
	h.wantCode(err, protocol.CodeInvalidParams)
}

func TestCrashFailsInFlightCallAndRestarts(t *testing.T) {
	h, clock := newClockHarness(t)
	h.initialize(map[string]*config.ServerConfig{"c": fixture.Config("c", fixture.Spec{Tools: []fixture.ToolSpec{tool("crash", "crash"), tool("echo", "echo")}})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__c__crash"})
	_, data := h.wantCode(err, protocol.CodeConnectionLost)
	if !strings.Contains(data.Stderr, "crashing in crash") {
		t.Errorf("data.stderr %q should carry the server's last words", data.Stderr)
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Servers[0].State != protocol.StateDisconnected || st.Servers[0].LastError == "" {
		t.Errorf("status %+v: want disconnected with lastError", st.Servers[0])
	}
	// The next use restarts it, after the backoff (1 s of the test's
	// clock).
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__c__echo"})
	h.wantCode(err, protocol.CodeServerNotReady)
	clock.Advance(time.Second)
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__c__echo"}); err != nil {
		t.Fatalf("call after the backoff: %v", err)
	}
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Servers[0].State != protocol.StateReady || st.Servers[0].Restarts != 1 {
		t.Errorf("status after restart %+v: want ready with 1 restart", st.Servers[0])
	}
}

func TestElicitationAndRootsRelayedOnlyWhenDeclared(t *testing.T) {
	raw := tempFile(t, "raw.log")
	spec := fixture.Spec{RawLogFile: raw, Tools: []fixture.ToolSpec{tool("ask", "elicit"), tool("roots", "roots")}}

	t.Run("declared", func(t *testing.T) {
		h := newHarness(t)
		h.onRequest = func(_ context.Context, method string, params json.RawMessage) (any, error) {
			switch method {
			case protocol.RequestElicit:
				return map[string]any{"action": "accept", "content": map[string]any{"answer": "42"}}, nil
			case protocol.RequestRoots:
				return map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}, nil
			}
			return nil, nil
		}
		h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{"capabilities": map[string]any{"elicitation": true, "roots": true}})
		open := h.open(map[string]any{"startup": "eager"})
		res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__ask", "arguments": map[string]any{"message": "meaning?"}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), "42") {
			t.Errorf("elicit result %s should carry the host's answer", res)
		}
		res, err = h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__roots"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), "file:///work") {
			t.Errorf("roots result %s should carry the host's roots", res)
		}
	})

	t.Run("not declared", func(t *testing.T) {
		h := newHarness(t)
		h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{RawLogFile: raw + ".2"})}, nil)
		open := h.open(map[string]any{"startup": "eager"})
		h.waitComplete(open.SessionID, 0)
		for _, line := range fixture.ReadLines(raw + ".2") {
			if strings.Contains(line, `"initialize"`) && (strings.Contains(line, "elicitation") || strings.Contains(line, "roots")) {
				t.Errorf("initialize advertised capabilities the host does not handle: %s", line)
			}
		}
	})
}

func TestSessionCloseEndsItsProcesses(t *testing.T) {
	pidFile := tempFile(t, "pid")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("echo", "echo")}})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)
	pid := fixture.ReadPID(t, pidFile)
	if !alive(pid) {
		t.Fatalf("server %d not running", pid)
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server %d still running after session/close", pid)
	}
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__echo"})
	h.wantCode(err, protocol.CodeUnknownSession)
}

func TestResourcesAndPrompts(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"r": fixture.Config("r", fixture.Spec{
		PageSize: 1,
		Resources: []fixture.ResourceSpec{
			{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain", Text: "alpha"},
			{URI: "plugin://p", Name: "p", MIMEType: "mcp/plugin", Text: "{}"},
			{URI: "skill://s", Name: "s", MIMEType: "mcp/skill", Text: "skill"},
		},
	})}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	sid := open.SessionID

	var page struct {
		Resources  []map[string]any `json:"resources"`
		NextCursor string           `json:"nextCursor"`
	}
	if err := h.call(protocol.MethodResourcesList, map[string]any{"sessionId": sid, "server": "r"}, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Resources) != 1 || page.NextCursor == "" {
		t.Fatalf("first page = %+v, want one resource and a cursor", page)
	}
	var all struct {
		Resources []map[string]any `json:"resources"`
	}
	if err := h.call(protocol.MethodResourcesList, map[string]any{"sessionId": sid, "server": "r", "all": true}, &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Resources) != 3 {
		t.Fatalf("all resources = %d, want 3", len(all.Resources))
	}
	var found struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := h.call(protocol.MethodResourcesDiscover, map[string]any{"sessionId": sid, "server": "r", "mimeTypes": []string{"mcp/plugin", "mcp/skill"}}, &found); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range found.Resources {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"plugin://p", "skill://s"}, uris); diff != "" {
		t.Errorf("discovered (-want +got):\n%s", diff)
	}
	var read struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := h.call(protocol.MethodResourcesRead, map[string]any{"sessionId": sid, "server": "r", "uri": "file:///a.txt"}, &read); err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 1 || read.Contents[0].Text != "alpha" {
		t.Errorf("read = %+v", read)
	}
}

// TestPendingRequestsBounded: a session cannot pile up requests without
// end; past limits.maxPendingPerSession a request is refused at once, and
// accepted again once others finish.
func TestPendingRequestsBounded(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		Tools: []fixture.ToolSpec{tool("sleep", "sleep"), tool("echo", "echo")},
	})}, map[string]any{"limits": map[string]any{"maxPendingPerSession": 2}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	var ids []json.RawMessage
	for i, tok := range []string{"p-1", "p-2"} {
		id, _, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{
			"sessionId": sid, "name": "mcp__s__sleep", "arguments": map[string]any{"ms": 60000, "tag": tok},
			"meta": map[string]any{"progressToken": tok},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		h.waitFor("sleep "+strconv.Itoa(i)+" running", func(n hostclient.Notification) bool {
			return n.Method == protocol.NotifyProgress && strings.Contains(string(n.Params), tok)
		})
	}
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo"})
	_, data := h.wantCode(err, protocol.CodeTooManyRequests)
	if !data.Retryable {
		t.Errorf("data %+v: the refusal should be retryable", data)
	}
	for _, id := range ids {
		if err := h.client.Cancel(h.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Cancelled calls release their slots when their handlers return.
	deadline := time.Now().Add(testTimeout)
	for {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo"})
		if err == nil {
			break
		}
		if je, _ := h.rpcError(err); je.Code != protocol.CodeTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after cancelling: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRequiredFailureReportedAsSuch: a required server that fails to start
// is marked required in its failed status, the round's summary and
// servers/status, so that a harness can refuse to go on without it.
func TestRequiredFailureReportedAsSuch(t *testing.T) {
	req := fixture.Config("req", fixture.Spec{ExitAtStart: true})
	req.Required = true
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"req": req,
		"opt": fixture.Config("opt", fixture.Spec{ExitAtStart: true}),
	}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	sum := h.waitComplete(sid, 0)
	got := map[string]bool{}
	for _, f := range sum.Failed {
		got[f.Server] = f.Required
	}
	if diff := cmp.Diff(map[string]bool{"req": true, "opt": false}, got); diff != "" {
		t.Errorf("summary failed[].required (-want +got):\n%s", diff)
	}
	for _, n := range h.notifications() {
		var p protocol.StartupStatusParams
		if n.Method == protocol.NotifyStartupStatus && json.Unmarshal(n.Params, &p) == nil && p.Status == protocol.StatusFailed {
			if p.Required != (p.Server == "req") {
				t.Errorf("failed status of %s: required %v", p.Server, p.Required)
			}
		}
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": sid}, &st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Servers {
		if s.Required != (s.Name == "req") {
			t.Errorf("servers/status %s: required %v", s.Name, s.Required)
		}
	}
}

// TestServerErrorForwarded: when the server itself answers a call with a
// JSON-RPC error (here go-sdk's -32602 for a tool it no longer has, while
// the catalog, with list_changed off, still lists it), the host gets that
// code with kind server_error and the server's code in data.
func TestServerErrorForwarded(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		Tools: []fixture.ToolSpec{tool("gone", "echo"), tool("remove", "remove_tool")},
	})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__remove", "arguments": map[string]any{"name": "gone"}}); err != nil {
		t.Fatal(err)
	}
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__gone"})
	je, data := h.rpcError(err)
	if je.Code != protocol.CodeInvalidParams || data.Kind != protocol.KindServerError || data.ServerCode == nil || *data.ServerCode != protocol.CodeInvalidParams {
		t.Errorf("error %d %q %+v: want the server's -32602 as server_error", je.Code, je.Message, data)
	}
	if data.Server != "s" || data.Tool != "gone" {
		t.Errorf("data %+v should name server and tool", data)
	}
}

// TestEverySchemaMethodIsServed: every request of the protocol schema is a
// method of the sidecar (the schema's tests check the other direction).
func TestEverySchemaMethodIsServed(t *testing.T) {
	m, err := schema.Load()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.initialize(nil, nil)
	for _, r := range m.Meta.Requests {
		if r.Method == protocol.MethodInitialize || r.Method == protocol.MethodShutdown {
			continue // the lifecycle tests send these
		}
		err := h.call(r.Method, minimalInstance(t, m, r.Params), nil)
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code == protocol.CodeMethodNotFound {
			t.Errorf("%s is in schema/protocol.schema.json but the sidecar does not serve it", r.Method)
		}
	}
}

// minimalInstance returns a value of the schema s (of model m) with only
// its required members, each a placeholder: "none" for a string, the first
// value of an enum, 0, false, {} or [].
func minimalInstance(t *testing.T, m *schema.Model, s json.RawMessage) any {
	t.Helper()
	var sch struct {
		Ref        string                     `json:"$ref"`
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(s, &sch); err != nil {
		t.Fatal(err)
	}
	if name, ok := strings.CutPrefix(sch.Ref, "#/$defs/"); ok {
		return minimalInstance(t, m, m.Meta.Defs[name])
	}
	if len(sch.Enum) > 0 {
		return sch.Enum[0]
	}
	typ, _ := sch.Type.(string)
	if list, ok := sch.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		for _, k := range sch.Required {
			obj[k] = minimalInstance(t, m, sch.Properties[k])
		}
		return obj
	case "array":
		return []any{}
	case "string":
		return "none"
	case "integer", "number":
		return 0
	case "boolean":
		return false
	}
	return nil
}

// TestSeedFeaturesDefaults: the behaviours a host opts in to
// (apps_early_resource_discovery, mcp_lazy_stdio_startup) are off unless
// initialize.features turns them on; mcp_tool_list_changed and
// mcp_share_startup_listing are on unless it turns them off. A cached stdio
// server starts eagerly (lazy startup is off) unless lazy startup is asked
// for.
func TestSeedFeaturesDefaults(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})}
	primeCache(t, cacheDir, servers, nil)
	cacheEntryFile(t, cacheDir) // without it the lazy check proves nothing
	onByDefault := map[string]bool{"mcp_tool_list_changed": true, "mcp_share_startup_listing": true}
	tests := []struct {
		name  string
		extra map[string]any
		want  string // the cached server's state at session/open
	}{
		{"no features", map[string]any{"cacheDir": cacheDir}, protocol.StateStarting},
		{"empty features", map[string]any{"cacheDir": cacheDir, "features": map[string]bool{}}, protocol.StateStarting},
		{"only an unknown feature", map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"something_else": true}}, protocol.StateStarting},
		{"defaults turned off", map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_tool_list_changed": false, "mcp_share_startup_listing": false}}, protocol.StateStarting},
		// The control: the same cache with lazy startup on.
		{"lazy startup on", map[string]any{"cacheDir": cacheDir, "features": lazyFeature}, protocol.StateDormant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			res := h.initialize(servers, tt.extra)
			asked, _ := tt.extra["features"].(map[string]bool)
			for _, f := range []string{"mcp_tool_list_changed", "apps_early_resource_discovery", "mcp_lazy_stdio_startup", "mcp_share_startup_listing"} {
				want, set := asked[f]
				if !set {
					want = onByDefault[f]
				}
				if on := slices.Contains(res.Capabilities.Features, f); on != want {
					t.Errorf("feature %s on = %v, want %v (asked for: %v): features %q", f, on, want, asked, res.Capabilities.Features)
				}
			}
			open := h.open(nil)
			if st := open.Servers[0].State; st != tt.want {
				t.Errorf("a cached stdio server is %s at session/open, want %s", st, tt.want)
			}
		})
	}
}
