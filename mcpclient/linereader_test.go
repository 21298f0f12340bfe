package mcpclient

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// countingHandler counts the log records with a given message.
type countingHandler struct {
	mu   sync.Mutex
	msgs map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs[r.Message]++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msgs[msg]
}

// TestSkippedLinesCountedAndLogBounded: a server floods its stdout with
// non-JSON lines. Each is counted and passed to the handler; the
// sidecar's own log gets the first logSkippedBurst (the clock stands
// still, so no more tokens come) and, at close, one line with the totals.
func TestSkippedLinesCountedAndLogBounded(t *testing.T) {
	const flood = 5000
	h := &countingHandler{msgs: map[string]int{}}
	var handled atomic.Int64
	frozen := time.Unix(1e9, 0)
	c := connect(t, Options{
		Config:   fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{NonJSONLines: flood}}),
		Logger:   slog.New(h),
		Handlers: Handlers{SkippedLine: func(string) { handled.Add(1) }},
		clock:    func() time.Time { return frozen },
	})
	if _, err := c.ListToolsPage(testCtx(t), ""); err != nil {
		t.Fatal(err)
	}
	count, first := c.SkippedLines()
	if count != flood || first != "fixture junk line 0" {
		t.Errorf("SkippedLines() = %d, %q; want %d, %q", count, first, flood, "fixture junk line 0")
	}
	if n := handled.Load(); n != flood {
		t.Errorf("handler saw %d lines, want %d", n, flood)
	}
	if n := h.count("skipped a non-JSON line on the server's stdout"); n != logSkippedBurst {
		t.Errorf("%d skipped lines logged, want %d (the burst; the clock stands still)", n, logSkippedBurst)
	}
	c.Close()
	if n := h.count("non-JSON lines skipped on the server's stdout"); n != 1 {
		t.Errorf("%d summaries at close, want 1", n)
	}
}

// heapAllocs is the cumulative bytes allocated on the heap.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap is the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestLongNonJSONLineInBoundedMemory: a 200 MB line that is not JSON is
// skipped as it streams by: the reader allocates a few KiB for it, not the
// line.
func TestLongNonJSONLineInBoundedMemory(t *testing.T) {
	const lineBytes = 200 << 20
	var skipped []string
	c := connect(t, Options{
		Config:   fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{NonJSONLineBytes: lineBytes}}),
		Handlers: Handlers{SkippedLine: func(l string) { skipped = append(skipped, l) }},
	})
	before := heapAllocs()
	if _, err := c.ListToolsPage(testCtx(t), ""); err != nil {
		t.Fatal(err)
	}
	allocated := heapAllocs() - before
	t.Logf("allocated %d KiB while a %d MiB line went by", allocated>>10, lineBytes>>20)
	// The bound leaves room for go-sdk's call and the test's own garbage;
	// the line is 200 MiB.
	if allocated > 8<<20 {
		t.Errorf("allocated %d MiB while skipping the line, want under 8 MiB", allocated>>20)
	}
	if len(skipped) != 1 || !strings.HasSuffix(skipped[0], "... (209715201 bytes)") || len(skipped[0]) > reportBytes+64 {
		t.Errorf("reported %d lines, last %.80q...", len(skipped), skipped)
	}
}

// TestLongLineBufferReleased: after a 16 MiB JSON response (under
// MaxLineBytes, so delivered), the connection, still open, holds no line
// buffer of that size.
func TestLongLineBufferReleased(t *testing.T) {
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{OversizeLineBytes: 16 << 20}})})
	base := liveHeap()
	func() {
		raw, err := c.ListToolsPage(testCtx(t), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) < 16<<20 {
			t.Fatalf("tools/list result of %d bytes, want the 16 MiB one", len(raw))
		}
	}()
	held := int64(liveHeap()) - int64(base)
	t.Logf("live heap %+d KiB after the long line, the connection open", held>>10)
	if held > 4<<20 {
		t.Errorf("the connection holds %d MiB more after one long line", held>>20)
	}
	runtime.KeepAlive(c)
}

// TestMessageSizeTold: Options.MessageSize hears of each message the
// server wrote, a large result included, and not of the lines that are
// not JSON (they stream by, never held whole): the sidecar returns a
// large message's memory to the OS on it.
func TestMessageSizeTold(t *testing.T) {
	const result = 1 << 20
	var mu sync.Mutex
	var sizes []int
	c := connect(t, Options{
		Config: fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{ResultBytes: result, NonJSONLines: 3}}),
		MessageSize: func(n int) {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
		},
	})
	res, err := c.CallTool(testCtx(t), "echo", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	large := 0
	for _, n := range sizes {
		if n >= result {
			large++
		}
		if n < len(`{}`) {
			t.Errorf("told of a message of %d bytes", n)
		}
	}
	if large != 1 || len(res) < result {
		t.Errorf("told of %d messages of at least %d bytes (of %v), want 1: the result of %d bytes", large, result, sizes, len(res))
	}
	if len(sizes) < 2 {
		t.Errorf("told of %d messages, want the handshake's too", len(sizes))
	}
}
