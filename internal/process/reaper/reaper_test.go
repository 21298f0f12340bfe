//go:build unix

package reaper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// watchdogEnv makes the test binary run as a watchdog.
const watchdogEnv = "MCP_SIDECAR_REAPER_TEST_WATCHDOG"

func TestMain(m *testing.M) {
	if os.Getenv(watchdogEnv) == "1" {
		os.Exit(Watchdog(os.Stdin))
	}
	goleak.VerifyTestMain(m)
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func exists(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// detach starts sh, which starts script's process in the background with
// setsid and exits: the process is orphaned at once (a double fork). It
// returns the orphan's pid once the orphan runs in its own session (it
// says so on a pipe, after setsid: until then it is in this process's
// group, where the reaper rightly leaves a child alone) and its parent is
// reaped, that is, once the orphan has been re-parented.
func detach(t *testing.T, script string) int {
	t.Helper()
	ready, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer ready.Close()
	cmd := exec.Command("sh", "-c", `setsid sh -c 'echo $$ >&3; exec 3>&-; `+script+`' </dev/null >/dev/null 2>&1 &`)
	cmd.ExtraFiles = []*os.File{readyW}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	readyW.Close()
	out, err := io.ReadAll(ready)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the orphan said %q", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

func requireLinux(t *testing.T) {
	if !subreaperSupported {
		t.Skip("child subreapers are Linux only")
	}
}

// TestOrphansAreReapedNotStolen: the reaper reaps orphans re-parented to
// this process as they end, while the children os/exec waits for (servers
// started through Start, and a child it never heard of, like the launcher
// probe's) keep their exit status.
func TestOrphansAreReapedNotStolen(t *testing.T) {
	requireLinux(t)
	reaped := make(chan int, 100)
	r := New(Options{reaped: func(pid int) { reaped <- pid }})
	defer r.Close()

	for i := range 20 {
		// The orphan exits once it was re-parented: sh waits for the
		// byte the test sends it.
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", `(setsid sh -c 'read x; exit 3' <&3 3<&- >/dev/null 2>&1 &) ; exit 0`)
		cmd.ExtraFiles = []*os.File{rd}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		rd.Close()

		// A server, started through the reaper, and another child,
		// started without it, both exit with a status of their own as
		// the orphan ends.
		server := exec.Command("sh", "-c", "read x; exit 7")
		server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		serverIn, _ := server.StdinPipe()
		child, err := r.Start(server)
		if err != nil {
			t.Fatal(err)
		}
		other := exec.Command("sh", "-c", "read x; exit 9")
		other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		otherIn, _ := other.StdinPipe()
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}

		wr.Close() // the orphan exits
		orphan := <-reaped
		serverIn.Close()
		otherIn.Close()
		for _, c := range []struct {
			cmd  *exec.Cmd
			code int
		}{{server, 7}, {other, 9}} {
			var ee *exec.ExitError
			if err := c.cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("round %d: %s: Wait = %v, want exit status %d (the reaper took it?)", i, c.cmd.Args, err, c.code)
			}
		}
		child.Waited()
		if exists(orphan) {
			t.Errorf("round %d: orphan %d reaped but still exists", i, orphan)
		}
	}
}

// TestCloseEndsOrphans: orphans no connection claimed end with Close
// (SIGTERM, and SIGKILL for one that ignores it) and are reaped.
func TestCloseEndsOrphans(t *testing.T) {
	requireLinux(t)
	r := New(Options{Grace: 200 * time.Millisecond})
	polite := detach(t, `exec sleep 1000`)
	stubborn := detach(t, `trap "" TERM; sleep 1000 & wait`)
	for _, pid := range []int{polite, stubborn} {
		if ppid := parentOf(t, pid); ppid != os.Getpid() {
			t.Fatalf("orphan %d has parent %d, want this process %d", pid, ppid, os.Getpid())
		}
	}
	r.Close()
	for _, pid := range []int{polite, stubborn} {
		if exists(pid) {
			t.Errorf("orphan %d exists after Close", pid)
		}
	}
}

// startDetaching starts, through r, a server (sh leading a group of its
// own) that detaches one orphan per script with a double fork and then
// lives on. It returns the server and the orphans' pids once every orphan
// has been re-parented: the server prints "detached" after the subshells
// that forked them have exited.
func startDetaching(t *testing.T, r *Reaper, scripts ...string) (*exec.Cmd, *Child, []int) {
	t.Helper()
	var sh strings.Builder
	for _, s := range scripts {
		fmt.Fprintf(&sh, `(setsid sh -c '%s' </dev/null >/dev/null 2>&1 & echo $!); `, s)
	}
	sh.WriteString(`echo detached; exec sleep 1000`)
	cmd := exec.Command("sh", "-c", sh.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child, err := r.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		child.Waited()
	})
	var orphans []int
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "detached" {
		pid, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("server said %q", sc.Text())
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		orphans = append(orphans, pid)
	}
	if len(orphans) != len(scripts) {
		t.Fatalf("server detached %v, want %d orphans", orphans, len(scripts))
	}
	for _, pid := range orphans {
		if ppid := parentOf(t, pid); ppid != os.Getpid() {
			t.Fatalf("orphan %d has parent %d, want this process %d", pid, ppid, os.Getpid())
		}
	}
	return cmd, child, orphans
}

// TestEndOrphansEndsOnlyTheChildsOrphans: a server's detached orphans
// (double forks: no parent chain leads to them) carry its marker and end
// when its connection asks, a stubborn one by SIGKILL; another server's
// orphan and an orphan of no server live on until Close.
func TestEndOrphansEndsOnlyTheChildsOrphans(t *testing.T) {
	requireLinux(t)
	r := New(Options{Grace: 200 * time.Millisecond})
	defer r.Close()
	serverA, a, orphansA := startDetaching(t, r, `exec sleep 1000`, `trap "" TERM; sleep 1000 & wait`)
	serverB, b, orphansB := startDetaching(t, r, `exec sleep 1000`)
	unmarked := detach(t, `exec sleep 1000`)

	if a.marker == b.marker || !strings.HasPrefix(a.marker, MarkerVar+"=") {
		t.Fatalf("markers %q and %q: want %s=<id>, one per server", a.marker, b.marker, MarkerVar)
	}
	for _, c := range []struct {
		pids   []int
		marker string
	}{{append([]int{serverA.Process.Pid}, orphansA...), a.marker}, {append([]int{serverB.Process.Pid}, orphansB...), b.marker}} {
		for _, pid := range c.pids {
			if !hasEnv(t, pid, c.marker) {
				t.Errorf("process %d lacks its server's %s", pid, c.marker)
			}
		}
	}

	a.EndOrphans(200 * time.Millisecond)
	for _, pid := range orphansA {
		if exists(pid) {
			t.Errorf("orphan %d of the server exists after EndOrphans", pid)
		}
	}
	for _, pid := range append([]int{unmarked, serverA.Process.Pid, serverB.Process.Pid}, orphansB...) {
		if !running(pid) {
			t.Errorf("process %d, not an orphan of the server, was ended", pid)
		}
	}
	r.Close()
	for _, pid := range append([]int{unmarked}, orphansB...) {
		if exists(pid) {
			t.Errorf("orphan %d exists after Close", pid)
		}
	}
}

// hasEnv reports whether /proc/<pid>/environ holds entry.
func hasEnv(t *testing.T, pid int, entry string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range strings.Split(string(b), "\x00") {
		if v == entry {
			return true
		}
	}
	return false
}

func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// TestWatchdogKillsRecordedGroupsAtEOF runs the watchdog's loop on a pipe:
// at EOF it kills the groups still recorded, not those ended.
func TestWatchdogKillsRecordedGroupsAtEOF(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd
	}
	kept, forgotten := start(), start()
	rd, wr := io.Pipe()
	done := make(chan int)
	go func() { done <- Watchdog(rd) }()
	w := bufio.NewWriter(wr)
	fmt.Fprintf(w, "+%d\n+%d\n-%d\n", kept.Process.Pid, forgotten.Process.Pid, forgotten.Process.Pid)
	w.Flush()
	wr.Close()
	<-done
	if err := kept.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("recorded group: Wait = %v, want killed", err)
	}
	if !running(forgotten.Process.Pid) {
		t.Errorf("a group that ended was killed")
	}
}

// TestWatchdogProcessOutlivesAKilledParent starts the watchdog as the
// reaper does (this test binary re-executed) from a helper process that
// is then killed: the watchdog kills the helper's server group.
func TestWatchdogProcessOutlivesAKilledParent(t *testing.T) {
	if !watchdogSupported {
		t.Skip("no watchdog here")
	}
	r := New(Options{Watchdog: []string{os.Args[0], "-test.run=^$"}, WatchdogEnv: []string{watchdogEnv + "=1", "GORACE=atexit_sleep_ms=0"}})
	server := exec.Command("sleep", "1000")
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	child, err := r.Start(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill() })
	// Close without Ended: the watchdog sees EOF with the group recorded,
	// as it does when the sidecar is killed.
	r.Close()
	if err := server.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("server: Wait = %v, want killed by the watchdog", err)
	}
	child.Waited()
}
