package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// go-sdk v1.8.0 has no tasks (tools/call's "task" parameter, tasks/get,
// tasks/result, tasks/list, tasks/cancel) and no way to send a request of a
// method it does not know. Such requests are sent as go-sdk requests that
// the transport layer rewrites on the way out: a request sent under a
// rewrite context gets its method and params replaced (Request), or members
// added to its params (CallToolTask). Everything else is go-sdk's as for
// any call: the id, the HTTP session and stream handling, cancellation
// (notifications/cancelled names the id that went out), and the raw
// capture of the response (raw.go), which is all the caller reads.

type rewriteKey struct{}

// rewrite changes the one call sent under a context.
type rewrite struct {
	method string          // when set, replaces the method and params
	params json.RawMessage // the params of method
	// add are members added to (or replaced in) the params.
	add map[string]json.RawMessage
}

func withRewrite(ctx context.Context, r *rewrite) context.Context {
	return context.WithValue(ctx, rewriteKey{}, r)
}

// rewritten returns req as the rewrite of ctx has it; req itself is not
// modified (go-sdk keeps it).
func rewritten(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Request, error) {
	r, _ := ctx.Value(rewriteKey{}).(*rewrite)
	if r == nil || !req.IsCall() {
		return req, nil
	}
	cp := *req
	if r.method != "" {
		cp.Method, cp.Params = r.method, r.params
	}
	for name, value := range r.add {
		params := cp.Params
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{}`)
		}
		p, err := setMember(params, name, value)
		if err != nil {
			return nil, fmt.Errorf("adding %q to the params of %s: %w", name, req.Method, err)
		}
		cp.Params = p
	}
	return &cp, nil
}

// Request sends a request go-sdk has no method for (params: a JSON object,
// or nil for {}) and returns the result as the server sent it.
func (c *Conn) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	} else if !isObject(params) || !json.Valid(params) {
		return nil, fmt.Errorf("server %q: %s: params are not a JSON object", c.name, method)
	}
	return c.call(ctx, method, func(ctx context.Context) (any, error) {
		// Ping is the carrier: its result is an empty object to go-sdk,
		// which ignores the members of the real one.
		return nil, c.session.Ping(withRewrite(ctx, &rewrite{method: method, params: params}), nil)
	})
}

// CallToolTask sends tools/call with the task parameter (a JSON object,
// {"ttl": ...} or {}): the server answers a CreateTaskResult, returned as
// sent.
func (c *Conn) CallToolTask(ctx context.Context, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) (json.RawMessage, error) {
	if task == nil {
		task = json.RawMessage("null") // refused by callTool: not an object
	}
	return c.callTool(ctx, ToolCall{Name: name, Arguments: args, Meta: meta, Task: task})
}

// Subscribe sends resources/subscribe.
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	_, err := c.call(ctx, "resources/subscribe", func(ctx context.Context) (any, error) {
		return struct{}{}, c.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	return err
}

// Unsubscribe sends resources/unsubscribe.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	_, err := c.call(ctx, "resources/unsubscribe", func(ctx context.Context) (any, error) {
		return struct{}{}, c.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	return err
}
