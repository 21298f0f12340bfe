//go:build unix

package sidecar_test

// Every ending of a session or of the sidecar
// waits for every process the sidecar started, including the teardown of a
// connection the server lost on its own, and descendants that left the
// server's process group (setsid) end with it.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

type processEnding struct {
	name string
	end  func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string)
}

// processEndings are the ways a session's processes end, driven against a
// real sidecar process. Each returns once the ending is complete as the
// host sees it: the reply arrived, or the sidecar process was reaped.
var processEndings = []processEnding{
	{"session/close", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		if err := c.Call(ctx, protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
			t.Fatal(err)
		}
	}},
	{"servers/reconnect", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		if err := c.Call(ctx, protocol.MethodServersReconnect, map[string]any{"sessionId": sid, "server": "s"}, nil); err != nil {
			t.Fatal(err)
		}
	}},
	{"shutdown and exit", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		if err := c.Call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Notify(ctx, protocol.MethodExit, nil); err != nil {
			t.Fatal(err)
		}
		p.wait(t)
	}},
	{"stdin EOF", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.stdin.Close()
		p.wait(t)
	}},
	{"SIGTERM", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait(t)
	}},
	{"SIGINT", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.cmd.Process.Signal(syscall.SIGINT)
		p.wait(t)
	}},
	{"SIGHUP", func(t *testing.T, ctx context.Context, p *sidecarProcess, c *hostclient.Client, sid string) {
		p.cmd.Process.Signal(syscall.SIGHUP)
		p.wait(t)
	}},
}

// wrappedServer is a real sidecar process with one session whose server
// "s" is the fixture started through sh.
type wrappedServer struct {
	p      *sidecarProcess
	ctx    context.Context
	c      *hostclient.Client
	sid    string
	server int    // the fixture's pid
	bg     int    // the pid the script wrote to "$1"
	bgFile string // "$1"
	pgid   int    // the server's process group
}

// startWrapped starts a sidecar process, initializes it with one server
// "s" (the fixture, with tools, started through sh -c script: the
// fixture's command line is "$@" after the pid file the script writes its
// background process's pid to, which it shifts off), opens an eager
// session and lists its tools. Everything is killed at cleanup if the
// test did not end it.
func startWrapped(t *testing.T, script string, tools ...fixture.ToolSpec) *wrappedServer {
	t.Helper()
	w := &wrappedServer{p: startSidecarProcess(t)}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	w.ctx = ctx
	w.c = hostclient.New(ctx, w.p.stdout, w.p.stdin, hostclient.Options{Checker: schemaChecker(t)})
	t.Cleanup(func() { w.c.Close() })
	pidFile, bgFile := tempFile(t, "pid"), tempFile(t, "bg.pid")
	cfg := fixture.Config("s", fixture.Spec{PIDFile: pidFile, Tools: tools})
	cfg.Args = append([]string{"-c", script, "sh", bgFile, cfg.Command}, cfg.Args...)
	cfg.Command = "sh"
	if err := w.c.Call(ctx, protocol.MethodInitialize, map[string]any{
		"clientInfo": map[string]any{"name": "test"}, "cacheDir": t.TempDir(),
		"servers": map[string]*config.ServerConfig{"s": cfg},
	}, nil); err != nil {
		t.Fatal(err)
	}
	var open protocol.SessionOpenResult
	if err := w.c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
		t.Fatal(err)
	}
	var list protocol.ToolsListResult
	if err := w.c.Call(ctx, protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list); err != nil {
		t.Fatal(err)
	}
	w.sid = open.SessionID
	w.server, w.bg, w.bgFile = fixture.ReadPID(t, pidFile), fixture.ReadPID(t, bgFile), bgFile
	w.pgid = pgidOf(t, w.server)
	killOnCleanup(t, w.pgid, w.bg)
	// A server started again (servers/reconnect) wrote its own background
	// pid to the file: the sidecar is SIGKILLed at cleanup, which a setsid'd
	// grandchild survives, so it is killed here too.
	t.Cleanup(func() {
		var pid int
		if b, err := os.ReadFile(bgFile); err == nil {
			if _, err := fmtSscan(strings.TrimSpace(string(b)), &pid); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return w
}

// end ends the session or the sidecar the way e does, and checks that
// nothing of the server's group, nor its background process, runs.
func (w *wrappedServer) end(t *testing.T, name string) {
	t.Helper()
	i := slices.IndexFunc(processEndings, func(e processEnding) bool { return e.name == name })
	processEndings[i].end(t, w.ctx, w.p, w.c, w.sid)
	checkNothingLeft(t, "after "+name, w.pgid, w.bg)
}

// killOnCleanup makes sure a test that fails leaves nothing running.
func killOnCleanup(t *testing.T, pgid int, pids ...int) {
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// checkNothingLeft fails for every process of group pgid, and every pid,
// that still runs. It looks once: the ending it follows has promised that
// they are gone.
func checkNothingLeft(t *testing.T, what string, pgid int, pids ...int) {
	t.Helper()
	if left := group(pgid); len(left) > 0 {
		t.Errorf("%s: processes of the server's group %d still run: %+v", what, pgid, left)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("%s: process %d still runs", what, pid)
		}
	}
}

// TestLostConnectionThenEnding: the server closes its stdout (the
// connection is lost) while its process group lives on, a sleeper that
// ignores its stdin among it; the sidecar tears the group down in the
// background. Every ending that follows waits for that teardown: when
// session/close or servers/reconnect has answered, or the sidecar process
// has exited, nothing of the old group runs.
func TestLostConnectionThenEnding(t *testing.T) {
	// sh leads the group; a background sleep (stdin, stdout and stderr
	// not the server's) lingers in it; the fixture is sh's child. When the
	// fixture crashes, sh execs a sleep with stdout closed: the sidecar
	// sees EOF, the group lives on.
	const script = `sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$1"; shift; "$@"; exec sleep 1000 >&-`
	for _, e := range processEndings {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			w := startWrapped(t, script, tool("crash", "crash"))
			var res json.RawMessage
			err := w.c.Call(w.ctx, protocol.MethodToolsCall, map[string]any{"sessionId": w.sid, "name": "mcp__s__crash"}, &res)
			var rpcErr *protocol.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != protocol.CodeConnectionLost {
				t.Fatalf("crashing call: %v, want -32015", err)
			}
			if len(group(w.pgid)) == 0 {
				t.Fatalf("group %d ended with the connection: the test needs it alive", w.pgid)
			}
			w.end(t, e.name)
		})
	}
}

// TestSetsidDescendantEndsWithEveryEnding: a process the server started
// that left its process group and session (setsid, as daemons and
// detached node children do) is found through its parent and ends with
// the server, whichever way the session or the sidecar ends.
func TestSetsidDescendantEndsWithEveryEnding(t *testing.T) {
	// The setsid'd sleep is the fixture's child (sh execs the fixture).
	// The server starts only once its child has left the group: the child
	// writes its pid after setsid and then meets the script at a fifo (a
	// pid taken from $! may be read while its setsid is yet to run).
	const script = `mkfifo "$1.ready"; setsid sh -c 'echo $$ > "$0"; echo > "$0.ready"; exec sleep 1000' "$1" </dev/null >/dev/null 2>&1 & read _ < "$1.ready"; shift; exec "$@"`
	for _, e := range processEndings {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			w := startWrapped(t, script, tool("echo", "echo"))
			if pgidOf(t, w.bg) == w.pgid {
				t.Fatalf("the setsid'd process %d is in the server's group %d", w.bg, w.pgid)
			}
			w.end(t, e.name)
		})
	}
}

// detachingScript is a server whose grandchild detaches: a subshell starts
// it in a session of its own and exits at once (a double fork), so no
// parent chain leads from the server to it.
const detachingScript = `(setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$1"); shift; exec "$@"`

// TestDetachedOrphanEndsWithEveryEnding: a process the server detached is
// re-parented to the sidecar (a child subreaper on Linux), which tells it
// by the server's marker in its environment (MCP_SIDECAR_SERVER): it ends
// with its connection, whichever way the session or the sidecar ends,
// before the reply.
func TestDetachedOrphanEndsWithEveryEnding(t *testing.T) {
	for _, e := range processEndings {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			w := startWrapped(t, detachingScript, tool("echo", "echo"))
			if ppid := procOf(t, w.bg).ppid; ppid != w.p.cmd.Process.Pid {
				t.Fatalf("the detached process %d has parent %d, want the sidecar %d (a child subreaper)", w.bg, ppid, w.p.cmd.Process.Pid)
			}
			w.end(t, e.name)
		})
	}
}

// TestDetachedOrphanEndsWithItsSessionOnly: two sessions run the same
// detaching server; closing one ends its orphan, not the other's (both
// are the sidecar's children, alike but for their markers).
func TestDetachedOrphanEndsWithItsSessionOnly(t *testing.T) {
	w := startWrapped(t, detachingScript, tool("echo", "echo"))
	var open protocol.SessionOpenResult
	if err := w.c.Call(w.ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
		t.Fatal(err)
	}
	// Once tools/list has answered, the second server has written its
	// orphan's pid over the first's.
	if err := w.c.Call(w.ctx, protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	other := fixture.ReadPID(t, w.bgFile)
	if other == w.bg {
		t.Fatalf("both sessions report orphan %d", other)
	}
	t.Cleanup(func() { syscall.Kill(other, syscall.SIGKILL) })
	for _, pid := range []int{w.bg, other} {
		if ppid := procOf(t, pid).ppid; ppid != w.p.cmd.Process.Pid {
			t.Fatalf("the detached process %d has parent %d, want the sidecar %d", pid, ppid, w.p.cmd.Process.Pid)
		}
	}
	w.end(t, "session/close")
	if !alive(other) {
		t.Errorf("the other session's orphan %d was ended by session/close", other)
	}
	if err := w.c.Call(w.ctx, protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	if alive(other) {
		t.Errorf("after the other session's close: its orphan %d still runs", other)
	}
}

// TestKilledSidecarEndsServerGroups: SIGKILL leaves the sidecar no chance
// to clean up. Its watchdog (the sidecar binary re-executed, holding a
// pipe from it) sees the pipe end and kills every server's process group,
// including a member that ignores the EOF of its stdin.
func TestKilledSidecarEndsServerGroups(t *testing.T) {
	w := startWrapped(t, `sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$1"; shift; exec "$@"`, tool("echo", "echo"))
	w.p.cmd.Process.Kill()
	w.p.wait(t)
	// Nothing tells the test when the watchdog has acted: wait for the
	// outcome.
	if left := waitGroupGone(w.pgid); len(left) > 0 {
		t.Errorf("after SIGKILL of the sidecar: processes left in group %d: %+v", w.pgid, left)
	}
}

// TestInitializeTimeoutReported: a server that reads its stdin but never
// answers initialize (and exits 0 when its stdin closes, as most do) is
// reported as not answering initialize within startup_timeout_sec, not as
// "exited during startup (exit status 0)".
func TestInitializeTimeoutReported(t *testing.T) {
	h := newHarness(t)
	cfg := &config.ServerConfig{Command: "sh", Args: []string{"-c", `cat >/dev/null`}, StartupTimeoutSec: seconds(0.5)}
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	h.open(map[string]any{"startup": "eager"})
	st := startupFailure(t, h)
	const want = `server "s" did not answer initialize within startup_timeout_sec (0.5 s)`
	if !strings.HasPrefix(st.Error, want) || strings.Contains(st.Error, "exit") {
		t.Errorf("startup error %q, want it to begin %q", st.Error, want)
	}
}

func startupFailure(t *testing.T, h *harness) protocol.StartupStatusParams {
	t.Helper()
	failed := h.waitFor("startup failed", func(n hostclient.Notification) bool {
		return n.Method == protocol.NotifyStartupStatus && strings.Contains(string(n.Params), `"failed"`)
	})
	var st protocol.StartupStatusParams
	if err := json.Unmarshal(failed.Params, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStartupTimeoutReportedBeforeTeardown: a server that never answers
// initialize and ignores both its stdin's EOF and SIGTERM. Its startup
// failure is reported while its teardown (which waits out the SIGTERM
// grace, then kills) is still held back, and session/close answers only
// once that teardown is done and nothing of the server runs.
func TestStartupTimeoutReportedBeforeTeardown(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	held := make(chan struct{}, 1)
	h := newHookedHarness(t, sidecar.Hooks{Teardown: func(session, server string) {
		held <- struct{}{}
		<-release
	}})
	t.Cleanup(releaseAll) // runs before the harness stops the sidecar
	pidFile := tempFile(t, "pid")
	cfg := &config.ServerConfig{Command: "sh", Args: []string{"-c", `trap '' TERM; echo $$ > "$1"; cat >/dev/null; exec sleep 1000`, "sh", pidFile}, StartupTimeoutSec: seconds(0.5)}
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	st := startupFailure(t, h)
	if !strings.Contains(st.Error, "did not answer initialize within startup_timeout_sec") {
		t.Errorf("startup error %q", st.Error)
	}
	<-held
	pid := fixture.ReadPID(t, pidFile)
	pgid := pgidOf(t, pid)
	killOnCleanup(t, pgid, pid)

	closed := make(chan error, 1)
	go func() { closed <- h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil) }()
	releaseAll()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, "after session/close", pgid, pid)
}
