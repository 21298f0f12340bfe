package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCmdLegacySSEServer: a Cursor user config's "type": "sse" server, a
// go-sdk HTTP+SSE server, is listed and called through the sidecar
// (tools/list, tools/call), with the file's headers on every request.
func TestCmdLegacySSEServer(t *testing.T) {
	isolate(t)
	t.Chdir(t.TempDir())
	type args struct {
		Text string `json:"text"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "Upper-case the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
	handler := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k1" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
	}()
	cursor := filepath.Join(os.Getenv("HOME"), ".cursor")
	if err := os.MkdirAll(cursor, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cursor, "mcp.json"), `{"mcpServers": {"old": {"type": "sse", "url": "`+srv.URL+`/sse", "headers": {"X-Key": "k1"}}}}`, 0o600)

	if r := runCmd(t, nil, "tools", "--server", "old"); r.code != 0 || !strings.Contains(r.stdout, "old (http, ready") || !strings.Contains(r.stdout, "  shout(text: string)\n") {
		t.Errorf("tools --server old:\n%s", r)
	}
	if r := runCmd(t, nil, "call", "old", "shout", "text=hi"); r.code != 0 || !strings.HasPrefix(r.stdout, "HI\n") {
		t.Errorf("call old shout:\n%s", r)
	}
}
