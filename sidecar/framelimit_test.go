package sidecar_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// TestHostFrameLimit: initialize.limits.maxFrameBytes lowers the limit of
// the host's frames from the frame after initialize's answer (initialize
// itself is not held to it); it cannot raise the operator's
// -max-frame-bytes; and a limit under 4 KiB is refused as a mistake.
func TestHostFrameLimit(t *testing.T) {
	const flag = 1 << 20
	tests := []struct {
		name     string
		asked    int64 // limits.maxFrameBytes; 0: absent
		initPad  int   // bytes of padding in initialize's clientInfo.name
		initCode int64 // initialize's error; 0: success
		accepted int   // sessionId bytes of a servers/status that must be read
		refused  int   // of one that must exceed the limit
		limit    string
	}{
		{name: "lowered", asked: 8192, initPad: 20000, accepted: 4000, refused: 9000, limit: "limit of 8192 bytes"},
		{name: "not raised", asked: 4 << 20, accepted: 900 << 10, refused: 2 << 20, limit: "limit of 1048576 bytes"},
		{name: "absent", accepted: 900 << 10, refused: 2 << 20, limit: "limit of 1048576 bytes"},
		{name: "too small", asked: 100, initCode: protocol.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startFlaggedHost(t, sidecar.Options{MaxFrameBytes: flag})
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			params := map[string]any{"clientInfo": map[string]any{"name": "t" + strings.Repeat("i", tt.initPad)}, "cacheDir": t.TempDir()}
			if tt.asked != 0 {
				params["limits"] = map[string]any{"maxFrameBytes": tt.asked}
			}
			err := c.Call(ctx, protocol.MethodInitialize, params, nil)
			if tt.initCode != 0 {
				if pe, ok := err.(*protocol.Error); !ok || pe.Code != tt.initCode || !strings.Contains(pe.Message, "at least 4096") {
					t.Fatalf("initialize: %v, want %d naming the least limit", err, tt.initCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			status := func(pad int) error {
				return c.Call(ctx, protocol.MethodServersStatus, map[string]any{"sessionId": strings.Repeat("p", pad)}, nil)
			}
			if pe, ok := status(tt.accepted).(*protocol.Error); !ok || pe.Code != protocol.CodeUnknownSession {
				t.Errorf("a frame within the limit: %v, want it read (-32001 for the unknown session)", pe)
			}
			if pe, ok := status(tt.refused).(*protocol.Error); !ok || pe.Code != protocol.CodeParseError || !strings.Contains(pe.Message, tt.limit) {
				t.Errorf("a frame over the limit: %v, want -32700 naming the %s", pe, tt.limit)
			}
		})
	}
}

// startFlaggedHost serves the host protocol in process with opts (as the
// serve command's flags set them) and returns the host's client.
func startFlaggedHost(t *testing.T, opts sidecar.Options) *hostclient.Client {
	t.Helper()
	hostR, sidecarW := io.Pipe()
	sidecarR, hostW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	opts.Env, opts.Logger = os.LookupEnv, slog.New(slog.DiscardHandler)
	go func() {
		defer close(done)
		sidecar.Serve(ctx, sidecarR, sidecarW, opts)
		sidecarW.Close()
		sidecarR.Close()
	}()
	c := hostclient.New(ctx, hostR, hostW, hostclient.Options{Checker: schemaChecker(t)})
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
	})
	return c
}
