package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// DefaultMaxServerRequests is how many requests one server may have
// waiting on the host at once unless Options.MaxServerRequests says
// otherwise. A person answers elicitations and a model sampling requests:
// more than a handful at once from one server is a fault or an attack.
const DefaultMaxServerRequests = 16

// CodeClientBusy is the JSON-RPC code a server gets for a request beyond
// Options.MaxServerRequests. It is in the implementation-defined range and
// equals the host protocol's too_many_requests code, which says the same.
const CodeClientBusy = -32018

// relayed is one kind of server request that the host answers.
type relayed struct {
	// allowed reports whether the capability was advertised and a
	// handler given; refusal is the error a server gets otherwise.
	allowed bool
	refusal *jsonrpc.Error
	// answer asks the host and returns the result to send, already checked.
	answer func(ctx context.Context, req mcp.Request) (mcp.Result, error)
}

func (c *Conn) relayed(method string) (relayed, bool) {
	h := c.opts.Handlers
	switch method {
	case "roots/list":
		return relayed{
			allowed: c.opts.Roots && h.ListRoots != nil,
			refusal: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "roots are not supported by this client"},
			answer:  c.answerRoots,
		}, true
	case "elicitation/create":
		return relayed{
			allowed: (c.opts.Elicitation || c.opts.ElicitationURL) && h.Elicit != nil,
			refusal: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support elicitation"},
			answer:  c.answerElicit,
		}, true
	case "sampling/createMessage":
		return relayed{
			allowed: c.opts.Sampling && h.Sample != nil,
			refusal: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "client does not support sampling"},
			answer:  c.answerSample,
		}, true
	}
	return relayed{}, false
}

// relayRequests answers the server's requests to the client (roots/list,
// elicitation/create, sampling/createMessage) with the host's raw answers.
// go-sdk would answer roots/list from Client.AddRoots and decode the others
// into its own types; a receiving middleware sees the request first and
// keeps the answers verbatim on the way back. Over stdio the params
// reaching the host are the server's bytes; over HTTP they are go-sdk's
// decoding (key order not preserved).
//
// At most MaxServerRequests of them wait on the host at once, whatever
// their method: the excess is answered CodeClientBusy at once, so that a
// server flooding requests costs a goroutine for a moment each, not one
// for as long as the host takes.
func (c *Conn) relayRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := c.relayed(method)
		if !ok {
			return next(ctx, method, req)
		}
		if !r.allowed {
			return nil, r.refusal
		}
		select {
		case c.serverReqs <- struct{}{}:
		default:
			if f := c.opts.Handlers.ServerRequestRefused; f != nil {
				f(method, cap(c.serverReqs))
			}
			return nil, &jsonrpc.Error{Code: CodeClientBusy, Message: fmt.Sprintf(
				"client busy: %d requests from this server already wait for an answer; try again later", cap(c.serverReqs))}
		}
		defer func() { <-c.serverReqs }()
		ctx, stop := c.bindLife(ctx)
		defer stop()
		return r.answer(ctx, req)
	}
}

func (c *Conn) answerRoots(ctx context.Context, _ mcp.Request) (mcp.Result, error) {
	raw, typed, err := hostAnswer[mcp.ListRootsResult](c, "roots/list", checkRoots)(c.opts.Handlers.ListRoots(ctx))
	if err != nil {
		return nil, err
	}
	return rawRootsResult{typed, raw}, nil
}

// hostAnswer returns the checker of the host's answer to a relayed request
// of method: an error goes to the server as its JSON-RPC error (the host's
// code and message, when the host answered one); a result must be a JSON
// object that passes check (MCP's constraints, which decoding into T does
// not enforce) and decodes as T (go-sdk needs the typed value), and is
// sent as the host's bytes. A malformed result is the host's bug: the
// server gets -32603 and the host hears of it (Handlers.HostAnswerRefused).
func hostAnswer[T any](c *Conn, method string, check func(json.RawMessage) error) func(json.RawMessage, error) (json.RawMessage, *T, error) {
	return func(raw json.RawMessage, err error) (json.RawMessage, *T, error) {
		if err != nil {
			return nil, nil, wireError(err)
		}
		typed := new(T)
		why := check(raw)
		if why == nil && (!json.Valid(raw) || json.Unmarshal(raw, typed) != nil) {
			why = fmt.Errorf("not a %s result", method)
		}
		if why != nil {
			why = fmt.Errorf("the client's answer to %s is malformed: %w", method, why)
			c.opts.Logger.Warn("the host's answer to a server's request was refused", "server", c.name, "method", method, peerlog.Err("err", why))
			if f := c.opts.Handlers.HostAnswerRefused; f != nil {
				f(method, why)
			}
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: why.Error()}
		}
		return raw, typed, nil
	}
}

// objectMembers decodes a result that must be a JSON object into its members.
func objectMembers(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("it is not an object")
	}
	return m, nil
}

// checkRoots checks a ListRootsResult: {roots: [{uri, name?}]}.
func checkRoots(raw json.RawMessage) error {
	m, err := objectMembers(raw)
	if err != nil {
		return err
	}
	var roots []json.RawMessage
	if json.Unmarshal(m["roots"], &roots) != nil || roots == nil {
		return errors.New(`"roots" must be an array of {uri, name?}`)
	}
	for i, r := range roots {
		root, err := objectMembers(r)
		if err != nil {
			return fmt.Errorf("roots[%d]: %w", i, err)
		}
		var uri, name string
		if json.Unmarshal(root["uri"], &uri) != nil || uri == "" {
			return fmt.Errorf("roots[%d] has no uri (a string)", i)
		}
		if n, ok := root["name"]; ok && json.Unmarshal(n, &name) != nil {
			return fmt.Errorf("roots[%d]: name must be a string", i)
		}
	}
	return nil
}

// checkElicit checks an ElicitResult: {action: "accept"|"decline"|"cancel",
// content?: object}.
func checkElicit(raw json.RawMessage) error {
	m, err := objectMembers(raw)
	if err != nil {
		return err
	}
	var action string
	_ = json.Unmarshal(m["action"], &action)
	switch action {
	case "accept", "decline", "cancel":
	default:
		return fmt.Errorf(`action must be "accept", "decline" or "cancel", not %s`, orMissing(m["action"]))
	}
	if content, ok := m["content"]; ok && string(content) != "null" {
		if _, err := objectMembers(content); err != nil {
			return fmt.Errorf("content: %w", err)
		}
	}
	return nil
}

// checkObject checks that a result is a JSON object.
func checkObject(raw json.RawMessage) error {
	_, err := objectMembers(raw)
	return err
}

// orMissing is a member's JSON text for a message, clipped, or "missing".
func orMissing(v json.RawMessage) string {
	if v == nil {
		return "missing"
	}
	if len(v) > 40 {
		return string(v[:40]) + "..."
	}
	return string(v)
}

func (c *Conn) answerSample(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	params, err := c.requestParams(req)
	if err != nil {
		return nil, err
	}
	raw, typed, err := hostAnswer[mcp.CreateMessageWithToolsResult](c, "sampling/createMessage", checkObject)(c.opts.Handlers.Sample(ctx, params))
	if err != nil {
		return nil, err
	}
	return rawSampleResult{typed, raw}, nil
}

// requestParams returns the params of a relayed request: the server's
// bytes when the read path kept them (stdio), else go-sdk's decoding
// re-encoded, without the empty "mode" that decoding adds to elicitation
// params ("" is not a valid mode, and the server did not send one).
func (c *Conn) requestParams(req mcp.Request) (json.RawMessage, error) {
	if c.raw != nil {
		if raw, ok := c.raw.incoming.take(req.GetParams().GetMeta()); ok {
			return raw, nil
		}
	}
	params, err := json.Marshal(req.GetParams())
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(params, &members) == nil && string(members["mode"]) == `""` {
		delete(members, "mode")
		return json.Marshal(members)
	}
	return params, nil
}

// wireError turns a handler's error into the JSON-RPC error the server
// receives.
func wireError(err error) error {
	var se *ServerError
	if errors.As(err, &se) {
		return &jsonrpc.Error{Code: se.Code, Message: se.Message, Data: se.Data}
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// rawSampleResult answers sampling/createMessage with the host's bytes.
type rawSampleResult struct {
	*mcp.CreateMessageWithToolsResult
	raw json.RawMessage
}

func (r rawSampleResult) MarshalJSON() ([]byte, error) { return r.raw, nil }
