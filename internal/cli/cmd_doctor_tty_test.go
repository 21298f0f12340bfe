//go:build linux

package cli_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// openPTY returns a pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	return m, s
}

// TestCmdDoctorTerminal runs doctor with stderr on a real terminal: the
// progress block is redrawn in place; with TERM=dumb it is plain lines.
func TestCmdDoctorTerminal(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{ToolCount: 2}},
		server{name: "beta", spec: fixture.Spec{ExitAtStart: true}},
	)
	for _, tc := range []struct {
		term string
		live bool
	}{
		{"xterm-256color", true},
		{"dumb", false},
	} {
		t.Run(tc.term, func(t *testing.T) {
			t.Setenv("TERM", tc.term)
			t.Setenv("NO_COLOR", "1") // the layout is checked here; colour in TestBinaryColour
			master, slave := openPTY(t)
			defer master.Close()
			screen := make(chan string)
			go func() {
				var b bytes.Buffer
				io.Copy(&b, master) // ends with EIO once the slave is closed
				screen <- b.String()
			}()
			var stdout bytes.Buffer
			code := runChecked(t, []string{"doctor", "--config", cfg}, nil, &stdout, slave)
			slave.Close()
			out := <-screen
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%q", code, stdout.String(), out)
			}
			redrawn := strings.Contains(out, "\x1b[2A") && strings.Contains(out, "\r\x1b[2K")
			if redrawn != tc.live {
				t.Errorf("TERM=%s: redrawn in place = %v, want %v:\n%q", tc.term, redrawn, tc.live, out)
			}
			for _, want := range []string{"alpha  ready", "beta   FAILED"} {
				if !strings.Contains(out, want) {
					t.Errorf("terminal lacks %q:\n%q", want, out)
				}
			}
		})
	}
}

// screenReader collects what a pseudo-terminal shows and lets a test wait
// for some text on it.
type screenReader struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	done bool
}

func readScreen(master *os.File) *screenReader {
	s := &screenReader{}
	s.cond = sync.NewCond(&s.mu)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil {
				s.done = true
			}
			s.cond.Broadcast()
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// waitFor waits until the screen shows text (or the terminal closes).
func (s *screenReader) waitFor(t *testing.T, text string) {
	t.Helper()
	stop := time.AfterFunc(30*time.Second, func() {
		s.mu.Lock()
		s.done = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !strings.Contains(s.buf.String(), text) {
		if s.done {
			t.Fatalf("the terminal never showed %q:\n%q", text, s.buf.String())
		}
		s.cond.Wait()
	}
}

func (s *screenReader) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestBinaryCtrlC: Ctrl-C on the terminal while doctor waits for a slow
// server ends the real binary with status 130, prints no protocol error,
// and leaves no server process behind.
func TestBinaryCtrlC(t *testing.T) {
	isolate(t)
	bin := binary(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := writeConfig(t, server{name: "slow", spec: fixture.Spec{StartDelayMs: 60_000, PIDFile: pidFile, ToolCount: 1}})
	cmd := exec.Command(bin, "doctor", "--config", cfg)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	master, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	screen := readScreen(master)
	screen.waitFor(t, "slow  starting")
	// The server runs (it wrote its pid) before the interrupt.
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never started")
		}
		screen.mu.Lock()
		screen.cond.Wait() // the display redraws a few times a second
		screen.mu.Unlock()
	}
	if _, err := master.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want status 130\n%q", err, screen.String())
	}
	if out := screen.String(); strings.Contains(out, "jsonrpc2") || strings.Contains(out, "context canceled") {
		t.Errorf("protocol or Go error text shown:\n%q", out)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server process %d still exists after Ctrl-C (kill 0: %v)", pid, err)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestBinaryOnTerminal: a bare mcp-sidecar with a terminal on stdin says
// it speaks the host protocol and points to --help.
func TestBinaryOnTerminal(t *testing.T) {
	isolate(t)
	cmd := exec.Command(binary(t))
	master, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	screen := readScreen(master)
	screen.waitFor(t, "speaks the host protocol")
	screen.waitFor(t, "'mcp-sidecar --help'")
	master.Write([]byte{4}) // Ctrl-D: end of input, the sidecar exits
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
}

// TestBinaryCommandLineErrors: the real binary's answers to a bad command
// line: one short error and the usage line, a suggestion for a misspelt
// command, status 2.
func TestBinaryCommandLineErrors(t *testing.T) {
	isolate(t)
	bin := binary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--nope"}, "mcp-sidecar doctor: unknown flag: --nope\nUsage: mcp-sidecar doctor [flags] (see 'mcp-sidecar help doctor')\n"},
		{[]string{"doctr"}, "mcp-sidecar: unknown command \"doctr\" (did you mean \"doctor\"?)\nRun 'mcp-sidecar --help' for the list of commands.\n"},
		{[]string{"tools", "--cached", "extra"}, "mcp-sidecar tools: unexpected argument \"extra\"\nUsage: mcp-sidecar tools [flags] (see 'mcp-sidecar help tools')\n"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, tc.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%q: %v, want status 2", tc.args, err)
		}
		if stderr.String() != tc.want || stdout.Len() != 0 {
			t.Errorf("%q: stderr %q, want %q (stdout %q)", tc.args, stderr.String(), tc.want, stdout.String())
		}
	}
}

// waitClosed waits until the terminal's other end is closed and all that
// was written to it is read.
func (s *screenReader) waitClosed(t *testing.T) {
	t.Helper()
	stop := time.AfterFunc(30*time.Second, func() {
		s.mu.Lock()
		s.done = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done {
		s.cond.Wait()
	}
}

// TestBinaryNoisyServerOnTerminal: the real binary with a server that
// prints lines that are not JSON-RPC on stdout while the live display is
// drawn. tools says so in words after the display (never inside it,
// where the redraw would overwrite it), doctor says it once in its
// Warnings, and neither shows slog's attribute names. Before, such a
// line read "warn: server "noisy": skipped a non-JSON line ... (line: ...;
// skipped: 1; not_logged_before: 0)" and doctor printed it besides its
// Warnings.
func TestBinaryNoisyServerOnTerminal(t *testing.T) {
	isolate(t)
	bin := binary(t)
	cfg := writeConfig(t,
		server{name: "noisy", spec: fixture.Spec{ToolCount: 1, BannerLines: []string{"noisy v1 listening on stdio"}}},
		server{name: "quiet", spec: fixture.Spec{ToolCount: 1}},
	)
	attrNames := regexp.MustCompile(`not_logged|skipped:|line:|server=|level=|session=`)
	for _, tc := range []struct {
		cmd  string
		want []string // in order, after the display
	}{
		{"tools", []string{`warning: server "noisy" printed a line on stdout that is not JSON-RPC (skipped): noisy v1 listening on stdio`, "noisy (stdio, ready"}},
		{"doctor", []string{"Warnings:\r\n  noisy: works, but printed 1 line on stdout that is not JSON-RPC (skipped); the first:\r\n    noisy v1 listening on stdio\r\n"}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			cmd := exec.Command(bin, tc.cmd, "--config", cfg)
			cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLUMNS=120", "NO_COLOR=1")
			master, err := pty.Start(cmd)
			if err != nil {
				t.Skipf("no pseudo-terminals here: %v", err)
			}
			defer master.Close()
			screen := readScreen(master)
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit: %v", err)
			}
			screen.waitClosed(t)
			out := screen.String()
			lastRedraw := strings.LastIndex(out, "\r\x1b[2K")
			if lastRedraw < 0 || !strings.Contains(out, "noisy  ready") {
				t.Fatalf("no live display:\n%q", out)
			}
			at := lastRedraw
			for _, want := range tc.want {
				i := strings.Index(out[at:], want)
				if i < 0 {
					t.Errorf("after the display, the terminal lacks %q:\n%q", want, out)
					break
				}
				at += i + len(want)
			}
			if i := strings.Index(out, "warning:"); i >= 0 && i < lastRedraw {
				t.Errorf("a log line inside the live display:\n%q", out)
			}
			if tc.cmd == "doctor" && strings.Contains(out, "warning:") {
				t.Errorf("doctor repeats its Warnings as a log line:\n%q", out)
			}
			if m := attrNames.FindAllString(out, -1); len(m) > 0 {
				t.Errorf("attribute names %q on the terminal:\n%q", m, out)
			}
		})
	}
}

// TestBinaryDoctorTerminal: the real binary's doctor on a terminal draws
// the live display in place (cursor up, clear line) while its servers
// start, ends it with each server's outcome, and exits 1 with --strict
// when one of them failed (0 without).
func TestBinaryDoctorTerminal(t *testing.T) {
	isolate(t)
	bin := binary(t)
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{ToolCount: 1}},
		server{name: "beta", spec: fixture.Spec{ExitAtStart: true}},
	)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"doctor", "--config", cfg}, 0},
		{[]string{"doctor", "--strict", "--config", cfg}, 1},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLUMNS=120", "NO_COLOR=1")
		master, err := pty.Start(cmd)
		if err != nil {
			t.Skipf("no pseudo-terminals here: %v", err)
		}
		screen := readScreen(master)
		err = cmd.Wait()
		screen.waitClosed(t)
		master.Close()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out := screen.String()
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d:\n%q", tc.args, code, tc.code, out)
		}
		if !strings.Contains(out, "\x1b[2A") || !strings.Contains(out, "\r\x1b[2K") {
			t.Errorf("%q: not redrawn in place:\n%q", tc.args, out)
		}
		for _, want := range []string{"alpha  ready", "1 tool\r\n", "beta   FAILED", "SERVER  TRANSPORT"} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: the terminal lacks %q:\n%q", tc.args, want, out)
			}
		}
	}
}
