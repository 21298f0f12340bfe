package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// buildEverything builds go-sdk's conformance everything-server, the
// reference server of go-sdk v1.8: it speaks 2026-07-28 over stdio and
// stateless Streamable HTTP, and 2025-11-25 only (so its server/discover
// says) over stateful Streamable HTTP.
func buildEverything(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the everything-server: %v\n%s", err, out)
	}
	return bin
}

// serveEverything runs the everything-server over Streamable HTTP and
// returns its URL.
func serveEverything(t *testing.T, bin string, stateless bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	arg := "-stateless=true"
	if !stateless {
		arg = "-stateless=false"
	}
	cmd := exec.Command(bin, "-http", addr, arg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ctx := testCtx(t)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the everything-server did not listen at %s", addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestEverythingServer: go-sdk's reference server, over each transport,
// at the protocol it offers: tools, multi round-trip input through the
// handlers, x-mcp-header (Mcp-Param-* headers the server checks), log
// messages, progress, list_changed, resource updates.
func TestEverythingServer(t *testing.T) {
	bin := buildEverything(t)
	for _, tc := range []struct {
		name    string
		cfg     func(t *testing.T) *config.ServerConfig
		era     Era
		version string
	}{
		{"stdio", func(*testing.T) *config.ServerConfig { return &config.ServerConfig{Command: bin} }, EraModern, ModernProtocolVersion},
		{"http stateless", func(t *testing.T) *config.ServerConfig {
			return &config.ServerConfig{URL: serveEverything(t, bin, true)}
		}, EraModern, ModernProtocolVersion},
		{"http stateful", func(t *testing.T) *config.ServerConfig {
			return &config.ServerConfig{URL: serveEverything(t, bin, false)}
		}, EraLegacy, DefaultProtocolVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var logs, progress []string
			toolsChanged := make(chan struct{}, 8)
			updated := make(chan string, 8)
			c := connect(t, Options{
				Config:      tc.cfg(t),
				Elicitation: true,
				Roots:       true,
				Handlers: Handlers{
					Elicit: func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
						if bytes.Contains(params, []byte(`"color"`)) {
							return json.RawMessage(`{"action":"accept","content":{"color":"green"}}`), nil
						}
						if bytes.Contains(params, []byte(`"ok"`)) {
							return json.RawMessage(`{"action":"accept","content":{"ok":true}}`), nil
						}
						return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
					},
					ListRoots: func(context.Context) (json.RawMessage, error) {
						return json.RawMessage(`{"roots":[{"uri":"file:///work","name":"work"}]}`), nil
					},
					Log: func(p *mcp.LoggingMessageParams) {
						mu.Lock()
						logs = append(logs, p.Data.(string))
						mu.Unlock()
					},
					Progress: func(p *mcp.ProgressNotificationParams) {
						mu.Lock()
						progress = append(progress, p.Message)
						mu.Unlock()
					},
					ToolListChanged: func() {
						select {
						case toolsChanged <- struct{}{}:
						default:
						}
					},
					ResourceUpdated: func(uri string) {
						select {
						case updated <- uri:
						default:
						}
					},
				},
			})
			if c.Era() != tc.era || c.ProtocolVersion() != tc.version {
				t.Fatalf("Era() = %q, ProtocolVersion() = %q; want %q, %q", c.Era(), c.ProtocolVersion(), tc.era, tc.version)
			}
			if c.ServerInfo() == nil || c.ServerInfo().Name != "mcp-conformance-test-server" {
				t.Errorf("ServerInfo() = %+v", c.ServerInfo())
			}
			ctx := testCtx(t)
			list, err := c.ListToolsPage(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			var tools struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(list, &tools); err != nil {
				t.Fatal(err)
			}
			schemas := map[string]json.RawMessage{}
			for _, tl := range tools.Tools {
				schemas[tl.Name] = tl.InputSchema
			}
			call := func(name string, args string, meta map[string]any) string {
				t.Helper()
				res, err := c.CallTool(ctx, name, json.RawMessage(args), meta)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return string(res)
			}

			if res := call("test_simple_text", `{}`, nil); !strings.Contains(res, "simple text response") {
				t.Errorf("test_simple_text: %s", res)
			}
			// The server asks for input: the handlers answer, and the call
			// answers once (2025-11-25: the server's own request).
			if res := call("test_input_required_result_elicitation", `{}`, nil); !strings.Contains(res, "Ada") {
				t.Errorf("test_input_required_result_elicitation: %s", res)
			}
			if tc.era == EraModern {
				if res := call("test_input_required_result_multi_round", `{}`, nil); !strings.Contains(res, "Multi-round complete: Ada likes green") {
					t.Errorf("test_input_required_result_multi_round: %s", res)
				}
				if res := call("test_input_required_result_request_state", `{}`, nil); strings.Contains(res, `"isError":true`) {
					t.Errorf("test_input_required_result_request_state: %s", res)
				}
			}
			if res := call("test_tool_with_progress", `{}`, map[string]any{"progressToken": "tok-1"}); !strings.Contains(res, "tok-1") {
				t.Errorf("test_tool_with_progress: %s", res)
			}
			call("test_logging_tool", `{}`, nil)
			mu.Lock()
			// A modern request names the log level (debug); a legacy
			// go-sdk server sends nothing until logging/setLevel, which
			// this client does not send.
			if len(progress) != 3 || (tc.era == EraModern) != strings.Contains(strings.Join(logs, "\n"), "test_logging_tool executed") {
				t.Errorf("progress %q, logs %q: want three steps, and the tool's log message before its answer at 2026-07-28", progress, logs)
			}
			mu.Unlock()

			// x-mcp-header: the server refuses a 2026-07-28 call without the
			// Mcp-Param-* headers its tool declares.
			bindings, err := mcpheader.Parse(schemas["test_x_mcp_header"])
			if err != nil || len(bindings) != 1 {
				t.Fatalf("test_x_mcp_header declarations: %v, %v", bindings, err)
			}
			args := json.RawMessage(`{"region":"eu west","level":3}`)
			res, err := c.CallToolWith(ctx, ToolCall{Name: "test_x_mcp_header", Arguments: args, Headers: bindings})
			if err != nil || !strings.Contains(string(res), "region=eu west") {
				t.Errorf("test_x_mcp_header with its headers: %s, %v", res, err)
			}
			if tc.name == "http stateless" {
				// Without them (a catalog listed before the tool declared
				// them): the server's -32020, the tool's declarations
				// listed again and the call sent once more with them.
				res, err := c.CallTool(ctx, "test_x_mcp_header", args, nil)
				if err != nil || !strings.Contains(string(res), "region=eu west") {
					t.Errorf("test_x_mcp_header without its headers: %s, %v, want the call sent again with them", res, err)
				}
			}

			// list_changed reaches its handler (subscriptions/listen, the
			// GET stream, or stdout).
			call("test_trigger_tool_change", `{}`, nil)
			select {
			case <-toolsChanged:
			case <-ctx.Done():
				t.Error("no tools/list_changed")
			}
			// The server updates its watched resource every 3 s.
			if err := c.Subscribe(ctx, "test://watched-resource"); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			select {
			case uri := <-updated:
				if uri != "test://watched-resource" {
					t.Errorf("update of %q", uri)
				}
			case <-ctx.Done():
				t.Error("no resources/updated")
			}
		})
	}
}
