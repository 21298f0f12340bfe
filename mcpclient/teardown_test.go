//go:build unix

package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// shServer is a stdio server run by sh -c script.
func shServer(script string, args ...string) *config.ServerConfig {
	return &config.ServerConfig{Command: "sh", Args: append([]string{"-c", script, "sh"}, args...)}
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: kill says it exists
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestInitializeTimeoutIsNotAnExit: a server that reads its stdin but never
// answers initialize is reported as not answering, not by the exit status
// it has after the client gave up and closed its stdin.
func TestInitializeTimeoutIsNotAnExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// cat drains stdin and exits 0 at its EOF; sh keeps stdout open.
	_, err := Connect(ctx, Options{Name: "fx", Config: shServer(`cat >/dev/null`)})
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	if !errors.Is(err, ErrInitializeTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrInitializeTimeout and DeadlineExceeded", err)
	}
	if strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "did not answer initialize") {
		t.Errorf("err = %q, want it to say the server did not answer initialize", err)
	}
}

// TestStartupTimeoutReportedBeforeTeardown: the timeout is reported when
// ctx ends (the startup deadline, which the sidecar fires as a
// cancellation), not after any step of the teardown of a server that
// ignores SIGTERM, nor after the wait for an exit that a startup failing on
// its own makes. Each of those waits is an hour here, so a report that
// waited on one would not come within the test's bound. The teardown is
// handed to Options.Background, whose owner waits for it.
func TestStartupTimeoutReportedBeforeTeardown(t *testing.T) {
	const forever = time.Hour
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, deadline := context.WithCancel(context.Background())
	defer deadline()
	started := make(chan struct{})
	var startedOnce sync.Once
	teardowns := make(chan func(), 1)
	reported := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, Options{
			Name:   "fx",
			Config: shServer(`trap '' TERM; echo $$ > "$1"; echo started >&2; exec sleep 1000`, pidFile),
			Handlers: Handlers{StderrLine: func(l string) {
				if l == "started" {
					startedOnce.Do(func() { close(started) })
				}
			}},
			CloseGrace: forever,
			TermGrace:  forever,
			exitWait:   forever,
			Background: func(f func()) { teardowns <- f },
		})
		reported <- err
	}()
	bound := testCtx(t)
	select {
	case <-started:
	case <-bound.Done():
		t.Fatal("the server did not start")
	}
	pid := fixture.ReadPID(t, pidFile)
	// The graces are an hour: the test ends the server for the teardown
	// (also if it fails first, which lets a Connect stuck in a wait
	// return).
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })

	deadline()
	var err error
	select {
	case err = <-reported:
	case <-bound.Done():
		t.Fatal("the startup timeout was not reported: the report waits on the teardown or on the server's exit")
	}
	if !errors.Is(err, ErrInitializeTimeout) {
		t.Fatalf("err = %v, want ErrInitializeTimeout", err)
	}
	var teardown func()
	select {
	case teardown = <-teardowns:
	default:
		t.Fatal("Connect returned without handing its teardown to Background")
	}
	if !running(pid) {
		t.Errorf("server %d already gone when the timeout was reported: the report waited for the teardown", pid)
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	teardown()
	checkGone(t, pid)
}

// TestWriteToClosedStdinIsConnectionLost: a call written to a server that
// closed its stdin (but lives on, stdout open) fails with ErrConnectionLost
// and the server's last stderr, and ends the connection.
func TestWriteToClosedStdinIsConnectionLost(t *testing.T) {
	closed := make(chan struct{})
	c := connect(t, Options{
		Config: fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{CloseStdinOn: "notifications/initialized"}}),
		Handlers: Handlers{StderrLine: func(l string) {
			if strings.Contains(l, "stdin closed") {
				close(closed)
			}
		}},
		CloseGrace: 100 * time.Millisecond, TermGrace: 100 * time.Millisecond,
	})
	select {
	case <-closed:
	case <-testCtx(t).Done():
		t.Fatal("the server did not close its stdin")
	}
	_, err := c.CallTool(testCtx(t), "echo", nil, nil)
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("call: err = %v, want ErrConnectionLost", err)
	}
	for _, w := range []string{"closed its input", "stdin closed"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	<-c.Done()
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Errorf("Err() = %v", c.Err())
	}
}

// TestCloseEndsSetsidDescendant: a child the server moved out of its
// process group and session (setsid) ends with the server's Close (issue
// 13 item 6).
func TestCloseEndsSetsidDescendant(t *testing.T) {
	dir := t.TempDir()
	bgPID := filepath.Join(dir, "bg.pid")
	cfg := fixture.Config("fx", fixture.Spec{ToolCount: 1})
	cfg.Args = append([]string{"-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$1"; shift; exec "$@"`, "sh", bgPID, cfg.Command}, cfg.Args...)
	cfg.Command = "sh"
	c := connect(t, Options{Config: cfg, CloseGrace: 100 * time.Millisecond, TermGrace: 100 * time.Millisecond})
	bg := fixture.ReadPID(t, bgPID)
	t.Cleanup(func() { syscall.Kill(bg, syscall.SIGKILL) })
	if !running(bg) {
		t.Fatalf("setsid'd child %d not running", bg)
	}
	c.Close()
	if running(bg) {
		t.Errorf("setsid'd child %d still runs after Close", bg)
	}
}

// TestCloseWaitsForTeardownOfLostConnection: when the server closes its
// stdout and lives on, the connection tears the group down on its own;
// Close returns only once that teardown is done.
func TestCloseWaitsForTeardownOfLostConnection(t *testing.T) {
	dir := t.TempDir()
	bgPID := filepath.Join(dir, "bg.pid")
	cfg := fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "die", Behavior: fixture.BehaviorCrash}}})
	cfg.Args = append([]string{"-c", `sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$1"; shift; "$@"; exec sleep 1000 >&-`, "sh", bgPID, cfg.Command}, cfg.Args...)
	cfg.Command = "sh"
	c := connect(t, Options{Config: cfg, CloseGrace: 300 * time.Millisecond, TermGrace: 300 * time.Millisecond})
	bg, leader := fixture.ReadPID(t, bgPID), c.PID()
	t.Cleanup(func() { syscall.Kill(-leader, syscall.SIGKILL) })
	if _, err := c.CallTool(testCtx(t), "die", nil, nil); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("err = %v, want ErrConnectionLost", err)
	}
	<-c.Done()
	c.Close()
	for _, pid := range []int{leader, bg} {
		if running(pid) {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
}

// TestStartupTimeout: a server that never answers initialize fails the
// startup when its deadline passes, named as such, and its process is gone.
// The deadline passes once the server runs (its PID file is written), not
// at a fixed time: a loaded machine may take longer than any fixed time to
// start the process.
func TestStartupTimeout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx := newCueContext()
	go func() {
		deadline := time.Now().Add(30 * time.Second) // a hang guard only
		for time.Now().Before(deadline) {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		ctx.expire()
	}()
	_, err := Connect(ctx, Options{Name: "fx", Config: fixture.Config("fx", fixture.Spec{HangAtStart: true, PIDFile: pidFile}),
		CloseGrace: 100 * time.Millisecond, TermGrace: 100 * time.Millisecond})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer initialize") {
		t.Fatalf("err = %v", err)
	}
	checkGone(t, fixture.ReadPID(t, pidFile))
}

// cueContext is a context whose deadline passes when the test says so
// (expire): Err is then context.DeadlineExceeded, as for a deadline.
type cueContext struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newCueContext() *cueContext {
	return &cueContext{Context: context.Background(), done: make(chan struct{})}
}

func (c *cueContext) Done() <-chan struct{} { return c.done }

func (c *cueContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *cueContext) expire() { c.once.Do(func() { close(c.done) }) }

func TestCrashMidCall(t *testing.T) {
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{
		Tools: []fixture.ToolSpec{{Name: "die", Behavior: fixture.BehaviorCrash}, {Name: "slow", Behavior: fixture.BehaviorSleep}},
	})})
	pid := c.PID()
	// One call is parked in the server when the other crashes it.
	slowErr := make(chan error, 1)
	go func() {
		_, err := c.CallTool(testCtx(t), "slow", nil, nil)
		slowErr <- err
	}()
	_, err := c.CallTool(testCtx(t), "die", nil, nil)
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("crashing call: err = %v, want ErrConnectionLost", err)
	}
	for _, w := range []string{"exit status 3", "crashing in die"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if err := <-slowErr; !errors.Is(err, ErrConnectionLost) {
		t.Errorf("parked call: err = %v, want ErrConnectionLost", err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done not closed after the crash")
	}
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Errorf("Err() = %v", c.Err())
	}
	if _, err := c.ListToolsPage(testCtx(t), ""); !errors.Is(err, ErrConnectionLost) {
		t.Errorf("call after crash: err = %v", err)
	}
	c.Close()
	checkGone(t, pid)
}

// checkGone fails unless pid no longer runs (a zombie awaiting a reaper
// that is not us counts as gone: it runs nothing).
func checkGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return
	}
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
		return
	}
	t.Errorf("process %d still runs: %s", pid, stat)
}

func TestCloseEndsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	fxPID, sleepPID := filepath.Join(dir, "fx.pid"), filepath.Join(dir, "sleep.pid")
	cfg := fixture.Config("fx", fixture.Spec{ToolCount: 1, PIDFile: fxPID})
	// sh is the leader; the fixture is its child (our grandchild) and a
	// sleeper that ignores stdin lingers in the group.
	cfg.Args = append([]string{"-c", `sleep 1000 & echo $! > "$1"; shift; "$@"; exit $?`, "sh", sleepPID, cfg.Command}, cfg.Args...)
	cfg.Command = "sh"
	c := connect(t, Options{Config: cfg, CloseGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond})
	if _, err := c.ListToolsPage(testCtx(t), ""); err != nil {
		t.Fatal(err)
	}
	pids := []int{c.PID(), fixture.ReadPID(t, fxPID), fixture.ReadPID(t, sleepPID)}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		checkGone(t, pid)
	}
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Errorf("Err() after Close = %v", c.Err())
	}
	if err := c.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}
