package gateway

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRoute: which call a server's request of a shared host session
// goes to (docs/gateway.md, "Requests of a shared server").
func TestRoute(t *testing.T) {
	// Clients a and b declared the capability; n did not.
	a, b, n := &client{ss: &mcp.ServerSession{}}, &client{ss: &mcp.ServerSession{}}, &client{ss: &mcp.ServerSession{}}
	capable := func(ss *mcp.ServerSession) bool { return ss == a.ss || ss == b.ss }
	call := func(c *client, server string) *flight { return &flight{c: c, ss: c.ss, server: server} }
	for _, tc := range []struct {
		name    string
		clients []*client
		flights []*flight
		want    *client // nil: no one
	}{
		{"the one call to the server, its client incapable", []*client{a, n}, []*flight{call(a, "beta"), call(n, "alpha")}, n},
		{"of several, the most recent capable", []*client{a, b, n}, []*flight{call(b, "alpha"), call(a, "alpha"), call(n, "alpha")}, a},
		{"of several, none capable: the most recent", []*client{n}, []*flight{call(n, "alpha"), call(n, "alpha")}, n},
		{"none to the server: the most recent capable call", []*client{a, b, n}, []*flight{call(b, "beta"), call(a, "beta"), call(n, "beta")}, a},
		{"no call: the last capable client", []*client{a, b, n}, nil, b},
		{"no call, none capable: the last client", []*client{n}, nil, n},
		{"no client", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hostSession{shared: true, clients: tc.clients, flights: tc.flights}
			f := h.route("alpha", capable)
			var got *client
			if f != nil {
				got = f.c
			}
			if got != tc.want {
				t.Errorf("routed to %p, want %p (a %p, b %p, n %p)", got, tc.want, a, b, n)
			}
		})
	}
}
