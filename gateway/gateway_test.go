package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

func TestMain(m *testing.M) {
	fixture.Main()
	os.Exit(m.Run())
}

// legacy is the protocol of most MCP clients today (the TypeScript SDK's
// newest): the session-based one, where servers send requests.
const legacy = "2025-11-25"

// server is a fixture server's entry in initialize.servers.
func server(spec fixture.Spec) map[string]any {
	c := fixture.Config("fixture", spec)
	return map[string]any{"command": c.Command, "args": c.Args, "env": c.Env}
}

func tool(name, behavior string) fixture.ToolSpec {
	return fixture.ToolSpec{Name: name, Behavior: behavior}
}

type setup struct {
	servers  map[string]any
	cacheDir string
	// cwd is the session cwd, part of a stdio server's discovery scope
	// (and so of its disk cache key).
	cwd      string
	deferred bool
	// extra are more initialize params.
	extra map[string]any
}

func start(t *testing.T, s setup) *gateway.Gateway {
	t.Helper()
	ctx := context.Background()
	if s.cacheDir == "" {
		s.cacheDir = t.TempDir()
	}
	if s.cwd == "" {
		s.cwd = t.TempDir()
	}
	init := map[string]any{"servers": s.servers, "cacheDir": s.cacheDir, "credentialsDir": filepath.Join(t.TempDir(), "credentials")}
	for k, v := range s.extra {
		init[k] = v
	}
	g, err := gateway.Start(ctx, gateway.Options{
		Initialize: init,
		Sidecar:    sidecar.Options{Version: "test", Env: os.LookupEnv, Logger: testLogger()},
		Cwd:        s.cwd,
		Deferred:   s.deferred,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctx) })
	return g
}

// connect serves one in-memory client; the session ends at cleanup.
func connect(t *testing.T, g *gateway.Gateway, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.ServeStdio(ctx, st) }()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if opts.Capabilities == nil {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolNames(t *testing.T) {
	two := map[string]any{
		"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", ""), tool("meta", fixture.BehaviorMeta)}}),
		"beta":  server(fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "")}}),
	}
	one := map[string]any{"alpha": two["alpha"]}
	for _, tc := range []struct {
		name    string
		servers map[string]any
		want    []string
		call    string
	}{
		{"several servers: qualified names", two, []string{"mcp__alpha__echo", "mcp__alpha__meta", "mcp__beta__echo"}, "mcp__beta__echo"},
		{"one server: its own names", one, []string{"echo", "meta"}, "echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{legacy, ""} {
				g := start(t, setup{servers: tc.servers})
				cs := connect(t, g, v, nil)
				if diff := cmp.Diff(tc.want, toolNames(t, cs)); diff != "" {
					t.Errorf("protocol %q: tools (-want +got):\n%s", v, diff)
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.call, Arguments: map[string]any{"x": 1}})
				if err != nil {
					t.Fatalf("protocol %q: %v", v, err)
				}
				if got := text(t, res); got != `{"x":1}` {
					t.Errorf("protocol %q: call %s: %q, want the arguments echoed", v, tc.call, got)
				}
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	g := start(t, setup{servers: map[string]any{
		"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "")}}),
		"beta":  server(fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "")}}),
	}})
	cs := connect(t, g, legacy, nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__alpha__nope"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "mcp__alpha__nope") {
		t.Fatalf("unknown tool: %v, want -32602 naming it", err)
	}
	// The session goes on.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__alpha__echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxState: a client's codex/sandbox-state (or its alias) reaches
// a server that opted in as the host's sandboxState: both keys; a client
// that sends none gets none.
func TestSandboxState(t *testing.T) {
	spec := fixture.Spec{
		Tools:        []fixture.ToolSpec{tool("meta", fixture.BehaviorMeta)},
		Experimental: map[string]json.RawMessage{"codex/sandbox-state": json.RawMessage(`{}`)},
	}
	g := start(t, setup{servers: map[string]any{"alpha": server(spec)}})
	cs := connect(t, g, legacy, nil)
	policy := map[string]any{"mode": "workspace-write", "writable_roots": []any{"/p"}}
	for _, tc := range []struct {
		name string
		meta mcp.Meta
		want map[string]any
	}{
		{"state", mcp.Meta{"codex/sandbox-state": policy, "trace": "t1"}, map[string]any{"codex/sandbox-state": policy, "codex/sandbox-state-meta": policy, "trace": "t1"}},
		{"alias", mcp.Meta{"codex/sandbox-state-meta": policy}, map[string]any{"codex/sandbox-state": policy, "codex/sandbox-state-meta": policy}},
		{"none", nil, map[string]any{}},
		{"a client's launcher is not passed on", mcp.Meta{"codex/sandbox-launcher": map[string]any{"codexExecutable": "/bin/sh"}}, map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{}}
			p.Meta = tc.meta
			res, err := cs.CallTool(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(text(t, res)), &got); err != nil {
				t.Fatal(err)
			}
			for k := range got {
				if strings.HasPrefix(k, "io.modelcontextprotocol/") {
					delete(got, k)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("_meta the server got (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListChangedReachesClient(t *testing.T) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("add", fixture.BehaviorAddTool)}})}})
	changed := make(chan struct{}, 10)
	cs := connect(t, g, legacy, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if diff := cmp.Diff([]string{"add"}, toolNames(t, cs)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"name": "late"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	if diff := cmp.Diff([]string{"add", "late"}, toolNames(t, cs)); diff != "" {
		t.Errorf("tools after the change (-want +got):\n%s", diff)
	}
}

func TestProgress(t *testing.T) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("work", fixture.BehaviorProgress)}})}})
	got := make(chan *mcp.ProgressNotificationParams, 10)
	cs := connect(t, g, legacy, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		got <- r.Params
	}})
	p := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"count": 2}}
	p.SetProgressToken("tok-1")
	if _, err := cs.CallTool(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		select {
		case n := <-got:
			if n.ProgressToken != "tok-1" || n.Total != 2 {
				t.Errorf("progress %d: %+v, want the client's token and total 2", i, n)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("progress %d did not come", i)
		}
	}
}

// TestLazyFromCache: a second gateway lists the catalog from the disk
// cache without starting the server; its first call starts it.
func TestLazyFromCache(t *testing.T) {
	dir := t.TempDir()
	inits := filepath.Join(dir, "inits")
	servers := map[string]any{"alpha": server(fixture.Spec{InitCountFile: inits, Tools: []fixture.ToolSpec{tool("echo", "")}})}
	cache := filepath.Join(dir, "cache")
	{
		g := start(t, setup{servers: servers, cacheDir: cache, cwd: dir})
		cs := connect(t, g, legacy, nil)
		toolNames(t, cs)
		cs.Close()
		g.Close(context.Background())
	}
	if n := len(fixture.ReadLines(inits)); n != 1 {
		t.Fatalf("%d starts for the first listing, want 1", n)
	}
	g := start(t, setup{servers: servers, cacheDir: cache, cwd: dir})
	cs := connect(t, g, legacy, nil)
	if diff := cmp.Diff([]string{"echo"}, toolNames(t, cs)); diff != "" {
		t.Errorf("cached tools (-want +got):\n%s", diff)
	}
	if n := len(fixture.ReadLines(inits)); n != 1 {
		t.Errorf("%d starts after a listing from the cache, want 1 (no start): %q", n, fixture.ReadLines(inits))
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if n := len(fixture.ReadLines(inits)); n != 2 {
		t.Errorf("%d starts after the first call, want 2", n)
	}
}

func TestElicitationRelayed(t *testing.T) {
	servers := map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("ask", fixture.BehaviorElicit)}})}
	for _, v := range []string{legacy, ""} {
		t.Run("client answers, protocol "+v, func(t *testing.T) {
			g := start(t, setup{servers: servers})
			cs := connect(t, g, v, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "blue " + r.Params.Message}}, nil
				},
			})
			for i := range 2 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"message": fmt.Sprint("colour ", i)}})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := text(t, res), fmt.Sprintf(`"blue colour %d"`, i); !strings.Contains(got, want) {
					t.Errorf("result %q, want the client's answer %s", got, want)
				}
			}
		})
	}
	t.Run("client without elicitation", func(t *testing.T) {
		g := start(t, setup{servers: servers})
		cs := connect(t, g, legacy, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("call answered %q, want a failure: the client cannot answer", text(t, res))
		}
	})
}

// TestClientCloseEndsServers: the host session of a client closes with
// it, and with it the server processes it started.
func TestClientCloseEndsServers(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("echo", "")}})}})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.ServeStdio(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	pid := fixture.ReadPID(t, pidFile)
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// ServeStdio returns after session/close, which answers once the
	// session's processes have ended.
	if alive(pid) {
		t.Errorf("server process %d still runs after its client closed", pid)
	}
}

func TestDeferred(t *testing.T) {
	var servers = map[string]any{}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		servers[name] = server(fixture.Spec{ToolCount: 40, Tools: []fixture.ToolSpec{tool("add_numbers", "")}})
	}
	g := start(t, setup{servers: servers, deferred: true})
	cs := connect(t, g, legacy, nil)
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"search_tools", "describe_tools", "call_tool"}, names); diff != "" {
		t.Fatalf("deferred tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "select:mcp__beta__add_numbers"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %v", err, res)
	}
	var found struct {
		Results []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(text(t, res)), &found); err != nil || len(found.Results) != 1 || found.Results[0].Name != "mcp__beta__add_numbers" {
		t.Fatalf("search result %s (%v)", text(t, res), err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"mcp__beta__add_numbers", "mcp__beta__gone"}}})
	if err != nil || res.IsError {
		t.Fatalf("describe: %v %v", err, res)
	}
	if got := text(t, res); !strings.Contains(got, `"inputSchema"`) || !strings.Contains(got, `"missing":["mcp__beta__gone"]`) {
		t.Errorf("describe result %s", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__beta__add_numbers", "arguments": map[string]any{"a": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != `{"a":1}` {
		t.Errorf("call through call_tool: %q", got)
	}
	if !slices.Contains(g.Servers(), "gamma") {
		t.Errorf("servers %v", g.Servers())
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("GATEWAY_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
