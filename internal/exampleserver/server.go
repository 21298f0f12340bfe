// Package exampleserver is the MCP server embedded in the mcp-sidecar binary
// (`mcp-sidecar example-server`): a small, realistic server that exercises
// everything the sidecar forwards (tools with structured output, progress,
// cancellation, elicitation, resources, a skill, a prompt) and, with
// Options.Sandbox, the sandbox request metadata.
package exampleserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/sandbox/servermeta"
)

// Name is the server's implementation name in its initialize result.
const Name = "mcp-sidecar-example"

// Options configure the example server.
type Options struct {
	// Sandbox advertises experimental["codex/sandbox-state"], opting in to
	// the sandbox request metadata.
	Sandbox bool
	// AllowUnsandboxed is the operator's opt-out: run_sandboxed runs the
	// command directly when the request carried no launcher. Off, it fails
	// closed.
	AllowUnsandboxed bool
	// Version is reported in serverInfo; "dev" when empty.
	Version string
	// Logger receives go-sdk's server log; nil discards it.
	Logger *slog.Logger
	// MaxOutput bounds the stdout and stderr each kept by run_sandboxed;
	// 0 means 64 KiB.
	MaxOutput int
}

// Run serves one MCP session over t until the client disconnects or ctx
// ends. The transport is wrapped with servermeta.Transport so that tools
// see the sandbox policy as it arrived.
func Run(ctx context.Context, opts Options, t mcp.Transport) error {
	return New(opts).Run(ctx, servermeta.Transport(t))
}

// New returns the example server. Serve it through servermeta.Transport
// (Run does) or sandbox_info reports a re-encoded policy.
func New(opts Options) *mcp.Server {
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	if opts.Sandbox {
		caps.Experimental = map[string]any{servermeta.KeyState: map[string]any{}}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "mcp-sidecar example server", Version: version}, &mcp.ServerOptions{
		Instructions: "A demonstration server: echo and add are pure; slow reports progress; ask asks the user; " +
			"sandbox_info and run_sandboxed show the sandbox metadata a host attaches to a call.",
		Capabilities: caps,
		Logger:       opts.Logger,
	})
	h := &handlers{opts: opts}

	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Title:       "Echo",
		Description: "Return the given text unchanged. Useful to check that a server is reachable.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, h.echo)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add",
		Title:       "Add two numbers",
		Description: "Add two numbers and return their sum, as text and as structured content {sum}.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, h.add)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "slow",
		Title: "Slow operation",
		Description: "Wait for the given number of seconds in equal steps, sending a progress notification " +
			"after each step when the request has a progressToken. Stops at once when the call is cancelled.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, h.slow)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "ask",
		Title:       "Ask the user",
		Description: "Ask the user a question through the client (elicitation) and return the answer.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, h.ask)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "sandbox_info",
		Title: "Show sandbox metadata",
		Description: "Return the codex/sandbox-state policy this call carried, byte for byte as received, " +
			"followed on the next line by the codex/sandbox-launcher object when one came; " +
			"or \"no sandbox state\".",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, h.sandboxInfo)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "run_sandboxed",
		Title: "Run a command in the sandbox",
		Description: "Run a command through the host's sandbox launcher, under the policy of this call: " +
			"<launcher> sandbox --sandbox-state-json <policy> -- <command...>. " +
			"Refuses to run when the host sent no launcher.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, h.runSandboxed)

	s.AddResource(&mcp.Resource{
		URI:         "example://readme",
		Name:        "readme",
		Title:       "About this server",
		Description: "What the example server offers and how to try it.",
		MIMEType:    "text/plain",
	}, textResource(readme))
	s.AddResource(&mcp.Resource{
		URI:         "example://skills/sandboxed-commands",
		Name:        "sandboxed-commands",
		Title:       "Skill: running commands sandboxed",
		Description: "How an agent should use run_sandboxed.",
		MIMEType:    "mcp/skill",
	}, textResource(skill))

	s.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Title:       "Greet someone",
		Description: "A friendly greeting for the given name.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "Who to greet", Required: true}},
	}, greet)
	return s
}

func ptr[T any](v T) *T { return &v }

type handlers struct {
	opts Options
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func (h *handlers) echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return textResult(in.Text), nil, nil
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum" jsonschema:"a + b"`
}

func (h *handlers) add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
	sum := in.A + in.B
	if math.IsInf(sum, 0) {
		return nil, addOut{}, errors.New("the sum overflows a 64-bit float")
	}
	return textResult(fmt.Sprint(sum)), addOut{Sum: sum}, nil
}

type slowIn struct {
	Seconds float64 `json:"seconds,omitempty" jsonschema:"total duration in seconds (default 1, at most 300)"`
	Steps   int     `json:"steps,omitempty" jsonschema:"number of steps, one progress notification each (default 5, at most 1000)"`
}

func (h *handlers) slow(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
	if in.Seconds == 0 {
		in.Seconds = 1
	}
	if in.Steps == 0 {
		in.Steps = 5
	}
	if in.Seconds < 0 || in.Seconds > 300 || in.Steps < 0 || in.Steps > 1000 {
		return nil, nil, fmt.Errorf("seconds must be in [0, 300] and steps in [1, 1000]; got %v and %d", in.Seconds, in.Steps)
	}
	token := req.Params.GetProgressToken()
	step := time.Duration(in.Seconds * float64(time.Second) / float64(in.Steps))
	timer := time.NewTimer(step)
	defer timer.Stop()
	for i := 1; i <= in.Steps; i++ {
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("cancelled after %d of %d steps: %w", i-1, in.Steps, context.Cause(ctx))
		case <-timer.C:
		}
		if token != nil {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(i),
				Total:         float64(in.Steps),
				Message:       fmt.Sprintf("step %d of %d", i, in.Steps),
			})
			if err != nil {
				return nil, nil, fmt.Errorf("sending progress: %w", err)
			}
		}
		timer.Reset(step)
	}
	return textResult(fmt.Sprintf("done: %d steps in %vs", in.Steps, in.Seconds)), nil, nil
}

type askIn struct {
	Question string `json:"question" jsonschema:"the question to put to the user"`
}

func (h *handlers) ask(ctx context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
	question := &mcp.ElicitParams{
		Mode:    "form",
		Message: in.Question,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"answer": map[string]any{"type": "string", "title": "Answer", "description": "Your answer"},
			},
			"required": []string{"answer"},
		},
	}
	var res *mcp.ElicitResult
	params := req.Session.InitializeParams()
	switch {
	case params == nil || params.ProtocolVersion < "2026-07-28":
		// A client of 2025-11-25 or earlier is asked with a request of the
		// server's own.
		var err error
		if res, err = req.Session.Elicit(ctx, question); err != nil {
			return nil, nil, fmt.Errorf("asking the user: %w", err)
		}
	default:
		// A client of 2026-07-28 is asked in the result, and sends the call
		// again with the answer (multi round-trip requests).
		answer, ok := req.Params.InputResponses["answer"]
		if !ok {
			if params.Capabilities == nil || params.Capabilities.Elicitation == nil {
				return nil, nil, errors.New("asking the user: the client does not support elicitation")
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"answer": question}}, nil, nil
		}
		if res, ok = answer.(*mcp.ElicitResult); !ok {
			return nil, nil, fmt.Errorf("asking the user: the client answered with a %T", answer)
		}
	}
	switch res.Action {
	case "accept":
		answer, ok := res.Content["answer"].(string)
		if !ok {
			return nil, nil, errors.New("the client accepted but sent no answer")
		}
		return textResult(answer), nil, nil
	case "decline":
		return textResult("the user declined to answer"), nil, nil
	default:
		return textResult("the user dismissed the question"), nil, nil
	}
}

func (h *handlers) sandboxInfo(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	auth, err := servermeta.FromRequest(req, servermeta.Options{})
	if err != nil {
		return nil, nil, err
	}
	if !auth.HasState() {
		return textResult("no sandbox state"), nil, nil
	}
	text := string(auth.State)
	if auth.LauncherJSON != nil {
		// Compact JSON has no raw newline, so the first one separates the two.
		text += "\n" + string(auth.LauncherJSON)
	}
	return textResult(text), nil, nil
}

type runIn struct {
	Command []string `json:"command" jsonschema:"the program and its arguments, not a shell string"`
}

type runOut struct {
	ExitCode  int    `json:"exitCode" jsonschema:"the command's exit status; -1 when it was killed by a signal"`
	Stdout    string `json:"stdout" jsonschema:"standard output, truncated to the output bound"`
	Stderr    string `json:"stderr" jsonschema:"standard error, truncated to the output bound"`
	Sandboxed bool   `json:"sandboxed" jsonschema:"whether the command ran through the sandbox launcher"`
}

func (h *handlers) runSandboxed(ctx context.Context, req *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, runOut, error) {
	if len(in.Command) == 0 || in.Command[0] == "" {
		return nil, runOut{}, errors.New("command must name a program")
	}
	auth, err := servermeta.FromRequest(req, servermeta.Options{RequireLauncher: true, AllowMissingLauncher: h.opts.AllowUnsandboxed})
	if err != nil {
		return nil, runOut{}, fmt.Errorf("refusing to run %q: %w", in.Command[0], err)
	}
	argv := in.Command
	sandboxed := auth.Launcher != "" && auth.HasState()
	if sandboxed {
		if argv, err = auth.Command(in.Command); err != nil {
			return nil, runOut{}, err
		}
	}

	max := h.opts.MaxOutput
	if max <= 0 {
		max = 64 << 10
	}
	stdout, stderr := &boundedBuffer{max: max}, &boundedBuffer{max: max}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	killGroupOnCancel(cmd)
	cmd.WaitDelay = time.Second
	err = cmd.Run()

	out := runOut{Stdout: stdout.String(), Stderr: stderr.String(), Sandboxed: sandboxed}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, runOut{}, fmt.Errorf("%q cancelled: %w", in.Command[0], context.Cause(ctx))
	case errors.As(err, &exitErr):
		out.ExitCode = exitErr.ExitCode()
	case err != nil:
		return nil, runOut{}, fmt.Errorf("running %q: %w", argv[0], err)
	}

	var text strings.Builder
	if !sandboxed {
		text.WriteString("warning: ran without a sandbox (operator opt-out)\n")
	}
	fmt.Fprintf(&text, "exit status %d\n", out.ExitCode)
	text.WriteString(out.Stdout)
	if out.Stderr != "" {
		fmt.Fprintf(&text, "\nstderr:\n%s", out.Stderr)
	}
	res := textResult(text.String())
	res.IsError = out.ExitCode != 0
	return res, out, nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func textResource(text string) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
	}
}

func greet(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Arguments["name"]
	if name == "" {
		return nil, errors.New("argument name is required")
	}
	return &mcp.GetPromptResult{
		Description: "Greeting for " + name,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: fmt.Sprintf("Say hello to %s in one friendly sentence.", name)},
		}},
	}, nil
}

// boundedBuffer keeps the first max bytes written and discards the rest,
// so a chatty command can neither exhaust memory nor block on its pipe.
type boundedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - b.buf.Len()
	if len(p) > room {
		b.truncated = true
	}
	if room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return b.buf.String() + "\n[output truncated]"
	}
	return b.buf.String()
}

const readme = `mcp-sidecar example server

Tools:
  echo {text}               returns the text
  add {a, b}                returns a + b, also as structuredContent {sum}
  slow {seconds, steps}     waits, sending progress after each step; honours cancellation
  ask {question}            asks the user through the client (elicitation)
  sandbox_info {}           shows the codex/sandbox-state policy and launcher this call carried
  run_sandboxed {command}   runs a command as <launcher> sandbox --sandbox-state-json <policy> -- <command>

Resources: example://readme (this text), example://skills/sandboxed-commands (an mcp/skill).
Prompt: greet {name}.

Start it with: mcp-sidecar example-server [--sandbox]
With --sandbox it advertises capabilities.experimental["codex/sandbox-state"], so a host
attaches the policy of each call (and a verified launcher, for stdio servers) to the call's _meta.
`

const skill = `---
name: sandboxed-commands
description: Run shell commands under the host's sandbox policy with the run_sandboxed tool.
---

Use run_sandboxed to run a program under the sandbox policy of the current call.
Pass the program and its arguments as a list, for example ["ls", "-l"], never one shell string.
The tool refuses to run when the host sent no launcher; do not retry with another tool to get
around the refusal, tell the user instead.
A non-zero exit status comes back as an error result with the command's stdout and stderr.
`
