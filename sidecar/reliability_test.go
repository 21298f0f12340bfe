package sidecar_test

// Supervision of crashing servers, no orphans through
// wrapper chains and every way the sidecar can end, the child environment,
// secrets kept out of the disk cache, and the bound on concurrent startups.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/testclock"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// TestCrashAnswersEveryInFlightCallAtOnce parks two calls in a server, then
// crashes it with a third: all three are answered -32015 with the stderr
// tail (the parked ones would otherwise sleep a minute), the server is
// reported disconnected, and the session's other server goes on.
func TestCrashAnswersEveryInFlightCallAtOnce(t *testing.T) {
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{
		"c":     fixture.Config("c", fixture.Spec{Tools: []fixture.ToolSpec{tool("sleep", "sleep"), tool("crash", "crash")}}),
		"other": fixture.Config("other", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
	}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)

	type parked struct {
		wait   func() error
		tokens string
	}
	var calls []parked
	for _, tok := range []string{"parked-1", "parked-2"} {
		_, w, err := h.client.Dispatch(h.ctx, protocol.MethodToolsCall, map[string]any{
			"sessionId": sid, "name": "mcp__c__sleep", "arguments": map[string]any{"ms": 60000},
			"meta": map[string]any{"progressToken": tok},
		})
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, parked{wait: func() error { return w.Wait(h.ctx, nil) }, tokens: tok})
		// The sleep tool reports progress 0 once it runs in the server.
		h.waitFor("call "+tok+" parked", func(n hostclient.Notification) bool {
			return n.Method == protocol.NotifyProgress && strings.Contains(string(n.Params), tok)
		})
	}

	crashed := time.Now()
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__crash"})
	_, data := h.wantCode(err, protocol.CodeConnectionLost)
	if !strings.Contains(data.Stderr, "crashing in crash") || !data.Retryable {
		t.Errorf("crashing call: data %+v, want the stderr tail and retryable", data)
	}
	for _, c := range calls {
		_, data := h.wantCode(c.wait(), protocol.CodeConnectionLost)
		if !strings.Contains(data.Stderr, "crashing in crash") {
			t.Errorf("parked call %s: data.stderr %q lacks the server's last words", c.tokens, data.Stderr)
		}
	}
	// "At once": well before the 60 s the parked calls would sleep, and
	// long before tool_timeout_sec (120 s). A generous bound, not a
	// performance figure.
	if d := time.Since(crashed); d > 20*time.Second {
		t.Errorf("in-flight calls answered %v after the crash", d)
	}

	st := status(t, h, sid)
	if s := st["c"]; s.State != protocol.StateDisconnected || !strings.Contains(s.LastError, "crashing in crash") {
		t.Errorf("status of c %+v: want disconnected, lastError with the stderr tail", s)
	}
	if s := st["other"]; s.State != protocol.StateReady || s.Restarts != 0 {
		t.Errorf("status of other %+v: want ready, untouched", s)
	}
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__other__echo", "arguments": map[string]any{"x": 1}}); err != nil {
		t.Errorf("other server after c crashed: %v", err)
	}
}

// newClockHarness is a harness whose sidecar runs restart backoff (and
// the other timed policies) on a clock the test moves.
func newClockHarness(t *testing.T) (*harness, *testclock.Clock) {
	t.Helper()
	clock := newFakeClock()
	return newHookedHarness(t, sidecar.Hooks{Now: clock.Now}), clock
}

// TestRestartBackoffDoubles checks the restart policy: the next use within
// the backoff is refused (-32011, retryable, saying when), the use after it
// restarts the server, and a second crash doubles the wait.
func TestRestartBackoffDoubles(t *testing.T) {
	pidFile := tempFile(t, "pid")
	h, clock := newClockHarness(t)
	h.initialize(map[string]*config.ServerConfig{"c": fixture.Config("c", fixture.Spec{
		PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("crash", "crash"), tool("echo", "echo")},
	})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	first := fixture.ReadPID(t, pidFile)

	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__crash"})
	h.wantCode(err, protocol.CodeConnectionLost)
	if wait := refusedFor(t, h, sid); wait != time.Second {
		t.Fatalf("first backoff %v, want 1 s", wait)
	}
	clock.Advance(900 * time.Millisecond)
	if wait := refusedFor(t, h, sid); wait != 100*time.Millisecond {
		t.Fatalf("backoff left after 0.9 s: %v, want 0.1 s", wait)
	}
	clock.Advance(100 * time.Millisecond)
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__echo"}); err != nil {
		t.Fatalf("call after the backoff: %v", err)
	}
	if second := fixture.ReadPID(t, pidFile); second == first || !alive(second) {
		t.Errorf("server not restarted: pid %d, was %d", second, first)
	}
	if s := status(t, h, sid)["c"]; s.State != protocol.StateReady || s.Restarts != 1 {
		t.Errorf("status after restart %+v: want ready, 1 restart", s)
	}

	_, err = h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__crash"})
	h.wantCode(err, protocol.CodeConnectionLost)
	if wait := refusedFor(t, h, sid); wait != 2*time.Second {
		t.Errorf("second backoff %v, want doubled to 2 s", wait)
	}
}

// callAfterBackoff calls c's echo tool, moving the clock past the backoff
// the refusal announces, and returns that backoff.
func callAfterBackoff(t *testing.T, h *harness, clock *testclock.Clock, sid string) time.Duration {
	t.Helper()
	var waited time.Duration
	for range 2 {
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__echo"})
		if err == nil {
			return waited
		}
		je, _ := h.wantCode(err, protocol.CodeServerNotReady)
		m := restartingIn.FindStringSubmatch(je.Message)
		if m == nil {
			t.Fatalf("refusal %q does not say when the server restarts", je.Message)
		}
		s, _ := strconv.ParseFloat(m[1], 64)
		wait := time.Duration(s * float64(time.Second))
		clock.Advance(wait)
		waited += wait
	}
	t.Fatal("server not restarted after the announced backoff")
	return 0
}

var restartingIn = regexp.MustCompile(`restarting in ([0-9.]+) s`)

// refusedFor calls the crashed server within its backoff and returns the
// wait the refusal announces.
func refusedFor(t *testing.T, h *harness, sid string) time.Duration {
	t.Helper()
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__echo"})
	je, data := h.wantCode(err, protocol.CodeServerNotReady)
	m := restartingIn.FindStringSubmatch(je.Message)
	if m == nil || !data.Retryable {
		t.Fatalf("refusal %q (data %+v) should be retryable and say when the server restarts", je.Message, data)
	}
	s, _ := strconv.ParseFloat(m[1], 64)
	return time.Duration(s * float64(time.Second))
}

// TestCrashLoopIsReportedFailed: a server that keeps crashing is reported
// failed and not restarted again until servers/reconnect.
func TestCrashLoopIsReportedFailed(t *testing.T) {
	initFile := tempFile(t, "inits")
	h, clock := newClockHarness(t)
	h.initialize(map[string]*config.ServerConfig{"c": fixture.Config("c", fixture.Spec{
		InitCountFile: initFile, Tools: []fixture.ToolSpec{tool("crash", "crash"), tool("echo", "echo")},
	})}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	const limit = 5
	var backoffs []time.Duration
	for i := 0; i < limit; i++ {
		if i > 0 {
			// Each crash is followed by a use that restarts the server,
			// once its backoff has passed.
			backoffs = append(backoffs, callAfterBackoff(t, h, clock, sid))
		}
		_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__crash"})
		h.wantCode(err, protocol.CodeConnectionLost)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, backoffs); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
	// Failed: no backoff to wait out any more.
	clock.Advance(time.Hour)
	_, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__c__echo"})
	je, _ := h.wantCode(err, protocol.CodeServerNotReady)
	if !strings.Contains(je.Message, "crash") {
		t.Errorf("refusal %q should say the server keeps crashing", je.Message)
	}
	if s := status(t, h, sid)["c"]; s.State != protocol.StateFailed {
		t.Errorf("status %+v: want failed", s)
	}
	if n := len(fixture.ReadLines(initFile)); n != limit {
		t.Errorf("%d starts, want %d: no restart after the limit", n, limit)
	}
	var rc protocol.ReconnectResult
	if err := h.call(protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "c"}, &rc); err != nil || rc.State != protocol.StateReady {
		t.Errorf("servers/reconnect after the crash loop: %+v, %v", rc, err)
	}
}

func status(t *testing.T, h *harness, sid string) map[string]protocol.ServerStatus {
	t.Helper()
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": sid}, &st); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]protocol.ServerStatus)
	for _, s := range st.Servers {
		m[s.Name] = s
	}
	return m
}

// procInfo is one process from /proc/<pid>/stat.
type procInfo struct {
	pid, ppid, pgid int
	state           byte
	comm            string
}

// processes lists every process of the machine.
func processes() []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(string(b[close+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		out = append(out, procInfo{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], comm: string(b[open+1 : close])})
	}
	return out
}

// group lists the live (not zombie) processes of process group pgid.
func group(pgid int) []procInfo {
	var out []procInfo
	for _, p := range processes() {
		if p.pgid == pgid && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// procOf finds pid in the process table.
func procOf(t *testing.T, pid int) procInfo {
	t.Helper()
	for _, p := range processes() {
		if p.pid == pid {
			return p
		}
	}
	t.Fatalf("process %d not found", pid)
	return procInfo{}
}

func pgidOf(t *testing.T, pid int) int {
	t.Helper()
	return procOf(t, pid).pgid
}

// waitGroupGone polls until group pgid has no live process (a group has
// no event to wait on) and returns what is left after the safety net.
func waitGroupGone(pgid int) []procInfo {
	deadline := time.Now().Add(testTimeout)
	for {
		left := group(pgid)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wrappers start the fixture behind a shell, as npx and sh -c start real
// servers: the process the sidecar spawns is not the server.
var wrappers = []struct {
	name string
	wrap func(cfg *config.ServerConfig)
}{
	{"sh -c exec-less", func(cfg *config.ServerConfig) {
		// dash forks for "$0" "$@" (no exec of the last command): sh
		// leads the group and the fixture is its child.
		cfg.Args = append([]string{"-c", `"$0" "$@"; exit $?`, cfg.Command}, cfg.Args...)
		cfg.Command = "sh"
	}},
	{"sh -c background and wait", func(cfg *config.ServerConfig) {
		// An asynchronous list gets /dev/null as stdin unless redirected:
		// hand it the real stdin through fd 3.
		cfg.Args = append([]string{"-c", `exec 3<&0; "$0" "$@" <&3 3<&- & wait`, cfg.Command}, cfg.Args...)
		cfg.Command = "sh"
	}},
}

// endings are the ways a sidecar process and its sessions end.
var endings = []struct {
	name string
	end  func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string)
	// exited: the sidecar process ends too.
	exited bool
}{
	{"session/close", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		if err := c.Call(ctx, protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
			t.Fatal(err)
		}
	}, false},
	{"shutdown and exit", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		if err := c.Call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Notify(ctx, protocol.MethodExit, nil); err != nil {
			t.Fatal(err)
		}
	}, true},
	{"stdin EOF", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.stdin.Close()
	}, true},
	{"SIGTERM", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}, true},
	{"SIGINT", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.cmd.Process.Signal(syscall.SIGINT)
	}, true},
	// SIGKILL gives the sidecar no chance to clean up: the kernel's
	// parent-death signal (Pdeathsig, Linux) kills the process it spawned,
	// and a server behind a shell sees EOF on its stdin, whose only writer
	// was the sidecar, and exits.
	{"SIGKILL", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.cmd.Process.Kill()
	}, true},
}

// TestNoOrphans starts a server through each wrapper in a real sidecar
// process, ends it each way, and counts the processes of the server's
// group before (the shell and the fixture) and after (none).
func TestNoOrphans(t *testing.T) {
	for _, w := range wrappers {
		for _, e := range endings {
			t.Run(w.name+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				p := startSidecarProcess(t)
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				c := hostclient.New(ctx, p.stdout, p.stdin, hostclient.Options{Checker: schemaChecker(t)})
				defer c.Close()

				pidFile := tempFile(t, "pid")
				cfg := fixture.Config("s", fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
				w.wrap(cfg)
				if err := c.Call(ctx, protocol.MethodInitialize, map[string]any{
					"clientInfo": map[string]any{"name": "test"}, "cacheDir": t.TempDir(),
					"servers": map[string]*config.ServerConfig{"s": cfg},
				}, nil); err != nil {
					t.Fatal(err)
				}
				var open protocol.SessionOpenResult
				if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
					t.Fatal(err)
				}
				var res json.RawMessage
				if err := c.Call(ctx, protocol.MethodToolsCall, map[string]any{"sessionId": open.SessionID, "name": "mcp__s__echo"}, &res); err != nil {
					t.Fatal(err)
				}
				server := fixture.ReadPID(t, pidFile)
				pgid := pgidOf(t, server)
				before := group(pgid)
				if len(before) != 2 || pgid == server {
					t.Fatalf("group %d before: %v, want the shell leading and the fixture %d", pgid, before, server)
				}

				e.end(t, ctx, p, c, open.SessionID)
				if left := waitGroupGone(pgid); len(left) > 0 {
					t.Errorf("after %s: processes left in group %d: %v", e.name, pgid, left)
				}
				if e.exited {
					p.wait(t)
				}
			})
		}
	}
}

// TestChildEnvironmentIsAllowlistPlusConfigured runs a real sidecar process
// with a secret in its environment; the fixture dumps the environment it
// got: exactly the allowlisted variables the sidecar has, env_vars and env,
// and on Linux the connection's marker (an id the sidecar sets, whatever
// env says).
func TestChildEnvironmentIsAllowlistPlusConfigured(t *testing.T) {
	const secret = "sidecar-only-secret-4f1c"
	p := startSidecarProcess(t, "SIDECAR_SECRET_TOKEN="+secret, "PASSED_THROUGH=passed", "LANG=C.UTF-8", "TZ=UTC")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := hostclient.New(ctx, p.stdout, p.stdin, hostclient.Options{Checker: schemaChecker(t)})
	defer c.Close()
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("env", "env")}})
	cfg.Env["CONFIGURED"] = "configured-value"
	cfg.Env[reaper.MarkerVar] = "configured-marker"
	cfg.EnvVars = []string{"PASSED_THROUGH"}
	if err := c.Call(ctx, protocol.MethodInitialize, map[string]any{
		"clientInfo": map[string]any{"name": "test"}, "cacheDir": t.TempDir(),
		"servers": map[string]*config.ServerConfig{"s": cfg},
	}, nil); err != nil {
		t.Fatal(err)
	}
	var open protocol.SessionOpenResult
	if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
		t.Fatal(err)
	}
	var res struct {
		StructuredContent struct {
			Env map[string]string `json:"env"`
		} `json:"structuredContent"`
	}
	if err := c.Call(ctx, protocol.MethodToolsCall, map[string]any{"sessionId": open.SessionID, "name": "mcp__s__env"}, &res); err != nil {
		t.Fatal(err)
	}
	got := res.StructuredContent.Env
	allow := []string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}
	for k, v := range got {
		switch {
		case slices.Contains(allow, k):
			if want := os.Getenv(k); k != "LANG" && k != "TZ" && v != want {
				t.Errorf("%s=%q, want the sidecar's %q", k, v, want)
			}
		case k == "PASSED_THROUGH" || k == "CONFIGURED" || k == fixture.EnvVar || k == "GORACE":
		case k == reaper.MarkerVar && runtime.GOOS == "linux":
			if !regexp.MustCompile(`^[A-Z2-7]{26}$`).MatchString(v) {
				t.Errorf("%s=%q, want a random id (26 base32 characters)", k, v)
			}
		default:
			t.Errorf("child got %s=%q: neither allowlisted nor configured", k, v)
		}
		if strings.Contains(v, secret) {
			t.Errorf("child variable %s carries the sidecar's secret", k)
		}
	}
	if _, ok := got[reaper.MarkerVar]; !ok && runtime.GOOS == "linux" {
		t.Errorf("child lacks %s", reaper.MarkerVar)
	}
	for k, want := range map[string]string{"PASSED_THROUGH": "passed", "CONFIGURED": "configured-value", "LANG": "C.UTF-8", "TZ": "UTC", "PATH": os.Getenv("PATH")} {
		if got[k] != want {
			t.Errorf("child %s=%q, want %q", k, got[k], want)
		}
	}
}

// TestCacheFilesPrivateAndSecretFree lists a stdio server with a secret in
// env and an HTTP server with a bearer token, then checks every file under
// the cache folder: mode 0600, and neither secret anywhere in it.
func TestCacheFilesPrivateAndSecretFree(t *testing.T) {
	const token = "bearer-secret-9d2e7a"
	const envSecret = "env-secret-xyz-31b8"
	t.Setenv("RELIABILITY_TEST_TOKEN", token)
	s := mcp.NewServer(&mcp.Implementation{Name: "http-fx", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "remote", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	var sawToken atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+token {
			sawToken.Store(true)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the sidecar (registered later) has stopped

	cacheDir := t.TempDir()
	h := newHarness(t)
	stdio := fixture.Config("local", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})
	stdio.Env["API_TOKEN"] = envSecret
	h.initialize(map[string]*config.ServerConfig{
		"local":  stdio,
		"remote": {URL: srv.URL, BearerTokenEnvVar: "RELIABILITY_TEST_TOKEN"},
	}, map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_lazy_stdio_startup": true}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	if c := h.waitComplete(sid, 0); len(c.Ready) != 2 {
		t.Fatalf("startup: %+v", c)
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatal(err)
	}
	if !sawToken.Load() {
		t.Fatal("the HTTP server never saw the token: the test proves nothing")
	}
	files := 0
	err := filepath.WalkDir(cacheDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %v, want 0600", path, perm)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range []string{token, envSecret} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains the secret %q", path, secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no cache file written: the test proves nothing")
	}
}

// TestQueuedStartupClock: a startup that waits for a start slot
// (limits.maxConcurrentStarts) has no startup_timeout_sec clock running
// until it gets one, so a server queued behind slow ones is not failed for
// their slowness (in one session of 100 servers, every server after the
// first dozen failed so). One slot: whichever server connects first holds
// it, blocked in the connecting hook, until the other has begun to wait
// for it; by then only the holder's clock may have started. Once
// released, both become ready.
func TestQueuedStartupClock(t *testing.T) {
	var (
		mu      sync.Mutex
		holder  string
		clocks  []string
		release = make(chan struct{})
		holding = make(chan string, 1)
		queued  = make(chan string, 1)
	)
	h := newHookedHarness(t, sidecar.Hooks{
		Connecting: func(_, server string, _ mcpclient.Options) {
			mu.Lock()
			first := holder == ""
			if first {
				holder = server
			}
			mu.Unlock()
			if first {
				holding <- server
				<-release
			}
		},
		StartupSlotWait: func(_, server string) { queued <- server },
		StartupClock: func(_, server string) {
			mu.Lock()
			defer mu.Unlock()
			clocks = append(clocks, server)
		},
	})
	cfgs := map[string]*config.ServerConfig{
		"a": fixture.Config("a", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
		"b": fixture.Config("b", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}}),
	}
	h.initialize(cfgs, map[string]any{"limits": map[string]any{"maxConcurrentStarts": 1}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	holds, waiting := <-holding, <-queued
	mu.Lock()
	got, want := slices.Clone(clocks), []string{holds}
	mu.Unlock()
	close(release)
	if waiting == holds {
		t.Fatalf("server %q both holds the slot and waits for it", holds)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clocks started while %q waits for the slot (-want +got):\n%s", waiting, diff)
	}
	if c := h.waitComplete(sid, 0); len(c.Ready) != 2 {
		t.Fatalf("startup: %d ready, failed %+v", len(c.Ready), c.Failed)
	}
}

// TestConcurrentStartsBounded configures 24 servers with
// maxConcurrentStarts 4 (100 with 8 when MCP_SIDECAR_SOAK=1 asks for the
// long run). Each server is started through sh, which appends "start
// <pid>" to a shared log and execs the fixture, which appends
// "server/discover <pid>" (or "initialize <pid>") to the same log when the
// handshake arrives. Both lines fall inside the startup slot (taken before
// the spawn, given back after the handshake's answer), so replaying the
// log never shows more than the limit of servers between the two. Waiting
// for a slot does not count against a server's startup_timeout_sec
// (TestQueuedStartupClock); it is generous all the same, for a loaded
// machine.
func TestConcurrentStartsBounded(t *testing.T) {
	servers, limit := soakOr(24, 100), soakOr(4, 8)
	log := tempFile(t, "starts")
	cfgs := make(map[string]*config.ServerConfig, servers)
	for i := range servers {
		name := fmt.Sprintf("s%03d", i)
		cfg := fixture.Config(name, fixture.Spec{InitCountFile: log, StartDelayMs: 50, Tools: []fixture.ToolSpec{tool("echo", "echo")}})
		cfg.Args = append([]string{"-c", `echo "start $$" >> "$0"; exec "$@"`, log, cfg.Command}, cfg.Args...)
		cfg.Command = "sh"
		cfg.StartupTimeoutSec = seconds(120)
		cfgs[name] = cfg
	}
	h := newHarness(t)
	h.initialize(cfgs, map[string]any{"limits": map[string]any{"maxConcurrentStarts": limit}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	if c := h.waitComplete(sid, 0); len(c.Ready) != servers {
		t.Fatalf("startup: %d ready, failed %+v", len(c.Ready), c.Failed)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	starting := map[string]bool{}
	peak, starts, inits := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			t.Fatalf("log line %q", sc.Text())
		}
		switch fields[0] {
		case "start":
			starts++
			starting[fields[1]] = true
		case "server/discover", "initialize":
			inits++
			delete(starting, fields[1])
		}
		peak = max(peak, len(starting))
	}
	if starts != servers || inits != servers {
		t.Fatalf("log has %d starts and %d initializes, want %d each", starts, inits, servers)
	}
	if peak > limit {
		t.Errorf("%d servers starting at once, want at most %d", peak, limit)
	}
	if peak < 2 {
		t.Errorf("peak %d: startups did not overlap at all, the bound was not exercised", peak)
	}
	t.Logf("%d servers, maxConcurrentStarts %d: at most %d starting at once", servers, limit, peak)
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatal(err)
	}
}
