package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// go-sdk decodes every result into Go values (maps with sorted keys,
// float64 numbers), so what it returns is not what the server sent. The
// sidecar forwards results byte for byte instead: each request it issues
// carries a rawSink in its context, the transport layer notes which
// JSON-RPC ids went out under that context, and hands the verbatim result
// of the matching response to the sink before go-sdk sees it. For stdio
// this happens in rawConn (a Connection wrapper); for Streamable HTTP in the
// RoundTripper (wrapping the HTTP connection would hide go-sdk's private
// session hooks: protocol version header, standalone SSE stream).

type sinkKey struct{}

// rawSink receives the verbatim response to the request(s) sent under one
// context. It keeps the last response: Connect may send server/discover
// before initialize.
type rawSink struct {
	mu     sync.Mutex
	want   map[jsonrpc.ID]bool // ids sent under this sink, not yet answered
	sealed bool
	got    bool
	result json.RawMessage
	werr   *jsonrpc.Error
}

func withSink(ctx context.Context, s *rawSink) context.Context {
	return context.WithValue(ctx, sinkKey{}, s)
}

func sinkFrom(ctx context.Context) *rawSink {
	s, _ := ctx.Value(sinkKey{}).(*rawSink)
	return s
}

// expect records that a call with id went out under this sink. It reports
// false once the sink is sealed (its owner stopped listening).
func (s *rawSink) expect(id jsonrpc.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealed {
		return false
	}
	if s.want == nil {
		s.want = make(map[jsonrpc.ID]bool)
	}
	s.want[id] = true
	return true
}

func (s *rawSink) expecting(id jsonrpc.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.sealed && s.want[id]
}

func (s *rawSink) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.sealed && len(s.want) > 0
}

// deliver hands over a response; the result bytes are copied because the
// transport may reuse its buffers.
func (s *rawSink) deliver(resp *jsonrpc.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealed || !s.want[resp.ID] {
		return
	}
	delete(s.want, resp.ID)
	s.got = true
	s.result = nil
	s.werr = nil
	if resp.Error != nil {
		we, ok := resp.Error.(*jsonrpc.Error)
		if !ok {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
		}
		s.werr = we
		return
	}
	s.result = bytes.Clone(resp.Result)
}

// seal stops the sink from taking responses and returns what it got.
func (s *rawSink) seal() (result json.RawMessage, werr *jsonrpc.Error, got bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealed = true
	s.want = nil
	return s.result, s.werr, s.got
}

// rawTransport wraps a Transport's Connection with rawConn.
type rawTransport struct {
	inner      mcp.Transport
	onConn     func(*rawConn) // tells the owner the connection it got
	onProgress func(*mcp.ProgressNotificationParams)
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	rc := &rawConn{Connection: c, pending: make(map[jsonrpc.ID]*rawSink), onProgress: t.onProgress}
	if t.onConn != nil {
		t.onConn(rc)
	}
	return rc, nil
}

// rawConn routes verbatim responses to the sinks of the calls they answer.
type rawConn struct {
	mcp.Connection
	// onProgress sees notifications/progress on the read path, in wire
	// order: a progress notification the server sent before its response
	// is delivered before the caller sees the response.
	onProgress func(*mcp.ProgressNotificationParams)

	mu      sync.Mutex
	pending map[jsonrpc.ID]*rawSink
}

func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if s := sinkFrom(ctx); s != nil && s.expect(req.ID) {
			c.mu.Lock()
			c.pending[req.ID] = s
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && c.onProgress != nil && !req.IsCall() && req.Method == "notifications/progress" {
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) == nil {
			c.onProgress(&p)
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		s := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if s != nil {
			s.deliver(resp)
		}
	}
	return msg, err
}

// forget drops the pending entry of calls whose caller gave up (the
// response, if it ever comes, is not wanted).
func (c *rawConn) forget(s *rawSink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.pending {
		if p == s {
			delete(c.pending, id)
		}
	}
}

// rawResult is a go-sdk Result whose wire form is fixed bytes: it lets a
// receiving middleware answer a server's request (roots/list,
// elicitation/create) with exactly what the host returned. Embedding the
// typed result provides go-sdk's sealed Result methods.
type rawRootsResult struct {
	*mcp.ListRootsResult
	raw json.RawMessage
}

func (r rawRootsResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

type rawElicitResult struct {
	*mcp.ElicitResult
	raw json.RawMessage
}

func (r rawElicitResult) MarshalJSON() ([]byte, error) { return r.raw, nil }
