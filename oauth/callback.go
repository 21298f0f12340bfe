package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// redirect is what came back on the redirect URI.
type redirect struct {
	code, state, iss string
}

// parseRedirect reads an authorization response (RFC 6749 4.1.2) from the
// query of a redirect URL. An error response is an error naming the
// server's words.
func parseRedirect(q url.Values) (redirect, error) {
	if e := q.Get("error"); e != "" {
		msg := "the authorization server refused: " + e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return redirect{}, errors.New(msg)
	}
	r := redirect{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	if r.code == "" {
		return redirect{}, errors.New("the redirect carries no authorization code")
	}
	return r, nil
}

// callbackListener receives one redirect on a loopback port: it answers
// requests for its path whose state is the flow's, once; a request with
// another state (a stale tab, or a forgery) is refused and the listener
// keeps waiting for the right one.
type callbackListener struct {
	ln   net.Listener
	srv  *http.Server
	path string

	mu     sync.Mutex
	state  string // expected; "" until the authorization URL exists
	done   bool
	result chan callbackResult // buffered: the first accepted redirect
	served sync.WaitGroup
}

type callbackResult struct {
	r   redirect
	err error
}

// listenCallback listens on 127.0.0.1:port (0: a port the system picks)
// for redirects to path.
func listenCallback(port int, path string) (*callbackListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the OAuth redirect on 127.0.0.1:%d: %w", port, err)
	}
	l := &callbackListener{ln: ln, path: path, result: make(chan callbackResult, 1)}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.serve), ReadHeaderTimeout: 10 * time.Second}
	l.served.Add(1)
	go func() {
		defer l.served.Done()
		l.srv.Serve(ln)
	}()
	return l, nil
}

// port is the port listened on.
func (l *callbackListener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// expect sets the state a redirect must carry.
func (l *callbackListener) expect(state string) {
	l.mu.Lock()
	l.state = state
	l.mu.Unlock()
}

func (l *callbackListener) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != l.path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	l.mu.Lock()
	expected, done := l.state, l.done
	ok := !done && expected != "" && q.Get("state") == expected
	if ok {
		l.done = true
	}
	l.mu.Unlock()
	switch {
	case done:
		page(w, http.StatusGone, "This authorization is already complete", "You can close this window.")
		return
	case !ok:
		// Refused without ending the flow: the user's own redirect may
		// still come.
		page(w, http.StatusBadRequest, "Authorization refused", "The redirect does not belong to the authorization in progress (its state does not match). Start the authorization again from where you began it.")
		return
	}
	res, err := parseRedirect(q)
	l.result <- callbackResult{r: res, err: err}
	if err != nil {
		page(w, http.StatusOK, "Authorization failed", err.Error())
		return
	}
	page(w, http.StatusOK, "Authorization complete", "mcp-sidecar received the authorization. You can close this window.")
}

func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(body))
}

// close stops listening and waits for requests being served.
func (l *callbackListener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx)
	l.served.Wait()
}
