//go:build linux

package cli_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// writeInputsConfig writes a VS Code mcp.json whose server fx (the fixture
// with an env tool) gets the inputs token (a password) and org (with a
// default) as TOKEN and ORG.
func writeInputsConfig(t *testing.T) string {
	t.Helper()
	c := fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "env", Behavior: fixture.BehaviorEnv}}})
	env := map[string]string{"TOKEN": "${input:token}", "ORG": "${input:org}"}
	for k, v := range c.Env {
		env[k] = v
	}
	data, err := json.Marshal(map[string]any{
		"inputs": []any{
			map[string]any{"type": "promptString", "id": "token", "description": "API token", "password": true},
			map[string]any{"type": "promptString", "id": "org", "description": "Organisation", "default": "acme"},
		},
		"servers": map[string]any{"fx": map[string]any{"type": "stdio", "command": c.Command, "args": c.Args, "env": env}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), ".vscode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mcp.json")
	writeFile(t, path, string(data), 0o600)
	return path
}

// TestBinaryInputsOnTerminal: the real binary asks a VS Code file's inputs
// on the terminal, the password without echo, the default for an empty
// answer, and the server gets the values.
func TestBinaryInputsOnTerminal(t *testing.T) {
	isolate(t)
	cfg := writeInputsConfig(t)
	const secret = "s3cr3t-tok-4242"
	cmd := exec.Command(binary(t), "call", "fx", "env", "--config", cfg)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1")
	master, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	screen := readScreen(master)
	screen.waitFor(t, "Organisation\r\n  (input \"org\" of "+cfg+", for server \"fx\"; Ctrl-D cancels)\r\n[acme] > ")
	master.Write([]byte("\r")) // the default
	screen.waitFor(t, "API token\r\n  (input \"token\" of "+cfg+", for server \"fx\"; typing is hidden, Ctrl-C or Ctrl-D cancels)\r\n> ")
	master.Write([]byte(secret + "\r"))
	screen.waitFor(t, `"ORG": "acme"`)
	screen.waitClosed(t)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%q", err, screen.String())
	}
	out := screen.String()
	if !strings.Contains(out, `"TOKEN": "`+secret+`"`) {
		t.Errorf("the server did not get the token:\n%q", out)
	}
	// Typed, the token was not echoed: it shows only in the result.
	if strings.Count(out, secret) != 1 {
		t.Errorf("the token shows %d times on the terminal, want once (the result):\n%q", strings.Count(out, secret), out)
	}
}

// TestBinaryInputsWithoutTerminal: with no terminal to ask on, the server
// that needs an input is not started, and the error says which input.
func TestBinaryInputsWithoutTerminal(t *testing.T) {
	isolate(t)
	cfg := writeInputsConfig(t)
	cmd := exec.Command(binary(t), "call", "fx", "env", "--config", cfg)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want 1\n%s", err, out)
	}
	for _, want := range []string{`server "fx": key "inputs": uses ${input:org} ("Organisation"), which is asked on a terminal: run the command with stdin and stderr on one`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBinaryInputCancelledOnTerminal: Ctrl-D at a question cancels it:
// the server that needs it is not started, and its other inputs are not
// asked.
func TestBinaryInputCancelledOnTerminal(t *testing.T) {
	isolate(t)
	cfg := writeInputsConfig(t)
	cmd := exec.Command(binary(t), "call", "fx", "env", "--config", cfg)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1")
	master, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	screen := readScreen(master)
	screen.waitFor(t, "[acme] > ")
	master.Write([]byte{4}) // Ctrl-D
	screen.waitFor(t, "(cancelled)")
	screen.waitClosed(t)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want 1\n%q", err, screen.String())
	}
	out := screen.String()
	if strings.Contains(out, "API token") {
		t.Errorf("the other input was asked after a cancel:\n%q", out)
	}
	if !strings.Contains(out, `${input:org} (\"Organisation\") was not given: the user cancelled it`) && !strings.Contains(out, `${input:org} ("Organisation") was not given: the user cancelled it`) {
		t.Errorf("the reason is not shown:\n%q", out)
	}
}
