package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catcher is an HTTP server on another origin that records what reaches it.
type catcher struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string // method, URL, headers and body of each request
}

func newCatcher(t *testing.T) *catcher {
	t.Helper()
	c := &catcher{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		b.WriteString(r.Method + " " + r.URL.String() + "\n")
		r.Header.Write(&b)
		b.Write(body)
		c.mu.Lock()
		c.got = append(c.got, b.String())
		c.mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *catcher) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// redirectingServer is a go-sdk Streamable HTTP server at /mcp whose
// redirect(r) decides, per request, to answer with a redirect (status) to
// another URL instead. It records the headers of the requests /mcp served.
type redirectingServer struct {
	srv      *httptest.Server
	redirect func(r *http.Request, body []byte) string
	status   int

	mu   sync.Mutex
	seen []http.Header
}

func newRedirectingServer(t *testing.T, status int, redirect func(r *http.Request, body []byte) string) *redirectingServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "redirecting", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	rs := &redirectingServer{redirect: redirect, status: status}
	rs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if to := rs.redirect(r, body); to != "" {
			http.Redirect(w, r, to, rs.status)
			return
		}
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Clone())
		rs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		rs.srv.CloseClientConnections()
		rs.srv.Close()
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	return rs
}

func (rs *redirectingServer) headers() []http.Header {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]http.Header(nil), rs.seen...)
}

// secretServerConfig is a server config whose URL and headers carry
// secrets, each of which must reach the configured origin only.
func secretServerConfig(url string) (*config.ServerConfig, config.Lookup) {
	return &config.ServerConfig{
			URL:               url,
			BearerTokenEnvVar: "GUARD_TOKEN",
			HTTPHeaders:       map[string]string{"X-Api-Key": "HEADERSECRET"},
			EnvHTTPHeaders:    map[string]string{"X-Env": "GUARD_ENV"},
		}, config.MapLookup(map[string]string{
			"GUARD_TOKEN": "BEARERSECRET",
			"GUARD_ENV":   "ENVHDRSECRET",
		})
}

var guardSecrets = []string{"BEARERSECRET", "HEADERSECRET", "ENVHDRSECRET", "URLSECRET", "USERSECRET", "LOCSECRET"}

// A redirect to another origin is refused, at startup and later: the
// configured headers, the bearer token, the URL's userinfo and the request
// body never reach it, and the error names the server and both URLs
// without their secrets (redteam F5).
func TestHTTPCrossOriginRedirectRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		when string // "initialize" or "tools/call"
		to   func(other string) string
	}{
		{"at initialize", "initialize", func(other string) string { return other + "/catch?token=LOCSECRET" }},
		{"at a call", "tools/call", func(other string) string { return other + "/catch?token=LOCSECRET" }},
		// Same host, another port: another origin.
		{"scheme changes", "initialize", func(other string) string {
			return strings.Replace(other, "http://", "https://", 1) + "/catch"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			catch := newCatcher(t)
			rs := newRedirectingServer(t, http.StatusTemporaryRedirect, func(r *http.Request, body []byte) string {
				if bytes.Contains(body, []byte(`"method":"`+tc.when+`"`)) {
					return tc.to(catch.srv.URL)
				}
				return ""
			})
			url := strings.Replace(rs.srv.URL, "http://", "http://alice:USERSECRET@", 1) + "/mcp?key=URLSECRET"
			cfg, env := secretServerConfig(url)
			c, err := Connect(testCtx(t), Options{Name: "h", Config: cfg, Env: env})
			if tc.when == "tools/call" {
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_, err = c.CallTool(testCtx(t), "echo", nil, nil)
			} else if err == nil {
				c.Close()
			}
			if err == nil {
				t.Fatal("the request redirected to another origin succeeded")
			}
			if got := catch.requests(); len(got) != 0 {
				t.Errorf("the other origin received %d requests:\n%s", len(got), strings.Join(got, "\n---\n"))
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			for _, want := range []string{`server "h"`, "another origin", rs.srv.URL[len("http://"):], catch.srv.URL[len("http://"):]} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			for _, s := range guardSecrets {
				if strings.Contains(msg, s) {
					t.Errorf("error %q shows the secret %s", msg, s)
				}
			}
			if !errors.Is(err, ErrRedirectRefused) {
				t.Errorf("err = %v, want errors.Is ErrRedirectRefused", err)
			}
		})
	}
}

// A redirect within the configured origin is followed (307 and 308 keep
// the method and body), and the configured headers go with it.
func TestHTTPSameOriginRedirectFollowed(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			rs := newRedirectingServer(t, status, func(r *http.Request, _ []byte) string {
				if r.URL.Path == "/old" {
					return "/mcp"
				}
				return ""
			})
			cfg, env := secretServerConfig(rs.srv.URL + "/old")
			c := connect(t, Options{Name: "h", Config: cfg, Env: env})
			res, err := c.CallTool(testCtx(t), "echo", nil, nil)
			if err != nil || !bytes.Contains(res, []byte(`"ok"`)) {
				t.Fatalf("call = %s, %v", res, err)
			}
			hs := rs.headers()
			if len(hs) == 0 {
				t.Fatal("/mcp served nothing")
			}
			for i, h := range hs {
				if h.Get("Authorization") != "Bearer BEARERSECRET" || h.Get("X-Api-Key") != "HEADERSECRET" || h.Get("X-Env") != "ENVHDRSECRET" {
					t.Errorf("request %d at /mcp lacks the configured headers: %v", i, h)
				}
			}
		})
	}
}

// The transport itself sends nothing to another origin, whatever asks it
// to: the configured headers are bound to the configured origin.
func TestHTTPTransportRefusesOtherOrigins(t *testing.T) {
	catch := newCatcher(t)
	cfg, env := secretServerConfig("http://127.0.0.1:1/mcp")
	c := &Conn{name: "h", opts: Options{Name: "h", Config: cfg, Env: env, MaxLineBytes: DefaultMaxLineBytes}}
	h, err := c.newHTTP()
	if err != nil {
		t.Fatal(err)
	}
	client := h.transport.HTTPClient
	req, _ := http.NewRequest(http.MethodPost, catch.srv.URL+"/mcp", strings.NewReader(`{}`))
	resp, err := client.Transport.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request to another origin was sent")
	}
	if got := catch.requests(); len(got) != 0 {
		t.Errorf("the other origin received:\n%s", strings.Join(got, "\n---\n"))
	}
}

// inflatingServer is a go-sdk Streamable HTTP server whose answer to the
// first request of method is replaced by a valid answer padded to at least
// size bytes, as JSON or as one event; size < 0 pads without end.
func inflatingServer(t *testing.T, method string, size int, stream bool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "inflating", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		inflate := false
		if json.Unmarshal(body, &msg) == nil && msg.Method == method {
			once.Do(func() { inflate = true })
		}
		if !inflate {
			h.ServeHTTP(w, r)
			return
		}
		result := `{"content":[{"type":"text","text":"ok"}]`
		if method == "initialize" {
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"inflating","version":"1"}`
		}
		head := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `,"_meta":{"pad":"`
		tail := `"}}}`
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
			tail += "\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
			if size >= 0 {
				w.Header().Set("Content-Length", strconv.Itoa(len(head)+size+len(tail)))
			}
		}
		if method != "initialize" {
			w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		}
		io.WriteString(w, head)
		pad := bytes.Repeat([]byte("a"), 64<<10)
		for n := 0; size < 0 || n < size; n += len(pad) {
			if size >= 0 && size-n < len(pad) {
				pad = pad[:size-n]
			}
			if _, err := w.Write(pad); err != nil {
				return // the client stopped reading
			}
		}
		io.WriteString(w, tail)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	return srv.URL
}

// An HTTP answer larger than MaxLineBytes fails its request with an error
// that says so, having read no more than the bound (an endless body
// included), as a stdout line over the bound does (redteam F6).
func TestHTTPAnswerSizeBounded(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name   string
		method string
		size   int
		stream bool
		want   string
	}{
		{"initialize with Content-Length", "initialize", 4 * limit, false, "more than 1048576 bytes"},
		{"initialize without end", "initialize", -1, false, "more than 1048576 bytes"},
		// A length known too large fails that request alone.
		{"a call's JSON body", "tools/call", 4 * limit, false, "more than 1048576 bytes"},
		{"a call's event", "tools/call", 4 * limit, true, "exceeded 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := inflatingServer(t, tc.method, tc.size, tc.stream)
			c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: url}, MaxLineBytes: limit})
			if tc.method != "initialize" {
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.CallTool(testCtx(t), "echo", nil, nil)
				if !tc.stream {
					if !errors.Is(err, ErrMessageTooLarge) {
						t.Errorf("err = %v, want ErrMessageTooLarge", err)
					}
					if _, err := c.CallTool(testCtx(t), "echo", nil, nil); err != nil {
						t.Errorf("the call after the refused answer: %v", err)
					}
				}
			}
			if c != nil {
				c.Close()
			}
			if err == nil {
				t.Fatal("an answer over the bound was accepted")
			}
			t.Logf("error: %v", err)
			for _, want := range []string{`server "h"`, tc.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestRoundTripperHeaders: the headers the RoundTripper adds to what
// go-sdk sends: the Mcp-Param-* headers handed down in the request's
// context, an Mcp-Name that is not header-safe in its base64 form, and
// MCP-Protocol-Version on every request of a legacy session once known.
func TestRoundTripperHeaders(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
	}))
	defer srv.Close()
	c := &Conn{name: "h", opts: Options{Name: "h", Config: &config.ServerConfig{URL: srv.URL}, MaxLineBytes: DefaultMaxLineBytes}}
	h, err := c.newHTTP()
	if err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context, name string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{}`))
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := h.client.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send(withParamHeaders(context.Background(), http.Header{"Mcp-Param-Region": {"=?base64?IGV1?="}}), "tëst")
	send(context.Background(), "plain_name")
	h.legacySession("2025-06-18")
	send(context.Background(), "")
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	for i, want := range []map[string]string{
		{"Mcp-Param-Region": "=?base64?IGV1?=", "Mcp-Name": "=?base64?dMOrc3Q=?=", "Mcp-Protocol-Version": ""},
		{"Mcp-Param-Region": "", "Mcp-Name": "plain_name", "Mcp-Protocol-Version": ""},
		{"Mcp-Protocol-Version": "2025-06-18"},
	} {
		for k, v := range want {
			if g := got[i].Get(k); g != v {
				t.Errorf("request %d: %s = %q, want %q", i, k, g, v)
			}
		}
	}
}
