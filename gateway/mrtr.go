package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A client of MCP 2026-07-28 cannot be sent requests: a server's question
// during a call (elicitation, sampling, roots) goes back to it as an
// input-required result, and the client calls again with its answers and
// the result's requestState (multi round-trip). The host's tools/call
// stays in flight meanwhile, and so does the sidecar's question, which
// the answers of the next round answer.

// abandonAfter bounds how long a call waits for a client to come back
// with the input it asked for.
const abandonAfter = 10 * time.Minute

// roundCall is a host tools/call of a modern client spanning rounds.
type roundCall struct {
	id     string
	ss     *mcp.ServerSession // the first round's (its capabilities)
	cancel context.CancelFunc
	done   chan struct{} // closed when the host answered
	res    json.RawMessage
	err    error
	asks   chan *ask // the sidecar's questions of this call

	mu      sync.Mutex
	waiting map[string]*ask // asked of the client, by input request key
	abandon *time.Timer
}

// ask is one question of the sidecar waiting for the client's answer.
type ask struct {
	key    string
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

// modern reports whether the client speaks MCP 2026-07-28 or later.
func modern(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// callRounds runs p as a call of rounds: it starts the host call, or
// answers the questions of the one the client's requestState names, and
// returns either the call's result or the next questions. A new call's
// ended runs when the host has answered it; a later round of a call of
// the gateway's has none (a requestState of a modern server's goes to the
// server in a new call, inputs.go).
func (c *client) callRounds(ctx context.Context, req *mcp.CallToolRequest, p protocol.ToolsCallParams, name string, ended func()) (*mcp.CallToolResult, error) {
	var rc *roundCall
	if state := req.Params.RequestState; state != "" && ended == nil {
		c.mu.Lock()
		rc = c.rounds[state]
		c.mu.Unlock()
		if rc == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState %q names no call in progress (it ended, or waited too long for its input)", state)}
		}
		rc.mu.Lock()
		rc.abandon.Stop()
		for key, resp := range req.Params.InputResponses {
			if a := rc.waiting[key]; a != nil {
				delete(rc.waiting, key)
				a.answer <- resp
			}
		}
		rc.mu.Unlock()
	} else {
		rc = c.startRounds(req.Session, p, ended)
	}
	select {
	case <-rc.done:
		c.endRounds(rc)
		if rc.err != nil {
			return toolError(ctx, rc.err)
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(rc.res, &res); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the result of tool %q cannot be relayed: %v", name, err)}
		}
		return &res, nil
	case a := <-rc.asks:
		inputs := mcp.InputRequestMap{}
		rc.mu.Lock()
		for more := true; more; {
			rc.waiting[a.key] = a
			inputs[a.key] = a.req
			select {
			case a = <-rc.asks:
			default:
				more = false
			}
		}
		rc.abandon.Reset(abandonAfter)
		rc.mu.Unlock()
		return &mcp.CallToolResult{InputRequests: inputs, RequestState: rc.id}, nil
	case <-ctx.Done():
		// The client gave up on the call.
		c.endRounds(rc)
		return nil, ctx.Err()
	}
}

func (c *client) startRounds(ss *mcp.ServerSession, p protocol.ToolsCallParams, ended func()) *roundCall {
	ctx, cancel := context.WithCancel(c.life)
	rc := &roundCall{ss: ss, cancel: cancel, done: make(chan struct{}), asks: make(chan *ask), waiting: map[string]*ask{}}
	rc.abandon = time.AfterFunc(abandonAfter, func() { c.endRounds(rc) })
	rc.abandon.Stop()
	c.mu.Lock()
	c.nextRound++
	rc.id = fmt.Sprintf("call-%d", c.nextRound)
	c.rounds[rc.id] = rc
	c.order = append(c.order, rc)
	c.mu.Unlock()
	land := c.host.fly(&flight{c: c, ss: ss, rc: rc, server: c.serverOf(p)})
	go func() {
		defer close(rc.done)
		rc.err = c.call(ctx, protocol.MethodToolsCall, p, &rc.res)
		land()
		ended()
	}()
	return rc
}

// endRounds forgets a call; one that has not ended is cancelled.
func (c *client) endRounds(rc *roundCall) {
	rc.cancel()
	rc.abandon.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rounds, rc.id)
	for i, o := range c.order {
		if o == rc {
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			break
		}
	}
}

// askRounds puts a question of the sidecar to a modern client, through
// its call rc (hostSession.route chose it), or its oldest call in
// progress when rc is nil.
func (c *client) askRounds(ctx context.Context, rc *roundCall, req mcp.InputRequest) (mcp.InputResponse, error) {
	c.mu.Lock()
	if rc == nil && len(c.order) > 0 {
		rc = c.order[0]
	}
	c.nextAsk++
	a := &ask{key: fmt.Sprintf("ask-%d", c.nextAsk), req: req, answer: make(chan mcp.InputResponse, 1)}
	c.mu.Unlock()
	if rc == nil {
		return nil, protocol.NewError(protocol.CodeMethodNotFound, protocol.KindMethodNotFound, "the gateway's client speaks MCP 2026-07-28, which takes a server's questions only during a tool call")
	}
	select {
	case rc.asks <- a:
	case <-rc.done:
		return nil, protocol.NewError(protocol.CodeRequestCancelled, protocol.KindCancelled, "the call ended")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-rc.done:
		return nil, protocol.NewError(protocol.CodeRequestCancelled, protocol.KindCancelled, "the call ended")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
