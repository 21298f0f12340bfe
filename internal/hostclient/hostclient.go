// Package hostclient is a Go host of the sidecar's protocol: what a harness
// does, in Go. The demo, the benchmarks and the end-to-end tests use it, so
// they exercise the same framing and methods a TypeScript or Rust host does.
package hostclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
)

// Notification is one notification from the sidecar.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Options configure a Client.
type Options struct {
	// OnNotification sees every notification in arrival order. It runs on
	// the read loop: it must not block.
	OnNotification func(Notification)
	// OnRequest answers the sidecar's requests (mcp/elicit, mcp/roots,
	// mcp/sample). It runs in its own goroutine; its ctx ends when the
	// sidecar sends $/cancelRequest for the request. A nil OnRequest
	// answers -32601.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (any, error)
	// MaxFrameBytes bounds a frame from the sidecar (a 50,000-tool catalog
	// is over 100 MiB); zero means the protocol default.
	MaxFrameBytes int64
	// Checker, when set, checks every message in both directions against
	// the protocol schema (tests set it; see schema.Checker).
	Checker *schema.Checker
}

// Client is a connection to one sidecar.
type Client struct {
	conn   *jsonrpc2.Conn
	opts   Options
	wg     sync.WaitGroup
	nextID atomic.Uint64

	// inflight cancels the sidecar's requests being answered, when the
	// sidecar sends $/cancelRequest for them.
	mu       sync.Mutex
	inflight map[jsonrpc2.ID]context.CancelFunc
}

// New speaks the host protocol over r (the sidecar's stdout) and w (its
// stdin).
func New(ctx context.Context, r io.Reader, w io.WriteCloser, opts Options) *Client {
	c := &Client{opts: opts, inflight: map[jsonrpc2.ID]context.CancelFunc{}}
	if opts.Checker != nil {
		r = opts.Checker.Reader(schema.SidecarToHost, r)
		w = opts.Checker.Writer(schema.HostToSidecar, w)
	}
	stream := protocol.NewStream(r, w, protocol.StreamOptions{MaxFrameBytes: opts.MaxFrameBytes})
	c.conn = jsonrpc2.NewConn(ctx, stream, handlerFunc(c.handle))
	return c
}

type handlerFunc func(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	f(ctx, conn, req)
}

func (c *Client) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		if req.Method == protocol.MethodCancelRequest {
			c.cancelInflight(params)
		}
		if c.opts.OnNotification != nil {
			c.opts.OnNotification(Notification{Method: req.Method, Params: params})
		}
		return
	}
	// Answer requests off the read loop, as a host must: the answer may
	// need the user, and responses to our own calls arrive on this loop.
	// Registered here, in the read loop, so that a $/cancelRequest read
	// after the request finds it.
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.inflight[req.ID] = cancel
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, req.ID)
			c.mu.Unlock()
			cancel()
		}()
		var res any
		err := error(&jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "host does not handle " + req.Method})
		if c.opts.OnRequest != nil {
			res, err = c.opts.OnRequest(ctx, req.Method, params)
		}
		if err != nil {
			var je *jsonrpc2.Error
			if !errors.As(err, &je) {
				je = &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
			}
			_ = conn.ReplyWithError(ctx, req.ID, je)
			return
		}
		_ = conn.Reply(ctx, req.ID, res)
	}()
}

// cancelInflight cancels the context of the request $/cancelRequest names.
func (c *Client) cancelInflight(params json.RawMessage) {
	var p struct {
		ID jsonrpc2.ID `json:"id"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[p.ID]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Call sends a request and decodes its result into result (which may be a
// *json.RawMessage). A JSON-RPC error comes back as *jsonrpc2.Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.conn.Call(ctx, method, params, result)
}

// Dispatch sends a request without waiting; the returned ID can be given to
// Cancel and the Waiter waited on.
func (c *Client) Dispatch(ctx context.Context, method string, params any) (jsonrpc2.ID, jsonrpc2.Waiter, error) {
	// String ids of our own, so they never meet jsonrpc2's numeric ones.
	id := jsonrpc2.ID{Str: "dispatch-" + strconv.FormatUint(c.nextID.Add(1), 10), IsString: true}
	w, err := c.conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	return id, w, err
}

// Cancel sends $/cancelRequest for id.
func (c *Client) Cancel(ctx context.Context, id jsonrpc2.ID) error {
	return c.conn.Notify(ctx, protocol.MethodCancelRequest, map[string]any{"id": id})
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Close closes the connection (the sidecar sees EOF) and waits for request
// handlers.
func (c *Client) Close() error {
	err := c.conn.Close()
	c.wg.Wait()
	return err
}

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.conn.DisconnectNotify() }
