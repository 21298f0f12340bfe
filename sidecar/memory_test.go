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
	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
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

// slowReader reads 64 KiB at most every two milliseconds: a host that
// takes its time with a large result.
type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	return s.r.Read(p[:min(len(p), 64<<10)])
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
