// Command sandboxed-server is a minimal MCP server, built on go-sdk, that
// runs commands under the sandbox policy its host attaches to each call.
//
// It advertises capabilities.experimental["codex/sandbox-state"], so a host
// such as Codex or mcp-sidecar sends, in each tools/call's _meta, the
// call's policy (codex/sandbox-state) and, for a local stdio server, a
// verified launcher (codex/sandbox-launcher). The "run" tool executes
//
//	<launcher> sandbox --sandbox-state-json <policy> -- <command...>
//
// with the policy bytes exactly as the host sent them, and refuses to run
// when no launcher came, unless the operator passes -allow-unsandboxed.
//
// Configure it as a stdio server, for example in Codex's config.toml:
//
//	[mcp_servers.sandboxed]
//	command = "go"
//	args = ["run", "./examples/sandboxed-server"]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/sandbox/servermeta"
)

func main() {
	allowUnsandboxed := flag.Bool("allow-unsandboxed", false,
		"operator opt-out: run commands directly when the host sends no launcher")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The wrapper lets the handler read the policy as it arrived on the
	// wire; go-sdk's own decoding would round big numbers.
	t := servermeta.Transport(&mcp.StdioTransport{})
	if err := newServer(*allowUnsandboxed).Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

type runArgs struct {
	Command []string `json:"command" jsonschema:"the program and its arguments"`
}

func newServer(allowUnsandboxed bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sandboxed-server", Version: "0.1.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Experimental: map[string]any{servermeta.KeyState: map[string]any{}},
		},
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "run",
		Description: "Run a command under the sandbox policy of this call and return its combined output.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in runArgs) (*mcp.CallToolResult, any, error) {
		if len(in.Command) == 0 {
			return nil, nil, errors.New("command is empty")
		}
		auth, err := servermeta.FromRequest(req, servermeta.Options{
			RequireLauncher:      true,
			AllowMissingLauncher: allowUnsandboxed,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("refusing to run %q: %w", in.Command[0], err)
		}
		argv := in.Command
		if auth.Launcher != "" && auth.HasState() {
			if argv, err = auth.Command(in.Command); err != nil {
				return nil, nil, err
			}
		}
		// Stdin stays /dev/null: the server's own stdin is the MCP stream.
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
		var exitErr *exec.ExitError
		switch {
		case errors.As(err, &exitErr):
			res.IsError = true
		case err != nil:
			return nil, nil, fmt.Errorf("running %q: %w", argv[0], err)
		}
		return res, nil, nil
	})
	return s
}
