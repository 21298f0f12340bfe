package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
)

// freeTestPort is a loopback port nothing listens on (for the moment).
func freeTestPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// forwarding is a presenter standing for a browser whose redirect reaches
// the sidecar through a forwarder (an ingress, a tunnel): it sends what
// the authorization server redirects to on to the loopback address to.
func forwarding(to string, calls *atomic.Int32) Presenter {
	return func(ctx context.Context, p Prompt) (PresentResult, error) {
		calls.Add(1)
		loc, err := oauthtest.RedirectOf(ctx, p.URL)
		if err != nil {
			return PresentResult{}, err
		}
		u, err := url.Parse(loc)
		if err != nil {
			return PresentResult{}, err
		}
		u.Scheme, u.Host = "http", to
		if _, status, err := oauthtest.Browse(ctx, u.String()); err != nil || status != http.StatusOK {
			return PresentResult{}, fmt.Errorf("forwarded redirect: %d, %v", status, err)
		}
		return PresentResult{}, nil
	}
}

// The redirect URI a flow registers is where its listener is: the
// configured port, the configured URL (its port and path when no port is
// set), and for a URL that is not on this machine, the configured port on
// every interface, which a forwarder reaches.
func TestConfiguredCallbackIsTheRedirectURIAndIsListenedOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		// srv sets the callback of the server, given a free port.
		srv func(s *Server, port int)
		// want is the redirect URI, given the port.
		want func(port int) string
		// forward, when set, is where the "browser" sends the redirect.
		forward func(port int) string
	}{
		{
			name: "callback_port",
			srv:  func(s *Server, port int) { s.CallbackPort = port },
			want: func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d/callback", port) },
		},
		{
			name: "loopback callback_url without a port setting",
			srv:  func(s *Server, port int) { s.CallbackURL = fmt.Sprintf("http://127.0.0.1:%d/oauth/cb", port) },
			want: func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d/oauth/cb", port) },
		},
		{
			name: "localhost callback_url",
			srv:  func(s *Server, port int) { s.CallbackURL = fmt.Sprintf("http://localhost:%d/cb", port) },
			want: func(port int) string { return fmt.Sprintf("http://localhost:%d/cb", port) },
			// The browser connects to 127.0.0.1, where the listener is.
			forward: func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) },
		},
		{
			name: "loopback callback_url and a tunnel's callback_port",
			srv: func(s *Server, port int) {
				s.CallbackURL = "http://127.0.0.1:1/cb" // the browser's end of the tunnel
				s.CallbackPort = port
			},
			want:    func(int) string { return "http://127.0.0.1:1/cb" },
			forward: func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) },
		},
		{
			name: "remote callback_url and callback_port",
			srv: func(s *Server, port int) {
				s.CallbackURL = "https://devbox.example/mcp/cb"
				s.CallbackPort = port
			},
			want:    func(int) string { return "https://devbox.example/mcp/cb" },
			forward: func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
			port := freeTestPort(t)
			tc.srv(&e.srv, port)
			var presented atomic.Int32
			present := browse(&presented)
			if tc.forward != nil {
				present = forwarding(tc.forward(port), &presented)
			}
			s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present}))
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer s.Close()
			echo(t, s, "echo", "authorized")
			if got, want := e.as.LastAuthorization().Get("redirect_uri"), tc.want(port); got != want {
				t.Errorf("redirect_uri %q, want %q", got, want)
			}
			if presented.Load() != 1 {
				t.Errorf("presented %d times, want 1", presented.Load())
			}
		})
	}
}

// A callback URL that cannot be listened on is a configuration error that
// names its key, before any request to the authorization server.
func TestUnusableCallbackURLIsAConfigError(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  Server
		want []string
	}{
		{
			name: "remote URL without a port",
			srv:  Server{CallbackURL: "https://devbox.example/cb", CallbackURLKey: "mcp_oauth_callback_url", CallbackPortKey: "mcp_oauth_callback_port"},
			want: []string{`mcp_oauth_callback_url "https://devbox.example/cb"`, "not a loopback address", "set mcp_oauth_callback_port"},
		},
		{
			name: "https on loopback",
			srv:  Server{CallbackURL: "https://127.0.0.1:4321/cb", CallbackURLKey: "oauth.callback_url"},
			want: []string{`oauth.callback_url "https://127.0.0.1:4321/cb"`, "http, not https"},
		},
		{
			name: "not a URL",
			srv:  Server{CallbackURL: "127.0.0.1:4321/cb", CallbackURLKey: "oauth.callback_url"},
			want: []string{`oauth.callback_url "127.0.0.1:4321/cb"`, "not an http or https URL"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
			srv := tc.srv
			srv.Name, srv.URL = e.srv.Name, e.srv.URL
			var presented atomic.Int32
			_, err := connect(t.Context(), e.server.URL(), e.m.Handler(srv, HandlerOptions{Present: browse(&presented)}))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("connect = %v, want a *ConfigError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(ce.Error(), w) {
					t.Errorf("error %q does not say %q", ce.Error(), w)
				}
			}
			if c := e.as.Counts(); c.Registrations+c.Authorizations != 0 || presented.Load() != 0 {
				t.Errorf("counts %+v, presented %d: want nothing asked of anyone", c, presented.Load())
			}
		})
	}
	t.Run("a host that catches the redirect takes any URL", func(t *testing.T) {
		e := newEnv(t, oauthtest.Config{}, oauthtest.ServerConfig{})
		e.srv.CallbackURL = "https://devbox.example/cb"
		present := func(ctx context.Context, p Prompt) (PresentResult, error) {
			loc, err := oauthtest.RedirectOf(ctx, p.URL)
			return PresentResult{RedirectURL: loc}, err
		}
		s, err := connect(t.Context(), e.server.URL(), e.m.Handler(e.srv, HandlerOptions{Present: present, CatchesRedirect: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		echo(t, s, "echo", "caught")
		if got := e.as.LastAuthorization().Get("redirect_uri"); got != "https://devbox.example/cb" {
			t.Errorf("redirect_uri %q", got)
		}
	})
}
