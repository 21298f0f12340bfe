package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// subscribingServer is a go-sdk Streamable HTTP server with resource
// subscriptions and a tool "update" ({"uri": ...}: notify the sessions
// subscribed to uri). forget replaces the go-sdk server with a new instance
// that knows none of the old sessions, as a restarted server would: a
// request on an old session gets 404.
type subscribingServer struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	changed *sync.Cond
	gen     int // the instance serving now: 1, then one more per forget
	mcp     *mcp.Server
	handler http.Handler
	subs    []subscribeEvent
	streams []string // sessions whose standalone stream was opened
	deletes []string // sessions the client ended (DELETE)
}

type subscribeEvent struct {
	gen     int
	session string
	what    string // "subscribe <uri>", "unsubscribe <uri>"
}

func newSubscribingServer(t *testing.T) *subscribingServer {
	t.Helper()
	s := &subscribingServer{t: t, gen: 1}
	s.changed = sync.NewCond(&s.mu)
	s.mcp, s.handler = s.newMCP(1)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	// Registered before the harness, so it runs after the sidecar stopped.
	t.Cleanup(func() {
		s.mu.Lock()
		cur := s.mcp
		s.mu.Unlock()
		for ss := range cur.Sessions() {
			ss.Close()
		}
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

func (s *subscribingServer) newMCP(gen int) (*mcp.Server, http.Handler) {
	note := func(ss *mcp.ServerSession, what string) {
		s.mu.Lock()
		s.subs = append(s.subs, subscribeEvent{gen, ss.ID(), what})
		s.changed.Broadcast()
		s.mu.Unlock()
	}
	m := mcp.NewServer(&mcp.Implementation{Name: "subscribing", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			note(req.Session, "subscribe "+req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			note(req.Session, "unsubscribe "+req.Params.URI)
			return nil
		},
	})
	m.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a"}}}, nil
	})
	m.AddTool(&mcp.Tool{Name: "update", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				URI string `json:"uri"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			if err := m.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: args.URI}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "updated"}}}, nil
		})
	return m, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, nil)
}

func (s *subscribingServer) serve(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	h := s.handler
	if r.Method == http.MethodDelete {
		s.deletes = append(s.deletes, sid)
	}
	s.mu.Unlock()
	if r.Method == http.MethodGet {
		w = &streamWatch{ResponseWriter: w, s: s, session: sid}
	}
	h.ServeHTTP(w, r)
}

// streamWatch notes a standalone stream once go-sdk answered its GET: from
// then on, notifications to that session reach the client.
type streamWatch struct {
	http.ResponseWriter
	s       *subscribingServer
	session string
}

func (w *streamWatch) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK {
		w.s.mu.Lock()
		w.s.streams = append(w.s.streams, w.session)
		w.s.changed.Broadcast()
		w.s.mu.Unlock()
	}
}

func (w *streamWatch) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *streamWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// forget replaces the server with one that knows no session, and ends the
// old sessions (their standalone streams end, and the client reconnects).
func (s *subscribingServer) forget() {
	s.mu.Lock()
	old := s.mcp
	s.gen++
	s.mcp, s.handler = s.newMCP(s.gen)
	s.mu.Unlock()
	for ss := range old.Sessions() {
		ss.Close()
	}
}

// wait waits until cond (called with s.mu held) holds.
func (s *subscribingServer) wait(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(testTimeout)
	stop := time.AfterFunc(testTimeout, func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer stop.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; subscriptions %v, streams %q", what, s.subs, s.streams)
		}
		s.changed.Wait()
	}
}

// subscriber is the session of instance gen that subscribed to uri and is
// not one of known, or "".
func (s *subscribingServer) subscriber(gen int, uri string, known ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.subs {
		if e.gen == gen && e.what == "subscribe "+uri && !slices.Contains(known, e.session) {
			return e.session
		}
	}
	return ""
}

// waitStream waits for the standalone stream of session.
func (s *subscribingServer) waitStream(session string) {
	s.t.Helper()
	s.wait(fmt.Sprintf("the standalone stream of session %s", session), func() bool { return slices.Contains(s.streams, session) })
}

// events are the subscription events, without the random session ids.
func (s *subscribingServer) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.subs {
		out = append(out, fmt.Sprintf("instance %d: %s", e.gen, e.what))
	}
	return out
}

func (s *subscribingServer) deleted(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.deletes, session)
}

func subscribe(t *testing.T, h *harness, sid, uri string) {
	t.Helper()
	if err := h.call(protocol.MethodResourcesSubscribe, map[string]any{"sessionId": sid, "server": "s", "uri": uri}, nil); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
}

func updateVia(t *testing.T, h *harness, sid, uri string) {
	t.Helper()
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__update", "arguments": map[string]any{"uri": uri}}); err != nil {
		t.Fatalf("update %s: %v", uri, err)
	}
}

// An HTTP server that forgot the MCP session forgot its subscriptions: the
// renewed session subscribes again before anything else is sent on it, so
// updates resume.
func TestResourceSubscriptionsSurviveAForgottenHTTPSession(t *testing.T) {
	const uri = "file:///a"
	srv := newSubscribingServer(t)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": {URL: srv.srv.URL}}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	subscribe(t, h, sid, uri)
	first := srv.subscriber(1, uri)
	srv.waitStream(first)
	updateVia(t, h, sid, uri)
	h.waitFor("update before the server forgot the session", resourceUpdated(sid, uri))

	srv.forget()
	// This call finds the session gone (404): the sidecar renews the
	// session and sends the call again on it.
	updateVia(t, h, sid, uri)
	second := srv.subscriber(2, uri)
	if second == "" {
		t.Fatalf("the renewed session is not subscribed: server events %q", srv.events())
	}
	srv.waitStream(second)
	mark := len(h.notifications())
	updateVia(t, h, sid, uri)
	h.waitForSince(mark, "update after the session was renewed", resourceUpdated(sid, uri))
	want := []string{"instance 1: subscribe " + uri, "instance 2: subscribe " + uri}
	if diff := cmp.Diff(want, srv.events()); diff != "" {
		t.Errorf("server events (-want +got):\n%s", diff)
	}
}

// session/close ends the session's subscriptions with its connections: the
// server sees its session end, and no update of it reaches the host after.
func TestResourceSubscriptionsEndAtSessionClose(t *testing.T) {
	const uri = "file:///a"
	srv := newSubscribingServer(t)
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": {URL: srv.srv.URL}}, nil)
	closed := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(closed, 0)
	subscribe(t, h, closed, uri)
	gone := srv.subscriber(1, uri)
	srv.waitStream(gone)
	updateVia(t, h, closed, uri)
	h.waitFor("update before session/close", resourceUpdated(closed, uri))

	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": closed}, nil); err != nil {
		t.Fatal(err)
	}
	mark := len(h.notifications())
	if !srv.deleted(gone) {
		t.Errorf("the server never saw session %s end (no DELETE) after session/close", gone)
	}

	// Another session subscribed to the same resource gets the next update;
	// the closed one does not.
	open := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(open, 0)
	subscribe(t, h, open, uri)
	live := srv.subscriber(1, uri, gone)
	srv.waitStream(live)
	updateVia(t, h, open, uri)
	h.waitForSince(mark, "update of the open session", resourceUpdated(open, uri))
	for _, n := range h.notifications()[mark:] {
		if resourceUpdated(closed, uri)(n) {
			t.Errorf("update for the closed session: %s", n.Params)
		}
	}
}
