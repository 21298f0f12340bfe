package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/memrelease"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// processRSS is the resident size of process pid (Linux), false where
// /proc does not tell.
func processRSS(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// slowReader takes two milliseconds for every 64 KiB it reads: a host
// that takes its time with a large result.
type slowReader struct {
	r    io.Reader
	read int // bytes since the last pause
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.read >= 64<<10 {
		time.Sleep(2 * time.Millisecond)
		s.read = 0
	}
	n, err := s.r.Read(p[:min(len(p), 64<<10-s.read)])
	s.read += n
	return n, err
}

// raceBuild reports whether the test binary runs under the race detector,
// whose shadow memory a process does not give back.
func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// TestLargeResultsMemoryReturned: a sidecar process that relayed four
// tool results of 60 MB gives the memory back: its resident size returns
// to within half a result of what it was before them. Both ways a large
// result goes: whole to a host that turned the output limit off (it
// stayed 70 MB above for minutes), and cut to 25,000 tokens with the
// whole kept in a file (600 MB above: nothing large reached the host, so
// nothing asked for the memory back). Long (240 MB through three
// processes, twice), so it runs with the soak tests (MCP_SIDECAR_SOAK=1
// or -soak), and not under the race detector, whose shadow memory stays
// resident: CI runs it on its own, without -race (.ci/run).
//
//	MCP_SIDECAR_SOAK=1 go test -count=1 -run TestLargeResultsMemoryReturned -v ./sidecar/
func TestLargeResultsMemoryReturned(t *testing.T) {
	if !soaking() {
		t.Skip("long: run with -soak or MCP_SIDECAR_SOAK=1")
	}
	if raceBuild() {
		t.Skip("the race detector's shadow memory stays resident")
	}
	for _, limit := range []bool{false, true} {
		t.Run(fmt.Sprintf("limit=%v", limit), func(t *testing.T) { largeResultsMemoryReturned(t, limit) })
	}
}

func largeResultsMemoryReturned(t *testing.T, limit bool) {
	const result = 60 << 20
	// The files of cut results go to a folder of the test's.
	p := startSidecarProcess(t, "TMPDIR="+t.TempDir())
	pid := p.cmd.Process.Pid
	if _, ok := processRSS(pid); !ok {
		t.Skip("no /proc to read a process's resident size from")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*testTimeout)
	defer cancel()
	// The host reads at about 30 MB/s, a result in two seconds: a release
	// that comes while a result is still being written leaves its memory
	// with the process (as it did on a loaded CI machine).
	c := hostclient.New(ctx, &slowReader{r: p.stdout}, p.stdin, hostclient.Options{MaxFrameBytes: 4 * result})
	defer c.Close()
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{ResultBytes: result}})}
	// Without the limit the results are relayed whole; with it, each is
	// cut to 25,000 tokens and kept whole in a file.
	if err := c.Call(ctx, protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "test"}, "cacheDir": t.TempDir(), "servers": servers,
		"features": map[string]bool{"mcp_tool_output_limit": limit}}, nil); err != nil {
		t.Fatal(err)
	}
	var open protocol.SessionOpenResult
	if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
		t.Fatal(err)
	}
	before, _ := processRSS(pid)
	peak := before
	for range 4 {
		var res struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := c.Call(ctx, protocol.MethodToolsCall, map[string]any{"sessionId": open.SessionID, "name": "mcp__s__echo"}, &res); err != nil {
			t.Fatal(err)
		}
		if _, cut := res.Meta[protocol.MetaOutputCut]; cut != limit {
			t.Fatalf("result cut: %v, want %v", cut, limit)
		}
		if rss, _ := processRSS(pid); rss > peak {
			peak = rss
		}
	}
	// No event says the memory went back: the resident size is read until
	// it has, or until the hang guard.
	deadline := time.Now().Add(2 * testTimeout)
	for {
		rss, _ := processRSS(pid)
		if rss-before < result/2 {
			t.Logf("resident: %d MiB before, %d MiB at most after a result, %d MiB at the end", before>>20, peak>>20, rss>>20)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("resident: %d MiB before four results of %d MiB, %d MiB at most after a result, %d MiB %v after them, want less than %d MiB more",
				before>>20, result>>20, peak>>20, rss>>20, 2*testTimeout, result>>21)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLargePayloadsScheduleRelease: a large result schedules a release of
// the sidecar's memory whichever way it goes: relayed whole (a large host
// frame), or cut to its limit (the host gets a small frame, and only the
// server's message and the cut tell of it); and a large message of a
// server alone schedules one (mcpclient.Options.MessageSize). The
// releaser's timers are the test's: the release runs when the test says.
func TestLargePayloadsScheduleRelease(t *testing.T) {
	// A result cut to its limit (25,000 tokens) is about 100 kB.
	const above, result = 256 << 10, 512 << 10
	tests := []struct {
		name  string
		limit bool
		// call makes the large payload: a tools/call, or the server's
		// message told of directly.
		call bool
	}{
		{name: "result relayed whole", limit: false, call: true},
		{name: "result cut to its limit", limit: true, call: true},
		{name: "server message", limit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheduled := make(chan func(), 16)
			freed := make(chan struct{}, 16)
			// The MessageSize of each connection of the server.
			sizes := make(chan func(int), 4)
			h := newHookedHarness(t, sidecar.Hooks{
				Memory: &memrelease.Options{
					Above: above,
					Free:  func() { freed <- struct{}{} },
					Now:   func() time.Time { return time.Unix(1000, 0) },
					After: func(_ time.Duration, f func()) func() bool {
						scheduled <- f
						return func() bool { return true }
					},
				},
				Connecting: func(_, _ string, opts mcpclient.Options) { sizes <- opts.MessageSize },
			})
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{ResultBytes: result}})},
				map[string]any{"features": map[string]bool{"mcp_tool_output_limit": tt.limit}})
			open := h.open(map[string]any{"startup": "eager"})
			if len(scheduled) != 0 {
				t.Fatal("a release scheduled before any large payload")
			}
			if tt.call {
				raw, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__echo"})
				if err != nil {
					t.Fatal(err)
				}
				if cut := len(raw) < above; cut != tt.limit {
					t.Fatalf("the host got %d bytes, want the result cut: %v", len(raw), tt.limit)
				}
			} else {
				var size func(int)
				select {
				case size = <-sizes:
				case <-time.After(testTimeout):
					t.Fatal("the server was not connected")
				}
				if size == nil {
					t.Fatal("the server's connection tells of no message sizes")
				}
				size(above - 1)
				if len(scheduled) != 0 {
					t.Fatal("a release scheduled after a small message")
				}
				size(result)
			}
			select {
			case release := <-scheduled:
				release()
			case <-time.After(testTimeout):
				t.Fatal("no release scheduled after a large payload")
			}
			<-freed
		})
	}
}
