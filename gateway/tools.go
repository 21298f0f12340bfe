package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// listTools is the session's catalog from the host: served from the disk
// cache for dormant servers (no process starts for a listing), live for
// the others. Several servers: qualified names; one: its own names.
func (c *client) listTools(ctx context.Context) (*mcp.ListToolsResult, error) {
	if c.g.opts.Deferred {
		return &mcp.ListToolsResult{Tools: deferredTools(), Cacheable: noCache}, nil
	}
	id, err := c.hostSession(ctx)
	if err != nil {
		return nil, err
	}
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := c.call(ctx, protocol.MethodToolsList, protocol.ToolsListParams{SessionID: id}, &res); err != nil {
		return nil, mcpError(err)
	}
	single := c.single()
	out := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(res.Tools)), Cacheable: noCache}
	for _, raw := range res.Tools {
		t, err := toolOf(raw, single != "")
		if err != nil {
			c.g.logger.Warn("gateway: a tool of the catalog is left out", "err", err)
			continue
		}
		out.Tools = append(out.Tools, t)
	}
	return out, nil
}

// toolOf is a host catalog entry as an MCP tool: the qualified name, or
// the server's own (raw) name for a transparent proxy. The schemas keep
// the server's bytes.
func toolOf(raw json.RawMessage, rawName bool) (*mcp.Tool, error) {
	var ht protocol.Tool
	if err := json.Unmarshal(raw, &ht); err != nil {
		return nil, err
	}
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("tool %q of server %q: %w", ht.Tool, ht.Server, err)
	}
	if rawName {
		t.Name = ht.Tool
	}
	t.InputSchema = ht.InputSchema
	if len(ht.OutputSchema) > 0 {
		t.OutputSchema = ht.OutputSchema
	}
	return &t, nil
}

// callTool forwards a call through the host's tools/call. The client's
// sandbox policy (_meta codex/sandbox-state, or its alias) goes as the
// host's sandboxState, so it reaches a server that opted in, as from a
// harness; a client that sends none gets none. Its progress token is
// replaced by one of the gateway's, whose $/progress comes back to it.
func (c *client) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, _ := ctx.Value(toolNameKey{}).(string)
	args := req.Params.Arguments
	if c.g.opts.Deferred {
		switch name {
		case toolSearch:
			return c.searchTools(ctx, args)
		case toolDescribe:
			return c.describeTools(ctx, args)
		case toolCall:
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(orEmpty(args), &p); err != nil || p.Name == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolCall + " needs {\"name\": a tool name " + toolSearch + " found, \"arguments\": {...}}"}
			}
			name, args = p.Name, p.Arguments
		default:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: this gateway serves %s, %s and %s", name, toolSearch, toolDescribe, toolCall)}
		}
	}
	id, err := c.hostSession(ctx)
	if err != nil {
		return nil, err
	}
	p := protocol.ToolsCallParams{SessionID: id, Arguments: args}
	if s := c.single(); s != "" {
		p.Server, p.Tool = s, name
	} else {
		p.Name = name
	}
	meta := req.Params.GetMeta()
	for k, v := range meta {
		switch {
		case k == sandbox.KeyState || k == sandbox.KeyStateMeta:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("_meta %q: %v", k, err)}
			}
			// The state wins over its deprecated alias.
			if k == sandbox.KeyState || p.SandboxState == nil {
				p.SandboxState = b
			}
		case k == "progressToken", k == sandbox.KeyLauncher, strings.HasPrefix(k, "io.modelcontextprotocol/"):
			// The token is replaced below; the launcher is the sidecar's
			// to advertise (verified by its probe), never a client's; the
			// protocol's own keys describe this client's request.
		default:
			b, err := json.Marshal(v)
			if err != nil {
				continue
			}
			if p.Meta == nil {
				p.Meta = map[string]json.RawMessage{}
			}
			p.Meta[k] = b
		}
	}
	rounds := req.Session != nil && modern(req.Session)
	if rounds && req.Params.RequestState != "" && c.hasRound(req.Params.RequestState) {
		// A later round of a call in progress, whose questions are a
		// legacy server's (mrtr.go).
		return c.callRounds(ctx, req, p, name, nil)
	}
	// The client's part in a modern server's rounds (inputs.go): a
	// retry's answers and state go to the server as a call of their own.
	round := inputRound{&p.InputResponses, &p.RequestState, &p.ClientCapabilities}
	var responses mcp.InputResponseMap
	var state string
	if rounds {
		responses, state = req.Params.InputResponses, req.Params.RequestState
	}
	if err := roundOf(req.Session, meta, responses, state, round); err != nil {
		return nil, err
	}
	forget := func() {}
	if tok := req.Params.GetProgressToken(); tok != nil {
		var hostTok json.RawMessage
		hostTok, forget = c.g.progressToken(c, req.Session, tok)
		if p.Meta == nil {
			p.Meta = map[string]json.RawMessage{}
		}
		p.Meta["progressToken"] = hostTok
	}
	if rounds {
		// The token lives as long as the call, over its rounds.
		return c.callRounds(ctx, req, p, name, forget)
	}
	defer forget()
	defer c.host.fly(&flight{c: c, ss: req.Session, server: c.serverOf(p)})()
	raw, err := c.inputRounds(ctx, req.Session, protocol.MethodToolsCall, round, c.hostRaw(protocol.MethodToolsCall, &p))
	if err != nil {
		return toolError(ctx, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the result of tool %q cannot be relayed: %v", name, err)}
	}
	return &res, nil
}

// toolError is a failed tools/call as MCP has it: an unknown tool or bad
// params is a protocol error, and so is a server's own JSON-RPC error; a
// call that could not run (server not started, timed out, connection lost,
// authorization needed) is a result with isError, so that the model reads
// why and may try again.
func toolError(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	switch pe.Data.Kind {
	case protocol.KindUnknownTool, protocol.KindInvalidParams, protocol.KindServerError, protocol.KindUnknownServer,
		protocol.KindCancelled, protocol.KindUnknownSession, protocol.KindInternal:
		return nil, mcpError(err)
	}
	msg := pe.Message
	if pe.Data.Kind == protocol.KindNeedsAuthorization && pe.Data.Server != "" {
		msg += "; " + loginHint(pe.Data.Server)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}
