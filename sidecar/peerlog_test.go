package sidecar_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestPeerBytesInTheSidecarLog: what the host or a server sent reaches the
// sidecar's log (here at debug level) cut short, and the records that
// carry it are rate-limited per message (on a stopped clock: the first
// peerlog.DefaultBurst of each): malformed $/cancelRequest params, an
// unknown notification's method, an unknown feature's name, a server's
// log data, each 64 KiB.
func TestPeerBytesInTheSidecarLog(t *testing.T) {
	var out lockedBuffer
	stopped := time.Unix(1000, 0)
	logger := slog.New(peerlog.NewHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
		peerlog.HandlerOptions{Now: func() time.Time { return stopped }}))
	ctx, client := tappedSidecar(t, nil, logger, nil) // no schema check: the host misbehaves on purpose
	call := func(method string, params, result any) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, testTimeout)
		defer cancel()
		if err := client.Call(cctx, method, params, result); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	big := strings.Repeat("x", 64<<10)
	bigJSON, _ := json.Marshal(big)
	const each = 3 * peerlog.DefaultBurst
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("log", fixture.BehaviorLog)}})}
	call(protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "test"}, "cacheDir": t.TempDir(),
		"servers": servers, "features": map[string]bool{big: true}}, nil)
	var open protocol.SessionOpenResult
	call(protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open)
	for range each {
		if err := client.Notify(ctx, protocol.MethodCancelRequest, json.RawMessage(bigJSON)); err != nil {
			t.Fatal(err)
		}
		if err := client.Notify(ctx, "x/"+big, nil); err != nil {
			t.Fatal(err)
		}
		call(protocol.MethodToolsCall, map[string]any{"sessionId": open.SessionID, "name": "mcp__s__log", "arguments": map[string]any{"data": big}}, nil)
	}

	counts := make(map[string]int)
	for _, line := range strings.Split(strings.TrimSpace(string(out.Bytes())), "\n") {
		if len(line) > 2*peerlog.MaxBytes+512 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
		_, rest, _ := strings.Cut(line, "msg=")
		if msg, ok := strings.CutPrefix(rest, `"`); ok {
			rest, _, _ = strings.Cut(msg, `"`)
		}
		counts[rest]++
	}
	for msg, want := range map[string]int{
		"malformed $/cancelRequest": peerlog.DefaultBurst,
		"ignoring notification":     peerlog.DefaultBurst,
		"server log":                peerlog.DefaultBurst,
		"unknown feature ignored":   1,
	} {
		if diff := cmp.Diff(want, counts[msg]); diff != "" {
			t.Errorf("records of %q, %d of them sent (-want +got):\n%s", msg, each, diff)
		}
	}
}
