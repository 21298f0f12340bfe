package sidecar_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestURLSecretsNeverShown: secrets expanded into server URLs (a query
// value, userinfo) appear in none of the messages the host receives:
// mcp/startupStatus, mcp/startupComplete, servers/status, mcp/log and the
// errors of requests, for a server that cannot be reached, one that
// answers 404 and one that works.
func TestURLSecretsNeverShown(t *testing.T) {
	const query, pass = "qs3cr3t-url-55", "ps3cr3t-url-66"
	withSecrets := func(base, path string) string {
		return strings.Replace(base, "://", "://bob:"+pass+"@", 1) + path + "?api_key=" + query
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	// The servers close after the harness (cleanups run last-in first-out),
	// which ends the sidecar's connections to them.
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	s := mcp.NewServer(&mcp.Implementation{Name: "ok"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	works := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(works.Close)

	h := newHarness(t)
	var raw []string
	h.initialize(nil, map[string]any{"servers": map[string]any{
		"refused":  map[string]any{"url": withSecrets(refused, "/mcp"), "startup_timeout_sec": 5},
		"notfound": map[string]any{"url": withSecrets(notFound.URL, "/api")},
		"works":    map[string]any{"url": withSecrets(works.URL, "/mcp")},
	}})
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	if len(sum.Failed) != 2 || len(sum.Ready) != 1 {
		t.Fatalf("round 0: %+v", sum)
	}
	for _, f := range sum.Failed {
		if !strings.Contains(f.Error, "REDACTED") {
			t.Errorf("failure of %s does not show the redacted URL: %s", f.Server, f.Error)
		}
	}
	// Requests that fail on those servers, and a call that works.
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "server": "refused", "tool": "x"})
	if err != nil {
		raw = append(raw, err.Error())
		_, data := h.rpcError(err)
		b, _ := json.Marshal(data)
		raw = append(raw, string(b))
	}
	if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "works", "tool": "echo"}); err != nil {
		t.Errorf("call through a URL with secrets: %v", err)
	}
	var status json.RawMessage
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &status); err != nil {
		t.Fatal(err)
	}
	raw = append(raw, string(status))
	var list json.RawMessage
	if err := h.call(protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list); err != nil {
		t.Fatal(err)
	}
	raw = append(raw, string(list))
	for _, n := range h.notifications() {
		raw = append(raw, n.Method+" "+string(n.Params))
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(raw, "\n")
	for _, secret := range []string{query, pass} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret of a URL reached the host:\n%s", all)
		}
	}
	if !strings.Contains(all, "nothing is listening at") || !strings.Contains(all, "answered 404 Not Found") {
		t.Errorf("the failures are not in plain words:\n%s", all)
	}
}
