//go:build unix

package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// mcpCommand runs 'mcp-sidecar mcp ARGS' in process with its stdin and
// stdout as pipes; code receives its exit status.
type mcpCommand struct {
	stdinW  *io.PipeWriter
	stdoutR *io.PipeReader
	stderrR *io.PipeReader
	code    chan int
}

func startMCP(t *testing.T, args ...string) *mcpCommand {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	c := &mcpCommand{stdinW: stdinW, stdoutR: stdoutR, stderrR: stderrR, code: make(chan int, 1)}
	go func() {
		code := runChecked(t, append([]string{"mcp"}, args...), stdinR, stdoutW, stderrW)
		stdoutW.Close()
		stderrW.Close()
		c.code <- code
	}()
	return c
}

// TestCmdMCPStdio: an MCP client on the command's stdin and stdout lists
// the qualified tools of two servers and calls one; closing stdin ends the
// command and the servers.
func TestCmdMCPStdio(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{PIDFile: pidFile, Tools: []fixture.ToolSpec{{Name: "echo"}}}},
		server{name: "beta", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}},
	)
	c := startMCP(t, "--config", cfg)
	go io.Copy(io.Discard, c.stderrR)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, &mcp.IOTransport{Reader: c.stdoutR, Writer: c.stdinW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"mcp__alpha__echo", "mcp__beta__echo"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__alpha__echo", Arguments: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"n":1}` {
		t.Errorf("call: %q", got)
	}
	pid := fixture.ReadPID(t, pidFile)
	c.stdinW.Close() // the client goes away
	if code := <-c.code; code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("server process %d still runs after the command ended", pid)
	}
}

// TestCmdMCPLeavesItselfOut: a config that names this gateway (as the
// client's own config does) does not make it start itself.
func TestCmdMCPLeavesItselfOut(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "alpha", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}})
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[mcp_servers.self]\ncommand = \"/usr/local/bin/mcp-sidecar\"\nargs = [\"mcp\", \"--deferred\"]\n")
	f.Close()
	c := startMCP(t, "--config", cfg)
	stderr := make(chan string, 1)
	go func() { b, _ := io.ReadAll(c.stderrR); stderr <- string(b) }()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, &mcp.IOTransport{Reader: c.stdoutR, Writer: c.stdinW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One server left: its own names.
	if len(list.Tools) != 1 || list.Tools[0].Name != "echo" {
		t.Errorf("tools %v, want alpha's echo alone", list.Tools)
	}
	c.stdinW.Close()
	<-c.code
	if got := <-stderr; !strings.Contains(got, `leaving out server "self"`) {
		t.Errorf("stderr %q does not say the gateway left itself out", got)
	}
}

func TestCmdMCPBadCommandLine(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"mcp", "--http", "0.0.0.0:0"},
		{"mcp", "--http", "nonsense"},
		{"mcp", "--token", "x"},
	} {
		r := runCmd(t, nil, args...)
		if r.code != 2 {
			t.Errorf("%v: %s, want exit 2", args, r)
		}
	}
}

// TestCmdMCPHTTP: two clients of one --http gateway (MCP 2025-11-25, which
// has HTTP sessions), each with its own session; a request without the token, or from another site's page, is
// refused.
func TestCmdMCPHTTP(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "alpha", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}})
	c := startMCP(t, "--config", cfg, "--http", "127.0.0.1:0", "--token", "s3cret")
	line, err := bufio.NewReader(c.stderrR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, c.stderrR)
	_, rest, ok := strings.Cut(line, "http://")
	if !ok {
		t.Fatalf("no address in %q", line)
	}
	url := "http://" + strings.Fields(rest)[0]
	ctx := context.Background()
	hc := &http.Client{Transport: bearer{"s3cret"}}
	var sessions []*mcp.ClientSession
	for i := range 2 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		sessions = append(sessions, cs)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"client": i}})
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if got, want := res.Content[0].(*mcp.TextContent).Text, `{"client":`+strconv.Itoa(i)+`}`; got != want {
			t.Errorf("client %d: %q, want %q", i, got, want)
		}
	}
	if sessions[0].ID() == sessions[1].ID() {
		t.Errorf("both clients have session %q", sessions[0].ID())
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no token", http.Header{}, http.StatusUnauthorized},
		{"wrong token", http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"another site's page", http.Header{"Authorization": {"Bearer s3cret"}, "Origin": {"https://evil.example"}}, http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header = tc.header
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	for _, cs := range sessions {
		cs.Close()
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	if code := <-c.code; code != 130 {
		t.Errorf("exit %d after SIGINT, want 130", code)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestCmdMCPDeferredSetting: "deferred" in the [mcp] table of the settings
// file gives clients the three tools of --deferred; the flag, given, wins
// either way. A bad settings file stops the command.
func TestCmdMCPDeferredSetting(t *testing.T) {
	deferredTools := []string{"search_tools", "describe_tools", "call_tool"}
	for _, tc := range []struct {
		name     string
		settings string // "" for no file
		args     []string
		want     []string
	}{
		{"no settings file", "", nil, []string{"echo"}},
		{"deferred = true", "[mcp]\ndeferred = true\n", nil, deferredTools},
		{"deferred = false", "[mcp]\ndeferred = false\n", nil, []string{"echo"}},
		{"--deferred over deferred = false", "[mcp]\ndeferred = false\n", []string{"--deferred"}, deferredTools},
		{"--deferred=false over deferred = true", "[mcp]\ndeferred = true\n", []string{"--deferred=false"}, []string{"echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			if tc.settings != "" {
				writeSettings(t, tc.settings)
			}
			cfg := writeConfig(t, server{name: "alpha", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}})
			c := startMCP(t, append([]string{"--config", cfg}, tc.args...)...)
			go io.Copy(io.Discard, c.stderrR)
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
				Connect(ctx, &mcp.IOTransport{Reader: c.stdoutR, Writer: c.stdinW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range list.Tools {
				got = append(got, tool.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			c.stdinW.Close()
			if code := <-c.code; code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
		})
	}
	t.Run("misspelt key", func(t *testing.T) {
		isolate(t)
		path := writeSettings(t, "[mcp]\ndefered = true\n")
		cfg := writeConfig(t, server{name: "alpha", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}}})
		r := runCmd(t, strings.NewReader(""), "mcp", "--config", cfg)
		if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, `did you mean "deferred"?`) {
			t.Errorf("%s; want exit 1 naming %s and the key", r, path)
		}
	})
}

// writeSettings writes the settings file of the isolated environment.
func writeSettings(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "mcp-sidecar", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
