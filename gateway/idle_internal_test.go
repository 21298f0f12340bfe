package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// TestIdleSessionsCount: a session is closed once it has had no request
// open for the idle time, at the first sweep after (sweeps come at most
// every idle/8); a request or stream open keeps it, a request on it
// starts its idle time over, ids nobody gave out are not tracked, and a
// DELETE forgets the session.
func TestIdleSessionsCount(t *testing.T) {
	const idle = 80 * time.Minute
	clk := testclock.New(time.Unix(1e9, 0))
	var closed []string
	s := newIdleSessions(idle, clk.Now, func(id string) { closed = append(closed, id) })
	step := func(what string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, closed); diff != "" {
			t.Errorf("%s: sessions closed (-want +got):\n%s", what, diff)
		}
		closed = nil
	}
	for _, id := range []string{"quiet", "streaming", "returning", "deleted"} {
		s.begin("")
		s.given(id)
		s.end(id, false)
	}
	s.begin("streaming") // its GET stream, open from here on
	s.begin("unknown")   // an id nobody gave out
	s.end("unknown", false)
	s.begin("deleted")
	s.end("deleted", true)

	clk.Advance(idle - time.Minute)
	s.begin("returning")
	s.end("returning", false)
	step("idle for less than the idle time")

	clk.Advance(idle / 8)
	s.begin("")
	step("idle for longer", "quiet")

	clk.Advance(time.Minute)
	s.begin("")
	step("within idle/8 of the last sweep")

	clk.Advance(idle)
	s.begin("")
	step("the stream open, and the returning session idle for long", "returning")

	s.end("streaming", false) // the stream ends
	clk.Advance(idle)
	s.begin("streaming") // a request of its own keeps it
	s.end("streaming", false)
	step("the session's own request")

	clk.Advance(idle)
	s.begin("")
	step("after its stream and its request", "streaming")
}

// TestIdleSessionClosedAtGateway: over HTTP, a legacy client that holds
// nothing open for an hour loses its session (404, as after a DELETE),
// while one that holds its GET stream keeps it.
func TestIdleSessionClosedAtGateway(t *testing.T) {
	ctx := context.Background()
	g, err := Start(ctx, Options{
		Initialize: map[string]any{"servers": map[string]any{}, "cacheDir": t.TempDir(), "credentialsDir": filepath.Join(t.TempDir(), "credentials")},
		Sidecar:    sidecar.Options{Version: "test", Env: os.LookupEnv},
		Cwd:        t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctx) })
	clk := testclock.New(time.Unix(1e9, 0))
	srv := httptest.NewServer(g.Handler(HTTPOptions{now: clk.Now}))
	t.Cleanup(srv.Close)

	streaming, quiet := legacySession(t, srv.URL), legacySession(t, srv.URL)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(sessionIDHeader, streaming)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	stream, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %s", stream.Status)
	}

	clk.Advance(sessionIdle)
	for _, tc := range []struct {
		name, session string
		want          int
	}{
		{"the client with its stream open", streaming, http.StatusOK},
		{"the client that held nothing", quiet, http.StatusNotFound},
	} {
		if got := postPing(t, srv.URL, tc.session); got != tc.want {
			t.Errorf("ping of %s after an hour: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// legacySession opens a 2025-11-25 session over raw HTTP, as a client
// that will leave without DELETE, and returns its id.
func legacySession(t testing.TB, url string) string {
	t.Helper()
	resp := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get(sessionIDHeader)
	if resp.StatusCode != http.StatusOK || id == "" || !strings.Contains(string(body), `"protocolVersion"`) {
		t.Fatalf("initialize: %s, session %q: %s", resp.Status, id, body)
	}
	resp = post(t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", resp.Status)
	}
	return id
}

func postPing(t *testing.T, url, session string) int {
	t.Helper()
	resp := post(t, url, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func post(t testing.TB, url, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(sessionIDHeader, session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// BenchmarkSessionsLeftBehind measures what a legacy client that leaves
// without DELETE leaves in the daemon (heap and goroutines per session),
// and what stays once the sweep has closed those sessions.
//
//	go test -run '^$' -bench SessionsLeftBehind -benchtime 1000x ./gateway/
func BenchmarkSessionsLeftBehind(b *testing.B) {
	ctx := context.Background()
	g, err := Start(ctx, Options{
		Initialize: map[string]any{"servers": map[string]any{}, "cacheDir": b.TempDir(), "credentialsDir": filepath.Join(b.TempDir(), "credentials")},
		Sidecar:    sidecar.Options{Version: "test", Env: os.LookupEnv},
		Cwd:        b.TempDir(),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(ctx)
	clk := testclock.New(time.Unix(1e9, 0))
	srv := httptest.NewServer(g.Handler(HTTPOptions{now: clk.Now}))
	defer srv.Close()
	legacySession(b, srv.URL) // the host session opens
	heap := func() (uint64, int) {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, runtime.NumGoroutine()
	}
	h0, g0 := heap()
	b.ResetTimer()
	for range b.N {
		legacySession(b, srv.URL)
	}
	b.StopTimer()
	h1, g1 := heap()
	clk.Advance(sessionIdle)
	legacySession(b, srv.URL) // sweeps
	h2, g2 := heap()
	n := float64(b.N)
	b.ReportMetric((float64(h1)-float64(h0))/n/1024, "KiB/session-left")
	b.ReportMetric(float64(g1-g0)/n, "goroutines/session-left")
	b.ReportMetric((float64(h2)-float64(h0))/n/1024, "KiB/session-swept")
	b.ReportMetric(float64(g2-g0)/n, "goroutines/session-swept")
}
