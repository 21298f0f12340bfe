package oauthtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ServerConfig shapes a protected MCP server.
type ServerConfig struct {
	// Scopes are required of every request (announced in the 401's
	// challenge) and listed as scopes_supported.
	Scopes []string
	// ToolScopes are extra scopes a tool call needs: a call without them
	// gets 403 insufficient_scope naming all the scopes it needs.
	ToolScopes map[string][]string
	// OpenHandshake lets initialize and notifications through without a
	// token: only the requests after them need one.
	OpenHandshake bool
	// LeakTool adds the tool leak, which fails with a JSON-RPC error whose
	// message and data quote the request's Authorization header, as a
	// careless server's errors do.
	LeakTool bool
	// SSE serves the legacy HTTP+SSE transport (go-sdk's SSEHandler) at
	// the same URL instead of Streamable HTTP: the GET of the stream and
	// the POSTs of its messages need the token alike.
	SSE bool
}

// Server is an MCP server (go-sdk's, over Streamable HTTP) that needs a
// token of its AuthServer, with RFC 9728 metadata. Its tools: echo, and
// any named in ToolScopes (each echoes too).
type Server struct {
	srv *httptest.Server
	cfg ServerConfig

	mu     sync.Mutex
	as     *AuthServer // the authorization server its metadata names
	tokens []string    // tokens of accepted requests, in order
	denied int         // requests answered 401 or 403
	ms     *mcp.Server
	mcp    http.Handler
}

// NewServer starts a protected MCP server; it stops with the test.
func NewServer(t testing.TB, as *AuthServer, cfg ServerConfig) *Server {
	t.Helper()
	s := StartServer(as, cfg)
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and ends its MCP sessions.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.mu.Lock()
	ms := s.ms
	s.mu.Unlock()
	closeSessions(ms)
}

// StartServer starts a protected MCP server that runs until Close, for a
// program outside a Go test.
func StartServer(as *AuthServer, cfg ServerConfig) *Server {
	s := &Server{as: as, cfg: cfg}
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(mux)
	prm := s.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             s.URL(),
			AuthorizationServers: []string{s.authServer().URL()},
			ScopesSupported:      cfg.Scopes,
		}).ServeHTTP(w, r)
	})
	s.ms, s.mcp = s.newMCP()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.mcp
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	verify := func(ctx context.Context, tok string, r *http.Request) (*auth.TokenInfo, error) {
		scopes, ok := s.authServer().Verify(tok)
		if !ok {
			return nil, fmt.Errorf("%w: unknown or revoked", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{Scopes: scopes, Expiration: time.Now().Add(time.Hour)}, nil
	}
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm, Scopes: cfg.Scopes})
	protected := bearer(s.stepUp(h, prm))
	if cfg.OpenHandshake {
		protected = openHandshake(h, protected)
	}
	mux.Handle("/mcp", s.record(protected))
	return s
}

// URL is the MCP endpoint.
func (s *Server) URL() string { return s.srv.URL + "/mcp" }

// MoveTo makes as the server's authorization server from now on, as a
// resource that migrates does (SEP-2352): its metadata names as, and only
// as's tokens are accepted (the old server's get 401).
func (s *Server) MoveTo(as *AuthServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.as = as
}

func (s *Server) authServer() *AuthServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.as
}

// Forget makes the server forget its MCP sessions, as a restart does: a
// request with an old session id gets 404.
func (s *Server) Forget() {
	s.mu.Lock()
	old := s.ms
	s.ms, s.mcp = s.newMCP()
	s.mu.Unlock()
	closeSessions(old)
}

// newMCP is a fresh go-sdk server (it knows no session) and its handler.
func (s *Server) newMCP() (*mcp.Server, http.Handler) {
	ms := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	echo := func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "echo", Description: "echo the text"}, echo)
	for name := range s.cfg.ToolScopes {
		mcp.AddTool(ms, &mcp.Tool{Name: name, Description: "echo the text, with more scopes"}, echo)
	}
	if s.cfg.LeakTool {
		ms.AddTool(&mcp.Tool{Name: "leak", Description: "fail quoting the Authorization header", InputSchema: &jsonschema.Schema{Type: "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				authz := req.Extra.Header.Get("Authorization")
				data, _ := json.Marshal(map[string]string{"authorization": authz})
				return nil, &jsonrpc.Error{Code: -32000, Message: "refused with Authorization: " + authz, Data: data}
			})
	}
	if s.cfg.SSE {
		return ms, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	}
	return ms, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
}

func closeSessions(ms *mcp.Server) {
	for ss := range ms.Sessions() {
		ss.Close()
	}
}

// Tokens returns the bearer tokens of the requests served, in order.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// Denied counts the requests answered 401 or 403.
func (s *Server) Denied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied
}

// statusRecorder notes a response's status as its header is written,
// before the client can have any of it: a test that reads Tokens or Denied
// once its request was answered sees that request counted.
type statusRecorder struct {
	http.ResponseWriter
	noted  bool
	noteFn func(status int)
}

func (r *statusRecorder) note(status int) {
	if !r.noted {
		r.noted = true
		r.noteFn(status)
	}
}

func (r *statusRecorder) WriteHeader(code int) {
	r.note(code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.note(http.StatusOK)
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	r.note(http.StatusOK)
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, noteFn: func(status int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if status == http.StatusUnauthorized || status == http.StatusForbidden {
				s.denied++
			} else if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				s.tokens = append(s.tokens, tok)
			}
		}}
		next.ServeHTTP(rec, r)
		rec.note(http.StatusOK) // a handler that wrote nothing answered 200
	})
}

// stepUp answers a tools/call of a tool whose scopes the token lacks with
// 403 insufficient_scope.
func (s *Server) stepUp(next http.Handler, prm string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || len(s.cfg.ToolScopes) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		msg, ok := peek(w, r)
		if !ok {
			return
		}
		need := s.cfg.ToolScopes[msg.Params.Name]
		if msg.Method == "tools/call" && len(need) > 0 {
			have := auth.TokenInfoFromContext(r.Context())
			for _, sc := range need {
				if have == nil || !slices.Contains(have.Scopes, sc) {
					all := slices.Concat(s.cfg.Scopes, need)
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, strings.Join(all, " "), prm))
					http.Error(w, "insufficient scope", http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// message is what the middlewares read of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// peek reads the message of a POST and puts its body back for the next
// handler; on a read error it answers 400 and reports false.
func peek(w http.ResponseWriter, r *http.Request) (message, bool) {
	var msg message
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return msg, false
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	json.Unmarshal(body, &msg)
	return msg, true
}

// openHandshake sends initialize, notifications and session GET/DELETE
// to open, everything else to protected.
func openHandshake(open, protected http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			open.ServeHTTP(w, r)
			return
		}
		msg, ok := peek(w, r)
		if !ok {
			return
		}
		if msg.Method == "initialize" || msg.ID == nil {
			open.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}
