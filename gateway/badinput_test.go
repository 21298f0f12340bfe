package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestMalformedInput: what a client sends that is not a valid request is
// answered with an error, and the session goes on.
func TestMalformedInput(t *testing.T) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "")}})}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- g.ServeStdio(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// answer reads lines until the one answering id.
	answer := func(id string) map[string]json.RawMessage {
		t.Helper()
		for lines.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(lines.Bytes(), &m) == nil && string(m["id"]) == id {
				return m
			}
		}
		t.Fatalf("no answer to %s: %v", id, lines.Err())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	answer("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct{ id, msg string }{
		{"2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}`},
		{"3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}`},
		{"4", `{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`},
		{"5", `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":7}}`},
	} {
		send(tc.msg)
		if m := answer(tc.id); m["error"] == nil {
			t.Errorf("%s: answered %s, want an error", tc.msg, m["result"])
		}
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"ok":true}}}`)
	if m := answer("6"); !strings.Contains(string(m["result"]), `{\"ok\":true}`) {
		t.Errorf("a call after bad input: %s", m)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestDisconnectMidCall: a client that goes away during a call loses its
// session and its server processes; another client goes on.
func TestDisconnectMidCall(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("sleep", fixture.BehaviorSleep), tool("echo", "")}})}})
	ctx := context.Background()
	other := connect(t, g, legacy, nil)
	if _, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	otherPID := fixture.ReadPID(t, pidFile)

	// The leaving client's pipes, which it drops as a process that dies
	// does.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- g.ServeStdio(ctx, &mcp.IOTransport{Reader: inR, Writer: outW}) }()
	sleeping := make(chan struct{}, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "leaver"}, &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { sleeping <- struct{}{} },
	}).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}}
	p.SetProgressToken(1)
	go cs.CallTool(ctx, p)
	<-sleeping
	pid := fixture.ReadPID(t, pidFile)
	if pid == otherPID {
		t.Fatal("both clients' calls went to one process")
	}
	inW.Close() // gone mid-call
	outR.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if alive(pid) {
		t.Errorf("the server process %d of the client that left still runs", pid)
	}
	if _, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"still": "here"}}); err != nil {
		t.Errorf("the other client after one left: %v", err)
	}
	if !alive(otherPID) {
		t.Errorf("the other client's server process %d ended", otherPID)
	}
}

// TestDeferredTokens: with --deferred a client's tools/list costs under
// 2,000 tokens (the catalog's own estimate, catalog.EstimateTokens)
// however many servers and tools there are.
func TestDeferredTokens(t *testing.T) {
	servers := map[string]any{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		servers[name] = server(fixture.Spec{ToolCount: 50})
	}
	cost := func(deferred bool) int {
		g := start(t, setup{servers: servers, deferred: deferred})
		cs := connect(t, g, legacy, nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res.Tools)
		if err != nil {
			t.Fatal(err)
		}
		return catalog.EstimateTokens(b)
	}
	full, deferred := cost(false), cost(true)
	t.Logf("tools/list of 8 servers x 50 tools: %d tokens; deferred: %d tokens", full, deferred)
	if deferred >= 2000 {
		t.Errorf("deferred tools/list costs %d tokens, want under 2,000", deferred)
	}
	if deferred >= full {
		t.Errorf("deferred %d tokens, not less than the full catalog's %d", deferred, full)
	}
}
