//go:build linux

package cli_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
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

// startOnTerminal starts the real binary with stdin, stdout and stderr on
// a pseudo-terminal, for a test that types into it.
func startOnTerminal(t *testing.T, env []string, args ...string) (*exec.Cmd, *os.File, *screenReader) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	master, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	return cmd, master, readScreen(master)
}

// TestBinaryCallProgressOnTerminal: on a terminal, call shows the tool's
// progress by default, on one line redrawn in place and cleared before
// the result; with stderr not a terminal, not unless --progress is given.
func TestBinaryCallProgressOnTerminal(t *testing.T) {
	isolate(t)
	example := binary(t) + " example-server"
	args := []string{"call", "slow", "seconds=0.3", "steps=3", "--command", example}
	out, code := onTerminal(t, []string{"TERM=xterm-256color", "NO_COLOR=1"}, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%q", code, out)
	}
	for _, want := range []string{"\r\x1b[2K  progress 1/3 step 1 of 3", "\r\x1b[2K  progress 3/3 step 3 of 3", "\r\x1b[2Kdone: 3 steps in 0.3s\r\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%q", want, out)
		}
	}
	if out, _ := onTerminal(t, []string{"TERM=xterm-256color"}, nil, append(args, "--progress=false")...); strings.Contains(out, "progress") {
		t.Errorf("--progress=false shows progress:\n%q", out)
	}
	if r := runBin(t, nil, args...); r.code != 0 || strings.Contains(r.stderr, "progress") {
		t.Errorf("progress without a terminal: %s", r)
	}
	if r := runBin(t, nil, append(args, "--progress")...); r.code != 0 || !strings.Contains(r.stderr, "progress 2/3 step 2 of 3\n") {
		t.Errorf("--progress without a terminal: %s", r)
	}
}

// TestBinaryCallAsksOnTerminal: a server's form (elicitation) is asked on
// the terminal, field by field, with each field's title, description and
// what an answer may be; an answer of the wrong type is asked again; the
// server gets the answers typed (numbers as numbers, a choice by its
// number) and the defaults of the fields left out. "n" declines. Without
// a terminal the server is told the user cannot be asked. Before, every
// server was told so.
func TestBinaryCallAsksOnTerminal(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "form", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "ask", Behavior: fixture.BehaviorElicit}}}})
	schema := `schema={"type":"object","properties":{` +
		`"name":{"type":"string","title":"Your name","description":"as on your badge"},` +
		`"age":{"type":"integer","title":"Age","minimum":0},` +
		`"colour":{"type":"string","title":"Colour","enum":["red","green"]},` +
		`"subscribe":{"type":"boolean","title":"Subscribe?","default":false}},"required":["name","age"]}`
	env := []string{"TERM=xterm-256color", "NO_COLOR=1"}

	cmd, master, screen := startOnTerminal(t, env, "call", "ask", "message=Your details", schema, "--config", cfg)
	for _, step := range []struct{ prompt, answer string }{
		{`Server "form" asks: Your details`, ""},
		{"  Your name (as on your badge): ", "Ada\r"},
		{"  Age [a whole number from 0]: ", "old\r"},
		{"    want a whole number.\r\n  Age [a whole number from 0]: ", "36\r"},
		{"    1) red\r\n    2) green\r\n  Colour [a number or a value above; optional]: ", "2\r"},
		{"  Subscribe? [yes or no; default false]: ", "\r"},
		{"Send this to form? [Y/n] ", "\r"},
	} {
		screen.waitFor(t, step.prompt)
		master.Write([]byte(step.answer))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%q", err, screen.String())
	}
	screen.waitClosed(t)
	out := screen.String()
	for _, want := range []string{`"action": "accept"`, `"name": "Ada"`, `"age": 36`, `"colour": "green"`, `"subscribe": false`} {
		if !strings.Contains(out, want) {
			t.Errorf("the server did not get %s:\n%q", want, out)
		}
	}

	cmd, master, screen = startOnTerminal(t, env, "call", "ask", "message=Delete it?", "--config", cfg)
	screen.waitFor(t, "  answer [optional]: ")
	master.Write([]byte("whatever\r"))
	screen.waitFor(t, "Send this to form? [Y/n] ")
	master.Write([]byte("n\r"))
	cmd.Wait()
	screen.waitClosed(t)
	if out := screen.String(); !strings.Contains(out, `"action": "decline"`) {
		t.Errorf("n did not decline:\n%q", out)
	}

	if r := runBin(t, nil, "call", "ask", "message=hi", "--config", cfg); strings.Contains(r.stdout, `"action"`) {
		t.Errorf("without a terminal the server could ask: %s", r)
	}
}
