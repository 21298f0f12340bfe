package gateway

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN). A gateway listening on an address
	// other than loopback needs one: the CLI refuses to start without.
	Token string

	// now is the clock of idle sessions (idle.go); time.Now when nil.
	now func() time.Time
}

// Handler serves MCP over Streamable HTTP at /mcp. Every client, of
// whatever protocol version, uses the gateway's one host session, opened
// at the first request and kept until the gateway closes: ten clients
// that use a server run it once, and a client that connects or
// disconnects never starts or stops one. Each client keeps its own MCP
// session (Mcp-Session-Id, for 2025-11-25 and earlier), capabilities,
// subscriptions, progress and calls; a server's request goes to the
// client of the call it belongs to (hostSession.route).
//
// Requests are refused when their Origin is a web page of another host
// (a browser tab reaching a local server), when their Host is not a
// loopback name while the connection came to a loopback address (DNS
// rebinding; go-sdk's check), or without the token.
//
// A legacy session with no request open for an hour is closed: clients
// often leave without DELETE (idle.go).
func (g *Gateway) Handler(opts HTTPOptions) http.Handler {
	host := g.newHostSession(true)
	sessions := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		// A client costs nothing until it sends a request: the host
		// session opens at the first request of any client.
		return g.newClient(host).server
	}, &mcp.StreamableHTTPOptions{Logger: g.logger})
	// MCP 2026-07-28 has no HTTP sessions: every request says its
	// protocol version and stands alone. One client serves them all.
	shared := g.newClient(host)
	shared.shared = true
	host.attach(shared, "")
	sessionless := g.paramHeaders(shared, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return shared.server },
		&mcp.StreamableHTTPOptions{Logger: g.logger, Stateless: true, PropagateRequestCancellation: true}))
	now := opts.now
	if now == nil {
		now = time.Now
	}
	idle := newIdleSessions(sessionIdle, now, func(id string) {
		// As a DELETE would: the client's calls end first (it has none
		// open), then go-sdk forgets the session.
		if c := host.clientOf(id); c != nil {
			c.close(context.Background())
			if ss := c.session(); ss != nil {
				ss.Close()
			}
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2026-07-28" {
			sessionless.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(sessionIDHeader)
		if r.Method == http.MethodDelete {
			// go-sdk closes the session once its requests in flight have
			// returned: the client's calls end first, cancelled, so that
			// a client leaving mid-call does not wait for them, nor keep
			// them running at the servers.
			if c := host.clientOf(id); c != nil {
				c.close(context.WithoutCancel(r.Context()))
			}
		}
		idle.begin(id)
		if id == "" {
			n := &sessionNoter{ResponseWriter: w, s: idle}
			w = n
			defer func() { idle.end(n.id, false) }()
		} else {
			defer idle.end(id, r.Method == http.MethodDelete)
		}
		sessions.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.Token != "" && !bearerOK(r, opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-sidecar"`)
			http.Error(w, "Unauthorized: this gateway needs its bearer token", http.StatusUnauthorized)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originOK(o, r.Host) {
			http.Error(w, "Forbidden: Origin "+o+" may not use this gateway", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func bearerOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// originOK accepts an Origin of a loopback host or of the host the
// request was sent to; "null" (a sandboxed or file page) and everything
// else are refused.
func originOK(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if IsLoopback(u.Hostname()) {
		return true
	}
	return strings.EqualFold(u.Host, host)
}

// IsLoopback reports whether host (a name or an address, without port)
// is this machine only: localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
