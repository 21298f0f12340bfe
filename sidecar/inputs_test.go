package sidecar_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// writeVSCodeInputs writes a VS Code mcp.json whose servers a and b (the
// fixture with an env tool, writing its TOKEN to stderr) get the input
// "token" as TOKEN.
func writeVSCodeInputs(t *testing.T) string {
	t.Helper()
	servers := map[string]any{}
	for _, name := range []string{"a", "b"} {
		c := fixture.Config(name, fixture.Spec{Tools: []fixture.ToolSpec{tool("env", fixture.BehaviorEnv)}, StderrEnv: []string{"TOKEN"}})
		env := map[string]string{"TOKEN": "${input:token}"}
		for k, v := range c.Env {
			env[k] = v
		}
		servers[name] = map[string]any{"type": "stdio", "command": c.Command, "args": c.Args, "env": env}
	}
	data, err := json.Marshal(map[string]any{
		"inputs":  []any{map[string]any{"type": "promptString", "id": "token", "description": "API token", "password": true}},
		"servers": servers,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ".vscode", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// inputHost answers mcp/input with answer and records what it was asked.
type inputHost struct {
	mu     sync.Mutex
	asked  []protocol.InputParams
	answer func(p protocol.InputParams) any
}

func (ih *inputHost) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != protocol.RequestInput {
		return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, method)
	}
	var p protocol.InputParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	ih.mu.Lock()
	ih.asked = append(ih.asked, p)
	answer := ih.answer
	ih.mu.Unlock()
	return answer(p), nil
}

func (ih *inputHost) count() int {
	ih.mu.Lock()
	defer ih.mu.Unlock()
	return len(ih.asked)
}

// A host that declared capabilities.inputs is asked each input once,
// during the first session/open that needs it: every server and later
// session that uses it gets the value, which never reaches the host in
// what the servers write.
func TestInputsAskedOfTheHost(t *testing.T) {
	const secret = "tok-9a8b7c6d5e4f"
	path := writeVSCodeInputs(t)
	h := newHarness(t)
	ih := &inputHost{answer: func(protocol.InputParams) any { return map[string]any{"value": secret} }}
	h.onRequest = ih.handle
	var logs []string
	var logsMu sync.Mutex
	h.onNotification = func(n hostclient.Notification) {
		if n.Method == protocol.NotifyLog {
			logsMu.Lock()
			logs = append(logs, string(n.Params))
			logsMu.Unlock()
		}
	}
	h.initialize(nil, map[string]any{"configFiles": []string{path}, "capabilities": map[string]any{"inputs": true}})
	open := h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	if sum := h.waitComplete("s1", 0); len(sum.Ready) != 2 {
		t.Fatalf("startupComplete %+v, session %+v", sum, open)
	}
	want := []protocol.InputParams{{SessionID: "s1", Server: "a", ID: "token", Source: path, Description: "API token", Password: true}}
	if diff := cmp.Diff(want, ih.asked); diff != "" {
		t.Errorf("mcp/input (-want +got):\n%s", diff)
	}
	for _, server := range []string{"a", "b"} {
		res, err := h.callTool(map[string]any{"sessionId": "s1", "server": server, "tool": "env"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), `"TOKEN":"`+secret+`"`) {
			t.Errorf("server %s did not get the value: %s", server, res)
		}
	}
	h.open(map[string]any{"sessionId": "s2", "startup": "eager"})
	h.waitComplete("s2", 0)
	if n := ih.count(); n != 1 {
		t.Errorf("%d mcp/input after a second session, want 1", n)
	}
	// What the servers wrote on stderr (TOKEN=...) reached the host scrubbed.
	logsMu.Lock()
	defer logsMu.Unlock()
	seen := false
	for _, l := range logs {
		if strings.Contains(l, secret) {
			t.Errorf("mcp/log shows the input's value: %s", l)
		}
		seen = seen || strings.Contains(l, "TOKEN=REDACTED")
	}
	if !seen {
		t.Errorf("no stderr line of the servers was seen: the search proves nothing (%d logs)", len(logs))
	}
}

// An input the user cancels leaves its servers out of that session, with
// the reason; the next session asks again.
func TestInputCancelled(t *testing.T) {
	path := writeVSCodeInputs(t)
	h := newHarness(t)
	var cancelled atomic.Bool
	cancelled.Store(true)
	ih := &inputHost{}
	ih.answer = func(protocol.InputParams) any {
		if cancelled.Load() {
			return map[string]any{"cancelled": true}
		}
		return map[string]any{"value": "tok-11112222"}
	}
	h.onRequest = ih.handle
	h.initialize(nil, map[string]any{"configFiles": []string{path}, "capabilities": map[string]any{"inputs": true}})
	open := h.open(map[string]any{"sessionId": "s1", "startup": "eager"})
	for _, s := range open.Servers {
		if s.State != protocol.StateInvalid {
			t.Errorf("%s is %s, want invalid", s.Name, s.State)
		}
	}
	_, err := h.callTool(map[string]any{"sessionId": "s1", "server": "a", "tool": "env"})
	je, _ := h.wantCode(err, protocol.CodeServerNotReady)
	if !strings.Contains(je.Message, `${input:token} ("API token") was not given: the user cancelled it`) {
		t.Errorf("error %q", je.Message)
	}
	if n := ih.count(); n != 1 {
		t.Errorf("%d mcp/input for one cancelled input, want 1 (b waits for a's question)", n)
	}
	cancelled.Store(false)
	h.open(map[string]any{"sessionId": "s2", "startup": "eager"})
	if sum := h.waitComplete("s2", 0); len(sum.Ready) != 2 || ih.count() != 2 {
		t.Errorf("second session: %+v after %d mcp/input", sum, ih.count())
	}
}

// Without capabilities.inputs no one can be asked: the servers that use
// an input are invalid from initialize on, saying which input.
func TestInputsWithoutTheCapability(t *testing.T) {
	path := writeVSCodeInputs(t)
	h := newHarness(t)
	ih := &inputHost{answer: func(protocol.InputParams) any { return map[string]any{"value": "x"} }}
	h.onRequest = ih.handle
	res := h.initialize(nil, map[string]any{"configFiles": []string{path}})
	var errs []string
	for _, e := range res.Config.Errors {
		errs = append(errs, e.Server+": "+e.Message)
	}
	want := []string{
		`a: uses ${input:token} ("API token"), and no one can be asked for it: the host did not declare capabilities.inputs (mcp/input), and the commands for people ask only on a terminal`,
		`b: uses ${input:token} ("API token"), and no one can be asked for it: the host did not declare capabilities.inputs (mcp/input), and the commands for people ask only on a terminal`,
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("config errors (-want +got):\n%s", diff)
	}
	open := h.open(map[string]any{"sessionId": "s1"})
	for _, s := range open.Servers {
		if s.State != protocol.StateInvalid {
			t.Errorf("%s is %s, want invalid", s.Name, s.State)
		}
	}
	if ih.count() != 0 {
		t.Error("a host without the capability was sent mcp/input")
	}
}
