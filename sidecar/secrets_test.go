package sidecar_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// leakyHTTPServer is a Streamable HTTP MCP server as careless as a server
// can be: whatever fails quotes the whole request it refused, its
// Authorization and other headers and its URL (path and query). Its
// initialize fails so when the URL's path has "badinit" in it; otherwise
// its one tool, leak, sends that text as a log message and then fails
// with it as a JSON-RPC error, in its message and its data.
func leakyHTTPServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		echo := fmt.Sprintf("refused %s: Authorization: %s; X-Api-Key: %s; X-Env-Key: %s; URI: %s",
			msg.Method, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Env-Key"), r.RequestURI)
		data, _ := json.Marshal(map[string]any{"authorization": r.Header.Get("Authorization"), "uri": r.RequestURI,
			"headers": map[string]string{"X-Api-Key": r.Header.Get("X-Api-Key"), "X-Env-Key": r.Header.Get("X-Env-Key")}})
		refusal, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32000, "message": echo, "data": json.RawMessage(data)}})
		answer := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "leaky-session")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
		}
		switch {
		case msg.Method == "initialize" && strings.Contains(r.URL.Path, "badinit"):
			w.Header().Set("Content-Type", "application/json")
			w.Write(refusal)
		case msg.Method == "initialize":
			answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"leaky","version":"1"}}`)
		case msg.Method == "tools/list":
			answer(`{"tools":[{"name":"leak","inputSchema":{"type":"object"}}]}`)
		case msg.Method == "tools/call":
			logMsg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "error", "data": echo}})
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\nevent: message\ndata: %s\n\n", logMsg, refusal)
		default:
			answer(`{}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server's words that quote what it was sent (its bearer token, a
// static header, a header from the environment, a token in its URL's
// query or path, a value of its environment) reach neither the host nor a
// log: the errors of its requests and of its startup, servers/status
// (lastError, whence doctor's table), mcp/log (its stderr lines and log
// messages) and the sidecar's own log, for stdio and HTTP servers alike.
func TestServerEchoedSecretsNeverShown(t *testing.T) {
	const (
		bearer    = "bearer-s3cr3t-4711"
		header    = "header-s3cr3t-4712"
		envHeader = "envheader-s3cr3t-4713"
		query     = "query-s3cr3t-4714"
		path      = "sk-path4715s3cr3t"
		envValue  = "env-s3cr3t-4716"
		passed    = "passed-s3cr3t-4717"
	)
	secrets := []string{bearer, header, envHeader, query, path, envValue, passed}
	t.Setenv("SIDECAR_TEST_BEARER", bearer)
	t.Setenv("SIDECAR_TEST_ENV_HEADER", envHeader)
	t.Setenv("SIDECAR_TEST_PASSED", passed)

	leaky := leakyHTTPServer(t)
	httpServer := func(endpoint string) *config.ServerConfig {
		return &config.ServerConfig{
			URL:               leaky.URL + "/" + path + "/" + endpoint + "?token=" + query,
			BearerTokenEnvVar: "SIDECAR_TEST_BEARER",
			HTTPHeaders:       map[string]string{"X-Api-Key": header},
			EnvHTTPHeaders:    map[string]string{"X-Env-Key": "SIDECAR_TEST_ENV_HEADER"},
		}
	}
	stdioServer := func(name string, spec fixture.Spec) *config.ServerConfig {
		cfg := fixture.Config(name, spec)
		cfg.Env["DB_PASSWORD"] = envValue
		cfg.EnvVars = []string{"SIDECAR_TEST_PASSED"}
		return cfg
	}
	servers := map[string]*config.ServerConfig{
		"leakyhttp": httpServer("mcp"),
		"badinit":   httpServer("badinit"),
		"leakyio":   stdioServer("leakyio", fixture.Spec{Tools: []fixture.ToolSpec{tool("leak", fixture.BehaviorLeakEnv)}}),
		"crashy":    stdioServer("crashy", fixture.Spec{StderrEnv: []string{"DB_PASSWORD", "SIDECAR_TEST_PASSED"}, ExitAtStart: true}),
	}

	logs := new(lockedBuffer)
	h := newLoggedHarness(t, sidecar.Hooks{}, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h.initialize(servers, nil)
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	if !slices.Equal(sum.Ready, []string{"leakyhttp", "leakyio"}) || len(sum.Failed) != 2 {
		t.Fatalf("startupComplete %+v: want leakyhttp and leakyio ready, badinit and crashy failed", sum)
	}
	var seen []string // everything the host was told, to search
	for _, f := range sum.Failed {
		if !strings.Contains(f.Error, "REDACTED") {
			t.Errorf("the failure of %s does not show what the server quoted, redacted: %s", f.Server, f.Error)
		}
	}

	// The requests that fail with what the servers quote.
	for _, c := range []map[string]any{
		{"server": "leakyhttp", "tool": "leak"},
		{"server": "leakyio", "tool": "leak", "arguments": map[string]any{"vars": []string{"DB_PASSWORD", "SIDECAR_TEST_PASSED"}}},
		{"server": "crashy", "tool": "x"},
		{"server": "badinit", "tool": "x"},
	} {
		c["sessionId"] = open.SessionID
		_, err := h.callTool(c)
		if err == nil {
			t.Fatalf("tools/call %v succeeded", c)
		}
		pe, data := h.rpcError(err)
		raw, _ := json.Marshal(data)
		seen = append(seen, pe.Message, string(raw))
		if c["tool"] == "leak" && (data.Kind != protocol.KindServerError || !strings.Contains(pe.Message, "REDACTED") || !strings.Contains(string(data.ServerData), "REDACTED")) {
			t.Errorf("tools/call %v: %s (data %s): want the server's error, redacted", c, pe.Message, raw)
		}
	}
	// The stdio server's stderr line and both servers' log messages, as
	// mcp/log, redacted.
	for _, server := range []string{"leakyhttp", "leakyio"} {
		for _, level := range []string{"stderr", "error"} {
			if server == "leakyhttp" && level == "stderr" {
				continue
			}
			h.waitFor(server+" "+level+" line", func(n hostclient.Notification) bool {
				var p protocol.LogParams
				return n.Method == protocol.NotifyLog && json.Unmarshal(n.Params, &p) == nil && p.Server == server &&
					p.Level == level && strings.Contains(string(p.Data), "refus") && strings.Contains(string(p.Data), "REDACTED")
			})
		}
	}

	var status json.RawMessage
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &status); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, string(status))
	for _, n := range h.notifications() {
		seen = append(seen, n.Method+" "+string(n.Params))
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(seen, "\n")
	for _, where := range []struct{ name, text string }{{"the host", all}, {"the sidecar's log", string(logs.Bytes())}} {
		for _, s := range secrets {
			if strings.Contains(where.text, s) {
				t.Errorf("%s saw %q:\n%s", where.name, s, where.text)
			}
		}
	}
}

// The OAuth tokens the sidecar holds for a server are scrubbed from what
// the server writes like its configured secrets, the token a refresh
// brought included.
func TestServerEchoedOAuthTokenNeverShown(t *testing.T) {
	o := newOAuthSetupWith(t, oauthOptions{server: oauthtest.ServerConfig{LeakTool: true}}, browser)
	o.startSession()
	leak := func(round string) {
		t.Helper()
		_, err := o.h.callTool(map[string]any{"sessionId": "s1", "server": "remote", "tool": "leak"})
		pe, data := o.h.wantCode(err, -32000)
		if !strings.Contains(pe.Message, "Bearer REDACTED") || !strings.Contains(string(data.ServerData), "Bearer REDACTED") {
			t.Errorf("%s: %s (data %s): want the server's error with the token redacted", round, pe.Message, data.ServerData)
		}
		raw, _ := json.Marshal(data)
		for _, tok := range o.as.Issued() {
			if strings.Contains(pe.Message+string(raw), tok) {
				t.Errorf("%s: the host saw a token: %s %s", round, pe.Message, raw)
			}
		}
	}
	leak("first token")
	o.clock.Advance(time.Hour) // refreshed before the next use
	leak("refreshed token")
	if c := o.as.Counts(); c.Refreshes != 1 {
		t.Fatalf("counts %+v, want one refresh", c)
	}
}
