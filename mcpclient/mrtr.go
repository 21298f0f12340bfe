package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/internal/inputrounds"
	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
)

// Multi round-trip requests (MCP 2026-07-28, SEP-2322;
// modelcontextprotocol.io/specification/2026-07-28/basic/patterns/mrtr): a
// modern server that needs input to answer tools/call, prompts/get or
// resources/read answers with resultType "input_required" and the requests
// it wants answered (elicitation/create, sampling/createMessage,
// roots/list). Each is answered through the same handlers that answer a
// legacy server's requests (so the host sees mcp/elicit, mcp/sample,
// mcp/roots), and the request is sent again with a new id, its original
// params plus inputResponses and the server's requestState byte for byte.
// The caller sees one request that answers once.

// resultType values.
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
	resultTask          = "task" // the tasks extension: a task was created
)

// sheddingWait is the pause before a request is sent again after an
// answer that asked for nothing, times the count of such answers
// (inputrounds.Pause; tests shorten it).
var sheddingWait = inputrounds.Pause

// ErrTooManyRounds is the errors.Is target of a request a server kept
// asking input for beyond the bound (inputrounds: requests in all, or
// answers that asked for nothing in a row).
var ErrTooManyRounds = errors.New("too many rounds of input requests")

// resultType is the top-level resultType of a result ("" when it has
// none, which means complete), or the member's JSON text when it is not
// one of the values this client knows. The cheap test first: most results
// do not name it at all, neither as it is nor with an escape (which a
// \u one would be: the name has no character with a shorter escape).
// Then the members are read from both ends in turn, from the end nearer
// to where the name first appears: go-sdk writes resultType first in most
// results and last (or next to last) in a CallToolResult, whose content
// before it may be large.
func resultType(result []byte) string {
	at := bytes.Index(result, []byte(`"resultType"`))
	if at < 0 && !bytes.Contains(result, []byte(`\u`)) {
		return ""
	}
	// Where its name first appears says from which end to read.
	v := jsonscan.OuterMember(result, "resultType", at > len(result)/2)
	switch string(v) { // no allocation: compared, not converted
	case "":
		return ""
	case `"complete"`:
		return resultComplete
	case `"input_required"`:
		return resultInputRequired
	case `"task"`:
		return resultTask
	}
	return string(v)
}

// resultKind is the resultType of a modern server's result to method. A
// value this client does not know (a later revision's, or not a string)
// is an error: taking such a result for a complete one would hand the
// caller a result that may not hold what it asked for.
func (c *Conn) resultKind(method string, result []byte) (string, error) {
	switch kind := resultType(result); kind {
	case "", resultComplete, resultInputRequired, resultTask:
		return kind, nil
	default:
		return "", fmt.Errorf("server %q answered %s with resultType %.80s, which this client does not know: %w", c.name, method, kind, ErrMalformedResult)
	}
}

// inputRequired is a result that asks for input.
type inputRequired struct {
	requests map[string]inputRequest
	state    json.RawMessage // the requestState member as sent (a JSON string), or nil
}

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// parseInputRequired reads an input_required result. A member that is
// present but malformed is an error: the request cannot be sent again
// correctly.
func (c *Conn) parseInputRequired(method string, result json.RawMessage) (*inputRequired, error) {
	var r struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("server %q answered %s asking for input, %s: %w", c.name, method, fmt.Sprintf(format, args...), ErrMalformedResult)
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, bad("with inputRequests or requestState of the wrong kind (%v)", err)
	}
	ir := &inputRequired{requests: map[string]inputRequest{}}
	if len(r.RequestState) > 0 && string(r.RequestState) != "null" {
		var s string
		if json.Unmarshal(r.RequestState, &s) != nil {
			return nil, bad("with a requestState that is not a string (%.40s)", r.RequestState)
		}
		ir.state = bytes.Clone(r.RequestState)
	}
	for key, raw := range r.InputRequests {
		var req inputRequest
		if err := json.Unmarshal(raw, &req); err != nil || req.Method == "" {
			return nil, bad("with input request %q that is not {method, params}", key)
		}
		if len(req.Params) == 0 || string(req.Params) == "null" {
			req.Params = json.RawMessage(`{}`)
		} else if !isObject(req.Params) {
			return nil, bad("with input request %q whose params are not an object", key)
		}
		req.Params = bytes.Clone(req.Params)
		ir.requests[key] = req
	}
	return ir, nil
}

// fulfil answers every input request in parallel through the handlers
// and returns the inputResponses object. The requests wait on the host
// within the same bound as a legacy server's own (MaxServerRequests at
// once): a result that asks for more fails its call.
func (c *Conn) fulfil(ctx context.Context, method string, ir *inputRequired) (json.RawMessage, error) {
	keys := make([]string, 0, len(ir.requests))
	for k := range ir.requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	taken := 0
	defer func() {
		for range taken {
			<-c.serverReqs
		}
	}()
	for range keys {
		select {
		case c.serverReqs <- struct{}{}:
			taken++
		default:
			if f := c.opts.Handlers.ServerRequestRefused; f != nil {
				f(method+" input requests", cap(c.serverReqs))
			}
			return nil, fmt.Errorf("server %q: %s: it asks for %d inputs at once, more than the %d of the server that may wait on the host (limits.maxServerRequests): %w",
				c.name, method, len(keys), cap(c.serverReqs), ErrTooManyRounds)
		}
	}
	results := make([]json.RawMessage, len(keys))
	errs := make([]error, len(keys))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, k := range keys {
		req := ir.requests[k]
		wg.Go(func() {
			res, err := c.answerInput(ctx, req.Method, req.Params)
			if err != nil {
				errs[i] = fmt.Errorf("server %q: %s: its input request %q (%s): %w", c.name, method, k, req.Method, err)
				cancel() // the others are of no use now
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':')
		out = append(out, results[i]...)
	}
	return append(out, '}'), nil
}

// retryParams are the params of the next round: the original params with
// inputResponses, and requestState when the server gave one.
func retryParams(params, responses, state json.RawMessage) (json.RawMessage, error) {
	out, err := setMember(params, "inputResponses", responses)
	if err != nil {
		return nil, err
	}
	if state != nil {
		return setMember(out, "requestState", state)
	}
	return out, nil
}

// callRounds sends method and, on a modern connection, answers the input
// its result asks for and sends it again, until the result is complete.
// params are the request's own: the connection's _meta is added, unless
// ours says they carry it already (tools/call encodes its own). With
// own the caller runs the rounds (Rounds.Own): the first result is
// returned, whatever it asks.
func (c *Conn) callRounds(ctx context.Context, method string, params json.RawMessage, ours, own bool) (json.RawMessage, error) {
	send := c.call
	if ours {
		send = c.callAsIs
	}
	res, err := send(ctx, method, params)
	if err != nil || c.era != EraModern || own {
		return res, err
	}
	return c.moreRounds(ctx, method, params, res, func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		return send(ctx, method, p)
	})
}

// moreRounds goes on from the result res of the first round of method
// sent with params: while res asks for input, the input is gathered and
// the request sent again with send.
func (c *Conn) moreRounds(ctx context.Context, method string, params, res json.RawMessage, send func(context.Context, json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	bound := inputrounds.Bound{Pause: sheddingWait}
	for {
		if resultType(res) != resultInputRequired {
			return res, nil
		}
		ir, err := c.parseInputRequired(method, res)
		if err != nil {
			return nil, err
		}
		// Nothing asked: the server sheds load, or wants the state back
		// at once. Again, after a pause that grows.
		if err := bound.Next(ctx, len(ir.requests)); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("server %q: %s: %v: %w", c.name, method, err, ErrTooManyRounds)
		}
		responses := json.RawMessage(`{}`)
		if len(ir.requests) > 0 {
			if responses, err = c.fulfil(ctx, method, ir); err != nil {
				return nil, err
			}
		}
		retry, err := retryParams(params, responses, ir.state)
		if err != nil {
			return nil, fmt.Errorf("server %q: %s: %w", c.name, method, err)
		}
		if res, err = send(ctx, retry); err != nil {
			return nil, err
		}
	}
}

// rounds is a started call (StartToolCall) between its rounds: its first
// result asked for input, and a goroutine of the connection gathers it and
// sends the call again. It ends once: by its last result (done is called),
// by Cancel (done is not), or by the connection's end (done gets the
// connection's error).
type rounds struct {
	ctx    context.Context
	stop   context.CancelCauseFunc
	done   CallReceiver
	endOne sync.Once
}

// finish ends the call with its answer, unless it ended already.
func (r *rounds) finish(res json.RawMessage, err error) {
	r.endOne.Do(func() { r.done.CallEnded(res, err) })
	r.stop(context.Canceled)
}

// cancel ends the call without an answer (Cancel took it back), unless it
// ended already.
func (r *rounds) cancel(cause error) {
	r.endOne.Do(func() {})
	r.stop(cause)
}

// startRounds continues the started call first sent as id, whose result
// asks for input, on a goroutine of the connection. result is a slice of
// the line read: what the rounds need of it is copied before this
// returns.
func (w *wire) startRounds(id int64, e entry, result json.RawMessage) {
	c := w.c
	res := bytes.Clone(result)
	ctx, stop := context.WithCancelCause(c.life)
	r := &rounds{ctx: ctx, stop: stop, done: e.done}
	call := *e.started
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		go r.finish(nil, w.ended) // off the read path, as the end does
		return
	}
	if w.rounds == nil {
		w.rounds = map[int64]*rounds{}
	}
	w.rounds[id] = r
	// Under w.mu, where fail cannot run: teardown waits for this.
	w.bg.Go(func() {
		var final json.RawMessage
		params, err := c.toolCallParams(call)
		if err == nil {
			final, err = c.moreRounds(ctx, "tools/call", params, res, func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
				return c.w.call(ctx, "tools/call", p)
			})
		}
		w.mu.Lock()
		_, mine := w.rounds[id]
		delete(w.rounds, id)
		w.mu.Unlock()
		if !mine {
			return // taken back, or ended with the connection
		}
		r.finish(final, err)
	})
}
