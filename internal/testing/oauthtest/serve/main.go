// Command serve runs oauthtest's authorization server and the MCP server it
// protects on loopback, for the tests of the TypeScript and Rust clients
// (clients/typescript/run.sh and clients/rust/run.sh build it): they need
// a real OAuth-protected Streamable HTTP server to answer mcp/authorize
// against, and have no Go test around them to run one.
//
// It prints one JSON line, {"url": MCP endpoint, "issuer": authorization
// server}, and serves until its stdin ends (so that it never outlives the
// test that started it) or it gets SIGINT or SIGTERM; then it prints a
// second line with what the servers saw, {"counts": ..., "accepted": N,
// "denied": N}, and exits 0.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: serve (no arguments; stops when stdin ends)")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "oauthtest serve:", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	as := oauthtest.StartAuthServer(oauthtest.Config{})
	defer as.Close()
	srv := oauthtest.StartServer(as, oauthtest.ServerConfig{})
	defer srv.Close()

	enc := json.NewEncoder(stdout)
	if err := enc.Encode(map[string]string{"url": srv.URL(), "issuer": as.URL()}); err != nil {
		return err
	}
	eof := make(chan struct{})
	go func() {
		// Ends with the process when a signal came first.
		io.Copy(io.Discard, stdin)
		close(eof)
	}()
	select {
	case <-eof:
	case <-ctx.Done():
	}
	return enc.Encode(map[string]any{"counts": as.Counts(), "accepted": len(srv.Tokens()), "denied": srv.Denied()})
}
