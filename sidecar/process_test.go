package sidecar_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

func fmtSscan(s string, v ...any) (int, error) { return fmt.Sscan(s, v...) }

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return processExists(pid)
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone waits until pid is gone; process exit after a parent's kill is
// asynchronous even when the parent reaped its own child.
func waitGone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// sidecarProcess is the sidecar as a real child process of the test.
type sidecarProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

// startSidecarProcess starts the sidecar as a child process, with extra
// environment variables ("KEY=VALUE") added to the test's own.
func startSidecarProcess(t *testing.T, extra ...string) *sidecarProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), serveEnv+"=1"), extra...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &sidecarProcess{cmd: cmd, stdin: stdin, stdout: stdout}
}

func (p *sidecarProcess) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatal(err)
	case <-time.After(testTimeout):
		t.Fatal("sidecar process did not exit")
	}
	return -1
}

// openWithServer initializes a real sidecar process with one fixture
// server and returns the server's pid.
func openWithServer(t *testing.T, ctx context.Context, c *hostclient.Client, spec fixture.Spec) int {
	t.Helper()
	pidFile := tempFile(t, "pid")
	spec.PIDFile = pidFile
	spec.Tools = append(spec.Tools, tool("echo", "echo"))
	if err := c.Call(ctx, protocol.MethodInitialize, map[string]any{
		"clientInfo": map[string]any{"name": "test"},
		"cacheDir":   t.TempDir(),
		"servers":    map[string]*config.ServerConfig{"s": fixture.Config("s", spec)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	var open protocol.SessionOpenResult
	if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
		t.Fatal(err)
	}
	var list protocol.ToolsListResult
	if err := c.Call(ctx, protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 {
		t.Fatalf("tools/list = %+v", list)
	}
	pid := fixture.ReadPID(t, pidFile)
	if !alive(pid) {
		t.Fatalf("server %d not running", pid)
	}
	return pid
}

func TestShutdownExitLeavesNoProcess(t *testing.T) {
	p := startSidecarProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := hostclient.New(ctx, p.stdout, p.stdin, hostclient.Options{Checker: schemaChecker(t)})
	defer c.Close()
	pid := openWithServer(t, ctx, c, fixture.Spec{})
	if err := c.Call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify(ctx, protocol.MethodExit, nil); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit after shutdown: status %d, want 0", code)
	}
	if !waitGone(pid) {
		t.Errorf("server %d outlived the sidecar", pid)
	}
}

func TestStdinEOFLeavesNoProcess(t *testing.T) {
	p := startSidecarProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := hostclient.New(ctx, p.stdout, p.stdin, hostclient.Options{Checker: schemaChecker(t)})
	pid := openWithServer(t, ctx, c, fixture.Spec{})
	p.stdin.Close()
	if code := p.wait(t); code != 1 {
		t.Errorf("EOF without shutdown: status %d, want 1 (as LSP)", code)
	}
	c.Close()
	if !waitGone(pid) {
		t.Errorf("server %d outlived the sidecar", pid)
	}
}

// TestHostileFrames sends the host-side faults of the contract to a real
// sidecar process: every one gets an error reply and the process goes on.
func TestHostileFrames(t *testing.T) {
	p := startSidecarProcess(t)
	r := bufio.NewReader(p.stdout)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(p.stdin, s); err != nil {
			t.Fatal(err)
		}
	}
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	type reply struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	read := func() reply {
		t.Helper()
		var n int
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reading reply: %v", err)
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				fmt.Sscan(v, &n)
			}
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		var rep reply
		if err := json.Unmarshal(body, &rep); err != nil {
			t.Fatalf("reply %q: %v", body, err)
		}
		return rep
	}
	wantErr := func(what string, code int64) {
		t.Helper()
		rep := read()
		if rep.Error == nil || rep.Error.Code != code {
			t.Errorf("%s: reply %+v, want error %d", what, rep, code)
		}
	}

	send(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"t"}}}`))
	if rep := read(); rep.Error != nil {
		t.Fatalf("initialize: %+v", rep)
	}
	send(frame(`{"jsonrpc":"2.0","id":2,"method":"tools/list",`))
	wantErr("invalid JSON", protocol.CodeParseError)
	send(frame(`[{"jsonrpc":"2.0","id":3,"method":"servers/status"}]`))
	wantErr("batch", protocol.CodeInvalidRequest)
	send("Garbage-Header\r\n\r\n")
	wantErr("garbage header", protocol.CodeParseError)
	// 100 MiB announced and sent: drained, answered, and the stream stays
	// in sync.
	const big = 100 << 20
	send(fmt.Sprintf("Content-Length: %d\r\n\r\n", big))
	go func() {
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = ' '
		}
		for i := 0; i < big/len(chunk); i++ {
			if _, err := p.stdin.Write(chunk); err != nil {
				return
			}
		}
	}()
	rep := read()
	if rep.Error == nil {
		t.Errorf("100 MiB frame: reply %+v, want an error", rep)
	}
	send(frame(`{"jsonrpc":"2.0","id":-4,"method":"session/open","params":{"startup":"eager"}}`))
	rep = read()
	if rep.Error != nil || string(rep.ID) != "-4" {
		t.Errorf("after the faults: reply %+v, want success for id -4", rep)
	}
	send(frame(`{"jsonrpc":"2.0","id":5,"method":"shutdown"}`))
	for string(read().ID) != "5" {
	}
	send(frame(`{"jsonrpc":"2.0","method":"exit"}`))
	if code := p.wait(t); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestHalfCloseStillAnswers: a host that writes its requests and closes
// stdin at once (printf ... | mcp-sidecar) still gets the replies of the
// requests in flight; lists are [] rather than null.
func TestHalfCloseStillAnswers(t *testing.T) {
	p := startSidecarProcess(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"t"}}}`
	if _, err := fmt.Fprintf(p.stdin, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		t.Fatal(err)
	}
	p.stdin.Close()
	out, err := io.ReadAll(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	_, frame, ok := strings.Cut(string(out), "\r\n\r\n")
	if !ok {
		t.Fatalf("no reply frame in %q", out)
	}
	var rep struct {
		ID     int `json:"id"`
		Result struct {
			Servers []string `json:"servers"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(frame), &rep); err != nil || rep.ID != 1 {
		t.Fatalf("reply %q: %v", frame, err)
	}
	if !strings.Contains(frame, `"servers":[]`) {
		t.Errorf("reply %s: servers must be [] when none are configured", frame)
	}
	if code := p.wait(t); code != 1 {
		t.Errorf("exit status %d after EOF without shutdown, want 1", code)
	}
}
