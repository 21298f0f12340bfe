package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// DemoDoc is the demo command's help text.
const DemoDoc = `Usage: mcp-sidecar demo

Plays a harness: spawns this binary as the sidecar (host protocol over its
stdin/stdout), configures one MCP server (this binary's example-server,
with the sandbox capability), opens a session and shows what a harness
sees: startup statuses, the catalog, calls with progress, the sandbox
metadata the server received, an elicitation answered by the host, the
server status, and a clean shutdown that leaves no process behind.
No network, no npm.
`

// Demo runs the demo command.
func Demo(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	if code, done := parseFlags(&env, "demo", fs, args, 0, 0); done {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := runDemo(ctx, env.Stdout, env.Stderr, env.Version); err != nil {
		if interrupted(ctx) {
			return exitInterrupted
		}
		fmt.Fprintln(env.Stderr, "demo failed:", err)
		return exitFailure
	}
	return exitOK
}

// demoPrinter serialises the demo's output: notifications arrive on the
// host client's read loop while calls print from the main goroutine. The
// read loop may print a notification before the main goroutine has printed
// the answer that preceded it on the wire, so notifications can be held
// (hold) and printed after that answer (release): the transcript then shows
// the wire's order on every run, as the README quotes it.
type demoPrinter struct {
	mu   sync.Mutex
	out  io.Writer
	held *bytes.Buffer // notification lines waiting for release; nil when not holding
}

func (p *demoPrinter) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format, args...)
}

// notef prints a notification's line, or keeps it while held.
func (p *demoPrinter) notef(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		fmt.Fprintf(p.held, format, args...)
		return
	}
	fmt.Fprintf(p.out, format, args...)
}

func (p *demoPrinter) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = new(bytes.Buffer)
}

func (p *demoPrinter) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		p.out.Write(p.held.Bytes())
		p.held = nil
	}
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, demoVersion string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	out := &demoPrinter{out: stdout}
	out.printf("mcp-sidecar demo: a harness spawns the sidecar, which runs one MCP server\n(the example server embedded in this binary). -> host to sidecar, <- sidecar to host.\n\n")

	cmd := exec.CommandContext(ctx, exe, "serve", "--log-level", "error")
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	sidecarOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the sidecar: %w", err)
	}
	defer cmd.Process.Kill() // only if something below failed

	complete := make(chan struct{}, 1)
	client := hostclient.New(ctx, sidecarOut, stdin, hostclient.Options{
		OnNotification: func(n hostclient.Notification) {
			switch n.Method {
			case protocol.NotifyStartupStatus:
				var p protocol.StartupStatusParams
				_ = json.Unmarshal(n.Params, &p)
				detail := ""
				if p.Tools != nil {
					detail = fmt.Sprintf(", %d tools", *p.Tools)
				}
				if p.Error != "" {
					detail = ": " + p.Error
				}
				out.notef("<- mcp/startupStatus    %s is %s%s (round %d)\n", p.Server, p.Status, detail, p.Round)
			case protocol.NotifyStartupComplete:
				var p protocol.StartupCompleteParams
				_ = json.Unmarshal(n.Params, &p)
				out.notef("<- mcp/startupComplete  round %d: ready %v, failed %d, cancelled %v\n", p.Round, p.Ready, len(p.Failed), p.Cancelled)
				select {
				case complete <- struct{}{}:
				default:
				}
			case protocol.NotifyProgress:
				var p protocol.ProgressParams
				_ = json.Unmarshal(n.Params, &p)
				total := ""
				if p.Value.Total != nil {
					total = fmt.Sprintf("/%g", *p.Value.Total)
				}
				out.notef("<- $/progress           token %s: %g%s %s\n", p.Token, p.Value.Progress, total, p.Value.Message)
			}
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			if method != protocol.RequestElicit {
				return nil, fmt.Errorf("demo host does not handle %s", method)
			}
			var p protocol.ElicitParams
			_ = json.Unmarshal(params, &p)
			var ep struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(p.Params, &ep)
			out.printf("<- mcp/elicit           server %s asks the user: %q\n-> (host answers)       accept, answer = \"blue\"\n", p.Server, ep.Message)
			return map[string]any{"action": "accept", "content": map[string]any{"answer": "blue"}}, nil
		},
	})

	var initRes protocol.InitializeResult
	servers := map[string]any{"example": map[string]any{"command": exe, "args": []string{"example-server", "--sandbox"}}}
	if err := client.Call(ctx, protocol.MethodInitialize, map[string]any{
		"clientInfo":   map[string]any{"name": "mcp-sidecar-demo", "version": demoVersion},
		"capabilities": map[string]any{"elicitation": true},
		"servers":      servers,
	}, &initRes); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	out.printf("-> initialize           sidecar %s %s; servers %v; launcher %s (%s)\n", initRes.ServerInfo.Name, initRes.ServerInfo.Version, initRes.Servers, initRes.Launcher.Status, initRes.Launcher.Reason)
	if err := client.Notify(ctx, protocol.MethodInitialized, map[string]any{}); err != nil {
		return err
	}

	out.printf("-> session/open         {\"startup\":\"eager\"}\n")
	var open protocol.SessionOpenResult
	out.hold() // round 0's notifications follow the answer on the wire: print them after it
	err = client.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open)
	if err == nil {
		states := make([]string, len(open.Servers))
		for i, st := range open.Servers {
			states[i] = "{" + st.Name + " " + st.State + "}"
		}
		out.printf("     session %s: [%s]\n", open.SessionID, strings.Join(states, " "))
	}
	out.release()
	if err != nil {
		return fmt.Errorf("session/open: %w", err)
	}
	select {
	case <-complete:
	case <-ctx.Done():
		return errors.New("no mcp/startupComplete")
	}

	var list protocol.ToolsListResult
	if err := client.Call(ctx, protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	out.printf("-> tools/list           %d tools (catalog %s):\n", len(list.Tools), list.Servers[0].Catalog)
	for _, t := range list.Tools {
		out.printf("     %-28s %s\n", t.Name, clip(firstLine(t.Description), 72))
	}

	call := func(name string, args, extra map[string]any) (json.RawMessage, error) {
		params := map[string]any{"sessionId": open.SessionID, "name": name, "arguments": args}
		for k, v := range extra {
			params[k] = v
		}
		var res json.RawMessage
		err := client.Call(ctx, protocol.MethodToolsCall, params, &res)
		return res, err
	}
	show := func(res json.RawMessage) {
		var r struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Structured json.RawMessage `json:"structuredContent"`
			IsError    bool            `json:"isError"`
		}
		_ = json.Unmarshal(res, &r)
		for _, c := range r.Content {
			if c.Type == "text" {
				out.printf("     text: %s\n", indent(c.Text))
			}
		}
		if len(r.Structured) > 0 {
			out.printf("     structuredContent: %s\n", r.Structured)
		}
		if r.IsError {
			out.printf("     (isError: the tool ran and failed)\n")
		}
	}

	out.printf("-> tools/call           mcp__example__echo {\"text\":\"hello from a harness\"}\n")
	res, err := call("mcp__example__echo", map[string]any{"text": "hello from a harness"}, nil)
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	show(res)

	out.printf("-> tools/call           mcp__example__add {\"a\":2,\"b\":40}\n")
	if res, err = call("mcp__example__add", map[string]any{"a": 2, "b": 40}, nil); err != nil {
		return fmt.Errorf("add: %w", err)
	}
	show(res)

	out.printf("-> tools/call           mcp__example__slow {\"seconds\":0.3,\"steps\":3} with meta.progressToken \"demo-1\"\n")
	if res, err = call("mcp__example__slow", map[string]any{"seconds": 0.3, "steps": 3}, map[string]any{"meta": map[string]any{"progressToken": "demo-1"}}); err != nil {
		return fmt.Errorf("slow: %w", err)
	}
	show(res)

	policy := json.RawMessage(`{"mode":"workspace-write","writable_roots":["/tmp/demo"],"network":false,"budget":12345678901234567890}`)
	out.printf("-> tools/call           mcp__example__sandbox_info with sandboxState %s\n", policy)
	if res, err = call("mcp__example__sandbox_info", map[string]any{}, map[string]any{"sandboxState": policy}); err != nil {
		return fmt.Errorf("sandbox_info: %w", err)
	}
	show(res)

	out.printf("-> tools/call           mcp__example__ask {\"question\":\"Favourite colour?\"}\n")
	if res, err = call("mcp__example__ask", map[string]any{"question": "Favourite colour?"}, nil); err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	show(res)

	out.printf("-> tools/call           mcp__example__nope (a tool that does not exist)\n")
	if _, err = call("mcp__example__nope", map[string]any{}, nil); err != nil {
		if pe := (*protocol.Error)(nil); errors.As(err, &pe) {
			out.printf("     error %d (%s): %s\n", pe.Code, pe.Data.Kind, pe.Message)
		} else {
			out.printf("     error: %v\n", err)
		}
	}

	var status protocol.ServersStatusResult
	if err := client.Call(ctx, protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &status); err != nil {
		return fmt.Errorf("servers/status: %w", err)
	}
	pids := []int{}
	for _, st := range status.Servers {
		out.printf("-> servers/status       %s: %s over %s, pid %d, protocol %s, sandbox capability %q\n", st.Name, st.State, st.Transport, st.PID, st.ProtocolVersion, st.Sandbox)
		if st.PID > 0 {
			pids = append(pids, st.PID)
		}
	}

	if err := client.Call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	_ = client.Notify(ctx, protocol.MethodExit, nil)
	err = cmd.Wait()
	client.Close()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return err
		}
		code = ee.ExitCode()
	}
	gone := true
	for _, pid := range pids {
		if processExists(pid) {
			gone = false
		}
	}
	out.printf("-> shutdown, exit       sidecar exited with status %d; server processes %v gone: %v\n", code, pids, gone)
	if code != 0 || !gone {
		return errors.New("the sidecar did not exit cleanly")
	}
	return nil
}

func indent(s string) string {
	return strings.ReplaceAll(s, "\n", "\n           ")
}
