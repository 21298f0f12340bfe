package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// TestEventIDStripper: the id fields of an event stream are dropped
// whatever the reads' boundaries, and nothing else is.
func TestEventIDStripper(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"id: 1\ndata: {}\n\n", "data: {}\n\n"},
		{"id:1\r\ndata: {}\r\n\r\n", "data: {}\r\n\r\n"},
		{"id\ndata: x\n\n", "data: x\n\n"},
		{"data: id: not a field\nidle: y\nevent: message\nid: 9\n\n", "data: id: not a field\nidle: y\nevent: message\n\n"},
		{": keep-alive\n\nid: 2\n\n", ": keep-alive\n\n\n"},
		{"i", "i"},
		{"id", "id"},
		{"", ""},
	} {
		for _, read := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
		} {
			s := &eventIDStripper{rc: io.NopCloser(read(strings.NewReader(tc.in)))}
			got, err := io.ReadAll(iotest.OneByteReader(s))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tc.in, diff)
			}
		}
	}
}

// TestModernCutStreamFailsOneRequest: a modern server's event stream that
// carries event ids and is cut before the answer fails that request
// alone; the connection goes on (go-sdk would resume it with a GET, which
// a modern server refuses, and end the connection).
func TestModernCutStreamFailsOneRequest(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "http-fx", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "cut", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "id: 0\ndata:\n\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
			return // cut before the answer
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := connect(t, Options{Config: &config.ServerConfig{URL: srv.URL}})
	if c.Era() != EraModern {
		t.Fatalf("Era() = %q", c.Era())
	}
	if _, err := c.CallTool(testCtx(t), "cut", nil, nil); err == nil {
		t.Fatal("a call whose stream was cut succeeded")
	}
	if _, err := c.ListToolsPage(testCtx(t), ""); err != nil {
		t.Errorf("the connection after the cut stream: %v", err)
	}
	if err := c.Err(); err != nil {
		t.Errorf("the connection ended: %v", err)
	}
}
