package oauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/oauthtest"
)

// blackhole is an authorization server that accepts connections and never
// answers; accepted receives one value per connection. closeHole closes
// it and its connections, as does the test's end.
func blackhole(t *testing.T) (url string, accepted <-chan struct{}, closeHole func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	var once sync.Once
	closeHole = func() {
		once.Do(func() {
			ln.Close()
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Cleanup(closeHole)
	return "http://" + ln.Addr().String(), ch, closeHole
}

// setTokenURL makes url the token endpoint of the stored credentials.
func (e *env) setTokenURL(t *testing.T, url string) {
	t.Helper()
	err := e.store.Update(func(entries map[string]*Credentials) error {
		for _, c := range entries {
			c.TokenURL = url
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m.invalidate()
}

// An authorization server that accepts and never answers holds no
// request past the request's own context: a token due for renewal but
// valid is used while its refresh waits in the background, and a request
// whose token expired waits for the refresh only while its context lasts,
// the handler's Transport then failing it with a *RefreshWaitError (and
// telling WaitingForRefresh, for the caller whose error go-sdk replaces
// with the context's). The session lives on: once the authorization
// server answers, the next call is refreshed and goes through. The
// refresh's own timeout is an hour here: only the request's context, or
// the authorization server, ends a wait.
func TestBlackholedAuthorizationServerStallsNoRequest(t *testing.T) {
	e := newEnv(t, oauthtest.Config{AccessTTL: time.Hour}, oauthtest.ServerConfig{})
	e.m.opts.RefreshTimeout = time.Hour
	awaits := make(chan struct{}, 16)
	e.m.opts.AwaitsRefresh = func(Key) { awaits <- struct{}{} }
	var mu sync.Mutex
	var told []bool
	h := e.m.Handler(e.srv, HandlerOptions{Present: browse(new(atomic.Int32)), WaitingForRefresh: func(w bool) {
		mu.Lock()
		told = append(told, w)
		mu.Unlock()
	}})
	s, err := connectVia(t.Context(), e.server.URL(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	echo(t, s, "echo", "one")
	first := e.server.Tokens()[len(e.server.Tokens())-1]
	hole, accepted, closeHole := blackhole(t)
	e.setTokenURL(t, hole+"/token")

	// Due, not expired: the calls go with the valid token at once. (The
	// deadline only keeps a stalled call from hanging the test.)
	e.clock.Advance(time.Hour - RefreshBefore/2)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, text := range []string{"two", "three"} {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}}); err != nil {
			t.Fatalf("call %s with a valid token while the refresh waits: %v", text, err)
		}
	}
	<-accepted // the refresh is at the authorization server
	for _, tok := range e.server.Tokens() {
		if tok != first {
			t.Errorf("a request went with %q, not the valid token", tok)
		}
	}

	// Expired: a call waits for the refresh until its context ends.
	e.clock.Advance(RefreshBefore)
	ctx, cancel = context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
		errc <- err
	}()
	<-awaits
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("call cancelled while the refresh waits: %v; want context.Canceled", err)
	}
	mu.Lock()
	if !slices.Contains(told, true) || !slices.Contains(told, false) {
		t.Errorf("WaitingForRefresh told %v; want a wait begun and ended", told)
	}
	mu.Unlock()

	// What the Transport itself answers a request whose context ended
	// while the refresh runs.
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.server.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Transport(nil).RoundTrip(req)
	var we *RefreshWaitError
	if !errors.As(err, &we) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `server "remote"`) {
		t.Errorf("request cancelled while the refresh waits: %v; want a *RefreshWaitError naming the server and the cancellation", err)
	}

	// The authorization server drops the connection: the refresh fails;
	// with a working token endpoint the next call is refreshed.
	closeHole()
	if err := <-e.refreshed; err == nil {
		t.Fatal("a refresh at the blackhole succeeded")
	}
	e.setTokenURL(t, e.as.URL()+"/token")
	echo(t, s, "echo", "four")
	if n := e.as.Counts().Refreshes; n != 1 {
		t.Errorf("%d refreshes at the authorization server, want 1", n)
	}
}

// A refresh ends at its own timeout, and a request waiting for it without
// a deadline of its own fails then, saying why.
func TestRefreshEndsAtItsTimeout(t *testing.T) {
	e := newEnv(t, oauthtest.Config{AccessTTL: time.Hour}, oauthtest.ServerConfig{})
	e.m.opts.RefreshTimeout = 50 * time.Millisecond
	e.connectMigrating(t)
	echo(t, e.session, "echo", "one")
	hole, _, _ := blackhole(t)
	e.setTokenURL(t, hole+"/token")

	e.clock.Advance(time.Hour)
	_, err := e.session.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	var re *RefreshError
	if !errors.As(err, &re) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call with the token expired and the authorization server silent: %v; want a *RefreshError for the refresh's deadline", err)
	}
}
