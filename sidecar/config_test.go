package sidecar_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestBadServerIsInvalidOthersStart: one bad server entry and one file
// that does not parse do not sink the rest: initialize succeeds, the bad
// server is invalid with structured errors, the good one starts.
func TestBadServerIsInvalidOthersStart(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	broken := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(broken, []byte("{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"y\"}\n    \"z\": {}\n  }\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := fixture.Config("good", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	servers := map[string]any{
		"good": good,
		"both": map[string]any{"command": "x", "url": "http://127.0.0.1:1/mcp"},
	}
	res := h.initialize(nil, map[string]any{"servers": servers, "configFiles": []string{broken}})
	if diff := cmp.Diff([]string{"both", "good"}, res.Servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	wantErrs := []protocol.ConfigProblem{
		{File: broken, Line: 4, Column: 5, Message: "invalid JSON at line 4, column 5: invalid character '\"' after object value (expecting ',' or '}')"},
		{File: "initialize", Server: "both", Key: "url", Message: "both command and url are set; a server is either stdio (command) or streamable HTTP (url)"},
	}
	if diff := cmp.Diff(wantErrs, res.Config.Errors); diff != "" {
		t.Errorf("config errors (-want +got):\n%s", diff)
	}

	open := h.open(map[string]any{"startup": "eager"})
	want := []protocol.ServerState{{Name: "both", State: protocol.StateInvalid}, {Name: "good", State: protocol.StateStarting}}
	if diff := cmp.Diff(want, open.Servers); diff != "" {
		t.Errorf("session/open (-want +got):\n%s", diff)
	}
	sum := h.waitComplete(open.SessionID, 0)
	if diff := cmp.Diff([]string{"good"}, sum.Ready); diff != "" || len(sum.Failed) != 0 {
		t.Errorf("round 0: ready %v failed %v", sum.Ready, sum.Failed)
	}
	list := h.toolsList(open.SessionID)
	if len(list.Tools) != 1 || list.Tools[0].Name != "mcp__good__echo" {
		t.Errorf("tools: %+v", list.Tools)
	}

	// Using the invalid server says why it cannot be used.
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "both", "tool": "x"})
	je, data := h.wantCode(err, protocol.CodeServerNotReady)
	if !strings.Contains(je.Message, "configuration has errors") || !strings.Contains(je.Message, `key "url"`) || data.Server != "both" {
		t.Errorf("call to an invalid server: %s %+v", je.Message, data)
	}
	err = h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": open.SessionID, "server": "both"}, nil)
	h.wantCode(err, protocol.CodeServerNotReady)

	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	bad := st.Servers[0]
	if bad.Name != "both" || bad.State != protocol.StateInvalid || bad.Source == nil || bad.Source.Path != "initialize" {
		t.Fatalf("status of the invalid server: %+v", bad)
	}
	if diff := cmp.Diff(wantErrs[1:], bad.ConfigErrors); diff != "" {
		t.Errorf("status configErrors (-want +got):\n%s", diff)
	}
}

// TestMalformedInitializeParams: only params that are malformed fail
// initialize, and the error's data lists the problems.
func TestMalformedInitializeParams(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		params map[string]any
		want   []protocol.ConfigProblem
	}{
		{map[string]any{"servers": []string{"a"}},
			[]protocol.ConfigProblem{{File: "initialize", Key: "servers", Message: "expected an object mapping server names to settings"}}},
		{map[string]any{"configDiscovery": map[string]any{"cwd": "rel", "sources": []string{"zed"}}},
			[]protocol.ConfigProblem{
				{File: "initialize", Key: "configDiscovery.cwd", Message: "must be an absolute directory"},
				{File: "initialize", Key: "configDiscovery.sources[0]", Message: `unknown source "zed"; use codex, claude, cursor, vscode`},
			}},
	} {
		params := map[string]any{"clientInfo": map[string]any{"name": "test"}}
		for k, v := range tc.params {
			params[k] = v
		}
		err := h.call(protocol.MethodInitialize, params, nil)
		_, data := h.wantCode(err, protocol.CodeInvalidParams)
		if diff := cmp.Diff(tc.want, data.ConfigErrors); diff != "" {
			t.Errorf("%v: configErrors (-want +got):\n%s", tc.params, diff)
		}
	}
	// A corrected initialize is accepted, and unknown features come back.
	res := h.initialize(nil, map[string]any{"features": map[string]bool{"mcp_tool_list_chnaged": true, "mcp_tool_list_changed": true}})
	if diff := cmp.Diff([]string{"mcp_tool_list_chnaged"}, res.UnknownFeatures); diff != "" {
		t.Errorf("unknownFeatures (-want +got):\n%s", diff)
	}
}

// TestApprovalAndParallelReachHost: per-tool approval (the tool's own, else
// the server default) and supports_parallel_tool_calls reach the host in
// tools/list and servers/status.
func TestApprovalAndParallelReachHost(t *testing.T) {
	h := newHarness(t)
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("read", "echo"), tool("write", "echo")}})
	cfg.DefaultToolsApprovalMode = "prompt"
	cfg.Tools = map[string]config.ToolConfig{"read": {ApprovalMode: "auto"}}
	cfg.SupportsParallelToolCalls = true
	plain := fixture.Config("plain", fixture.Spec{Tools: []fixture.ToolSpec{tool("x", "echo")}})
	h.initialize(map[string]*config.ServerConfig{"s": cfg, "plain": plain}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)

	var raw struct {
		Tools   []map[string]json.RawMessage `json:"tools"`
		Servers []protocol.ServerCatalog     `json:"servers"`
	}
	if err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &raw); err != nil {
		t.Fatal(err)
	}
	approvals := map[string]string{}
	for _, tl := range raw.Tools {
		var name, approval string
		json.Unmarshal(tl["name"], &name)
		if a, ok := tl["approval"]; ok {
			json.Unmarshal(a, &approval)
		} else {
			approval = "(absent)"
		}
		approvals[name] = approval
	}
	wantApprovals := map[string]string{"mcp__s__read": "auto", "mcp__s__write": "prompt", "mcp__plain__x": "(absent)"}
	if diff := cmp.Diff(wantApprovals, approvals); diff != "" {
		t.Errorf("approvals (-want +got):\n%s", diff)
	}
	parallel := map[string]bool{}
	for _, sc := range raw.Servers {
		parallel[sc.Name] = sc.SupportsParallelToolCalls
	}
	if diff := cmp.Diff(map[string]bool{"s": true, "plain": false}, parallel); diff != "" {
		t.Errorf("supportsParallelToolCalls (-want +got):\n%s", diff)
	}

	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Servers {
		switch s.Name {
		case "s":
			want := &protocol.ServerApproval{Default: "prompt", Tools: map[string]string{"read": "auto"}}
			if diff := cmp.Diff(want, s.Approval); diff != "" || !s.SupportsParallelToolCalls {
				t.Errorf("status of s: parallel %v, approval (-want +got):\n%s", s.SupportsParallelToolCalls, diff)
			}
		case "plain":
			if s.Approval != nil || s.SupportsParallelToolCalls {
				t.Errorf("status of plain: %+v", s)
			}
		}
	}
}

// TestConfigDiscoveryForHosts: initialize.configDiscovery finds the files
// people have, and reports where each server came from.
func TestConfigDiscoveryForHosts(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	good := fixture.Config("claude-srv", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	entry, _ := json.Marshal(map[string]any{"command": good.Command, "args": good.Args, "env": good.Env})
	claudeJSON := `{"numStartups": 3, "projects": {"` + proj + `": {"mcpServers": {"claude-srv": ` + string(entry) + `}}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(claudeJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	res := h.initialize(nil, map[string]any{"configDiscovery": map[string]any{"cwd": proj}})
	if diff := cmp.Diff([]string{"claude-srv"}, res.Servers); diff != "" {
		t.Fatalf("servers (-want +got):\n%s\nconfig: %+v", diff, res.Config)
	}
	wantSources := []protocol.ConfigSource{
		{Path: filepath.Join(home, ".claude.json"), Tool: "claude", Scope: "user", Servers: []string{}},
		{Path: filepath.Join(home, ".claude.json"), Tool: "claude", Scope: "local", Project: proj, Servers: []string{"claude-srv"}},
	}
	if diff := cmp.Diff(wantSources, res.Config.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	open := h.open(map[string]any{"startup": "eager"})
	if sum := h.waitComplete(open.SessionID, 0); len(sum.Ready) != 1 {
		t.Errorf("round 0: %+v", sum)
	}
}

// TestConfigDiscoveryHostileProject: in a cloned repository, project
// files past the shape limits or that are not files at all are config
// errors naming the file (with line and column for the limit), and the
// server of the good file next to them starts.
func TestConfigDiscoveryHostileProject(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	cwd := filepath.Join(repo, "sub")
	for _, dir := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, ".codex"), filepath.Join(cwd, ".vscode", "mcp.json")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deep := filepath.Join(repo, ".codex", "config.toml")
	body := "[mcp_servers.x]\ncommand = \"echo\"\nenv = " + strings.Repeat("{a=", 5000) + "1" + strings.Repeat("}", 5000) + "\n"
	if err := os.WriteFile(deep, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	good := fixture.Config("good", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"good": map[string]any{"command": good.Command, "args": good.Args, "env": good.Env}}})
	if err := os.WriteFile(filepath.Join(cwd, ".mcp.json"), entry, 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	// trustProject: the project is the host's to vouch for here (what is
	// not trusted is TestConfigDiscoveryProjectTrust's).
	res := h.initialize(nil, map[string]any{"configDiscovery": map[string]any{"cwd": cwd, "trustProject": true}})
	if diff := cmp.Diff([]string{"good"}, res.Servers); diff != "" {
		t.Fatalf("servers (-want +got):\n%s\nconfig: %+v", diff, res.Config)
	}
	dir := filepath.Join(cwd, ".vscode", "mcp.json")
	want := []protocol.ConfigProblem{
		{File: deep, Line: 3, Column: 191, Message: "nested more than 64 levels deep at line 3, column 191 (a limit that keeps a hostile file from exhausting memory)"},
		{File: dir, Message: "not a regular file (a directory)"},
	}
	if diff := cmp.Diff(want, res.Config.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	open := h.open(map[string]any{"startup": "eager"})
	if sum := h.waitComplete(open.SessionID, 0); len(sum.Ready) != 1 {
		t.Errorf("round 0: %+v", sum)
	}
}

// TestConfigDiscoveryProjectTrust: a repository's .mcp.json server that
// the user never approved in Claude Code is not started: initialize lists
// it in config.untrusted with the reason, not among the servers; the one
// approved in ~/.claude.json starts, and so does the other once the host
// says trustProject, except the server the user declined.
func TestConfigDiscoveryProjectTrust(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	servers := map[string]any{}
	for _, name := range []string{"approved", "unknown", "declined"} {
		c := fixture.Config(name, fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
		servers[name] = map[string]any{"command": c.Command, "args": c.Args, "env": c.Env}
	}
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(filepath.Join(repo, ".mcp.json"), mcpJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	claudeJSON, _ := json.Marshal(map[string]any{"projects": map[string]any{repo: map[string]any{
		"hasTrustDialogAccepted": true, "enabledMcpjsonServers": []string{"approved"}, "disabledMcpjsonServers": []string{"declined"},
	}}})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), claudeJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	origin := protocol.ConfigOrigin{Path: filepath.Join(repo, ".mcp.json"), Tool: "claude", Scope: "project"}
	declined := protocol.ConfigUntrusted{Server: "declined", Source: origin, Reason: "declined in Claude Code (disabledMcpjsonServers)", Declined: true}
	for _, tc := range []struct {
		trustProject bool
		servers      []string
		untrusted    []protocol.ConfigUntrusted
	}{
		{false, []string{"approved"}, []protocol.ConfigUntrusted{declined, {Server: "unknown", Source: origin, Reason: "not approved in Claude Code"}}},
		{true, []string{"approved", "unknown"}, []protocol.ConfigUntrusted{declined}},
	} {
		h := newHarness(t)
		res := h.initialize(nil, map[string]any{"configDiscovery": map[string]any{"cwd": repo, "trustProject": tc.trustProject}})
		if diff := cmp.Diff(tc.servers, res.Servers); diff != "" {
			t.Errorf("trustProject %v: servers (-want +got):\n%s", tc.trustProject, diff)
		}
		if diff := cmp.Diff(tc.untrusted, res.Config.Untrusted); diff != "" {
			t.Errorf("trustProject %v: untrusted (-want +got):\n%s", tc.trustProject, diff)
		}
		open := h.open(map[string]any{"startup": "eager"})
		if sum := h.waitComplete(open.SessionID, 0); len(sum.Ready) != len(tc.servers) {
			t.Errorf("trustProject %v: round 0: %+v", tc.trustProject, sum)
		}
	}
}

// TestSkippedStdoutLinesAreWarnings: a server that prints lines that are
// not JSON-RPC on stdout works, and servers/status says so: the count and
// the first line.
func TestSkippedStdoutLinesAreWarnings(t *testing.T) {
	h := newHarness(t)
	noisy := fixture.Config("noisy", fixture.Spec{
		BannerLines: []string{"Starting noisy server v1.2 on stdio", "loading plugins..."},
		Tools:       []fixture.ToolSpec{tool("echo", "echo")},
	})
	h.initialize(map[string]*config.ServerConfig{"noisy": noisy}, nil)
	open := h.open(map[string]any{"startup": "eager"})
	if sum := h.waitComplete(open.SessionID, 0); len(sum.Ready) != 1 {
		t.Fatalf("round 0: %+v", sum)
	}
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &st); err != nil {
		t.Fatal(err)
	}
	s := st.Servers[0]
	if s.State != protocol.StateReady || s.SkippedStdoutLines != 2 || s.FirstSkippedStdoutLine != "Starting noisy server v1.2 on stdio" {
		t.Errorf("status: state %s, skipped %d, first %q", s.State, s.SkippedStdoutLines, s.FirstSkippedStdoutLine)
	}
}
