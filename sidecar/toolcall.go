package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
)

// A tools/call takes one of two ways. When nothing it needs would make it
// wait (its tool bound in a current catalog, its server ready on a stdio
// connection that writes tools/call itself), it is sent from the host's
// read loop and answered from the server's read loop (sendToolCall): no
// goroutine of its own, which is what a call costs above the floor relay
// otherwise (each handoff between goroutines can wake a thread). Anything
// else (a server still starting, dormant or restarting, a stale catalog, a
// tool not yet listed, Streamable HTTP) runs toolsCall on a goroutine of
// its own, which may wait. Both check, bind and answer alike
// (prepareToolCall, toolCall.callError).

// toolCall is one tools/call checked, bound and admitted, ready to go to
// its server.
type toolCall struct {
	sess  *Session // the call holds a place in its admission until end
	sc    *serverConn
	conn  *mcpclient.Conn
	bound catalog.Tool
	p     protocol.ToolsCallParams // Arguments, Task: slices of the host's frame
	meta  map[string]any
	// dropped are the host's meta keys left out of meta, logged when the
	// call is sent.
	dropped []string
	// timeout is what the call is given from when it is sent: the smaller
	// of tool_timeout_sec and what is left of timeoutMs; timeoutName and
	// limit are the setting that holds and its value, for the message.
	timeout     time.Duration
	timeoutName string
	limit       time.Duration
	progressKey string // of the call's progress token; "" without one
	rounds      mcpclient.Rounds
}

// errWouldWait is prepareToolCall's answer, when it may not wait, for a
// call that would: it then runs on a goroutine of its own.
var errWouldWait = errors.New("the call would wait")

// prepareToolCall checks the params of a tools/call, admits it to its
// session, binds its tool and gets its server's connection, into tc. With
// wait false it never waits: a call that would (see bindNow) gets
// errWouldWait and has taken nothing. On success the caller owns the
// admission (end).
//
// ref is the session the call names as the host's read loop found it: with
// wait false (on that loop) prepareToolCall looks it up and sets it, with
// wait true it uses what was set.
func (s *Server) prepareToolCall(ctx context.Context, params json.RawMessage, ref *sessionRef, wait bool, tc *toolCall) (err error) {
	// The arguments and the policy stay slices of the frame until they are
	// written to the server.
	p, err := protocol.ParseToolsCallParams(params)
	if err != nil {
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "invalid params: "+err.Error())
	}
	if !wait {
		// A session being opened is waited for on a goroutine.
		s.mu.Lock()
		*ref = s.sessionRefLocked(p.SessionID)
		s.mu.Unlock()
		if ref.opening != nil {
			return errWouldWait
		}
	}
	sess, err := s.session(ctx, *ref, p.SessionID)
	if err != nil {
		return err
	}
	// A call that may wait takes its place in the session before it waits
	// (a flood of calls waiting to bind is bounded too), and its server's
	// share once bound; one that may not is admitted once bound.
	admitted := false
	var assigned *serverConn
	defer func() {
		if err != nil && admitted {
			sess.release(assigned)
		}
	}()
	if wait {
		if err := sess.tryAdmit(); err != nil {
			return err
		}
		admitted = true
	}
	if len(p.SandboxState) > 0 {
		if err := sandbox.ValidateState(p.SandboxState); err != nil {
			return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "invalid sandboxState: "+err.Error())
		}
	}
	if len(p.Arguments) > 0 && !isJSONObject(p.Arguments) && string(p.Arguments) != "null" {
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "arguments must be a JSON object")
	}
	if p.TimeoutMs < 0 {
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "timeoutMs must not be negative")
	}

	rounds, err := inputRounds(sess.env.hostCaps, p.InputResponses, p.RequestState, p.ClientCapabilities)
	if err != nil {
		return err
	}
	*tc = toolCall{sess: sess, p: p, rounds: rounds}
	budget := newWaitBudget(p.TimeoutMs)
	if wait {
		if tc.sc, tc.bound, err = sess.bind(ctx, p, budget); err != nil {
			return err
		}
		if tc.conn, err = tc.sc.ready(ctx); err != nil {
			return callerError(ctx, err)
		}
		if err := sess.assign(tc.sc); err != nil {
			return err
		}
	} else {
		if tc.sc, tc.bound, tc.conn = sess.bindNow(p); tc.conn == nil || !tc.conn.CanStartToolCall() {
			return errWouldWait
		}
		if err := sess.admitTo(tc.sc); err != nil {
			return err
		}
		admitted = true
	}
	assigned = tc.sc
	// The binding is checked against the catalog at dispatch: a tool that
	// changed or disappeared meanwhile is refused, never sent elsewhere.
	if err := tc.sc.checkBinding(&tc.bound); err != nil {
		return err
	}
	if err := checkTaskMode(tc.sc, tc.conn, tc.bound, p.Task); err != nil {
		return err
	}
	if !hasTask(p.Task) {
		tc.p.Task = nil
	}

	sc := tc.sc
	sc.mu.Lock()
	capability := sc.sandboxCap
	sc.mu.Unlock()
	// The launcher's file is checked again only for a call that would
	// carry it: a file changed since it was verified is not advertised.
	launcher := ""
	if tc.conn.Transport() == config.TransportStdio && capability.OptedIn() && sandbox.StatePresent(p.SandboxState) {
		launcher = sess.env.launcherPath()
	}
	tc.meta, tc.dropped = sandbox.BuildMeta(sandbox.Injection{
		Capability: capability,
		State:      p.SandboxState,
		Launcher:   launcher,
		HostMeta:   p.Meta,
		Transport:  tc.conn.Transport(),
	})

	tc.timeout, tc.timeoutName = sc.cfg.ToolTimeout(), "tool_timeout_sec"
	if p.TimeoutMs > 0 && millis(p.TimeoutMs) < tc.timeout {
		tc.timeout, tc.timeoutName = millis(p.TimeoutMs), "timeoutMs"
	}
	tc.limit = tc.timeout
	if budget != nil && budget.left < tc.timeout {
		// Waits for catalog refreshes took part of timeoutMs.
		tc.timeout, tc.timeoutName, tc.limit = max(budget.left, 0), "timeoutMs", millis(p.TimeoutMs)
	}
	return nil
}

// waitBudget is what is left of a tools/call's timeoutMs while it waits to
// be sent: its waits for catalog refreshes count against it, as its time
// at the server then does; a wait for a startup does not (the startup's
// own startup_timeout_sec bounds that, and a lazy server's first call is
// not failed for starting it). A nil budget is no timeoutMs.
type waitBudget struct {
	limit time.Duration // timeoutMs
	left  time.Duration
}

func newWaitBudget(timeoutMs int64) *waitBudget {
	if timeoutMs <= 0 {
		return nil
	}
	return &waitBudget{limit: millis(timeoutMs), left: millis(timeoutMs)}
}

// catchUp is Session.catchUp for the call, its wait bounded by what is
// left; it reports whether that ran out (and the host did not cancel).
func (b *waitBudget) catchUp(ctx context.Context, sess *Session, scs []*serverConn) (expired bool) {
	if b == nil {
		sess.catchUp(ctx, scs, false)
		return false
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, max(b.left, 0))
	defer cancel()
	sess.catchUp(wctx, scs, false)
	b.left -= time.Since(start)
	return ctx.Err() == nil && (b.left <= 0 || wctx.Err() != nil)
}

// expired is the error of a call whose timeoutMs ran out while it waited
// for a catalog refresh: of sc's catalog, or, when sc is nil, of the
// catalogs that might hold tool.
func (b *waitBudget) expired(sc *serverConn, tool string) error {
	limit := formatSeconds(b.limit)
	if sc == nil {
		return protocol.NewError(protocol.CodeToolTimeout, protocol.KindToolTimeout,
			fmt.Sprintf("tool %q was not called within timeoutMs (%s): the refreshes of catalogs (after notifications/tools/list_changed) it waited for did not end in time", tool, limit)).WithServer("", tool).Retry()
	}
	return protocol.NewError(protocol.CodeToolTimeout, protocol.KindToolTimeout,
		fmt.Sprintf("tool %q of server %q was not called within timeoutMs (%s): the refresh of the server's catalog (after notifications/tools/list_changed) did not end in time", tool, sc.name, limit)).WithServer(sc.name, tool).Retry()
}

// bindNow is bind for a call that may not wait: it binds only a tool whose
// server is ready with a current catalog, and returns a nil connection
// when bind would wait (a server starting, dormant, restarting or failed,
// a stale catalog, a tool not in the catalog: bind then waits, refreshes
// or explains).
func (sess *Session) bindNow(p protocol.ToolsCallParams) (*serverConn, catalog.Tool, *mcpclient.Conn) {
	var sc *serverConn
	var t catalog.Tool
	switch {
	case p.Name != "" && p.Server == "" && p.Tool == "":
		ref, ok := sess.snapshot().byName[p.Name]
		if !ok {
			return nil, catalog.Tool{}, nil
		}
		sc, t = ref.sc, ref.tool
	case p.Name == "" && p.Server != "" && p.Tool != "":
		var err error
		if sc, err = sess.server(p.Server); err != nil {
			return nil, catalog.Tool{}, nil
		}
		var ok bool
		if t, ok = sc.tool(p.Tool); !ok {
			return nil, catalog.Tool{}, nil
		}
	default:
		return nil, catalog.Tool{}, nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.state != protocol.StateReady || sc.isStaleLocked() {
		return nil, catalog.Tool{}, nil
	}
	return sc, t, sc.conn
}

// toolCall is the call sent to the server. Its arguments and task are
// slices of the host's frame, which protocol checked whole: mcpclient does
// not check them again (a 1 MiB argument is read once).
func (tc *toolCall) toolCall() mcpclient.ToolCall {
	return mcpclient.ToolCall{
		Name: tc.bound.Name, Arguments: tc.p.Arguments, Meta: tc.meta, Task: tc.p.Task,
		Headers: tc.bound.Headers, Checked: true, Rounds: tc.rounds,
	}
}

// begin is the call leaving: the dropped meta keys are logged and its
// progress token is registered, so that the server's progress reaches the
// host from the first notification.
func (tc *toolCall) begin(logger *slog.Logger) {
	if f := tc.sess.srv.hook().toolCallBound; f != nil {
		f(tc.sess.id, tc.sc.name, tc.bound.Name, tc.bound.Headers)
	}
	for _, k := range tc.dropped {
		why := "not a valid JSON value"
		if sandbox.IsSandboxKey(k) {
			why = "sandbox keys come only from sandboxState"
		}
		logger.Warn("host meta key dropped", "server", tc.sc.name, "tool", tc.bound.Name, peerlog.String("key", k), "why", why)
	}
	if tok, ok := tc.p.Meta["progressToken"]; ok {
		tc.progressKey = progressKey(tok)
		tc.sc.mu.Lock()
		tc.sc.progress[tc.progressKey] = tok
		tc.sc.mu.Unlock()
	}
}

// end is the call over, before its answer is written: no progress of it
// reaches the host any more, and its place in the session's admission is
// free for the host's next call.
func (tc *toolCall) end() {
	if tc.progressKey != "" {
		tc.sc.mu.Lock()
		delete(tc.sc.progress, tc.progressKey)
		tc.sc.mu.Unlock()
	}
	tc.sess.release(tc.sc)
}

// callError maps the error a call ended with: errToolTimeout when its
// own timeout ended it first (and the host had not cancelled it), ctx
// being the request's.
func (tc *toolCall) callError(ctx context.Context, err error) error {
	if errors.Is(err, errToolTimeout) && ctx.Err() == nil {
		return protocol.NewError(protocol.CodeToolTimeout, protocol.KindToolTimeout,
			fmt.Sprintf("tool %q of server %q did not answer within %s (%s)", tc.bound.Name, tc.sc.name, tc.timeoutName, formatSeconds(tc.limit))).WithServer(tc.sc.name, tc.bound.Name).Retry()
	}
	return tc.sc.callError(ctx, tc.conn, tc.bound.Name, err)
}

// toolsCall is tools/call on a goroutine of its own: it waits for what
// the call needs (see bind) and for the answer.
func (s *Server) toolsCall(ctx context.Context, rq *request) (result, error) {
	var tc toolCall
	if err := s.prepareToolCall(ctx, rq.params, &rq.session, true, &tc); err != nil {
		return result{}, err
	}
	tc.begin(s.logger)
	defer tc.end()
	if f := s.hook().toolCallSent; f != nil {
		f(tc.sc.sess.id, tc.sc.name, true)
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, tc.timeout, errToolTimeout)
	defer cancel()
	// The tool's header declarations were read once, with its catalog:
	// over Streamable HTTP at 2026-07-28 they become its Mcp-Param-*
	// headers.
	raw, err := tc.conn.CallToolWith(callCtx, tc.toolCall())
	if err != nil {
		if errors.Is(context.Cause(callCtx), errToolTimeout) {
			err = errToolTimeout
		}
		return result{}, tc.callError(ctx, err)
	}
	raw = tc.sc.scrubErrorResult(raw)
	if tc.p.Task == nil {
		raw = s.limitToolOutput(tc.sc, tc.bound.Name, toolWords(tc.bound), raw)
	}
	return result{value: raw}, nil
}

// sendToolCall runs a tools/call on the host's read loop, where Handle
// calls it, if nothing it needs would wait: it sends the call and returns,
// and the call's end (sentCall.finish) answers the host. It reports false,
// having taken nothing, for a call that needs a goroutine of its own
// (toolsCall). An error found before the call is sent is answered at once.
// The caller counted the request in s.work; it is done when answered.
func (s *Server) sendToolCall(ctx context.Context, req *protocol.Request, ref *sessionRef) (sent bool) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("handler panic", "method", req.Method, "panic", r, "stack", string(debug.Stack()))
			s.replyError(req.ID, protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, fmt.Sprintf("internal error in %s: %v", req.Method, r)))
			s.work.Done()
			sent = true
		}
	}()
	// One allocation holds the call until it is answered.
	c := &sentCall{s: s, id: req.ID, ctx: ctx}
	err := s.prepareToolCall(ctx, req.Params, ref, false, &c.tc)
	switch {
	case errors.Is(err, errWouldWait):
		return false
	case err != nil:
		s.replyError(req.ID, err)
		s.work.Done()
		return true
	}
	tc := &c.tc
	tc.begin(s.logger)
	if f := s.hook().toolCallSent; f != nil {
		f(tc.sc.sess.id, tc.sc.name, false)
	}
	call, err := tc.conn.StartToolCall(tc.toolCall(), c)
	if err != nil {
		c.CallEnded(nil, err)
		return true
	}
	c.watch(call)
	return true
}

// sentCall is a tools/call sent by sendToolCall, until it is answered. It
// ends exactly once, by whichever comes first: its answer or the end of
// the server's connection (mcpclient calls CallEnded), or its timeout or the
// host's cancellation (the call is then taken back from the connection).
// Neither of the last two needs a context or a timer of its own: the
// server's deadlines, and the host connection's watch of the request
// (protocol.Conn.Watch, which a Reply ends).
type sentCall struct {
	s   *Server
	id  json.RawMessage // the host's request id
	tc  toolCall
	ctx context.Context // the request's: ends when the host cancels it

	mu       sync.Mutex
	finished bool
	call     mcpclient.PendingCall
	timed    bool     // deadline is among the server's
	deadline deadline // the call's timeout (deadlines.go)
}

// watch takes the call back from its connection when its timeout or the
// request's context ends first.
func (c *sentCall) watch(call mcpclient.PendingCall) {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return // answered already
	}
	c.call = call
	c.deadline = deadline{at: time.Now().Add(c.tc.timeout), call: c}
	c.s.deadlines.push(&c.deadline)
	c.timed = true
	c.mu.Unlock()
	if !c.s.conn.Watch(c.id, c) && c.ctx.Err() != nil {
		// Serve's context ended meanwhile: as context.AfterFunc would.
		go c.abort(context.Cause(c.ctx))
	}
}

// RequestEnded is the host's cancellation of the request, or the end of
// Serve's context (protocol.RequestWatcher).
func (c *sentCall) RequestEnded(cause error) { c.abort(cause) }

// abort takes the call back from its connection, if it has not ended,
// and ends it with cause.
func (c *sentCall) abort(cause error) {
	c.mu.Lock()
	call := c.call
	c.mu.Unlock()
	if call.Cancel(cause) {
		c.CallEnded(nil, cause)
	}
}

// CallEnded answers the host with the call's result or error, after the
// call has ended (end), and is called once (mcpclient.CallReceiver).
func (c *sentCall) CallEnded(raw json.RawMessage, err error) {
	if err == nil {
		raw = c.tc.sc.scrubErrorResult(raw) // before a limit could cut a secret in two
	}
	if err == nil && c.limitElsewhere(raw) {
		return // answered by the goroutine that limits the result
	}
	c.answer(raw, err)
}

// answer is CallEnded's answer to the host.
func (c *sentCall) answer(raw json.RawMessage, err error) {
	s, tc := c.s, &c.tc
	defer s.work.Done()
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("handler panic", "method", protocol.MethodToolsCall, "panic", r, "stack", string(debug.Stack()))
			s.replyError(c.id, protocol.NewError(protocol.CodeInternalError, protocol.KindInternal, fmt.Sprintf("internal error in %s: %v", protocol.MethodToolsCall, r)))
		}
	}()
	c.mu.Lock()
	c.finished = true
	timed := c.timed
	c.mu.Unlock()
	if timed {
		s.deadlines.remove(&c.deadline)
	}
	if err != nil {
		err = tc.callError(c.ctx, err)
	}
	tc.end()
	if err != nil {
		s.replyError(c.id, err)
	} else if err := s.conn.Reply(c.id, raw); err != nil {
		s.logger.Debug("reply not written", "method", protocol.MethodToolsCall, "err", err)
	}
}
