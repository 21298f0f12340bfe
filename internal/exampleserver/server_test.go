package exampleserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// start runs the server with Run over pipes (so servermeta sees real
// bytes) and connects a client.
func start(t *testing.T, opts Options, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts, &mcp.IOTransport{Reader: c2sR, Writer: s2cW}) }()
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	if copts.Capabilities == nil {
		copts.Capabilities = &mcp.ClientCapabilities{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, copts)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		<-done
		cancel()
	})
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any, meta map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content has %d items, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestCatalogAndCapabilities(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		t.Run(fmt.Sprint("sandbox=", sandboxed), func(t *testing.T) {
			cs := start(t, Options{Sandbox: sandboxed}, nil)
			init := cs.InitializeResult()
			if init.ServerInfo.Name != Name {
				t.Errorf("server name = %q, want %q", init.ServerInfo.Name, Name)
			}
			_, advertised := init.Capabilities.Experimental[sandbox.KeyState]
			if advertised != sandboxed {
				t.Errorf("experimental[%s] advertised = %v, want %v", sandbox.KeyState, advertised, sandboxed)
			}
			if init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil {
				t.Errorf("capabilities = %+v, want tools, resources and prompts", init.Capabilities)
			}

			ctx := context.Background()
			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
				if tool.Description == "" {
					t.Errorf("tool %s has no description", tool.Name)
				}
			}
			slices.Sort(names)
			want := []string{"add", "ask", "echo", "run_sandboxed", "sandbox_info", "slow"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}

			var resources []string
			for r, err := range cs.Resources(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				resources = append(resources, r.URI+" "+r.MIMEType)
			}
			slices.Sort(resources)
			wantRes := []string{"example://readme text/plain", "example://skills/sandboxed-commands mcp/skill"}
			if diff := cmp.Diff(wantRes, resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "example://readme"})
			if err != nil || !strings.Contains(rr.Contents[0].Text, "run_sandboxed") {
				t.Errorf("ReadResource(readme) = %+v, %v", rr, err)
			}

			p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(got, "Ada") {
				t.Errorf("greet prompt = %q, want the name in it", got)
			}
		})
	}
}

func TestEchoAndAdd(t *testing.T) {
	cs := start(t, Options{}, nil)
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "héllo <&>"}, nil)); got != "héllo <&>" {
		t.Errorf("echo = %q", got)
	}
	res := call(t, cs, "add", map[string]any{"a": 2, "b": 3.5}, nil)
	if got := text(t, res); got != "5.5" {
		t.Errorf("add text = %q, want 5.5", got)
	}
	if diff := cmp.Diff(map[string]any{"sum": 5.5}, res.StructuredContent); diff != "" {
		t.Errorf("add structuredContent (-want +got):\n%s", diff)
	}
	if res := call(t, cs, "add", map[string]any{"a": "two"}, nil); !res.IsError {
		t.Errorf("add with a string = %+v, want an error result", res)
	}
}

func TestSlowProgress(t *testing.T) {
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	cs := start(t, Options{}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		},
	})
	res := call(t, cs, "slow", map[string]any{"seconds": 0.03, "steps": 3}, map[string]any{"progressToken": "tok-7"})
	if res.IsError {
		t.Fatalf("slow = %+v", res)
	}
	for i := 1; i <= 3; i++ {
		select {
		case p := <-progress:
			if p.ProgressToken != "tok-7" || p.Progress != float64(i) || p.Total != 3 {
				t.Errorf("progress %d = %+v", i, p)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("progress notification %d never came", i)
		}
	}
}

// TestSlowHonoursCancellation calls the handler directly: if it ignored
// its context it would wait five minutes and the test would time out.
func TestSlowHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := &handlers{}
	_, _, err := h.slow(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}, slowIn{Seconds: 300, Steps: 1})
	if err == nil || !strings.Contains(err.Error(), "cancelled after 0 of 1 steps") {
		t.Errorf("slow with a cancelled context = %v", err)
	}
}

func TestAsk(t *testing.T) {
	var asked string
	cs := start(t, Options{}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "forty-two"}}, nil
		},
	})
	if got := text(t, call(t, cs, "ask", map[string]any{"question": "What is the answer?"}, nil)); got != "forty-two" {
		t.Errorf("ask = %q, want forty-two", got)
	}
	if asked != "What is the answer?" {
		t.Errorf("elicitation message = %q", asked)
	}

	plain := start(t, Options{}, nil)
	if res := call(t, plain, "ask", map[string]any{"question": "?"}, nil); !res.IsError {
		t.Errorf("ask without client elicitation = %+v, want an error result", res)
	}
}

const policy = `{"sandbox": "workspace-write", "writable_roots": ["/w/\u00e9"], "n": 12345678901234567890, "one": 1.0, "e": 2e10, "html": "<&>"}`
const compactPolicy = `{"sandbox":"workspace-write","writable_roots":["/w/\u00e9"],"n":12345678901234567890,"one":1.0,"e":2e10,"html":"<&>"}`

func sidecarMeta(launcher string) map[string]any {
	meta, _ := sandbox.BuildMeta(sandbox.Injection{
		Capability: sandbox.CapPreferred, State: json.RawMessage(policy), Launcher: launcher, Transport: sandbox.TransportStdio,
	})
	return meta
}

func TestSandboxInfo(t *testing.T) {
	cs := start(t, Options{Sandbox: true}, nil)
	tests := []struct {
		name string
		meta map[string]any
		want string
	}{
		{"policy and launcher", sidecarMeta("/opt/codex <&>/codex"), compactPolicy + "\n" + `{"codexExecutable":"/opt/codex <&>/codex"}`},
		{"policy only", sidecarMeta(""), compactPolicy},
		{"nothing", nil, "no sandbox state"},
		{"deprecated key only", map[string]any{sandbox.KeyStateMeta: json.RawMessage(`{"n":12345678901234567890}`)}, `{"n":12345678901234567890}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := text(t, call(t, cs, "sandbox_info", map[string]any{}, tt.meta)); got != tt.want {
				t.Errorf("sandbox_info:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// fakeLauncher writes a launcher that records its argv, one per line, to
// a file, then runs the command after "--".
func fakeLauncher(t *testing.T) (exe, argvFile string) {
	t.Helper()
	dir := t.TempDir()
	exe = filepath.Join(dir, "codex")
	argvFile = filepath.Join(dir, "argv")
	script := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do printf '%%s\n' "$a"; done > '%s'
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
`, argvFile)
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, argvFile
}

func TestRunSandboxed(t *testing.T) {
	launcher, argvFile := fakeLauncher(t)

	t.Run("through the launcher", func(t *testing.T) {
		cs := start(t, Options{Sandbox: true}, nil)
		res := call(t, cs, "run_sandboxed", map[string]any{"command": []string{"echo", "hi there"}}, sidecarMeta(launcher))
		if res.IsError {
			t.Fatalf("run_sandboxed = %q", text(t, res))
		}
		argv, err := os.ReadFile(argvFile)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{"sandbox", "--sandbox-state-json", compactPolicy, "--", "echo", "hi there"}, "\n") + "\n"
		if diff := cmp.Diff(want, string(argv)); diff != "" {
			t.Errorf("launcher argv (-want +got):\n%s", diff)
		}
		wantOut := map[string]any{"exitCode": 0.0, "stdout": "hi there\n", "stderr": "", "sandboxed": true}
		if diff := cmp.Diff(wantOut, res.StructuredContent); diff != "" {
			t.Errorf("structuredContent (-want +got):\n%s", diff)
		}
	})

	t.Run("non-zero exit is an error result", func(t *testing.T) {
		cs := start(t, Options{Sandbox: true}, nil)
		res := call(t, cs, "run_sandboxed", map[string]any{"command": []string{"sh", "-c", "echo oops >&2; exit 4"}}, sidecarMeta(launcher))
		if !res.IsError || !strings.Contains(text(t, res), "exit status 4") || !strings.Contains(text(t, res), "oops") {
			t.Errorf("run_sandboxed = %+v", res)
		}
	})

	t.Run("no launcher fails closed", func(t *testing.T) {
		cs := start(t, Options{Sandbox: true}, nil)
		marker := filepath.Join(t.TempDir(), "ran")
		res := call(t, cs, "run_sandboxed", map[string]any{"command": []string{"touch", marker}}, sidecarMeta(""))
		if !res.IsError || !strings.Contains(text(t, res), "no sandbox launcher") {
			t.Errorf("run_sandboxed without launcher = %+v, want a refusal", res)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the command ran without a launcher")
		}
	})

	t.Run("operator opt-out runs directly", func(t *testing.T) {
		cs := start(t, Options{Sandbox: true, AllowUnsandboxed: true}, nil)
		res := call(t, cs, "run_sandboxed", map[string]any{"command": []string{"echo", "direct"}}, nil)
		if res.IsError || !strings.Contains(text(t, res), "ran without a sandbox") {
			t.Errorf("run_sandboxed with opt-out = %+v", res)
		}
		if got := res.StructuredContent.(map[string]any)["sandboxed"]; got != false {
			t.Errorf("sandboxed = %v, want false", got)
		}
	})
}
