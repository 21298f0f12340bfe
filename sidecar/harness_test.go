package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/process/reaper"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// serveEnv makes the re-executed test binary run the sidecar on stdio, so
// process-level tests (exit, EOF, orphans) drive a real sidecar process.
const serveEnv = "MCP_SIDECAR_TEST_SERVE"

// watchdogEnv makes the test binary run as the serving sidecar's watchdog.
const watchdogEnv = "MCP_SIDECAR_TEST_WATCHDOG"

func TestMain(m *testing.M) {
	fixture.Main()
	if os.Getenv(watchdogEnv) == "1" {
		os.Exit(reaper.Watchdog(os.Stdin))
	}
	if os.Getenv(serveEnv) == "1" {
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		// What main.go's serve command does: the signals it stops on and
		// the reaper with its watchdog (this binary, re-executed), so that
		// process tests drive the same path as the real binary.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		r := reaper.New(reaper.Options{
			Watchdog:    []string{os.Args[0], "-test.run=^$"},
			WatchdogEnv: []string{watchdogEnv + "=1", "GORACE=atexit_sleep_ms=0"},
			Logger:      logger,
		})
		code := sidecar.Serve(ctx, os.Stdin, os.Stdout, sidecar.Options{Env: os.LookupEnv, Logger: logger, Reaper: r})
		r.Close()
		stop()
		os.Exit(code)
	}
	// Every session, startup round, watcher and relay goroutine has an owner
	// that ends it; none may outlive the tests. Only the test run is
	// checked: the fixture and serve modes above exit on their own.
	goleak.VerifyTestMain(m)
}

// testTimeout is a safety net for waits in tests, never the thing tested.
const testTimeout = 30 * time.Second

// harness is a host connected to an in-process sidecar over pipes.
type harness struct {
	t      *testing.T
	ctx    context.Context
	client *hostclient.Client
	// checker checks every message against the protocol schema.
	checker *schema.Checker
	exit    chan int
	// cacheDir is the harness's default initialize.cacheDir.
	cacheDir string

	mu    sync.Mutex
	cond  *sync.Cond
	notes []hostclient.Notification

	// onRequest answers mcp/elicit and mcp/roots.
	onRequest func(ctx context.Context, method string, params json.RawMessage) (any, error)
	// onNotification, when set, also sees every notification, on the read
	// loop (it must not block): for tests that count thousands, which
	// waitFor would rescan each time.
	onNotification func(hostclient.Notification)
}

// harnessLifetime bounds a harness's sidecar: a safety net, so that a test
// that hangs outside the per-call and per-wait timeouts fails in a minute.
// The soak test and the long stress rounds (soaking) legitimately run longer
// than that on a loaded machine, and under -race several times longer: they
// get what is left of the test binary's own -timeout.
func harnessLifetime(t *testing.T) time.Duration {
	if soaking() {
		if deadline, ok := t.Deadline(); ok {
			return time.Until(deadline)
		}
		return 30 * time.Minute
	}
	return 2 * testTimeout
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHookedHarness(t, sidecar.Hooks{})
}

// newHookedHarness is newHarness with test hooks installed in the sidecar.
func newHookedHarness(t *testing.T, hooks sidecar.Hooks) *harness {
	t.Helper()
	return newLoggedHarness(t, hooks, slog.New(slog.DiscardHandler))
}

// newLoggedHarness is newHookedHarness with the sidecar's own logs going
// to logger.
func newLoggedHarness(t *testing.T, hooks sidecar.Hooks, logger *slog.Logger) *harness {
	t.Helper()
	return newOptionsHarness(t, hooks, logger, nil)
}

// newOptionsHarness is newLoggedHarness with the sidecar's options changed
// by edit (nil: none).
func newOptionsHarness(t *testing.T, hooks sidecar.Hooks, logger *slog.Logger, edit func(*sidecar.Options)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harnessLifetime(t))
	t.Cleanup(cancel)
	// The cache folder is made before the cleanup that stops the sidecar is
	// registered, so that it is removed after the sidecar (which may still
	// be writing to it in the background) has stopped.
	h := &harness{t: t, ctx: ctx, exit: make(chan int, 1), cacheDir: t.TempDir()}
	h.cond = sync.NewCond(&h.mu)
	hostR, sidecarW := io.Pipe()
	sidecarR, hostW := io.Pipe()
	env := func(k string) (string, bool) {
		switch k {
		case "XDG_CACHE_HOME":
			return "", false
		}
		return os.LookupEnv(k)
	}
	// No test reaches the OS keychain: one that wants a keychain gives
	// its own (edit).
	opts := sidecar.Options{Env: env, Logger: logger, Keyring: noKeychain{}}
	if hooks.BadTransition == nil {
		// Every test checks that servers change state only along the
		// state table.
		hooks.BadTransition = func(session, server, from, to string) {
			t.Errorf("session %s: server %q went from state %q to %q, which serverStates does not allow", session, server, from, to)
		}
	}
	if edit != nil {
		edit(&opts)
	}
	go func() {
		code := sidecar.Serve(ctx, sidecarR, sidecarW, sidecar.WithHooks(opts, hooks))
		sidecarW.Close()
		sidecarR.Close()
		h.exit <- code
	}()
	h.checker = schemaChecker(t)
	h.client = hostclient.New(ctx, hostR, hostW, hostclient.Options{
		Checker:        h.checker,
		OnNotification: h.record,
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			if h.onRequest == nil {
				return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "not handled")
			}
			return h.onRequest(ctx, method, params)
		},
	})
	t.Cleanup(func() {
		h.client.Close()
		select {
		case <-h.exit:
		case <-time.After(testTimeout):
			t.Error("sidecar did not stop after the host closed its end")
		}
	})
	return h
}

// record keeps a notification for waitFor and passes it to
// onNotification.
func (h *harness) record(n hostclient.Notification) {
	h.mu.Lock()
	h.notes = append(h.notes, n)
	h.cond.Broadcast()
	h.mu.Unlock()
	if h.onNotification != nil {
		h.onNotification(n)
	}
}

// schemaChecker returns a checker of the protocol schema for a test host:
// when the test ends (after the host's own cleanups and deferred closes,
// which were registered later), every message it saw must have matched.
func schemaChecker(t testing.TB) *schema.Checker {
	t.Helper()
	c, err := schema.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Err(); err != nil {
			t.Errorf("messages that do not match schema/protocol.schema.json (schema/README.md says how to add an entry):\n%v", err)
		}
	})
	return c
}

// initialize sends initialize with the given servers (and extra params).
func (h *harness) initialize(servers map[string]*config.ServerConfig, extra map[string]any) protocol.InitializeResult {
	h.t.Helper()
	params := map[string]any{"clientInfo": map[string]any{"name": "test"}, "cacheDir": h.cacheDir}
	if servers != nil {
		params["servers"] = servers
	}
	for k, v := range extra {
		params[k] = v
	}
	var res protocol.InitializeResult
	if err := h.call(protocol.MethodInitialize, params, &res); err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	_ = h.client.Notify(h.ctx, protocol.MethodInitialized, map[string]any{})
	return res
}

func (h *harness) open(params map[string]any) protocol.SessionOpenResult {
	h.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	var res protocol.SessionOpenResult
	if err := h.call(protocol.MethodSessionOpen, params, &res); err != nil {
		h.t.Fatalf("session/open: %v", err)
	}
	return res
}

func (h *harness) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(h.ctx, testTimeout)
	defer cancel()
	return h.client.Call(ctx, method, params, result)
}

// rpcError returns err as a JSON-RPC error with its data, or fails.
func (h *harness) rpcError(err error) (*protocol.Error, protocol.ErrorData) {
	h.t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		h.t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return pe, pe.Data
}

// wantCode fails unless err is a JSON-RPC error with code and returns it.
func (h *harness) wantCode(err error, code int64) (*protocol.Error, protocol.ErrorData) {
	h.t.Helper()
	if err == nil {
		h.t.Fatalf("want error %d, got success", code)
	}
	je, data := h.rpcError(err)
	if je.Code != code {
		h.t.Fatalf("want error code %d, got %d: %s (data %+v)", code, je.Code, je.Message, data)
	}
	if data.Kind == "" {
		h.t.Errorf("error %d has no data.kind", code)
	}
	return je, data
}

// waitFor waits until a notification satisfying pred has arrived and
// returns it.
func (h *harness) waitFor(what string, pred func(hostclient.Notification) bool) hostclient.Notification {
	h.t.Helper()
	return h.waitForSince(0, what, pred)
}

// waitForSince is waitFor among the notifications from index since on.
func (h *harness) waitForSince(since int, what string, pred func(hostclient.Notification) bool) hostclient.Notification {
	h.t.Helper()
	deadline := time.Now().Add(testTimeout)
	stop := time.AfterFunc(testTimeout, func() {
		h.mu.Lock()
		h.cond.Broadcast()
		h.mu.Unlock()
	})
	defer stop.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		for _, n := range h.notes[min(since, len(h.notes)):] {
			if pred(n) {
				return n
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; got %d notifications: %s", what, len(h.notes), h.describeLocked())
		}
		h.cond.Wait()
	}
}

func (h *harness) describeLocked() string {
	var b strings.Builder
	for _, n := range h.notes {
		fmt.Fprintf(&b, "\n  %s %s", n.Method, n.Params)
	}
	return b.String()
}

func (h *harness) notifications() []hostclient.Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hostclient.Notification(nil), h.notes...)
}

// waitComplete waits for mcp/startupComplete of round in session.
func (h *harness) waitComplete(session string, round int) protocol.StartupCompleteParams {
	h.t.Helper()
	n := h.waitFor(fmt.Sprintf("startupComplete %s round %d", session, round), func(n hostclient.Notification) bool {
		if n.Method != protocol.NotifyStartupComplete {
			return false
		}
		var p protocol.StartupCompleteParams
		return json.Unmarshal(n.Params, &p) == nil && p.SessionID == session && p.Round == round
	})
	var p protocol.StartupCompleteParams
	_ = json.Unmarshal(n.Params, &p)
	return p
}

func (h *harness) toolsList(session string) protocol.ToolsListResult {
	h.t.Helper()
	var res protocol.ToolsListResult
	if err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": session}, &res); err != nil {
		h.t.Fatalf("tools/list: %v", err)
	}
	return res
}

func (h *harness) callTool(params map[string]any) (json.RawMessage, error) {
	var res json.RawMessage
	err := h.call(protocol.MethodToolsCall, params, &res)
	return res, err
}

// tool is a fixture tool with an inline definition.
func tool(name, behavior string) fixture.ToolSpec {
	return fixture.ToolSpec{Name: name, Behavior: behavior}
}

func rawTool(def string, behavior string) fixture.ToolSpec {
	return fixture.ToolSpec{Def: json.RawMessage(def), Behavior: behavior}
}

func seconds(v float64) *float64 { return &v }

func tempFile(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name)
}

// compact returns the compact form of a JSON text, for byte comparisons
// that allow insignificant whitespace only.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("compact %q: %v", s, err)
	}
	var buf = new(strings.Builder)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(raw); err != nil {
		t.Fatal(err)
	}
	b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
	return b.String()
}
