// Package hostclient is a Go host of the sidecar's protocol: what a harness
// does, in Go. The demo, the benchmarks and the end-to-end tests use it, so
// they exercise the same framing and methods a TypeScript or Rust host does.
package hostclient

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
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
	// sidecar sends $/cancelRequest for the request (which is answered
	// -32800 at once) or the client closes. A nil OnRequest answers -32601.
	// An error that is not a *protocol.Error is answered -32603.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (any, error)
	// MaxFrameBytes bounds a frame from the sidecar (a 50,000-tool catalog
	// is over 100 MiB); zero means the protocol default.
	MaxFrameBytes int64
	// Checker, when set, sees every message in both directions (tests set
	// it to a *schema.Checker, which checks them against the protocol
	// schema).
	Checker Checker
}

// Checker sees the messages a host exchanges with its sidecar. It is an
// interface, not the schema package's type, so that the binary, which
// runs a Client for its commands for people, does not link the protocol
// schema and its validator only tests use.
type Checker interface {
	// HostStreams returns r (the sidecar's output) and w (its input)
	// wrapped so that every message read from r and written to w passes
	// the checker. Closing the returned writer closes w.
	HostStreams(r io.Reader, w io.WriteCloser) (io.Reader, io.WriteCloser)
}

// Client is a connection to one sidecar.
type Client struct {
	conn   *protocol.Conn
	opts   Options
	cancel context.CancelFunc
	served chan struct{}
	wg     sync.WaitGroup // request handlers
}

// New speaks the host protocol over r (the sidecar's stdout) and w (its
// stdin) until the sidecar's output ends, ctx ends or Close is called.
func New(ctx context.Context, r io.Reader, w io.WriteCloser, opts Options) *Client {
	if opts.Checker != nil {
		r, w = opts.Checker.HostStreams(r, w)
	}
	c := &Client{
		conn:   protocol.NewConn(r, w, protocol.ConnOptions{MaxFrameBytes: opts.MaxFrameBytes}),
		opts:   opts,
		served: make(chan struct{}),
	}
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.served)
		c.conn.Serve(ctx, protocol.HandlerFunc(c.handle))
	}()
	return c
}

func (c *Client) handle(ctx context.Context, req *protocol.Request) {
	if req.IsNotification() {
		if c.opts.OnNotification != nil {
			c.opts.OnNotification(Notification{Method: req.Method, Params: req.Params})
		}
		return
	}
	// Answer requests off the read loop, as a host must: the answer may
	// need the user, and responses to our own calls arrive on this loop.
	ctx = context.WithValue(ctx, requestIDKey{}, req.ID)
	c.wg.Go(func() {
		var res any
		err := error(protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "host does not handle "+req.Method))
		if c.opts.OnRequest != nil {
			res, err = c.opts.OnRequest(ctx, req.Method, req.Params)
		}
		if err != nil {
			_ = c.conn.ReplyError(req.ID, err)
			return
		}
		_ = c.conn.Reply(req.ID, res)
	})
}

type requestIDKey struct{}

// RequestID is the id of the sidecar's request an OnRequest ctx belongs
// to, as the sidecar wrote it (what its $/cancelRequest names); nil for
// another ctx.
func RequestID(ctx context.Context) json.RawMessage {
	id, _ := ctx.Value(requestIDKey{}).(json.RawMessage)
	return id
}

// Call sends a request and decodes its result into result (nil: ignored;
// a *json.RawMessage gets the bytes). A JSON-RPC error comes back as
// *protocol.Error. When ctx ends first, the sidecar is sent $/cancelRequest.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.conn.Call(ctx, method, params)
	if err != nil || result == nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

// Dispatch sends a request without waiting; the returned ID can be given to
// Cancel and the Waiter waited on.
func (c *Client) Dispatch(ctx context.Context, method string, params any) (json.RawMessage, Waiter, error) {
	p, err := c.conn.Dispatch(method, params)
	if err != nil {
		return nil, Waiter{}, err
	}
	return p.ID, Waiter{p}, nil
}

// Waiter waits for the answer of a request sent with Dispatch.
type Waiter struct{ p *protocol.Pending }

// Wait waits for the answer and decodes its result into result (as Call).
// When ctx ends first, it returns ctx's error and the request stays in
// flight at the sidecar.
func (w Waiter) Wait(ctx context.Context, result any) error {
	raw, err := w.p.Wait(ctx)
	if err != nil || result == nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

// Cancel sends $/cancelRequest for id.
func (c *Client) Cancel(ctx context.Context, id json.RawMessage) error {
	return c.conn.Notify(protocol.MethodCancelRequest, protocol.CancelParams{ID: id})
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(method, params)
}

// Close closes the connection (the sidecar sees EOF), ends the request
// handlers' contexts and waits for them.
func (c *Client) Close() error {
	c.cancel()
	err := c.conn.Close()
	<-c.served
	c.wg.Wait()
	return err
}

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }
