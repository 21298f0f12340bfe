//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
)

// onTerminal runs the real binary with its stderr, and its stdout unless
// stdout is given, on a pseudo-terminal; it returns what the terminal
// showed and the exit status. stdin, when given, is written to the
// terminal as typed once the screen shows each prompt (prompt -> answer).
func onTerminal(t *testing.T, env []string, stdout *bytes.Buffer, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	master, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	screen := readScreen(master)
	err = cmd.Wait()
	screen.waitClosed(t)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return screen.String(), code
}

// TestBinaryColour: on a terminal the states are coloured (ready green,
// failed red) in doctor's table, in its live display, in list and in
// tools; never with NO_COLOR or --no-color, and never in what goes to a
// stdout that is not a terminal (while stderr, a terminal, still is).
func TestBinaryColour(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{ToolCount: 1}},
		server{name: "beta", spec: fixture.Spec{ExitAtStart: true}},
	)
	const greenReady, redFailed = "\x1b[32mready\x1b[0m", "\x1b[31mfailed\x1b[0m"
	term := []string{"TERM=xterm-256color", "COLUMNS=160", "NO_COLOR="}
	for _, cmd := range []string{"doctor", "list", "tools"} {
		out, _ := onTerminal(t, term, nil, cmd, "--config", cfg)
		for _, want := range []string{greenReady, redFailed} {
			if !strings.Contains(out, want) {
				t.Errorf("%s on a terminal lacks %q:\n%q", cmd, want, out)
			}
		}
	}
	if out, _ := onTerminal(t, term, nil, "doctor", "--config", cfg); !strings.Contains(out, "\x1b[31mFAILED\x1b[0m") {
		t.Errorf("doctor's live display is not coloured:\n%q", out)
	}
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{[]string{"TERM=xterm-256color", "NO_COLOR=1"}, nil},
		{term, []string{"--no-color"}},
	} {
		for _, cmd := range []string{"doctor", "list", "tools"} {
			out, _ := onTerminal(t, tc.env, nil, append([]string{cmd, "--config", cfg}, tc.args...)...)
			if strings.Contains(out, "\x1b[3") || strings.Contains(out, "\x1b[0m") {
				t.Errorf("%s %v with %v is coloured:\n%q", cmd, tc.args, tc.env, out)
			}
		}
	}
	// stdout to a pipe, stderr on the terminal: the table is plain, the
	// live display coloured.
	var stdout bytes.Buffer
	out, _ := onTerminal(t, term, &stdout, "doctor", "--config", cfg)
	if strings.Contains(stdout.String(), "\x1b[") || !strings.Contains(stdout.String(), "alpha   stdio      ready") {
		t.Errorf("doctor's stdout to a pipe:\n%q", stdout.String())
	}
	if !strings.Contains(out, "\x1b[32mready\x1b[0m") {
		t.Errorf("doctor's live display on the terminal is not coloured:\n%q", out)
	}
}
