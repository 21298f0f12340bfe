package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// The requests a caller sends. Each goes out with the connection's _meta
// (modern servers) and comes back as the server's bytes.

// call sends method with params (a JSON object of ours, or nil for {}) and
// waits for the result. Over HTTP the request is bound to the connection's
// life: a POST in flight ends with the connection.
func (c *Conn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.callAsIs(ctx, method, c.withMeta(params))
}

// callAsIs is call with params sent as they are.
func (c *Conn) callAsIs(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	select {
	case <-c.done:
		return nil, c.Err()
	default:
	}
	if c.proc == nil {
		var stop func()
		ctx, stop = c.bindLife(ctx)
		defer stop()
	}
	return c.w.call(ctx, method, params)
}

// ListToolsPage sends one tools/list.
func (c *Conn) ListToolsPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "tools/list", cursorParams(cursor))
}

// ListResourcesPage sends one resources/list.
func (c *Conn) ListResourcesPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "resources/list", cursorParams(cursor))
}

// ListResourceTemplatesPage sends one resources/templates/list.
func (c *Conn) ListResourceTemplatesPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "resources/templates/list", cursorParams(cursor))
}

// ListPromptsPage sends one prompts/list.
func (c *Conn) ListPromptsPage(ctx context.Context, cursor string) (json.RawMessage, error) {
	return c.call(ctx, "prompts/list", cursorParams(cursor))
}

func cursorParams(cursor string) json.RawMessage {
	if cursor == "" {
		return json.RawMessage(`{}`)
	}
	return append(append([]byte(`{"cursor":`), jsonString(cursor)...), '}')
}

// ReadResource sends resources/read.
func (c *Conn) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return c.ReadResourceWith(ctx, uri, Rounds{})
}

// ReadResourceWith sends resources/read with the caller's part in its
// rounds.
func (c *Conn) ReadResourceWith(ctx context.Context, uri string, r Rounds) (json.RawMessage, error) {
	params := append([]byte(`{"uri":`), jsonString(uri)...)
	return c.sendRounds(ctx, "resources/read", params, r)
}

// GetPrompt sends prompts/get.
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	return c.GetPromptWith(ctx, name, args, Rounds{})
}

// GetPromptWith sends prompts/get with the caller's part in its rounds.
func (c *Conn) GetPromptWith(ctx context.Context, name string, args map[string]string, r Rounds) (json.RawMessage, error) {
	params := append([]byte(`{"name":`), jsonString(name)...)
	if len(args) > 0 {
		a, err := marshalNoEscape(args)
		if err != nil {
			return nil, fmt.Errorf("server %q: prompts/get: %w", c.name, err)
		}
		params = append(append(params, `,"arguments":`...), a...)
	}
	return c.sendRounds(ctx, "prompts/get", params, r)
}

// sendRounds sends method with params, a JSON object of ours without its
// closing brace, and the caller's part r in its rounds.
func (c *Conn) sendRounds(ctx context.Context, method string, params []byte, r Rounds) (json.RawMessage, error) {
	if c.era != EraModern {
		return c.callRounds(ctx, method, append(params, '}'), false, false)
	}
	params, err := r.appendTo(params)
	if err != nil {
		return nil, fmt.Errorf("server %q: %s: %w", c.name, method, err)
	}
	proto, err := c.proto(r)
	if err != nil {
		return nil, fmt.Errorf("server %q: %s: %w", c.name, method, err)
	}
	return c.callRounds(ctx, method, c.withMetaOf(append(params, '}'), proto), true, r.Own)
}

// Complete sends completion/complete with params (a CompleteParams object,
// sent as it is).
func (c *Conn) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	if !isObject(params) || !json.Valid(params) {
		return nil, fmt.Errorf("server %q: completion/complete: params are not a JSON object", c.name)
	}
	return c.call(ctx, "completion/complete", params)
}

// Request sends a request of any method (params: a JSON object, or nil for
// {}) and returns the result as the server sent it.
func (c *Conn) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	} else if !isObject(params) || !json.Valid(params) {
		return nil, fmt.Errorf("server %q: %s: params are not a JSON object", c.name, method)
	}
	if c.era == EraModern && strings.HasPrefix(method, "tasks/") {
		return c.modernTaskRequest(ctx, method, params)
	}
	return c.call(ctx, method, params)
}

// CallTool sends tools/call. args are the raw arguments (nil means {}),
// meta the _meta entries; json.RawMessage values go out with their bytes.
func (c *Conn) CallTool(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	return c.callTool(ctx, ToolCall{Name: name, Arguments: args, Meta: meta})
}

// CallToolTask sends tools/call with the task parameter (a JSON object,
// {"ttl": ...} or {}): the server answers a CreateTaskResult, returned as
// sent.
func (c *Conn) CallToolTask(ctx context.Context, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) (json.RawMessage, error) {
	if task == nil {
		task = json.RawMessage("null") // refused by checkCallParams: not an object
	}
	return c.callTool(ctx, ToolCall{Name: name, Arguments: args, Meta: meta, Task: task})
}

// callTool sends a tools/call and waits for its end. Over stdio it is a
// started call (StartToolCall) waited for.
func (c *Conn) callTool(ctx context.Context, call ToolCall) (json.RawMessage, error) {
	if err := c.checkCallParams(&call); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.proc != nil {
		ch := make(answerChan, 1)
		p, err := c.w.start(call, ch)
		if err != nil {
			return nil, err
		}
		select {
		case a := <-ch:
			return a.result, a.err
		case <-ctx.Done():
			if p.Cancel(context.Cause(ctx)) {
				return nil, ctx.Err()
			}
			a := <-ch // the answer won the race
			return a.result, a.err
		}
	}
	params, err := c.toolCallParams(call)
	if err != nil {
		return nil, fmt.Errorf("server %q: tool %q: %w", c.name, call.Name, err)
	}
	modernHTTP := c.era == EraModern && c.transport == config.TransportHTTP
	hctx := ctx
	if modernHTTP && len(call.Headers) > 0 {
		hctx = withParamHeaders(ctx, call.Headers.Headers(call.Arguments))
	}
	res, err := c.callRounds(hctx, "tools/call", params, true, call.Rounds.Own)
	var se *ServerError
	if !modernHTTP || !errors.As(err, &se) || se.Code != codeHeaderMismatch {
		return res, err
	}
	// The server's headers do not match the call's: the declarations the
	// caller gave are not the tool's (a catalog listed before the tool
	// changed). The tool's own, listed again, and the call sent once more.
	bindings, ok := c.toolHeaders(ctx, call.Name)
	if !ok || slices.EqualFunc(bindings, call.Headers, func(a, b mcpheader.Binding) bool { return a.Name == b.Name && slices.Equal(a.Path, b.Path) }) {
		return res, err
	}
	c.opts.Logger.Info("server refused the call's Mcp-Param headers (-32020): sent again with the tool's declarations listed again", "server", c.name, "tool", call.Name)
	return c.callRounds(withParamHeaders(ctx, bindings.Headers(call.Arguments)), "tools/call", params, true, call.Rounds.Own)
}

// maxHeaderListPages bounds the tools/list pages read to find a tool's
// header declarations again.
const maxHeaderListPages = 100

// toolHeaders lists the server's tools to find the x-mcp-header
// declarations of the tool name; false if it is not listed, or its
// declarations are invalid.
func (c *Conn) toolHeaders(ctx context.Context, name string) (mcpheader.Bindings, bool) {
	cursor := ""
	for range maxHeaderListPages {
		raw, err := c.ListToolsPage(ctx, cursor)
		if err != nil {
			return nil, false
		}
		var page struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if json.Unmarshal(raw, &page) != nil {
			return nil, false
		}
		for _, t := range page.Tools {
			if t.Name == name {
				b, err := mcpheader.Parse(t.InputSchema)
				return b, err == nil
			}
		}
		if page.NextCursor == "" {
			return nil, false
		}
		cursor = page.NextCursor
	}
	return nil, false
}

// checkCallParams checks the arguments (nil means {}, which it sets) and
// the task (nil or an object) of a tools/call, unless the caller checked
// them (call.Checked).
func (c *Conn) checkCallParams(call *ToolCall) error {
	if len(call.Arguments) == 0 {
		call.Arguments = json.RawMessage("{}")
	} else if !call.Checked && !json.Valid(call.Arguments) {
		return fmt.Errorf("server %q: tool %q: arguments are not valid JSON", c.name, call.Name)
	}
	if call.Task != nil && (!isObject(call.Task) || !call.Checked && !json.Valid(call.Task)) {
		return fmt.Errorf("server %q: tool %q: task is not a JSON object", c.name, call.Name)
	}
	return nil
}
