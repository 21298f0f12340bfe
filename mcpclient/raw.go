package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
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

// deliver hands over a response.
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
	// go-sdk's decoder copies every json.RawMessage it decodes (segmentio
	// without DontCopyRawMessage), so Result is this response's own: no
	// transport buffer backs it, and it is never modified afterwards.
	s.result = resp.Result
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
	// onNotify sees the named notifications on the read path, in wire
	// order (nil entries are skipped); onNotifyParams likewise, with their
	// params as received.
	onNotify       map[string]func()
	onNotifyParams map[string]func(json.RawMessage)
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	rc := &rawConn{Connection: c, pending: make(map[jsonrpc.ID]*rawSink), onProgress: t.onProgress, onNotify: t.onNotify, onNotifyParams: t.onNotifyParams}
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
	onProgress     func(*mcp.ProgressNotificationParams)
	onNotify       map[string]func()
	onNotifyParams map[string]func(json.RawMessage)

	mu      sync.Mutex
	pending map[jsonrpc.ID]*rawSink
	methods map[jsonrpc.ID]string // methods of pending calls with a placeholder

	// incoming keeps the verbatim params of server requests that are
	// relayed to the host (relayedVerbatim), keyed by a reference the
	// read path adds to the request's _meta; go-sdk's decoding would sort
	// the keys of requestedSchema (the order of the form's fields) and add
	// empty members.
	incoming incomingParams
}

// relayedVerbatim are the server requests whose params reach the host as
// the server sent them.
var relayedVerbatim = map[string]bool{"elicitation/create": true, "sampling/createMessage": true}

// rawParamsRefKey is the private _meta key that carries the reference from
// the read path to the receiving middleware.
const rawParamsRefKey = "io.github.mcp-sidecar/raw-params-ref"

// maxStashedParams bounds incoming: a request go-sdk rejects before the
// middleware runs leaves its entry behind.
const maxStashedParams = 64

type incomingParams struct {
	mu    sync.Mutex
	next  uint64
	order []string
	byRef map[string]json.RawMessage
}

// stash keeps params and returns the params to hand to go-sdk: the same
// object with the reference added to its _meta.
func (p *incomingParams) stash(params json.RawMessage) json.RawMessage {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(params, &members); err != nil || members == nil {
		return params
	}
	var meta map[string]json.RawMessage
	if m, ok := members["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return params
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	p.mu.Lock()
	p.next++
	ref := strconv.FormatUint(p.next, 10)
	if p.byRef == nil {
		p.byRef = map[string]json.RawMessage{}
	}
	p.byRef[ref] = bytes.Clone(params)
	p.order = append(p.order, ref)
	for len(p.order) > maxStashedParams {
		delete(p.byRef, p.order[0])
		p.order = p.order[1:]
	}
	p.mu.Unlock()
	meta[rawParamsRefKey], _ = json.Marshal(ref)
	members["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(members)
	if err != nil {
		return params
	}
	return out
}

// take returns the verbatim params for the reference in meta, once.
func (p *incomingParams) take(meta map[string]any) (json.RawMessage, bool) {
	ref, _ := meta[rawParamsRefKey].(string)
	if ref == "" {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	raw, ok := p.byRef[ref]
	delete(p.byRef, ref)
	return raw, ok
}

func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		out, err := rewritten(ctx, req)
		if err != nil {
			return err
		}
		msg = out
		if s := sinkFrom(ctx); s != nil && s.expect(req.ID) {
			c.mu.Lock()
			c.pending[req.ID] = s
			if _, ok := placeholders[req.Method]; ok {
				if c.methods == nil {
					c.methods = make(map[jsonrpc.ID]string)
				}
				c.methods[req.ID] = req.Method
			}
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() && relayedVerbatim[req.Method] {
		req.Params = c.incoming.stash(req.Params)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && !req.IsCall() {
		if f := c.onNotify[req.Method]; f != nil {
			f()
		}
		if f := c.onNotifyParams[req.Method]; f != nil {
			f(req.Params)
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && c.onProgress != nil && !req.IsCall() && req.Method == "notifications/progress" {
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) == nil {
			c.onProgress(&p)
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		s := c.pending[resp.ID]
		method := c.methods[resp.ID]
		delete(c.pending, resp.ID)
		delete(c.methods, resp.ID)
		c.mu.Unlock()
		if s != nil {
			s.deliver(resp)
			// The caller takes the verbatim bytes from the sink; go-sdk
			// need not decode (and copy) what nobody reads, which for a
			// 10 MiB tool result is most of the cost of the call.
			if p, ok := placeholders[method]; ok && resp.Error == nil {
				resp.Result = p
			}
		}
	}
	return msg, err
}

// placeholders are the smallest valid results of the methods whose results
// the sidecar forwards raw (initialize is not among them: go-sdk needs it).
var placeholders = map[string]json.RawMessage{
	"tools/call":               json.RawMessage(`{"content":[]}`),
	"tools/list":               json.RawMessage(`{"tools":[]}`),
	"resources/list":           json.RawMessage(`{"resources":[]}`),
	"resources/templates/list": json.RawMessage(`{"resourceTemplates":[]}`),
	"resources/read":           json.RawMessage(`{"contents":[]}`),
	"prompts/list":             json.RawMessage(`{"prompts":[]}`),
	"prompts/get":              json.RawMessage(`{"messages":[]}`),
	"ping":                     json.RawMessage(`{}`), // the carrier of Request
}

// forget drops the pending entry of calls whose caller gave up (the
// response, if it ever comes, is not wanted).
func (c *rawConn) forget(s *rawSink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.pending {
		if p == s {
			delete(c.pending, id)
			delete(c.methods, id)
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
