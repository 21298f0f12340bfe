package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/oauthtest"
	"github.com/mcp-sidecar/mcp-sidecar/oauth"
)

// sseRequest is one request an SSE server got: its method and headers,
// and for a POST the JSON-RPC method of its message ("" for a response).
type sseRequest struct {
	httpMethod, rpcMethod string
	header                http.Header
}

// sseServer is go-sdk's legacy HTTP+SSE server (mcp.NewSSEHandler) on
// loopback, recording every request. Its tools: raw (a result whose
// numbers a decode would change) and roots (asks the client for its
// roots, over the stream, and returns how many).
func sseServer(t *testing.T) (srv *httptest.Server, ms *mcp.Server, seen func() []sseRequest) {
	t.Helper()
	ms = mcp.NewServer(&mcp.Implementation{Name: "sse-fx", Version: "1"}, nil)
	ms.AddTool(&mcp.Tool{Name: "raw", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "ok"}},
				StructuredContent: json.RawMessage(`{"z":1,"a":12345678901234567890}`),
			}, nil
		})
	ms.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d roots", len(res.Roots))}}}, nil
		})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	var mu sync.Mutex
	var reqs []sseRequest
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := sseRequest{httpMethod: r.Method, header: r.Header.Clone()}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				Method string `json:"method"`
			}
			json.Unmarshal(body, &msg)
			rec.rpcMethod = msg.Method
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		mu.Lock()
		reqs = append(reqs, rec)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv, ms, func() []sseRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]sseRequest(nil), reqs...)
	}
}

// TestSSEServer: a "type": "sse" server is reached over the legacy
// HTTP+SSE transport with the initialize handshake and no modern probe;
// results stay byte for byte; the server's own requests come on the
// stream and are answered in POSTs; every request carries the configured
// headers.
func TestSSEServer(t *testing.T) {
	srv, _, seen := sseServer(t)
	c := connect(t, Options{
		Config: &config.ServerConfig{
			URL:               srv.URL + "/sse",
			SSE:               true,
			BearerTokenEnvVar: "FX_TOKEN",
			HTTPHeaders:       map[string]string{"X-Static": "static-value"},
		},
		Env:   config.MapLookup(map[string]string{"FX_TOKEN": "s3cret"}),
		Roots: true,
		Handlers: Handlers{ListRoots: func(context.Context) (json.RawMessage, error) {
			return json.RawMessage(`{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}`), nil
		}},
	})
	if c.Transport() != "http" || c.Era() != EraLegacy || c.ProtocolVersion() != DefaultProtocolVersion {
		t.Errorf("Transport() = %q, Era() = %v, ProtocolVersion() = %q", c.Transport(), c.Era(), c.ProtocolVersion())
	}
	if !bytes.Contains(c.InitializeResult(), []byte(`"sse-fx"`)) {
		t.Errorf("InitializeResult() = %s", c.InitializeResult())
	}
	tools, err := c.ListToolsPage(testCtx(t), "")
	if err != nil || !bytes.Contains(tools, []byte(`"raw"`)) {
		t.Errorf("tools/list = %s, %v", tools, err)
	}
	res, err := c.CallTool(testCtx(t), "raw", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"structuredContent":{"z":1,"a":12345678901234567890}`; !bytes.Contains(res, []byte(want)) {
		t.Errorf("result %s lacks %s", res, want)
	}
	res, err = c.CallTool(testCtx(t), "roots", nil, nil)
	if err != nil || !bytes.Contains(res, []byte(`"2 roots"`)) {
		t.Errorf("roots: %s, %v", res, err)
	}

	var methods []string
	for i, r := range seen() {
		methods = append(methods, r.httpMethod+" "+r.rpcMethod)
		if r.header.Get("Authorization") != "Bearer s3cret" || r.header.Get("X-Static") != "static-value" {
			t.Errorf("request %d (%s %s) headers: %v", i, r.httpMethod, r.rpcMethod, r.header)
		}
	}
	want := []string{
		"GET ", // the stream, and nothing else of Streamable HTTP (no second GET, no probe)
		"POST initialize", "POST notifications/initialized",
		"POST tools/list", "POST tools/call", "POST tools/call",
		"POST ", // the answer to roots/list
	}
	if diff := cmp.Diff(want, methods); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestSSEStreamEndIsConnectionEnd: the server ending its session ends
// the SSE stream, and with it the connection (there is no session to
// renew).
func TestSSEStreamEndIsConnectionEnd(t *testing.T) {
	srv, ms, _ := sseServer(t)
	c := connect(t, Options{Config: &config.ServerConfig{URL: srv.URL + "/sse", SSE: true}})
	for ss := range ms.Sessions() {
		ss.Close()
	}
	select {
	case <-c.Done():
	case <-testCtx(t).Done():
		t.Fatal("the connection outlived its SSE stream")
	}
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Errorf("Err() = %v, want ErrConnectionLost", c.Err())
	}
}

// TestSSEStartupFailures: a stream that does not open says why, naming
// the server and its URL, without a secret of the URL.
func TestSSEStartupFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	streamable, _ := httpServer(t, false)
	// An endpoint event naming another origin: the POST is refused, and
	// the catcher never sees it.
	catcher := newCatcher(t)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?sessionid=1\n\n", catcher.srv.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer func() {
		elsewhere.CloseClientConnections()
		elsewhere.Close()
	}()
	// A stream whose first event is not the endpoint.
	noEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {}\n\n")
	}))
	defer noEndpoint.Close()

	const secret = "qs3cr3t-sse-1"
	for _, tc := range []struct {
		name, url, want string
	}{
		{"refused", refused, "nothing is listening at " + refused + "/sse?key=REDACTED (connection refused)"},
		{"404", notFound.URL, notFound.URL + "/sse?key=REDACTED answered 404 Not Found to the GET that opens an SSE stream: there is no legacy HTTP+SSE endpoint at this URL"},
		{"streamable http", streamable, "to the GET that opens an SSE stream: this is not a legacy HTTP+SSE endpoint (a Streamable HTTP server? use type \"http\")"},
		{"endpoint elsewhere", elsewhere.URL, "a request to " + catcher.srv.URL + "/messages?sessionid=REDACTED, another origin: refused"},
		{"no endpoint event", noEndpoint.URL, `the SSE stream did not open: missing endpoint: first event is "message", want "endpoint"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(testCtx(t), Options{Name: "old", Config: &config.ServerConfig{URL: tc.url + "/sse?key=" + secret, SSE: true}})
			if err == nil {
				t.Fatal("connected")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, `server "old": `) || !strings.Contains(msg, tc.want) || strings.Contains(msg, secret) {
				t.Errorf("err = %s\nwant it to begin with the server's name and say %q, without the secret", msg, tc.want)
			}
		})
	}
	if got := catcher.requests(); len(got) != 0 {
		t.Errorf("requests to another origin: %v", got)
	}
}

// TestSSEOAuth: an SSE server that needs OAuth is authorized as a
// Streamable HTTP one is: the GET of the stream gets the 401, the flow
// runs, and the stream and every POST carry the token.
func TestSSEOAuth(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.Config{})
	srv := oauthtest.NewServer(t, as, oauthtest.ServerConfig{SSE: true})
	m := oauth.NewManager(oauth.Options{Store: &oauth.Store{Dir: t.TempDir() + "/credentials"}})
	defer m.Close()
	present := func(ctx context.Context, p oauth.Prompt) (oauth.PresentResult, error) {
		_, _, err := oauthtest.Browse(ctx, p.URL)
		return oauth.PresentResult{}, err
	}
	h := m.Handler(oauth.Server{Name: "h", URL: srv.URL()}, oauth.HandlerOptions{Present: present})
	c := connect(t, Options{Name: "h", Config: &config.ServerConfig{URL: srv.URL(), SSE: true}, OAuth: h})
	res, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{"text":"over sse"}`), nil)
	if err != nil || !bytes.Contains(res, []byte(`"over sse"`)) {
		t.Fatalf("call: %s, %v", res, err)
	}
	if n := as.Counts().CodeExchanges; n != 1 {
		t.Errorf("%d authorizations, want 1", n)
	}
	if srv.Denied() != 1 {
		t.Errorf("%d requests refused, want 1 (the stream's first GET)", srv.Denied())
	}
}
