package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/ctxsleep"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// The standalone GET stream of a legacy Streamable HTTP session (MCP
// 2025-11-25, "Listening for Messages from the Server"): what the server
// sends outside any request (list_changed, resources/updated, its own
// requests) arrives here. go-sdk opens it only from its ClientSession,
// through a hook of its connection that is not exported, and this client
// does not use ClientSession: so the stream is read here, the one event
// stream parser of the package, and its messages join the connection's
// dispatch like any other. Modern servers have no such stream
// (subscriptions/listen is a request, read by go-sdk).

// The GET stream's reconnection: it is opened again as long as the
// session lives, after a pause that starts at getFirstDelay and grows by
// half at each break that brought nothing, up to getMaxDelay (the
// server's retry field sets it instead); a stream that lived (an event
// came, or it stayed open getMaxDelay) starts the pause over.
const (
	getFirstDelay = time.Second
	getMaxDelay   = 30 * time.Second
)

// startGetStream opens the GET stream of the current legacy session, in
// place of the one before.
func (c *Conn) startGetStream() {
	h := c.http
	conn, gen := c.w.current()
	ctx, stop := context.WithCancel(c.life)
	h.mu.Lock()
	if h.stopGet != nil {
		h.stopGet()
	}
	h.stopGet = stop
	h.mu.Unlock()
	if !c.w.goBG(func() { c.getStream(ctx, conn, gen) }) {
		stop()
	}
}

// getStream reads the GET stream of the session conn (generation gen)
// until ctx ends (the session is renewed, or the connection ends) or the
// server refuses it. Each message is dispatched in the order it came.
func (c *Conn) getStream(ctx context.Context, conn mcp.Connection, gen uint32) {
	lastID := ""
	first := c.opts.getDelay
	if first <= 0 {
		first = getFirstDelay
	}
	now := c.opts.clock
	if now == nil {
		now = time.Now
	}
	delay := first
	for {
		resp, err := c.openGet(ctx, conn.SessionID(), lastID)
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return
		}
		lived, retry := false, time.Duration(0)
		switch {
		case err != nil:
			c.opts.Logger.Debug("GET stream not opened", "server", c.name, peerlog.Err("err", err))
		case resp.StatusCode == http.StatusNotFound && conn.SessionID() != "":
			// The session is gone: the stream cannot be had, and the
			// session is renewed.
			resp.Body.Close()
			c.sessionLost(gen, fmt.Errorf("GET stream: %w", mcp.ErrSessionMissing))
			return
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode/100 == 5:
			// A server busy or restarting: asked again, later.
			resp.Body.Close()
			c.opts.Logger.Debug("GET stream refused for now", "server", c.name, "status", resp.StatusCode)
		case resp.StatusCode/100 != 2:
			// 405: the server has no such stream (MCP allows it); other
			// statuses are taken the same way, as go-sdk does.
			resp.Body.Close()
			return
		default:
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if mt != "text/event-stream" {
				resp.Body.Close()
				return
			}
			opened := now()
			var progressed bool
			progressed, retry = c.readEvents(ctx, resp.Body, &lastID)
			resp.Body.Close()
			lived = progressed || now().Sub(opened) >= getMaxDelay
		}
		if lived {
			delay = first
		}
		if retry > 0 {
			delay = retry
		}
		if ctxsleep.Sleep(ctx, delay) != nil {
			return
		}
		delay = min(delay*3/2, getMaxDelay)
	}
}

// openGet opens the GET stream (resuming after lastID, when there is one).
func (c *Conn) openGet(ctx context.Context, session, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.http.transport.Endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if session != "" {
		req.Header.Set(sessionIDHeader, session)
	}
	if lastID != "" {
		req.Header.Set(lastEventIDHeader, lastID)
	}
	if h := c.opts.OAuth; h != nil {
		if ts, err := h.TokenSource(ctx); err == nil && ts != nil {
			if tok, err := ts.Token(); err == nil && tok != nil {
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			}
		}
	}
	return c.http.client.Do(req)
}

// readEvents reads server-sent events from body until it ends, dispatching
// each message, and reports whether any event came and the server's retry
// delay.
func (c *Conn) readEvents(ctx context.Context, body io.Reader, lastID *string) (progressed bool, retry time.Duration) {
	err := scanEvents(body, c.opts.MaxLineBytes, func(ev event) {
		if ev.id != "" {
			*lastID = ev.id
			progressed = true
		}
		if ev.retry > 0 {
			retry = ev.retry
		}
		if len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
			return
		}
		progressed = true
		msg, err := jsonrpc.DecodeMessage(ev.data)
		if err != nil {
			c.opts.Logger.Warn("an event of the GET stream that is not a JSON-RPC message was skipped", "server", c.name, peerlog.Err("err", err))
			return
		}
		c.w.dispatchMu.Lock()
		c.w.dispatch(msg)
		c.w.dispatchMu.Unlock()
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		c.opts.Logger.Debug("GET stream broke", "server", c.name, peerlog.Err("err", err))
	}
	return progressed, retry
}

// event is one server-sent event.
type event struct {
	name, id string
	data     []byte
	retry    time.Duration
}

// errEventTooLarge is an event over the bound: the stream is not read on.
var errEventTooLarge = errors.New("event too large")

// scanEvents parses the event stream r (the WHATWG server-sent events
// format) and calls emit with each event; an event whose data would pass
// max bytes ends the scan.
func scanEvents(r io.Reader, max int, emit func(event)) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var ev event
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 {
			return errEventTooLarge
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(line) == 0 {
			return err
		}
		l := bytes.TrimRight(line, "\r\n")
		line = line[:0]
		switch {
		case len(l) == 0:
			if len(ev.data) > 0 || ev.id != "" || ev.retry > 0 {
				emit(ev)
			}
			ev = event{}
		case l[0] == ':': // a comment: keep-alive
		default:
			field, value, _ := bytes.Cut(l, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if len(ev.data)+len(value)+1 > max {
					return errEventTooLarge
				}
				if ev.data != nil {
					ev.data = append(ev.data, '\n')
				}
				ev.data = append(ev.data, value...)
				if ev.data == nil {
					ev.data = []byte{}
				}
			case "event":
				ev.name = string(value)
			case "id":
				ev.id = string(value)
			case "retry":
				if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
					ev.retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
		if err != nil {
			return err
		}
	}
}
