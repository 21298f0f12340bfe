package sidecar_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// The soak test is long (a minute or two): it runs only when asked,
//
//	go test -race -run TestSoakSessions -soak ./sidecar/
//	MCP_SIDECAR_SOAK=1 go test -run TestSoakSessions ./sidecar/
//
// and -soak.sessions sets how many sessions it opens and closes. The same
// switch makes the stress tests run their long rounds (soakOr); CI sets it.
var (
	soak         = flag.Bool("soak", false, "run the session soak test and the long stress rounds (also MCP_SIDECAR_SOAK=1)")
	soakSessions = flag.Int("soak.sessions", 1000, "sessions the soak test opens and closes")
)

// soakEnv asks for the soak test and the long stress rounds.
const soakEnv = "MCP_SIDECAR_SOAK"

// soaking reports whether the long runs were asked for.
func soaking() bool { return *soak || os.Getenv(soakEnv) == "1" }

// soakOr is short, or long when the long runs were asked for: a stress
// test's default must stay short on a loaded machine and still catch its
// defect.
func soakOr(short, long int) int {
	if soaking() {
		return long
	}
	return short
}

// Bounds of the soak. A session that leaked its connection would keep at
// least a go-sdk session, a stderr ring and two 64 KiB line buffers (over
// 128 KiB) and several goroutines, so 1,000 leaked sessions would be over
// 125 MiB and thousands of goroutines. The harness itself keeps every
// notification it receives (under 1 KiB a session), and the runtime's own
// goroutines (timers, GC workers, the HTTP pool) may come and go.
const (
	soakHeapGrowth      = 16 << 20
	soakGoroutineGrowth = 5
)

// TestSoakSessions opens and closes many sessions against a fixture server
// in one sidecar and shows flat goroutines, flat memory and no process
// left behind.
func TestSoakSessions(t *testing.T) {
	if !soaking() {
		t.Skip("soak test: run with -soak or MCP_SIDECAR_SOAK=1")
	}
	n := *soakSessions
	inits := tempFile(t, "inits")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{
		InitCountFile: inits, Tools: []fixture.ToolSpec{tool("echo", "echo")},
	})}, nil)

	cycle := func() {
		t.Helper()
		sid := h.open(map[string]any{"startup": "eager"}).SessionID
		if c := h.waitComplete(sid, 0); len(c.Ready) != 1 {
			t.Fatalf("session %s: startup %+v", sid, c)
		}
		if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo", "arguments": map[string]any{"x": 1}}); err != nil {
			t.Fatalf("session %s: %v", sid, err)
		}
		if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
			t.Fatalf("session %s: close: %v", sid, err)
		}
	}
	// One warm-up session, so that what is made once per process (pools,
	// caches, the first fork's runtime state) is in the baseline.
	cycle()
	before := measure()
	for range n {
		cycle()
	}
	after := measure()

	var left []string
	pids := map[int]bool{}
	for _, line := range fixture.ReadLines(inits) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		pids[pid] = true
	}
	for pid := range pids {
		if alive(pid) {
			left = append(left, strconv.Itoa(pid))
		}
	}
	for _, p := range processes() {
		if p.ppid == os.Getpid() && p.state != 'Z' {
			left = append(left, fmt.Sprintf("%d (%s, child)", p.pid, p.comm))
		}
	}

	t.Logf("soak: %d sessions opened and closed (%d server processes started)", n, len(pids))
	t.Logf("soak: goroutines %d -> %d", before.goroutines, after.goroutines)
	t.Logf("soak: heap in use %.1f MiB -> %.1f MiB", mib(before.heap), mib(after.heap))
	t.Logf("soak: RSS %.1f MiB -> %.1f MiB", mib(before.rss), mib(after.rss))
	t.Logf("soak: server processes left: %d", len(left))

	if len(pids) != n+1 {
		t.Errorf("%d server processes started, want %d (one per session)", len(pids), n+1)
	}
	if after.goroutines > before.goroutines+soakGoroutineGrowth {
		t.Errorf("goroutines grew from %d to %d", before.goroutines, after.goroutines)
	}
	if after.heap > before.heap+soakHeapGrowth {
		t.Errorf("heap grew from %.1f MiB to %.1f MiB", mib(before.heap), mib(after.heap))
	}
	if len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

type usage struct {
	goroutines int
	heap, rss  uint64
}

// measure reads the process's figures after a full GC. Goroutines that end
// asynchronously (a closed connection's readers) are given a moment, as
// goleak does, before they count.
func measure() usage {
	var u usage
	prev := -1
	for range 50 {
		runtime.GC()
		u.goroutines = runtime.NumGoroutine()
		if u.goroutines == prev {
			break
		}
		prev = u.goroutines
		time.Sleep(50 * time.Millisecond) // no event says "all exited"
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.heap = ms.HeapInuse
	u.rss = rss()
	return u
}

// rss is the resident set size from /proc/self/status (0 elsewhere).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
