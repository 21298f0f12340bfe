package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is an in-process go-sdk Streamable HTTP server on loopback
// that records the headers of every request.
func httpServer(t *testing.T, jsonResponse bool) (url string, headers func() []http.Header) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "http-fx", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "raw", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "ok"}},
				StructuredContent: json.RawMessage(`{"z":1,"a":12345678901234567890}`),
			}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen...)
	}
}

func TestHTTPHeadersAndRawResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		json bool
	}{{"sse", false}, {"json", true}} {
		t.Run(tc.name, func(t *testing.T) {
			url, headers := httpServer(t, tc.json)
			c := connect(t, Options{
				Config: &config.ServerConfig{
					URL:               url,
					BearerTokenEnvVar: "FX_TOKEN",
					HTTPHeaders:       map[string]string{"X-Static": "static-value"},
					EnvHTTPHeaders:    map[string]string{"X-From-Env": "FX_HEADER"},
				},
				Env: config.MapLookup(map[string]string{"FX_TOKEN": "s3cret", "FX_HEADER": "env-value"}),
			})
			if c.Transport() != "http" || c.PID() != 0 {
				t.Errorf("Transport() = %q, PID() = %d", c.Transport(), c.PID())
			}
			if !bytes.Contains(c.InitializeResult(), []byte(`"http-fx"`)) {
				t.Errorf("InitializeResult() = %s", c.InitializeResult())
			}
			res, err := c.CallTool(testCtx(t), "raw", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"structuredContent":{"z":1,"a":12345678901234567890}`; !bytes.Contains(res, []byte(want)) {
				t.Errorf("result %s lacks %s", res, want)
			}
			tools, err := c.ListToolsPage(testCtx(t), "")
			if err != nil || !bytes.Contains(tools, []byte(`"raw"`)) {
				t.Errorf("tools/list = %s, %v", tools, err)
			}
			hs := headers()
			if len(hs) == 0 {
				t.Fatal("no requests seen")
			}
			for i, h := range hs {
				if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Static") != "static-value" || h.Get("X-From-Env") != "env-value" {
					t.Errorf("request %d headers: %v", i, h)
				}
			}
		})
	}
}

func TestHTTPMissingEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  config.ServerConfig
		env  map[string]string
		want string
	}{
		{"bearer unset", config.ServerConfig{URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: "NOPE_TOKEN"}, nil, "NOPE_TOKEN (bearer_token_env_var) is not set"},
		{"bearer empty", config.ServerConfig{URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: "EMPTY_TOKEN"}, map[string]string{"EMPTY_TOKEN": ""}, "EMPTY_TOKEN (bearer_token_env_var) is not set"},
		{"header unset", config.ServerConfig{URL: "http://127.0.0.1:1/mcp", EnvHTTPHeaders: map[string]string{"X-Key": "NOPE_KEY"}}, nil, `NOPE_KEY (env_http_headers "X-Key") is not set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			_, err := Connect(testCtx(t), Options{Name: "h", Config: &cfg, Env: config.MapLookup(tc.env)})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `server "h"`) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
