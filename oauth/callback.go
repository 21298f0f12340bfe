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
	"strings"
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

// callbackPlan is where a flow's redirect comes back: the redirect URI to
// register and, unless the presenter catches the redirect, the address and
// path the listener serves.
type callbackPlan struct {
	// redirectURI is "" for the default, http://127.0.0.1:PORT/callback
	// on the port listened on.
	redirectURI string
	listen      string // host:port; "" when the presenter catches the redirect
	// fallback is where to listen when listen is taken: listen is then
	// only the port preferred (that of a kept client registration).
	fallback string
	path     string
}

// callbackPlan decides where s's redirect comes back (docs/protocol.md,
// "Authorization"). The browser goes to the redirect URI, so the listener
// must be where that URI points: a loopback URL gives its own port and
// path, unless a port is set (the far end of a tunnel). A URL that is not
// on this machine reaches the sidecar only through a forwarder (an ingress
// to a devbox, as Codex has it), which needs a port set and finds the
// listener on every interface, as Codex's does. A presenter that catches
// the redirect takes any URL: nothing listens. preferred is the port of
// the default redirect URI when no port is configured (0: any free one).
func (s Server) callbackPlan(catches bool, preferred int) (callbackPlan, error) {
	port := s.CallbackPort
	if s.CallbackURL == "" {
		if port == 0 && preferred != 0 {
			if !catches {
				return callbackPlan{listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(preferred)), fallback: "127.0.0.1:0", path: "/callback"}, nil
			}
			port = preferred
		}
		if !catches {
			return callbackPlan{listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), path: "/callback"}, nil
		}
		if port == 0 {
			var err error
			if port, err = freePort(); err != nil {
				return callbackPlan{}, fmt.Errorf("server %q: choosing a redirect port: %w", s.Name, err)
			}
		}
		return callbackPlan{redirectURI: fmt.Sprintf("http://127.0.0.1:%d/callback", port)}, nil
	}
	bad := func(why string) error {
		return &ConfigError{fmt.Sprintf("server %q: %s %q %s", s.Name, cmpOr(s.CallbackURLKey, "callback URL"), s.CallbackURL, why)}
	}
	u, err := url.Parse(s.CallbackURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return callbackPlan{}, bad("is not an http or https URL")
	}
	plan := callbackPlan{redirectURI: s.CallbackURL, path: cmpOr(u.Path, "/")}
	if catches {
		return plan, nil
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	switch {
	case strings.EqualFold(host, "localhost") || ip.IsLoopback():
		if u.Scheme != "http" {
			return callbackPlan{}, bad("is on this machine, where the sidecar listens for the redirect in http, not https")
		}
		if port == 0 {
			port = 80
			if p := u.Port(); p != "" {
				port, _ = strconv.Atoi(p)
			}
		}
		bind := "127.0.0.1" // localhost: browsers try 127.0.0.1 after ::1
		if ip != nil {
			bind = ip.String()
		}
		plan.listen = net.JoinHostPort(bind, strconv.Itoa(port))
	case port == 0:
		return callbackPlan{}, bad(fmt.Sprintf("is not a loopback address: the redirect reaches this machine only through a forwarder (an ingress, a tunnel), which needs to know the port: set %s", cmpOr(s.CallbackPortKey, "the callback port")))
	default:
		plan.listen = net.JoinHostPort("", strconv.Itoa(port))
	}
	return plan, nil
}

// listenCallback listens on addr (port 0: a port the system picks) for
// redirects to path.
func listenCallback(addr, path string) (*callbackListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the OAuth redirect on %s: %w", addr, err)
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
