package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/internal/inputrounds"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A modern server's multi round-trip (MCP 2026-07-28) through the
// gateway. The gateway declares the host capability inputRequired: the
// sidecar returns a modern server's input-required result of tools/call,
// prompts/get and resources/read as the server sent it, and the gateway
// sends the request again with the answers (docs/protocol.md, "Multi
// round-trip requests"). A client of 2026-07-28 answers the result
// itself: it is relayed as it is, and the client's retry goes to the
// server with its inputResponses and requestState. A client of an
// earlier revision cannot: the gateway asks it each input request over
// its session (elicitation/create, sampling/createMessage, roots/list)
// and sends the request again, as go-sdk's client does, within go-sdk's
// bounds. Either way the server is told the capabilities of the client
// that made the request, not the gateway's.

// capabilitiesMetaKey is where a request of 2026-07-28 carries its
// client's capabilities.
const capabilitiesMetaKey = "io.modelcontextprotocol/clientCapabilities"

// inputRound is the host params' members of a request's part in its
// rounds (protocol.ToolsCallParams and the others).
type inputRound struct {
	responses, state, caps *json.RawMessage
}

// roundOf is the client's part in the rounds of its request: the
// capabilities it declared, and for a modern client its answers to the
// last input-required result.
func roundOf(ss *mcp.ServerSession, meta mcp.Meta, responses mcp.InputResponseMap, state string, r inputRound) error {
	caps, err := clientCapabilities(ss, meta)
	if err != nil {
		return err
	}
	*r.caps = caps
	if responses != nil {
		b, err := json.Marshal(responses)
		if err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses: %v", err)}
		}
		*r.responses = b
	}
	if state != "" {
		b, err := json.Marshal(state)
		if err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState: %v", err)}
		}
		*r.state = b
	}
	return nil
}

// clientCapabilities are the capabilities of the client of a request, as
// MCP's ClientCapabilities object: a modern request's own (its _meta), a
// legacy client's of its initialize; nil when it declared none.
func clientCapabilities(ss *mcp.ServerSession, meta mcp.Meta) (json.RawMessage, error) {
	if v, ok := meta[capabilitiesMetaKey]; ok {
		b, err := json.Marshal(v)
		if err != nil || len(b) == 0 || b[0] != '{' {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("_meta %q must be an object", capabilitiesMetaKey)}
		}
		return b, nil
	}
	if ss == nil {
		return nil, nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return nil, nil
	}
	b, err := json.Marshal(ip.Capabilities)
	if err != nil {
		return nil, err
	}
	// go-sdk's ClientCapabilities always writes roots (a struct); the
	// client's own is RootsV2.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "roots")
	if r := ip.Capabilities.RootsV2; r != nil {
		m["roots"], _ = json.Marshal(r)
	}
	return json.Marshal(m)
}

// inputRounds sends a host request (send, with r's members set) that a
// modern server may answer input-required. A modern client gets the
// result as it is; for a legacy client the input is asked of it and the
// request sent again until the result is complete.
func (c *client) inputRounds(ctx context.Context, ss *mcp.ServerSession, method string, r inputRound, send func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	res, err := send(ctx)
	if err != nil || ss == nil || modern(ss) {
		return res, err
	}
	var bound inputrounds.Bound
	for {
		var ir struct {
			ResultType    string              `json:"resultType"`
			InputRequests mcp.InputRequestMap `json:"inputRequests"`
			RequestState  json.RawMessage     `json:"requestState"`
		}
		if err := json.Unmarshal(res, &ir); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the server's input requests cannot be read: %v", method, err)}
		}
		if ir.ResultType != "input_required" {
			return res, nil
		}
		if err := bound.Next(ctx, len(ir.InputRequests)); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the server %v", method, err)}
		}
		responses := mcp.InputResponseMap{}
		if len(ir.InputRequests) > 0 {
			if responses, err = askClient(ctx, ss, ir.InputRequests); err != nil {
				return nil, err
			}
		}
		if *r.responses, err = json.Marshal(responses); err != nil {
			return nil, err
		}
		*r.state = nil
		if len(ir.RequestState) > 0 && string(ir.RequestState) != "null" {
			*r.state = ir.RequestState
		}
		if res, err = send(ctx); err != nil {
			return nil, err
		}
	}
}

// askClient asks a legacy client each input request of a server, at once,
// over its session.
func askClient(ctx context.Context, ss *mcp.ServerSession, requests mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		out  = make(mcp.InputResponseMap, len(requests))
		errs = make([]error, len(keys))
		wg   sync.WaitGroup
	)
	for i, k := range keys {
		wg.Go(func() {
			res, err := askOne(ctx, ss, requests[k])
			if err != nil {
				errs[i] = fmt.Errorf("input request %q: %w", k, err)
				cancel()
				return
			}
			mu.Lock()
			out[k] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, &jsonrpc.Error{Code: we.Code, Message: err.Error()}
		}
		return nil, err
	}
	return out, nil
}

func askOne(ctx context.Context, ss *mcp.ServerSession, req mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := req.(type) {
	case *mcp.ElicitParams:
		return ss.Elicit(ctx, p)
	case *mcp.CreateMessageWithToolsParams:
		return ss.CreateMessageWithTools(ctx, p)
	case *mcp.CreateMessageParams:
		return ss.CreateMessage(ctx, p)
	case *mcp.ListRootsParams:
		return ss.ListRoots(ctx, p)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("an input request of kind %T the gateway cannot ask", req)}
}

// hostRaw is a host request's result as it came, for inputRounds.
func (c *client) hostRaw(method string, params any) func(context.Context) (json.RawMessage, error) {
	return func(ctx context.Context) (json.RawMessage, error) {
		var raw json.RawMessage
		if err := c.call(ctx, method, params, &raw); err != nil {
			return nil, err
		}
		return raw, nil
	}
}

// hasRound reports whether state names a call of rounds of the gateway's
// own (mrtr.go): a legacy server's questions to a modern client.
func (c *client) hasRound(state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds[state] != nil
}
