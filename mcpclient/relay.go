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

// serverRequest answers a legacy server's request (roots/list,
// elicitation/create, sampling/createMessage, ping) on a goroutine of its
// own: the host's answers are relayed as the host wrote them, the params
// the host sees are the server's bytes.
//
// At most MaxServerRequests of them wait on the host at once, whatever
// their method: the excess is answered CodeClientBusy at once, so that a
// server flooding requests costs a goroutine for a moment each, not one
// for as long as the host takes.
func (c *Conn) serverRequest(req *jsonrpc.Request) {
	params := req.Params // the message's own bytes (a copy of the line's)
	switch {
	case req.Method == "ping":
		c.reply(req.ID, json.RawMessage(`{}`), nil)
		return
	case c.w.era() == EraModern:
		// MCP 2026-07-28 has no requests from the server: what it needs
		// from the client it asks in an input_required result (mrtr.go).
		// One sent anyway is not relayed to the host.
		c.reply(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(
			"method %q not found: a server of MCP %s asks for input in an input_required result", req.Method, ModernProtocolVersion)})
		return
	case req.Method == "roots/list", req.Method == "elicitation/create", req.Method == "sampling/createMessage":
	default:
		c.reply(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", req.Method)})
		return
	}
	if refusal := c.inputRefusal(req.Method); refusal != nil {
		c.reply(req.ID, nil, refusal)
		return
	}
	select {
	case c.serverReqs <- struct{}{}:
	default:
		if f := c.opts.Handlers.ServerRequestRefused; f != nil {
			f(req.Method, cap(c.serverReqs))
		}
		c.reply(req.ID, nil, busyError(cap(c.serverReqs)))
		return
	}
	ctx, cancel := context.WithCancel(c.life)
	c.inFlightMu.Lock()
	c.inFlight[req.ID] = cancel
	c.inFlightMu.Unlock()
	if !c.w.goBG(func() {
		defer func() { <-c.serverReqs }()
		defer func() {
			c.inFlightMu.Lock()
			delete(c.inFlight, req.ID)
			c.inFlightMu.Unlock()
			cancel()
		}()
		res, err := c.answerInput(ctx, req.Method, params)
		c.reply(req.ID, res, wireError(err))
	}) {
		<-c.serverReqs
		cancel()
	}
}

func busyError(limit int) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeClientBusy, Message: fmt.Sprintf(
		"client busy: %d requests from this server already wait for an answer; try again later", limit)}
}

// reply answers a server's request without waiting: it may be called on
// the read loop (a ping, a refusal), which must not wait for a server
// that does not read. On stdio the line goes through the connection's
// ordered writer, over HTTP the POST goes on a goroutine of the
// connection.
func (c *Conn) reply(id jsonrpc.ID, result json.RawMessage, err *jsonrpc.Error) {
	resp := &jsonrpc.Response{ID: id, Result: result}
	if err != nil {
		resp = &jsonrpc.Response{ID: id, Error: err}
	}
	if lc := c.lineConn(); lc != nil {
		data, eerr := jsonrpc.EncodeMessage(resp)
		if eerr != nil {
			c.opts.Logger.Warn("answer to the server's request not encoded", "server", c.name, "err", eerr)
			return
		}
		lc.send([][]byte{append(data, '\n')}, c.w.goBG)
		return
	}
	conn, _ := c.w.current()
	if conn == nil {
		return
	}
	c.w.goBG(func() {
		ctx, stop := context.WithTimeout(c.life, cancelWait)
		defer stop()
		if werr := conn.Write(ctx, resp); werr != nil {
			c.opts.Logger.Debug("answer to the server's request not sent", "server", c.name, "err", werr)
		}
	})
}

// inputRefusal is the error a server gets for a request of method the
// client did not declare (or has no handler for), or nil.
func (c *Conn) inputRefusal(method string) *jsonrpc.Error {
	h := c.opts.Handlers
	switch method {
	case "roots/list":
		if !c.opts.Roots || h.ListRoots == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "roots are not supported by this client"}
		}
	case "elicitation/create":
		if !(c.opts.Elicitation || c.opts.ElicitationURL) || h.Elicit == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support elicitation"}
		}
	case "sampling/createMessage":
		if !c.opts.Sampling || h.Sample == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "client does not support sampling"}
		}
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%q is not a request a server may ask of a client", method)}
	}
	return nil
}

// answerInput asks the host, through the handlers, what a server asked
// for: a legacy server's request, or an input request of a modern server's
// result. The answer is checked and returned as the host's bytes.
func (c *Conn) answerInput(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if refusal := c.inputRefusal(method); refusal != nil {
		return nil, refusal
	}
	h := c.opts.Handlers
	switch method {
	case "roots/list":
		return c.hostAnswer(method, checkRoots)(h.ListRoots(ctx))
	case "elicitation/create":
		return c.answerElicit(ctx, params)
	default:
		return c.hostAnswer(method, checkObject)(h.Sample(ctx, params))
	}
}

// hostAnswer returns the checker of the host's answer to a request of
// method: an error goes to the server as its JSON-RPC error (the host's
// code and message, when the host answered one); a result must be a JSON
// object that passes check (MCP's constraints), and is sent as the host's
// bytes. A malformed result is the host's bug: the server gets -32603 and
// the host hears of it (Handlers.HostAnswerRefused).
func (c *Conn) hostAnswer(method string, check func(json.RawMessage) error) func(json.RawMessage, error) (json.RawMessage, error) {
	return func(raw json.RawMessage, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		why := check(raw)
		if why == nil && !json.Valid(raw) {
			why = fmt.Errorf("not a %s result", method)
		}
		if why != nil {
			why = fmt.Errorf("the client's answer to %s is malformed: %w", method, why)
			c.opts.Logger.Warn("the host's answer to a server's request was refused", "server", c.name, "method", method, peerlog.Err("err", why))
			if f := c.opts.Handlers.HostAnswerRefused; f != nil {
				f(method, why)
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: why.Error()}
		}
		return raw, nil
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

// checkObject checks that a result is a JSON object (a CreateMessageResult:
// its members are the host's to fill).
func checkObject(raw json.RawMessage) error {
	if _, err := objectMembers(raw); err != nil {
		return err
	}
	var r mcp.CreateMessageWithToolsResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("not a sampling result: %w", err)
	}
	return nil
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

// wireError turns a handler's error into the JSON-RPC error the server
// receives.
func wireError(err error) *jsonrpc.Error {
	if err == nil {
		return nil
	}
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

// notification hands a server's notification to its handler, on the read
// path, in wire order: a progress or list_changed notification the server
// sent before the response that ends a call reaches its handler before
// the caller has the response.
func (c *Conn) notification(method string, params json.RawMessage) {
	h := c.opts.Handlers
	subs := c.subs.Load()
	if subs != nil && !subs.current(params) {
		return // of a subscriptions/listen stream that was replaced
	}
	switch method {
	case "notifications/progress":
		if h.Progress != nil {
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(params, &p) == nil {
				h.Progress(&p)
			}
		}
	case "notifications/message":
		if h.Log != nil {
			var p mcp.LoggingMessageParams
			if json.Unmarshal(params, &p) == nil {
				h.Log(&p)
			}
		}
	case "notifications/tools/list_changed":
		if h.ToolListChanged != nil {
			h.ToolListChanged()
		}
	case "notifications/resources/list_changed":
		if h.ResourceListChanged != nil {
			h.ResourceListChanged()
		}
	case "notifications/prompts/list_changed":
		if h.PromptListChanged != nil {
			h.PromptListChanged()
		}
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if h.ResourceUpdated != nil && json.Unmarshal(params, &p) == nil {
			h.ResourceUpdated(p.URI)
		}
	case "notifications/elicitation/complete":
		var p struct {
			ElicitationID string `json:"elicitationId"`
		}
		if h.ElicitationComplete != nil && json.Unmarshal(params, &p) == nil && p.ElicitationID != "" {
			h.ElicitationComplete(p.ElicitationID)
		}
	case "notifications/tasks/status", "notifications/tasks":
		// (2025-11-25's, and the tasks extension's: params as sent.)
		if h.TaskStatus != nil {
			h.TaskStatus(params)
		}
	case "notifications/cancelled":
		c.serverCancelled(params)
	case "notifications/subscriptions/acknowledged":
		if subs != nil {
			subs.acknowledged(params)
		}
	}
}

// serverCancelled ends the server's request it cancelled (legacy), or
// notes the end of a subscriptions/listen stream the server tore down
// (modern).
func (c *Conn) serverCancelled(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	var v any
	if json.Unmarshal(p.RequestID, &v) != nil {
		return
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return
	}
	c.inFlightMu.Lock()
	cancel := c.inFlight[id]
	c.inFlightMu.Unlock()
	if cancel != nil {
		cancel()
		return
	}
	if n, ok := id.Raw().(int64); ok {
		if subs := c.subs.Load(); subs != nil {
			subs.ended(n)
		}
	}
}
