package gateway

import (
	"net/http"
	"sync"
	"time"
)

// A client of MCP 2025-11-25 or earlier over HTTP has a session
// (Mcp-Session-Id) that lives until it sends DELETE. Many never do: an
// editor that quits, an agent run that ends, a client that crashed. A
// daemon that runs for weeks would keep each such session, its client
// and its go-sdk server, for good. So a session with no request open, no
// POST and no GET stream, for sessionIdle is closed.
//
// A live client is not cut: one that holds its GET stream open (the
// TypeScript, Python and Go SDKs open it after the handshake) is never
// idle, and a call that runs for hours is a request open. A client that
// holds no stream and comes back after sessionIdle gets 404 for its
// session, and MCP says it must then start a new one.
const sessionIdle = time.Hour

// idleSessions tracks the HTTP requests open per legacy session and
// closes the sessions idle for longer than idle. It has no goroutine of
// its own: each request sweeps, at most once per idle/8, so sessions that
// left are closed as long as any client uses the gateway (and one that
// nobody uses holds only what its last clients left, until the next
// request).
type idleSessions struct {
	idle  time.Duration
	now   func() time.Time
	close func(session string) // closes the MCP session, from a sweep

	mu    sync.Mutex
	use   map[string]*sessionUse // sessions go-sdk gave out, by id
	swept time.Time
}

// sessionUse is one session's requests open, and since when it has had
// none.
type sessionUse struct {
	open      int
	idleSince time.Time
}

func newIdleSessions(idle time.Duration, now func() time.Time, close func(string)) *idleSessions {
	return &idleSessions{idle: idle, now: now, close: close, use: map[string]*sessionUse{}, swept: now()}
}

// begin notes a request of session (its Mcp-Session-Id, "" for an
// initialize) starting, and sweeps. Only sessions go-sdk gave out are
// tracked (given): a request with an id nobody gave out adds nothing.
func (s *idleSessions) begin(session string) {
	now := s.now()
	s.mu.Lock()
	if u := s.use[session]; u != nil {
		u.open++
	}
	var idle []string
	if now.Sub(s.swept) >= s.idle/8 {
		s.swept = now
		for id, u := range s.use {
			if u.open == 0 && now.Sub(u.idleSince) >= s.idle {
				delete(s.use, id)
				idle = append(idle, id)
			}
		}
	}
	s.mu.Unlock()
	for _, id := range idle {
		s.close(id)
	}
}

// given notes a session go-sdk gives out, with the request that made it
// open. It runs before the answer's headers leave, so that the entry is
// there before the client can send a request on the session.
func (s *idleSessions) given(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.use[session] = &sessionUse{open: 1}
}

// end notes a request of session ending (for an initialize, the session
// its answer gave out). A DELETE ends the session: it is forgotten.
func (s *idleSessions) end(session string, deleted bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.use[session]
	if u == nil {
		return
	}
	if deleted {
		delete(s.use, session)
		return
	}
	if u.open--; u.open == 0 {
		u.idleSince = now
	}
}

// sessionNoter passes on the answer to a request without a session, and
// notes the session its headers give out (go-sdk's answer to initialize)
// as they are written.
type sessionNoter struct {
	http.ResponseWriter
	s       *idleSessions
	written bool
	id      string
}

func (n *sessionNoter) WriteHeader(code int) {
	if !n.written {
		n.written = true
		if id := n.Header().Get(sessionIDHeader); id != "" {
			n.id = id
			n.s.given(id)
		}
	}
	n.ResponseWriter.WriteHeader(code)
}

func (n *sessionNoter) Write(b []byte) (int, error) {
	if !n.written {
		n.WriteHeader(http.StatusOK)
	}
	return n.ResponseWriter.Write(b)
}

// Flush lets go-sdk stream the answer as events.
func (n *sessionNoter) Flush() {
	if !n.written {
		n.WriteHeader(http.StatusOK)
	}
	if f, ok := n.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (n *sessionNoter) Unwrap() http.ResponseWriter { return n.ResponseWriter }

// sessionIDHeader is the header of a legacy Streamable HTTP session.
const sessionIDHeader = "Mcp-Session-Id"
