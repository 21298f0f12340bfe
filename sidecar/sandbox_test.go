package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// rawHost writes frames byte for byte, so the test controls exactly what
// the host sent (a Go JSON encoder would compact and HTML-escape it). Every
// frame either way is checked against the protocol schema, as hostclient's
// are.
type rawHost struct {
	t   *testing.T
	w   io.Writer
	r   *bufio.Reader
	ids int
}

func newRawHost(t *testing.T) *rawHost {
	t.Helper()
	hostR, sidecarW := io.Pipe()
	sidecarR, hostW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sidecar.Serve(ctx, sidecarR, sidecarW, sidecar.Options{Env: os.LookupEnv, Logger: slog.New(slog.DiscardHandler)})
		sidecarW.Close()
	}()
	t.Cleanup(func() {
		hostW.Close()
		cancel()
		<-done
	})
	return newRawHostOn(t, hostR, hostW)
}

// newRawHostOn is a rawHost on r (the sidecar's output) and w (its input),
// checked against the protocol schema.
func newRawHostOn(t *testing.T, r io.Reader, w io.WriteCloser) *rawHost {
	t.Helper()
	c := schemaChecker(t)
	return &rawHost{t: t, w: c.Writer(schema.HostToSidecar, w), r: bufio.NewReader(c.Reader(schema.SidecarToHost, r))}
}

// call sends a request whose params are the given JSON text and returns
// the result, skipping notifications.
func (h *rawHost) call(method, params string) (json.RawMessage, *protocol.ErrorData) {
	h.t.Helper()
	h.ids++
	id := h.ids
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	if _, err := fmt.Fprintf(h.w, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		h.t.Fatal(err)
	}
	for {
		msg := h.read()
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string             `json:"message"`
				Data    protocol.ErrorData `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			h.t.Fatalf("frame %s: %v", msg, err)
		}
		if m.ID == nil || *m.ID != id {
			continue
		}
		if m.Error != nil {
			h.t.Logf("%s: %s", method, m.Error.Message)
			return nil, &m.Error.Data
		}
		return m.Result, nil
	}
}

func (h *rawHost) read() []byte {
	h.t.Helper()
	n := -1
	for {
		line, err := h.r.ReadString('\n')
		if err != nil {
			h.t.Fatalf("reading frame: %v", err)
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
	if _, err := io.ReadFull(h.r, body); err != nil {
		h.t.Fatal(err)
	}
	return body
}

// fakeLauncher writes a launcher that passes the probe.
func fakeLauncher(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codex")
	script := "#!/bin/sh\nif [ \"$1\" = sandbox ] && [ \"$2\" = --help ]; then echo 'Usage: codex sandbox --sandbox-state-json <JSON> -- <COMMAND>'; exit 0; fi\nexit 1\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolsCallMeta finds the tools/call requests in a server's raw input and
// returns each one's _meta members and arguments, byte for byte.
func toolsCallMeta(t *testing.T, lines []string) (metas []map[string]json.RawMessage, args []json.RawMessage) {
	t.Helper()
	for _, line := range lines {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta      map[string]json.RawMessage `json:"_meta"`
				Arguments json.RawMessage            `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "tools/call" {
			metas = append(metas, m.Params.Meta)
			args = append(args, m.Params.Arguments)
		}
	}
	return metas, args
}

// The policy of the issue: key order, unknown fields, a big integer, 1.0,
// 2e10, an escaped é and HTML characters, with insignificant whitespace.
const policy = `{ "zeta": 1, "mode": "workspace-write", "budget": 12345678901234567890, "ratio": 1.0, "big": 2e10, "name": "caf\u00e9", "html": "<&>", "unknown": {"nested": [true, null]} }`

func compactBytes(t *testing.T, s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSandboxMetaByteFaithfulAndOnlyToOptedIn(t *testing.T) {
	launcher := fakeLauncher(t)
	logs := map[string]string{}
	servers := map[string]*config.ServerConfig{}
	for name, exp := range map[string]map[string]json.RawMessage{
		"preferred":  {"codex/sandbox-state": json.RawMessage(`{}`)},
		"deprecated": {"codex/sandbox-state-meta": json.RawMessage(`{}`)},
		"both":       {"codex/sandbox-state": json.RawMessage(`{}`), "codex/sandbox-state-meta": json.RawMessage(`{}`)},
		"none":       nil,
	} {
		logs[name] = tempFile(t, name+".log")
		servers[name] = fixture.Config(name, fixture.Spec{RawLogFile: logs[name], Experimental: exp, Tools: []fixture.ToolSpec{tool("run", "echo")}})
	}
	inline, _ := json.Marshal(servers)
	h := newRawHost(t)
	res, errData := h.call("initialize", fmt.Sprintf(`{"clientInfo":{"name":"t"},"cacheDir":%q,"servers":%s,"launcher":{"codexExecutable":%q}}`, t.TempDir(), inline, launcher))
	if errData != nil {
		t.Fatalf("initialize: %+v", errData)
	}
	var init protocol.InitializeResult
	json.Unmarshal(res, &init)
	if init.Launcher.Status != "verified" {
		t.Fatalf("launcher %+v, want verified", init.Launcher)
	}
	res, _ = h.call("session/open", `{"startup":"eager"}`)
	var open protocol.SessionOpenResult
	json.Unmarshal(res, &open)
	if _, errData := h.call("tools/list", fmt.Sprintf(`{"sessionId":%q}`, open.SessionID)); errData != nil {
		t.Fatalf("tools/list: %+v", errData)
	}

	// Host meta tries to set every sandbox key; arguments carry lookalikes.
	hostMeta := `{"progressToken":"p-1","threadId":"t-9","codex/sandbox-state":{"evil":true},"codex/sandbox-state-meta":{"evil":true},"codex/sandbox-launcher":{"codexExecutable":"/tmp/evil"}}`
	arguments := `{"_meta":{"codex/sandbox-state":{"from":"model"}},"codex/sandbox-state":"model text","n":12345678901234567890}`
	for name := range servers {
		params := fmt.Sprintf(`{"sessionId":%q,"name":"mcp__%s__run","arguments":%s,"sandboxState":%s,"meta":%s}`, open.SessionID, name, arguments, policy, hostMeta)
		if _, errData := h.call("tools/call", params); errData != nil {
			t.Fatalf("tools/call %s: %+v", name, errData)
		}
	}

	wantPolicy := compactBytes(t, policy)
	wantLauncher := fmt.Sprintf(`{"codexExecutable":%q}`, launcher)
	for name, log := range logs {
		metas, args := toolsCallMeta(t, fixture.ReadLines(log))
		if len(metas) != 1 {
			t.Fatalf("%s received %d tools/call", name, len(metas))
		}
		got := map[string]string{}
		for k, v := range metas[0] {
			// The protocol's own keys (a 2026-07-28 request names its
			// version, client and capabilities) are the connection's.
			if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
				got[k] = string(v)
			}
		}
		want := map[string]string{"progressToken": `"p-1"`, "threadId": `"t-9"`}
		if name != "none" {
			want["codex/sandbox-state"] = wantPolicy
			want["codex/sandbox-state-meta"] = wantPolicy
			want["codex/sandbox-launcher"] = wantLauncher
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: _meta as received (-want +got):\n%s", name, diff)
		}
		if string(args[0]) != compactBytes(t, arguments) {
			t.Errorf("%s: arguments\n got %s\nwant %s", name, args[0], compactBytes(t, arguments))
		}
	}
	t.Logf("_meta the preferred server received: %s", metasLine(t, logs["preferred"]))

	// The next call without sandboxState carries no policy: nothing is
	// carried over from one call to the next.
	if _, errData := h.call("tools/call", fmt.Sprintf(`{"sessionId":%q,"name":"mcp__preferred__run"}`, open.SessionID)); errData != nil {
		t.Fatal(errData)
	}
	metas, _ := toolsCallMeta(t, fixture.ReadLines(logs["preferred"]))
	if len(metas) == 2 {
		for k := range metas[1] {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				delete(metas[1], k) // the protocol's own, per request
			}
		}
	}
	if len(metas) != 2 || len(metas[1]) != 0 {
		t.Errorf("second call _meta = %v, want none", metas[len(metas)-1])
	}
}

func metasLine(t *testing.T, log string) string {
	for _, line := range fixture.ReadLines(log) {
		if strings.Contains(line, `"tools/call"`) {
			return line
		}
	}
	return ""
}

// TestSandboxHTTPGetsStateButNoLauncher: the launcher is for local stdio
// servers only, loopback HTTP included.
func TestSandboxHTTPGetsStateButNoLauncher(t *testing.T) {
	launcher := fakeLauncher(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "http-fixture"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Experimental: map[string]any{"codex/sandbox-state": map[string]any{}}},
	})
	server.AddTool(&mcp.Tool{Name: "run", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	var mu sync.Mutex
	var bodies []string
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, string(b))
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // runs after the host (and so the sidecar) is gone

	h := newRawHost(t)
	if _, errData := h.call("initialize", fmt.Sprintf(`{"clientInfo":{"name":"t"},"cacheDir":%q,"servers":{"web":{"url":%q}},"launcher":{"codexExecutable":%q}}`, t.TempDir(), ts.URL, launcher)); errData != nil {
		t.Fatal(errData)
	}
	res, _ := h.call("session/open", `{}`)
	var open protocol.SessionOpenResult
	json.Unmarshal(res, &open)
	if _, errData := h.call("tools/call", fmt.Sprintf(`{"sessionId":%q,"name":"mcp__web__run","sandboxState":%s}`, open.SessionID, policy)); errData != nil {
		t.Fatal(errData)
	}
	mu.Lock()
	metas, _ := toolsCallMeta(t, bodies)
	mu.Unlock()
	if len(metas) != 1 {
		t.Fatalf("server got %d tools/call", len(metas))
	}
	if got := string(metas[0]["codex/sandbox-state"]); got != compactBytes(t, policy) {
		t.Errorf("policy over HTTP\n got %s\nwant %s", got, compactBytes(t, policy))
	}
	if l, ok := metas[0]["codex/sandbox-launcher"]; ok {
		t.Errorf("HTTP server received a launcher: %s", l)
	}
	var st protocol.ServersStatusResult
	res, _ = h.call("servers/status", fmt.Sprintf(`{"sessionId":%q}`, open.SessionID))
	json.Unmarshal(res, &st)
	if st.Servers[0].Launcher == nil || st.Servers[0].Launcher.Status != "unavailable" || st.Launcher.Status != "verified" {
		t.Errorf("status %+v / %+v: the launcher is verified but unavailable to an HTTP server", st.Servers[0].Launcher, st.Launcher)
	}
}
