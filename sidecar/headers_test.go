//go:build unix

package sidecar_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// tokenServer is a Streamable HTTP MCP server that accepts only
// "Authorization: Bearer <valid>" and answers 401 otherwise; its one tool,
// whoami, fails with an error quoting the Authorization it got.
func tokenServer(t *testing.T, valid string, unauthorized *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		auth := r.Header.Get("Authorization")
		if auth != "Bearer "+valid {
			unauthorized.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &msg) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch msg.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"tok","version":"1"}}}`, msg.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"whoami","inputSchema":{"type":"object"}}]}}`, msg.ID)
		case "tools/call":
			quoted, _ := json.Marshal("you sent Authorization: " + auth)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, msg.ID, quoted)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A header helper gives a Streamable HTTP server its headers: it runs
// before the first request, and again when the server answers 401 (its
// first token is stale here); what it gave never reaches the host.
func TestHeadersHelperThroughHTTP(t *testing.T) {
	const fresh = "fresh-tok-8e7d6c5b"
	var unauthorized atomic.Int32
	ts := tokenServer(t, fresh, &unauthorized)
	dir := t.TempDir()
	// The first run prints a stale token, every later one the fresh one.
	script := `if [ -f ran ]; then tok=` + fresh + `; else tok=stale-tok-1a2b3c4d; touch ran; fi
printf '{"Authorization":"Bearer %s"}' "$tok"`
	if err := os.WriteFile(filepath.Join(dir, "headers.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	mcpJSON := filepath.Join(dir, ".mcp.json")
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tok": map[string]any{"type": "http", "url": ts.URL + "/mcp", "headersHelper": "sh headers.sh"}}})
	if err := os.WriteFile(mcpJSON, entry, 0o600); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{}, map[string]any{"configFiles": []string{mcpJSON}})
	open := h.open(map[string]any{"startup": "eager"})
	if sum := h.waitComplete(open.SessionID, 0); len(sum.Ready) != 1 {
		t.Fatalf("startupComplete %+v: want tok ready", sum)
	}
	if unauthorized.Load() == 0 {
		t.Error("the server never answered 401: the stale token was not sent first")
	}
	_, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "tok", "tool": "whoami"})
	pe, data := h.rpcError(err)
	if !strings.Contains(pe.Message, "Authorization: REDACTED") || strings.Contains(pe.Message, fresh) {
		t.Errorf("error %q (data %+v): want the token redacted", pe.Message, data)
	}
}

// A header helper that fails ends the server's startup at once: it runs
// once, not again for another attempt at the handshake, and the failure
// says what the helper did. One whose token the server refuses, also
// after the run again that a 401 causes, gets a hint about the helper.
func TestHeadersHelperFailureEndsStartup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		runs   int
		want   string
	}{
		{"fails", "echo 'no credentials here' >&2\nexit 3\n", 1,
			`server "tok" failed to start: header helper "sh headers.sh" exited with exit status 3 (its 20 bytes of standard error are not shown`},
		{"refused", `printf '{"Authorization":"Bearer wrong-tok-5e4d3c2b"}'` + "\n", 2,
			`answered 401 Unauthorized: the server refused the headers of its header helper (http_headers_helper, headersHelper in .mcp.json), those it gave when run again after a 401 too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var unauthorized atomic.Int32
			ts := tokenServer(t, "never-given", &unauthorized)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "headers.sh"), []byte("echo run >> runs\n"+tc.script), 0o700); err != nil {
				t.Fatal(err)
			}
			mcpJSON := filepath.Join(dir, ".mcp.json")
			entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tok": map[string]any{"type": "http", "url": ts.URL + "/mcp", "headersHelper": "sh headers.sh"}}})
			if err := os.WriteFile(mcpJSON, entry, 0o600); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{}, map[string]any{"configFiles": []string{mcpJSON}})
			open := h.open(map[string]any{"startup": "eager"})
			sum := h.waitComplete(open.SessionID, 0)
			if len(sum.Failed) != 1 {
				t.Fatalf("startupComplete %+v: want tok failed", sum)
			}
			runs, err := os.ReadFile(filepath.Join(dir, "runs"))
			if n := strings.Count(string(runs), "run"); err != nil || n != tc.runs {
				t.Errorf("the helper ran %d times, want %d (%v)", n, tc.runs, err)
			}
			msg := sum.Failed[0].Error
			if !strings.Contains(msg, tc.want) || strings.Count(msg, `server "tok"`) != 1 {
				t.Errorf("error %q, want %q, naming the server once", msg, tc.want)
			}
			for _, bad := range []string{"context canceled", "bearer_token_env_var", "wrong-tok"} {
				if strings.Contains(msg, bad) {
					t.Errorf("error %q has %q", msg, bad)
				}
			}
		})
	}
}
