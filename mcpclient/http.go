package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
)

// The Streamable HTTP headers this client reads or sets.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
	methodHeader          = "Mcp-Method"
	nameHeader            = "Mcp-Name"
)

// httpState is a Streamable HTTP connection: go-sdk's client transport
// over our RoundTripper, and, for a legacy session, its standalone GET
// stream and its renewal when the server forgets it.
type httpState struct {
	c         *Conn
	rt        *headerTransport
	client    *http.Client // with rt: go-sdk's requests and the GET stream
	transport *mcp.StreamableClientTransport
	// initParams are the params of the legacy session's initialize, sent
	// again to renew it.
	initParams json.RawMessage
	// live is set once Connect returned: a session lost during startup is
	// a failed startup, not renewed.
	live atomic.Bool

	renewMu sync.Mutex // one renewal at a time
	mu      sync.Mutex
	stopGet context.CancelFunc // the GET stream of the current session
	lost    sync.Once          // the read loop of the connection ended for good
}

// connectHTTP dials a Streamable HTTP server and runs the handshake.
func (c *Conn) connectHTTP(ctx context.Context) error {
	h, err := c.newHTTP()
	if err != nil {
		return err
	}
	c.http = h
	conn, err := h.transport.Connect(ctx)
	if err != nil {
		return fmt.Errorf("server %q: %w", c.name, err)
	}
	gen := c.w.use(conn)
	c.w.goBG(func() { c.readHTTP(conn, gen) })
	if err := c.handshake(ctx); err != nil {
		return c.startupFailed(ctx, err)
	}
	h.live.Store(true)
	return nil
}

// newHTTP builds go-sdk's transport with the configured headers and our
// RoundTripper.
func (c *Conn) newHTTP() (*httpState, error) {
	headers, err := httpHeaders(&c.opts)
	if err != nil {
		return nil, err
	}
	base := c.opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	real, err := url.Parse(c.opts.Config.URL)
	if err != nil {
		return nil, fmt.Errorf("server %q: url does not parse", c.name)
	}
	endpoint, _ := redact.Endpoint(c.opts.Config.URL)
	client := *base
	client.Timeout = 0 // streams live as long as the session
	ht := &headerTransport{
		base: rt, headers: headers, maxMsg: c.opts.MaxLineBytes,
		server: c.name, source: c.opts.Config.Source, url: redact.URL(c.opts.Config.URL), real: real, endpoint: endpoint,
		logger: c.opts.Logger, dynamic: c.opts.DynamicHeaders,
	}
	client.Transport = ht
	return &httpState{
		c:      c,
		rt:     ht,
		client: &client,
		transport: &mcp.StreamableClientTransport{
			Endpoint:     endpoint,
			HTTPClient:   &client,
			OAuthHandler: c.opts.OAuth,
			// A response stream that breaks is resumed a few times with
			// backoff; beyond that the connection is lost and the
			// sidecar's restart policy takes over.
			MaxRetries:   3,
			MaxEventSize: c.opts.MaxLineBytes,
			// The standalone stream is opened by go-sdk's ClientSession
			// only; this client opens it itself (getStream).
			DisableStandaloneSSE: true,
		},
	}, nil
}

// legacySession notes that the session is a legacy one of version: every
// request carries the version from now on.
func (h *httpState) legacySession(version string) {
	h.rt.version.Store(&version)
}

// readHTTP reads the underlying connection conn of generation gen until it
// ends. A legacy session the server forgot is renewed; any other end is
// the connection's.
func (c *Conn) readHTTP(conn mcp.Connection, gen uint32) {
	err := c.w.readConn(c.life, conn)
	if _, cur := c.w.current(); cur != gen {
		return // replaced by a renewal, or a renewal that failed
	}
	if c.sessionLost(gen, err) {
		return
	}
	c.http.connLost(err)
}

// connLost ends the connection's read for good with err.
func (h *httpState) connLost(err error) {
	h.lost.Do(func() {
		h.c.readErr = err
		close(h.c.readEnded)
	})
}

// sessionLost renews a legacy session the server forgot (err wraps go-sdk's
// ErrSessionMissing: a 404 for its session) that was generation gen, and
// reports whether the connection goes on, on a renewed session (by this
// call or another). A renewal that fails ends the connection.
func (c *Conn) sessionLost(gen uint32, err error) bool {
	h := c.http
	if h == nil || c.era != EraLegacy || !errors.Is(err, mcp.ErrSessionMissing) || !h.live.Load() {
		return false
	}
	h.renewMu.Lock()
	defer h.renewMu.Unlock()
	select {
	case <-c.readEnded:
		return false // the connection ended meanwhile
	default:
	}
	if _, cur := c.w.current(); cur != gen {
		return true // renewed meanwhile
	}
	if rerr := c.renew(gen); rerr != nil {
		c.opts.Logger.Warn("session lost and not renewed", "server", c.name, "url", h.rt.url, peerlog.Err("err", rerr))
		h.connLost(fmt.Errorf("%w; a new session could not be started: %w", err, rerr))
		return false
	}
	c.opts.Logger.Info("server forgot the session (restart?): re-initialized", "server", c.name, "url", h.rt.url)
	return true
}

// renew starts a new legacy session in place of generation stale: a new
// go-sdk connection, initialize with the params of the first, the
// resources subscribed again (before any other request reaches the new
// session, so that no update is missed for want of one), and its GET
// stream. Requests in flight on the old session end with a retryable
// error: the server forgot them with the session.
func (c *Conn) renew(stale uint32) error {
	h := c.http
	ctx, cancel := context.WithTimeout(c.life, renewWait)
	defer cancel()
	conn, err := h.transport.Connect(ctx)
	if err != nil {
		return err
	}
	t := c.w.reserve(conn)
	c.w.goBG(func() { c.readHTTP(conn, t.gen) })
	raw, err := c.w.callOn(ctx, &t, "initialize", h.initParams)
	if err == nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(raw, &r) != nil || !slices.Contains(legacyVersions, r.ProtocolVersion) {
			err = fmt.Errorf("initialize: the server answered protocol version %q", r.ProtocolVersion)
		}
	}
	if err == nil {
		err = c.w.notifyOn(ctx, &t, "notifications/initialized", json.RawMessage(`{}`))
	}
	if err != nil {
		conn.Close()
		return err
	}
	if c.opts.Subscriptions != nil {
		for _, uri := range c.opts.Subscriptions() {
			params := append(append([]byte(`{"uri":`), jsonString(uri)...), '}')
			if _, err := c.w.callOn(ctx, &t, "resources/subscribe", params); err != nil {
				c.opts.Logger.Warn("resource not subscribed again on the renewed session", "server", c.name, peerlog.String("uri", uri), peerlog.Err("err", err))
				if f := c.opts.Handlers.ResubscribeFailed; f != nil {
					f(uri, err)
				}
			}
		}
	}
	old, _ := c.w.current()
	c.w.publish(t)
	c.w.failGen(stale, &unreachableError{prefix: fmt.Sprintf("server %q", c.name),
		what: "the server forgot the MCP session while the request was in flight (a new session was started: try again)", err: mcp.ErrSessionMissing})
	c.startGetStream()
	c.w.goBG(func() { old.Close() }) // the session is gone: no DELETE
	return nil
}

// renewWait bounds the renewal of a session.
const renewWait = 30 * time.Second

// close ends the HTTP connection: the GET stream, and the session (go-sdk
// sends its DELETE).
func (h *httpState) close() {
	h.mu.Lock()
	if h.stopGet != nil {
		h.stopGet()
	}
	h.mu.Unlock()
	if conn, _ := h.c.w.current(); conn != nil {
		conn.Close()
	}
	h.connLost(ErrConnectionLost)
}

// fresh replaces the HTTP connection with a new go-sdk connection: the
// legacy handshake after a modern probe starts on one the probe's answer
// left nothing on.
func (h *httpState) fresh(ctx context.Context) error {
	old, _ := h.c.w.current()
	conn, err := h.transport.Connect(ctx)
	if err != nil {
		return fmt.Errorf("server %q: %w", h.c.name, err)
	}
	gen := h.c.w.use(conn)
	h.c.w.goBG(func() { h.c.readHTTP(conn, gen) })
	if old != nil {
		old.Close()
	}
	return nil
}

// resetFailure forgets the failures noted so far: the modern probe's
// refusal by a legacy server does not explain why its initialize failed.
func (t *headerTransport) resetFailure() {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	t.failure = nil
}

// eventIDStripper passes an event stream on without its id fields (the
// lines "id:..." and "id"), so that the reader keeps no last event id and
// never resumes. Lines end at '\n', as go-sdk's parser reads them.
type eventIDStripper struct {
	rc      io.ReadCloser
	scratch []byte
	out     []byte // filtered bytes not yet read, from pos
	pos     int
	head    []byte // the start of a line not decided yet (a prefix of "id:")
	mode    int
	err     error
}

// The modes of eventIDStripper: at the start of a line, passing a line
// on, dropping an id line.
const (
	lineStart = iota
	linePass
	lineDrop
)

func (s *eventIDStripper) Read(p []byte) (int, error) {
	for {
		if s.pos < len(s.out) {
			n := copy(p, s.out[s.pos:])
			s.pos += n
			return n, nil
		}
		s.out, s.pos = s.out[:0], 0
		if s.err != nil {
			if len(s.head) > 0 { // a last line without its end: not an id line
				s.out = append(s.out, s.head...)
				s.head = s.head[:0]
				continue
			}
			return 0, s.err
		}
		if s.scratch == nil {
			s.scratch = make([]byte, 32<<10)
		}
		n, err := s.rc.Read(s.scratch)
		s.err = err
		s.filter(s.scratch[:n])
	}
}

// filter appends b to out without its id lines.
func (s *eventIDStripper) filter(b []byte) {
	for i := 0; i < len(b); {
		switch s.mode {
		case linePass, lineDrop:
			j := bytes.IndexByte(b[i:], '\n')
			end := len(b)
			if j >= 0 {
				end = i + j + 1
			}
			if s.mode == linePass {
				s.out = append(s.out, b[i:end]...)
			}
			if j >= 0 {
				s.mode = lineStart
			}
			i = end
		case lineStart:
			c := b[i]
			i++
			s.head = append(s.head, c)
			switch h := string(s.head); {
			case h == "i" || h == "id":
				continue // not decided yet
			case h == "id:" || h == "id\r":
				s.mode = lineDrop
			case h == "id\n":
				// an id line of its own, dropped whole
			default:
				s.out = append(s.out, s.head...)
				if c != '\n' {
					s.mode = linePass
				}
			}
			s.head = s.head[:0]
		}
	}
}

func (s *eventIDStripper) Close() error { return s.rc.Close() }
