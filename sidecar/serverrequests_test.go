package sidecar_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// heldRequests is a host that holds every server request it gets until
// released, so that a test knows how many wait on it at once.
type heldRequests struct {
	mu      sync.Mutex
	cond    *sync.Cond // broadcast when held changes
	held    int
	max     int
	release chan struct{}
	answer  func(method string) any
}

func newHeldRequests(answer func(method string) any) *heldRequests {
	hr := &heldRequests{release: make(chan struct{}), answer: answer}
	hr.cond = sync.NewCond(&hr.mu)
	return hr
}

// waitHeld waits until n requests are held at once.
func (hr *heldRequests) waitHeld(n int) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	for hr.held < n {
		hr.cond.Wait()
	}
}

func (hr *heldRequests) handle(ctx context.Context, method string, _ json.RawMessage) (any, error) {
	hr.mu.Lock()
	hr.held++
	hr.max = max(hr.max, hr.held)
	hr.cond.Broadcast()
	hr.mu.Unlock()
	defer func() {
		hr.mu.Lock()
		hr.held--
		hr.cond.Broadcast()
		hr.mu.Unlock()
	}()
	select {
	case <-hr.release:
		return hr.answer(method), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (hr *heldRequests) peak() int {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return hr.max
}

// progressReached reports whether n is a $/progress of token with the
// given progress value.
func progressReached(token string, progress float64) func(hostclient.Notification) bool {
	return func(n hostclient.Notification) bool {
		if n.Method != protocol.NotifyProgress {
			return false
		}
		var p struct {
			Token json.RawMessage        `json:"token"`
			Value protocol.ProgressValue `json:"value"`
		}
		return json.Unmarshal(n.Params, &p) == nil && string(p.Token) == fmt.Sprintf("%q", token) && p.Value.Progress == progress
	}
}

// A server that floods the host with requests gets the excess answered
// -32018 at once: at most maxServerRequests of its requests wait on the
// host, whatever their method.
func TestServerRequestFloodIsBounded(t *testing.T) {
	const limit, count = 4, 60
	for _, method := range []string{"elicit", "roots", "sample"} {
		t.Run(method, func(t *testing.T) {
			hr := newHeldRequests(func(m string) any {
				switch m {
				case protocol.RequestRoots:
					return map[string]any{"roots": []any{}}
				case protocol.RequestSample:
					return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "ok"}, "model": "m"}
				}
				return map[string]any{"action": "decline"}
			})
			h := newHarness(t)
			h.onRequest = hr.handle
			// Requests of the server's own are MCP 2025-11-25's.
			spec := fixture.Spec{Legacy: true, Tools: []fixture.ToolSpec{tool("flood", fixture.BehaviorFlood)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
				"capabilities": map[string]any{"elicitation": true, "roots": true, "sampling": map[string]any{}},
				"limits":       map[string]any{"maxServerRequests": limit},
			})
			open := h.open(map[string]any{"startup": "eager"})
			h.waitComplete(open.SessionID, 0)

			type outcome struct {
				res json.RawMessage
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := h.callTool(map[string]any{
					"sessionId": open.SessionID, "name": "mcp__s__flood",
					"arguments": map[string]any{"method": method, "count": count},
					"meta":      map[string]any{"progressToken": "flood"},
				})
				done <- outcome{res, err}
			}()
			// Every request but the ones the host holds is answered while
			// the host holds them.
			h.waitFor("the refusals", progressReached("flood", count-limit))
			if got := hr.peak(); got != limit {
				t.Errorf("host held %d requests at once, want %d", got, limit)
			}
			close(hr.release)
			out := <-done
			if out.err != nil {
				t.Fatal(out.err)
			}
			var res struct {
				StructuredContent struct {
					OK     int            `json:"ok"`
					Errors map[string]int `json:"errors"`
				} `json:"structuredContent"`
			}
			if err := json.Unmarshal(out.res, &res); err != nil {
				t.Fatalf("%s: %v", out.res, err)
			}
			want := map[string]int{fmt.Sprint(mcpclient.CodeClientBusy): count - limit}
			if diff := cmp.Diff(want, res.StructuredContent.Errors); diff != "" || res.StructuredContent.OK != limit {
				t.Errorf("ok %d (want %d), errors (-want +got):\n%s", res.StructuredContent.OK, limit, diff)
			}
			h.waitFor("the refusal reported in mcp/log", func(n hostclient.Notification) bool {
				var p protocol.LogParams
				return n.Method == protocol.NotifyLog && json.Unmarshal(n.Params, &p) == nil && p.Level == "warning" && p.Server == "s"
			})
		})
	}
}

// The footprint of a flood is measured when asked (it sends 20,000
// requests; a minute or so under -race):
//
//	MCP_SIDECAR_FLOOD=1 go test -run TestServerRequestFloodFootprint -v ./sidecar/
//
// It reports goroutines and heap in use while the host holds what reached
// it, with the default bound and, as the baseline, with a bound too large
// to matter (the behaviour before the bound existed).
var floodCount = flag.Int("flood.count", 20000, "requests the flood footprint test sends")

func TestServerRequestFloodFootprint(t *testing.T) {
	if os.Getenv("MCP_SIDECAR_FLOOD") != "1" {
		t.Skip("footprint measurement: run with MCP_SIDECAR_FLOOD=1")
	}
	n := *floodCount
	for _, c := range []struct {
		name  string
		limit int
	}{{"unbounded (baseline)", n + 1}, {"default bound", mcpclient.DefaultMaxServerRequests}} {
		t.Run(c.name, func(t *testing.T) {
			hr := newHeldRequests(func(string) any { return map[string]any{"action": "decline"} })
			h := newHarness(t)
			h.onRequest = hr.handle
			held := min(c.limit, n)
			refused := make(chan struct{})
			h.onNotification = func(note hostclient.Notification) {
				if held < n && progressReached("flood", float64(n-held))(note) {
					close(refused)
				}
			}
			// Requests of the server's own are MCP 2025-11-25's.
			spec := fixture.Spec{Legacy: true, Tools: []fixture.ToolSpec{tool("flood", fixture.BehaviorFlood)}}
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
				"capabilities": map[string]any{"elicitation": true},
				"limits":       map[string]any{"maxServerRequests": c.limit},
			})
			open := h.open(map[string]any{"startup": "eager"})
			h.waitComplete(open.SessionID, 0)
			g0, heap0 := footprint()
			done := make(chan error, 1)
			go func() {
				_, err := h.callTool(map[string]any{
					"sessionId": open.SessionID, "name": "mcp__s__flood",
					"arguments": map[string]any{"count": n},
					"meta":      map[string]any{"progressToken": "flood"},
				})
				done <- err
			}()
			hr.waitHeld(held)
			if held < n {
				<-refused
			}
			g1, heap1 := footprint()
			// The test's host answers each request on a goroutine of its
			// own: those are the host's, not the sidecar's.
			t.Logf("%d requests, %d held by the host: sidecar goroutines %d -> %d (+%d, host's %d excluded), heap in use %.1f MiB -> %.1f MiB (+%.1f MiB)",
				n, held, g0, g1-held, g1-held-g0, held, mib(heap0), mib(heap1), mib(heap1)-mib(heap0))
			close(hr.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func footprint() (goroutines int, heapInUse uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m.HeapInuse
}
