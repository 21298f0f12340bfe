package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// MCPDoc is the mcp command's help text.
const MCPDoc = `Usage: mcp-sidecar mcp [--config FILE]... [--command "CMD ARGS..." | --url URL]
                       [--http ADDR [--token TOKEN]] [--deferred] [--eager]

Serves your MCP servers as one MCP server, for any MCP client (Claude
Desktop, Cursor, Codex, VS Code, the Inspector): the sidecar's runtime
behind MCP. Tools of several servers are named mcp__<server>__<tool>; with
one server, by its own names. Catalogs come from the disk cache, so a
server with a cached catalog starts only when first used; tools,
resources, prompts, completion, logging, progress, cancellation and the
servers' questions (elicitation, sampling, roots) pass through.

By default it speaks MCP on stdin/stdout, as a client spawns it; the
servers end when the client closes stdin. --http ADDR serves Streamable
HTTP at http://ADDR/mcp instead, for many clients at once, each with its
own session; the servers end when mcp-sidecar ends. ADDR is loopback unless
you give a bearer --token (or MCP_SIDECAR_TOKEN). --deferred gives clients
three tools (search_tools, describe_tools, call_tool) instead of every
definition; "deferred = true" in the [mcp] table of the settings file,
$XDG_CONFIG_HOME/mcp-sidecar/config.toml (~/.config/mcp-sidecar/...), does
so for every client, and --deferred=false undoes it for one.
docs/gateway.md shows each client's configuration.

Config files are as for doctor.

Examples:
  mcp-sidecar mcp
  mcp-sidecar mcp --deferred
  mcp-sidecar mcp --http 127.0.0.1:8765
  mcp-sidecar mcp --command "npx -y @modelcontextprotocol/server-everything"
`

// MCP runs the mcp command.
func MCP(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	src.register(fs)
	cacheDir := fs.String("cache-dir", "", "catalog cache `DIR` (default $XDG_CACHE_HOME/mcp-sidecar)")
	addr := fs.String("http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio (host:port)")
	token := fs.String("token", "", "bearer `TOKEN` HTTP clients must send (default $MCP_SIDECAR_TOKEN); needed off loopback")
	deferred := fs.Bool("deferred", false, "give clients search_tools, describe_tools and call_tool instead of every tool")
	eager := fs.Bool("eager", false, "start every server when a client connects, not at first use")
	logLevel := fs.String("log-level", "warn", "stderr log `LEVEL`: debug, info, warn or error")
	if code, done := parseFlags(&env, "mcp", fs, args, 0, 0); done {
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError(env, "mcp", fmt.Errorf("bad --log-level %q: use debug, info, warn or error", *logLevel))
	}
	// The settings file (config.DefaultSettingsFile) sets what the flags
	// do once for every client's gateway; a flag given wins.
	if path, ok := config.DefaultSettingsFile(env.lookup); ok {
		settings, err := config.ReadSettings(path)
		if err != nil {
			return fail(ctx, env.Stderr, "mcp", err)
		}
		if d := settings.MCP.Deferred; d != nil && !fs.Changed("deferred") {
			*deferred = *d
		}
	}
	if *token == "" {
		*token, _ = env.lookup("MCP_SIDECAR_TOKEN")
	}
	if *addr == "" && *token != "" && fs.Changed("token") {
		return usageError(env, "mcp", errors.New("--token goes with --http"))
	}
	if *addr != "" {
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			return usageError(env, "mcp", fmt.Errorf("--http %q: want host:port, e.g. 127.0.0.1:8765", *addr))
		}
		if !gateway.IsLoopback(host) && *token == "" {
			return usageError(env, "mcp", fmt.Errorf("--http %s is reachable from other machines: give a bearer --token (or MCP_SIDECAR_TOKEN), or listen on 127.0.0.1", *addr))
		}
	}
	l, err := src.load(env)
	if err != nil {
		return usageError(env, "mcp", err)
	}
	init, err := l.initializeParams(env, *cacheDir, "")
	if err != nil {
		return fail(ctx, env.Stderr, "mcp", err)
	}
	// A model reads these results: they are cut to its budget, as for a
	// harness, unlike the commands that print a result for a person.
	init["features"] = map[string]bool{"mcp_lazy_stdio_startup": true}
	// The client's own config names this gateway too, often: discovering
	// it would start a gateway that starts a gateway, and so on.
	servers := []string{}
	for _, name := range l.names {
		if cfg := l.servers[name]; cfg != nil && isGateway(cfg.Command, cfg.Args) {
			fmt.Fprintf(env.Stderr, "mcp-sidecar mcp: leaving out server %q: it is this gateway (mcp-sidecar mcp)\n", name)
			continue
		}
		servers = append(servers, name)
	}
	stderr := &lockedWriter{w: env.Stderr}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	r := reaper.New(reaper.Options{Watchdog: watchdogCommand(), Logger: logger})
	defer r.Close()
	g, err := gateway.Start(ctx, gateway.Options{
		Initialize: init,
		Sidecar: sidecar.Options{
			Version:        env.Version,
			Env:            env.LookupEnv,
			Logger:         logger,
			InlineSource:   commandLine,
			StartupTimeout: l.startupTimeout,
			Reaper:         r,
		},
		Cwd:      env.Cwd,
		Servers:  servers,
		Deferred: *deferred,
		Eager:    *eager,
		Logger:   logger,
		Checker:  env.Checker,
	})
	if err != nil {
		return fail(ctx, env.Stderr, "mcp", err)
	}
	defer g.Close(context.WithoutCancel(ctx))
	for _, p := range g.Initialized().Config.Errors {
		fmt.Fprintf(stderr, "mcp-sidecar mcp: %s\n", p.Message)
	}
	if *addr == "" {
		t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
		if err := g.ServeStdio(ctx, t); err != nil && !interrupted(ctx) {
			return fail(ctx, stderr, "mcp", err)
		}
		if interrupted(ctx) {
			return exitInterrupted
		}
		return exitOK
	}
	return serveHTTP(ctx, stderr, g, *addr, *token)
}

func serveHTTP(ctx context.Context, stderr io.Writer, g *gateway.Gateway, addr, token string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(ctx, stderr, "mcp", err)
	}
	srv := &http.Server{Handler: g.Handler(gateway.HTTPOptions{Token: token}), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "mcp-sidecar mcp: serving MCP at http://%s/mcp (Ctrl-C ends it and its servers)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fail(ctx, stderr, "mcp", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return exitInterrupted
}

// isGateway reports whether a stdio server's command line runs
// 'mcp-sidecar mcp': the binary itself, or its npm package through npx.
func isGateway(command string, args []string) bool {
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	var rest []string
	switch {
	case base == "mcp-sidecar":
		rest = args
	case base == "npx" || base == "bunx" || base == "pnpx":
		i := slices.IndexFunc(args, func(a string) bool { return a == "mcp-sidecar" || strings.HasPrefix(a, "mcp-sidecar@") })
		if i < 0 {
			return false
		}
		rest = args[i+1:]
	default:
		return false
	}
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") {
			return a == "mcp"
		}
	}
	return false
}

// nopWriteCloser keeps the process's stdout open when the MCP connection
// closes its writer.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
