package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
	"github.com/mcp-sidecar/mcp-sidecar/oauth"
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

// restartingServer is a Streamable HTTP server on one address whose
// restart drops every connection and replaces the go-sdk handler with a
// new instance that knows none of the old sessions, as a restarted process
// would.
type restartingServer struct {
	t    *testing.T
	srv  *httptest.Server
	json bool

	mu       sync.Mutex
	mcp      *mcp.Server
	handler  http.Handler
	inits    int      // initialize requests seen
	deletes  []string // session ids of DELETE requests
	sessions []string // session ids the handlers gave out, in order
	// forget404 makes every request with a session id answer 404, as a
	// server that loses each session at once.
	forget404 bool
	// unknown400 answers a request on a session the current handler did
	// not give out 400, with server-everything's body (its Streamable HTTP
	// transport, after the TypeScript SDK's examples, answers so instead
	// of MCP's 404); forget400 answers every request with a session so.
	unknown400, forget400 bool
	current               map[string]bool // sessions the current handler gave out
	// reject400 answers a request whose body it matches 400 Bad Request,
	// on a session the server knows.
	reject400 func(body []byte) bool
	pings     int // ping requests seen
	// intercept, when set, sees each request first and answers it itself
	// when it returns true.
	intercept func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

// unknownSessionBody is what server-everything answers, 400, for a session
// it does not know (express without a body parser: no id).
const unknownSessionBody = `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}`

func newRestartingServer(t *testing.T, jsonResponse bool) *restartingServer {
	t.Helper()
	rs := &restartingServer{t: t, json: jsonResponse}
	rs.mcp, rs.handler = rs.newHandler()
	rs.srv = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(func() {
		rs.srv.CloseClientConnections()
		rs.srv.Close()
		rs.closeSessions()
	})
	return rs
}

func (rs *restartingServer) newHandler() (*mcp.Server, http.Handler) {
	s := mcp.NewServer(&mcp.Implementation{Name: "restarting", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	return s, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{JSONResponse: rs.json})
}

func (rs *restartingServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	sid := r.Header.Get("Mcp-Session-Id")
	rs.mu.Lock()
	h := rs.handler
	if bytes.Contains(body, []byte(`"method":"initialize"`)) {
		rs.inits++
	}
	if r.Method == http.MethodDelete {
		rs.deletes = append(rs.deletes, sid)
	}
	forget := rs.forget404 && sid != ""
	if bytes.Contains(body, []byte(`"method":"ping"`)) {
		rs.pings++
	}
	unknown := sid != "" && (rs.forget400 || rs.unknown400 && !rs.current[sid])
	reject := rs.reject400 != nil && rs.reject400(body)
	intercept := rs.intercept
	rs.mu.Unlock()
	if intercept != nil && intercept(w, r, body) {
		return
	}
	switch {
	case forget:
		http.Error(w, "session not found", http.StatusNotFound)
		return
	case unknown:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, unknownSessionBody)
		return
	case reject:
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	rec := &sessionRecorder{ResponseWriter: w, rs: rs}
	h.ServeHTTP(rec, r)
}

// sessionRecorder notes the session ids the handler assigns.
type sessionRecorder struct {
	http.ResponseWriter
	rs      *restartingServer
	written bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	if !s.written {
		s.written = true
		if id := s.Header().Get("Mcp-Session-Id"); id != "" {
			s.rs.mu.Lock()
			if !slices.Contains(s.rs.sessions, id) {
				s.rs.sessions = append(s.rs.sessions, id)
			}
			if s.rs.current == nil {
				s.rs.current = map[string]bool{}
			}
			s.rs.current[id] = true
			s.rs.mu.Unlock()
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(b []byte) (int, error) {
	if !s.written {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *sessionRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// restart replaces the handler and drops every connection.
func (rs *restartingServer) restart() {
	rs.mu.Lock()
	old := rs.mcp
	rs.mcp, rs.handler = rs.newHandler()
	rs.current = nil
	rs.mu.Unlock()
	for ss := range old.Sessions() {
		ss.Close()
	}
	rs.srv.CloseClientConnections()
}

func (rs *restartingServer) closeSessions() {
	rs.mu.Lock()
	s := rs.mcp
	rs.mu.Unlock()
	for ss := range s.Sessions() {
		ss.Close()
	}
}

func (rs *restartingServer) counts() (inits int, deletes, sessions []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.inits, slices.Clone(rs.deletes), slices.Clone(rs.sessions)
}

// TestSessionRenewedUnderACallInFlight: the GET stream finds the session
// gone and renews it while a call's POST is still waiting for its answer.
// The server answers that POST 404 (it never processed the call): the call
// is sent again on the renewed session and succeeds, rather than failing
// with the requests the renewal found in flight.
func TestSessionRenewedUnderACallInFlight(t *testing.T) {
	rs := newRestartingServer(t, false)
	held := make(chan struct{})    // the call's POST reached the server
	release := make(chan struct{}) // the POST may be answered
	renewed := make(chan struct{}) // a GET came on a later session
	var heldOnce, releaseOnce, renewedOnce sync.Once
	releaseNow := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseNow()
	rs.mu.Lock()
	rs.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		sid := r.Header.Get("Mcp-Session-Id")
		rs.mu.Lock()
		first := len(rs.sessions) > 0 && sid == rs.sessions[0]
		rs.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && first && bytes.Contains(body, []byte(`"method":"tools/call"`)):
			heldOnce.Do(func() { close(held) })
			<-release
			http.Error(w, "session not found", http.StatusNotFound)
			return true
		case r.Method == http.MethodGet && first:
			// The first session's stream: once the call is in flight, the
			// server says it forgot the session.
			select {
			case <-held:
			case <-r.Context().Done():
				return true
			}
			http.Error(w, "session not found", http.StatusNotFound)
			return true
		case r.Method == http.MethodGet && sid != "":
			renewedOnce.Do(func() { close(renewed) })
		}
		return false
	}
	rs.mu.Unlock()
	c := connect(t, Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}, getDelay: time.Millisecond})
	if c.Era() != EraLegacy {
		t.Fatalf("Era() = %q, want a legacy session", c.Era())
	}
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.CallTool(testCtx(t), "echo", nil, nil)
		done <- answer{res, err}
	}()
	select {
	case <-renewed: // the renewal has ended the requests it found in flight
	case a := <-done:
		t.Fatalf("the call ended before the renewal: %s, %v", a.res, a.err)
	}
	releaseNow()
	a := <-done
	if a.err != nil {
		t.Fatalf("call: %v", a.err)
	}
	if !bytes.Contains(a.res, []byte(`"ok"`)) {
		t.Errorf("result %s", a.res)
	}
	if inits, _, _ := rs.counts(); inits != 2 {
		t.Errorf("%d initialize requests, want 2 (the first session and its renewal)", inits)
	}
}

func TestHTTPServerRestartReinitializesOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		json bool
	}{{"sse", false}, {"json", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRestartingServer(t, tc.json)
			// A restarted server's old connections are dead, and a POST on
			// a dead keep-alive connection fails before any 404 (net/http
			// retries only idempotent requests). Fresh connections keep the
			// test on the 404 path under test.
			tr := &http.Transport{DisableKeepAlives: true}
			c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}, HTTPClient: &http.Client{Transport: tr}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.CallTool(testCtx(t), "echo", nil, nil); err != nil {
				t.Fatal(err)
			}
			for round := 1; round <= 2; round++ {
				rs.restart()
				res, err := c.CallTool(testCtx(t), "echo", nil, nil)
				if err != nil {
					t.Fatalf("call after restart %d: %v", round, err)
				}
				if !bytes.Contains(res, []byte(`"ok"`)) {
					t.Errorf("result after restart %d: %s", round, res)
				}
				select {
				case <-c.Done():
					t.Fatalf("connection ended after restart %d: %v", round, c.Err())
				default:
				}
				if inits, _, _ := rs.counts(); inits != round+1 {
					t.Errorf("after restart %d: %d initialize requests, want %d (one per session)", round, inits, round+1)
				}
			}
			// Close deletes the session the server knows now, and no
			// session the server forgot is deleted. (A session the server
			// opened for the modern probe, before the fallback to
			// initialize, is deleted when the probe's connection is let go.)
			_, before, _ := rs.counts()
			c.Close()
			_, deletes, sessions := rs.counts()
			if len(sessions) != 3 {
				t.Fatalf("sessions given out: %q, want 3", sessions)
			}
			if diff := cmp.Diff([]string{sessions[2]}, deletes[len(before):]); diff != "" {
				t.Errorf("DELETE requests of Close (-want +got):\n%s", diff)
			}
			for _, forgotten := range sessions[:2] {
				if slices.Contains(deletes, forgotten) {
					t.Errorf("DELETE of the forgotten session %s", forgotten)
				}
			}
		})
	}
}

func TestHTTPSessionForgottenAgainIsConnectionLost(t *testing.T) {
	rs := newRestartingServer(t, true)
	c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rs.mu.Lock()
	rs.forget404 = true
	rs.mu.Unlock()
	_, err = c.CallTool(testCtx(t), "echo", nil, nil)
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("err = %v, want ErrConnectionLost", err)
	}
	// One new session was tried (the handshake's initialize), not more.
	if inits, _, _ := rs.counts(); inits != 2 {
		t.Errorf("%d initialize requests, want 2: one renewal, then give up", inits)
	}
	<-c.Done()
}

// A server that answers 400 rather than MCP's 404 for a session it does
// not know (server-everything after a restart) is re-initialized too, once
// a ping on the session confirms it; a 400 about the request itself is
// left as it is.
func TestHTTPServerAnswering400ForItsSession(t *testing.T) {
	t.Run("restart", func(t *testing.T) {
		rs := newRestartingServer(t, true)
		rs.unknown400 = true
		// Fresh connections, as in TestHTTPServerRestartReinitializesOnce.
		tr := &http.Transport{DisableKeepAlives: true}
		c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}, HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rs.restart()
		res, err := c.CallTool(testCtx(t), "echo", nil, nil)
		if err != nil {
			t.Fatalf("call after a restart that answers 400: %v", err)
		}
		if !bytes.Contains(res, []byte(`"ok"`)) {
			t.Errorf("result %s", res)
		}
		select {
		case <-c.Done():
			t.Fatalf("connection ended: %v", c.Err())
		default:
		}
		if inits, _, _ := rs.counts(); inits != 2 {
			t.Errorf("%d initialize requests, want 2", inits)
		}
	})

	t.Run("bad request", func(t *testing.T) {
		rs := newRestartingServer(t, true)
		rs.reject400 = func(body []byte) bool { return bytes.Contains(body, []byte(`"reject"`)) }
		c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{"reject":true}`), nil); err == nil {
			t.Fatal("a call the server answered 400 succeeded")
		}
		rs.mu.Lock()
		pings := rs.pings
		rs.mu.Unlock()
		inits, _, _ := rs.counts()
		if pings != 1 || inits != 1 {
			t.Errorf("%d pings and %d initialize requests, want 1 ping (the session is known) and no new session", pings, inits)
		}
	})

	t.Run("forgotten again", func(t *testing.T) {
		rs := newRestartingServer(t, true)
		c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rs.mu.Lock()
		rs.forget400 = true
		rs.mu.Unlock()
		_, err = c.CallTool(testCtx(t), "echo", nil, nil)
		// go-sdk is shown the 404 the server meant: the session is gone.
		if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "session not found") {
			t.Fatalf("err = %v, want ErrConnectionLost saying the session was not found", err)
		}
		if inits, _, _ := rs.counts(); inits != 2 {
			t.Errorf("%d initialize requests, want 2: one renewal, then give up", inits)
		}
		<-c.Done()
	})
}

func TestHTTPCloseDeletesSession(t *testing.T) {
	rs := newRestartingServer(t, false)
	c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, deletes, sessions := rs.counts()
	if len(sessions) != 1 || !slices.Equal(deletes, sessions) {
		t.Errorf("DELETE requests %q, want one for the session %q", deletes, sessions)
	}
}

func TestHTTPUnreachableErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String() + "/mcp"
		ln.Close() // nothing listens there now
		_, err = Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: url}})
		if !errors.Is(err, ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("err = %v, want ErrUnreachable wrapping ECONNREFUSED", err)
		}
		for _, w := range []string{`server "h"`, url, "connection refused"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	})

	t.Run("server stops answering", func(t *testing.T) {
		// go-sdk wraps every transport failure of a call in its ErrRejected,
		// a *jsonrpc.Error (-32005), which Conn.call reports as the server's
		// own error and so loses the cause.
		rs := newRestartingServer(t, true)
		c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: rs.srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rs.srv.CloseClientConnections()
		rs.srv.Listener.Close()
		_, err = c.CallTool(testCtx(t), "echo", nil, nil)
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), rs.srv.URL) {
			t.Errorf("err = %v, want ErrUnreachable naming %s", err, rs.srv.URL)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // lets the server notice the client leave
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		// A transport whose response-header timeout is the thing tested.
		client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 100 * time.Millisecond}}
		defer client.CloseIdleConnections()
		_, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: srv.URL}, HTTPClient: client})
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("err = %v, want ErrUnreachable", err)
		}
		for _, w := range []string{`server "h"`, srv.URL, "timed out"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	})
}

// A server that forgot the session after the token was refreshed gets the
// handshake replayed with the current token, not the one go-sdk first sent.
func TestHTTPSessionRenewedWithCurrentOAuthToken(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.Config{})
	srv := oauthtest.NewServer(t, as, oauthtest.ServerConfig{})
	m := oauth.NewManager(oauth.Options{Store: &oauth.Store{Dir: t.TempDir() + "/credentials"}})
	defer m.Close()
	present := func(ctx context.Context, p oauth.Prompt) (oauth.PresentResult, error) {
		_, _, err := oauthtest.Browse(ctx, p.URL)
		return oauth.PresentResult{}, err
	}
	h := m.Handler(oauth.Server{Name: "h", URL: srv.URL()}, oauth.HandlerOptions{Present: present})
	c, err := Connect(testCtx(t), Options{Name: "h", Config: &config.ServerConfig{URL: srv.URL()}, OAuth: h})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{"text":"a"}`), nil); err != nil {
		t.Fatal(err)
	}
	as.RevokeAccess() // the next request is refused, and the token refreshed
	srv.Forget()      // and the retry finds the session gone
	res, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{"text":"b"}`), nil)
	if err != nil {
		t.Fatalf("call after refresh and a forgotten session: %v", err)
	}
	if !bytes.Contains(res, []byte(`"b"`)) {
		t.Errorf("result %s", res)
	}
	if n := as.Counts().Refreshes; n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}

// TestHTTPGetStreamKeepsReconnecting: a legacy session's GET stream that
// the server keeps cutting is opened again for as long as the connection
// lives, not given up after a few breaks: what the server sends once it
// holds reaches the handlers.
func TestHTTPGetStreamKeepsReconnecting(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "http-fx", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	const cuts = 12
	var mu sync.Mutex
	gets := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		gets++
		n := gets
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if n <= cuts {
			return // cut at once, nothing sent
		}
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	changed := make(chan struct{}, 1)
	c := connect(t, Options{
		Config:   &config.ServerConfig{URL: srv.URL},
		getDelay: time.Millisecond,
		Handlers: Handlers{ToolListChanged: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}},
	})
	if c.Era() != EraLegacy {
		t.Fatalf("Era() = %q, want a legacy session", c.Era())
	}
	select {
	case <-changed:
	case <-testCtx(t).Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no list_changed after %d GETs", gets)
	}
}
