package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire is the one JSON-RPC client of a connection: one id table for
// every request the connection sends (the handshake, tools/call, lists,
// tasks, subscriptions/listen), one read loop per underlying connection
// that hands each message on in the order the server sent it, and the
// connection's end. Results are the server's bytes: on stdio a slice of
// the line read, over HTTP go-sdk's copy of the body or event.
//
// A response is handed to its receiver on the read goroutine (receivers
// must not block: the hot path's receiver forwards the bytes to the host);
// a notification goes to its handler there too (handlers hand off and
// return); a server's request (legacy servers: elicitation/create,
// sampling/createMessage, roots/list, ping) runs on a goroutine of its
// own, bounded by Options.MaxServerRequests.
type wire struct {
	c      *Conn
	nextID atomic.Int64 // the last id issued

	mu      sync.Mutex
	pending map[int64]entry   // requests sent, waiting for their response
	rounds  map[int64]*rounds // started calls between multi round-trip rounds, by first id
	ended   error             // the connection's end: nothing starts after it
	conn    mcp.Connection    // the current underlying connection
	gen     uint32            // its generation: a renewed HTTP session is a later one
	gens    uint32            // the last generation issued
	// lostGen is the last generation a renewal failed (failGen), and
	// lostErr what its requests ended with: every generation up to it is
	// a session the server forgot.
	lostGen uint32
	lostErr error

	// dispatchMu serializes the hand-off of messages that arrive on more
	// than one goroutine (HTTP: go-sdk's connection and the legacy GET
	// stream; a connection being replaced), so that the handlers see one
	// message at a time. Stdio has one reader and never takes it.
	dispatchMu sync.Mutex

	// bg counts the goroutines that work for the connection off their
	// caller's path (the rest of a line stdin did not take at once, a
	// notifications/cancelled, the end of calls, server requests, rounds
	// of multi round-trip calls), so that teardown can wait for them.
	bg sync.WaitGroup
}

// entry is one request waiting for its response.
type entry struct {
	done   CallReceiver
	method string
	gen    uint32 // the connection generation it was sent on
	// started is set for a tools/call that StartToolCall sent on a modern
	// connection: its result may ask for input (multi round-trip), and
	// the call is then sent again from these.
	started *ToolCall
	// writing is set while send or sendAs writes the request: until the
	// write returns, a session found forgotten is the sender's to handle
	// (a POST the server answered 404 was never processed, and is sent
	// again on the renewed session), not failGen's.
	writing bool
}

// A CallReceiver gets the end of a call StartToolCall sent: an interface
// rather than a function, so that the caller's record of the call (which
// it allocates anyway) is all a call allocates to be answered.
type CallReceiver interface {
	// CallEnded gets the result (the server's bytes) or the error, once.
	CallEnded(result json.RawMessage, err error)
}

func newWire(c *Conn) *wire {
	return &wire{c: c, pending: make(map[int64]entry)}
}

// target is an underlying connection and its generation: where a request
// goes.
type target struct {
	conn mcp.Connection
	gen  uint32
}

// use makes conn the current underlying connection and returns its
// generation.
func (w *wire) use(conn mcp.Connection) uint32 {
	t := w.reserve(conn)
	w.publish(t)
	return t.gen
}

// reserve gives conn a generation without making it current: a renewed
// session takes requests of its own (its handshake) before any other.
func (w *wire) reserve(conn mcp.Connection) target {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gens++
	return target{conn: conn, gen: w.gens}
}

// publish makes t the current underlying connection.
func (w *wire) publish(t target) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn, w.gen = t.conn, t.gen
}

// era is the connection's era, read where the read loop may run during
// the handshake (which sets it under w.mu: setEra).
func (w *wire) era() Era {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.c.era
}

// setEra sets the connection's era (the handshake) under w.mu, for the
// read loop to read it there.
func (c *Conn) setEra(era Era) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.era = era
}

// current is the current underlying connection and its generation.
func (w *wire) current() (mcp.Connection, uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn, w.gen
}

// register adds e under id, unless the connection ended. It returns where
// to send: to, or the current connection when to is nil.
func (w *wire) register(id int64, e entry, to *target) (target, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		return target{}, w.ended
	}
	t := target{w.conn, w.gen}
	if to != nil {
		t = *to
	}
	e.gen = t.gen
	w.pending[id] = e
	return t, nil
}

// forget takes the request id back; false if it had ended already (its
// receiver was called, or is being called).
func (w *wire) forget(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.pending[id]
	delete(w.pending, id)
	return ok
}

// goBG runs f on a goroutine that teardown waits for, unless the
// connection ended (then f does not run, and it reports false): the
// WaitGroup gains no work once teardown waits on it.
func (w *wire) goBG(f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		return false
	}
	w.bg.Go(f)
	return true
}

// fail ends every waiting request with the connection's error and lets
// none start again. It runs once the connection ended, before teardown
// waits for bg.
func (w *wire) fail(cause error) {
	w.mu.Lock()
	if w.ended != nil {
		w.mu.Unlock()
		return
	}
	w.ended = cause
	pending := w.pending
	w.pending = map[int64]entry{}
	rounds := w.rounds
	w.rounds = nil
	w.mu.Unlock()
	if len(pending) == 0 && len(rounds) == 0 {
		return
	}
	// Off the connection's teardown: a caller's receiver may write to a
	// host that is slow to read.
	w.bg.Go(func() {
		for _, e := range pending {
			e.done.CallEnded(nil, cause)
		}
		for _, r := range rounds {
			r.finish(nil, cause)
		}
	})
}

// failGen ends the requests sent on generation gen (an HTTP session the
// server forgot) with err; the others stay.
// A request still being written is left to its sender (written, send).
func (w *wire) failGen(gen uint32, err error) {
	w.mu.Lock()
	w.lostGen, w.lostErr = max(w.lostGen, gen), err
	var lost []entry
	for id, e := range w.pending {
		if e.gen <= gen && !e.writing {
			lost = append(lost, e)
			delete(w.pending, id)
		}
	}
	w.mu.Unlock()
	for _, e := range lost {
		e.done.CallEnded(nil, err)
	}
}

// written notes that request id was written. A request written to a
// session a renewal has failed meanwhile (failGen left it to its sender)
// ends with that renewal's error: its answer would never come.
func (w *wire) written(id int64) {
	w.mu.Lock()
	e, ok := w.pending[id]
	if !ok {
		w.mu.Unlock()
		return // answered already
	}
	if e.gen > w.lostGen {
		e.writing = false
		w.pending[id] = e
		w.mu.Unlock()
		return
	}
	delete(w.pending, id)
	err := w.lostErr
	w.mu.Unlock()
	e.done.CallEnded(nil, err)
}

// newID issues the next request id.
func (w *wire) newID() int64 { return w.nextID.Add(1) }

func jsonrpcID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n)) // ids stay far below 2^53
	return id
}

// send sends a request whose answer goes to done, to to (nil: the current
// connection), and returns its id. The write is the underlying
// connection's: on stdio it returns once the line is written (after the
// lines sent before it), over HTTP once the server answered the POST. A
// write that fails is the request's error, unless the connection's end
// has answered the request already (then the id is returned and done has
// the answer). A request that found its legacy HTTP session forgotten is
// sent once more, on the renewed session (the server never processed it).
func (w *wire) send(ctx context.Context, to *target, method string, params json.RawMessage, done CallReceiver) (int64, error) {
	for attempt := 0; ; attempt++ {
		id := w.newID()
		t, err := w.register(id, entry{done: done, method: method, writing: true}, to)
		if err != nil {
			return 0, err
		}
		msg := &jsonrpc.Request{ID: jsonrpcID(id), Method: method, Params: params}
		err = t.conn.Write(ctx, msg)
		if err == nil {
			w.written(id)
			return id, nil
		}
		if !w.forget(id) {
			return id, nil // the connection's end answered it
		}
		if attempt == 0 && to == nil && w.c.sessionLost(t.gen, err) {
			continue
		}
		return 0, w.c.writeError(ctx, method, err)
	}
}

// sendAs sends a request with the id given (issued by newID), whose
// answer goes to done, on the current connection.
func (w *wire) sendAs(ctx context.Context, id int64, method string, params json.RawMessage, done CallReceiver) error {
	t, err := w.register(id, entry{done: done, method: method, writing: true}, nil)
	if err != nil {
		return err
	}
	if err := t.conn.Write(ctx, &jsonrpc.Request{ID: jsonrpcID(id), Method: method, Params: params}); err != nil {
		if !w.forget(id) {
			return nil // the connection's end answered it
		}
		return w.c.writeError(ctx, method, err)
	}
	w.written(id)
	return nil
}

// notifyOn sends a notification to to (nil: the current connection).
func (w *wire) notifyOn(ctx context.Context, to *target, method string, params json.RawMessage) error {
	t := to
	if t == nil {
		conn, gen := w.current()
		t = &target{conn, gen}
	}
	if t.conn == nil {
		return ErrConnectionLost
	}
	if err := t.conn.Write(ctx, &jsonrpc.Request{Method: method, Params: params}); err != nil {
		return w.c.writeError(ctx, method, err)
	}
	return nil
}

// notify sends a notification on the current connection.
func (w *wire) notify(ctx context.Context, method string, params json.RawMessage) error {
	return w.notifyOn(ctx, nil, method, params)
}

// answer is the end of a call a goroutine waits for.
type answer struct {
	result json.RawMessage
	err    error
}

// answerChan hands a call's end to the goroutine that waits for it.
type answerChan chan answer

// CallEnded keeps a copy of the result: on stdio it is a slice of the line,
// reused once CallEnded returns.
func (ch answerChan) CallEnded(res json.RawMessage, err error) {
	ch <- answer{bytes.Clone(res), err} // buffered: never blocks
}

// call sends a request on the current connection and waits for its
// answer. When ctx ends first the request is taken back, and the server
// told (cancel).
func (w *wire) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return w.callOn(ctx, nil, method, params)
}

// callOn is call on to (nil: the current connection).
func (w *wire) callOn(ctx context.Context, to *target, method string, params json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(answerChan, 1)
	id, err := w.send(ctx, to, method, params, ch)
	if err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.result, a.err
	case <-ctx.Done():
		if w.forget(id) {
			if ctx.Value(quietKey{}) == nil {
				w.cancel(id, context.Cause(ctx))
			}
			return nil, ctx.Err()
		}
		a := <-ch // the answer won the race
		return a.result, a.err
	}
}

// quietKey marks the context of a request whose giving up the server is
// not told of: the server/discover probe, which a legacy server may not
// take well before initialize (a notification before initialize is an
// error to some), and which it may never have read.
type quietKey struct{}

// cancel tells the server that the request id is given up, off the
// caller's path, as the transport and era want it: on stdio a
// notifications/cancelled after the request (a server that does not read
// its stdin cannot hold the caller up); over legacy HTTP the same, POSTed;
// over modern HTTP nothing, as closing the request's stream (the caller's
// context) is the cancellation.
func (w *wire) cancel(id int64, cause error) {
	c := w.c
	if c.proc == nil && c.era == EraModern {
		return
	}
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	params := c.withMeta(fmt.Appendf(nil, `{"reason":%s,"requestId":%d}`, jsonString(reason), id))
	if lc := c.lineConn(); lc != nil {
		lc.send([][]byte{encodeNotification("notifications/cancelled", params)}, w.goBG)
		return
	}
	w.goBG(func() {
		ctx, stop := context.WithTimeout(c.life, cancelWait)
		defer stop()
		_ = w.notify(ctx, "notifications/cancelled", params)
	})
}

// deliver ends the request id with its response: the result, or the
// error as the server sent it (errv, stdio) or as go-sdk decoded it
// (respErr, HTTP). result may be a slice of a buffer that is reused once
// deliver returns.
func (w *wire) deliver(id int64, result, errv json.RawMessage, respErr error) {
	w.mu.Lock()
	e, ok := w.pending[id]
	delete(w.pending, id)
	modern := w.c.era == EraModern // set before the request was registered
	w.mu.Unlock()
	if !ok {
		return // a late answer to a request given up, or not ours
	}
	if modern && errv == nil && respErr == nil {
		kind, err := w.c.resultKind(e.method, result)
		if err != nil {
			e.done.CallEnded(nil, err)
			return
		}
		if kind == resultInputRequired && e.started != nil && !e.started.Rounds.Own {
			w.startRounds(id, e, result)
			return
		}
	}
	e.done.CallEnded(w.c.response(e.method, result, errv, respErr))
}

// dispatch hands on one message the server sent that is not a fast-path
// response: a response (HTTP, and stdio lines the fast path did not
// take), a notification, or a request.
func (w *wire) dispatch(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		id, ok := m.ID.Raw().(int64)
		if !ok {
			w.c.opts.Logger.Debug("an answer to no request of ours was dropped", "server", w.c.name, "id", m.ID.Raw())
			return
		}
		w.deliver(id, m.Result, nil, m.Error)
	case *jsonrpc.Request:
		if m.IsCall() {
			w.c.serverRequest(m)
			return
		}
		w.c.notification(m.Method, m.Params)
	}
}

// readConn reads the underlying connection conn of generation gen until
// it ends, and returns why.
func (w *wire) readConn(ctx context.Context, conn mcp.Connection) error {
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		w.c.messageSize(msg)
		w.dispatchMu.Lock()
		w.dispatch(msg)
		w.dispatchMu.Unlock()
	}
}

// readLines reads a stdio server's output until it ends, and returns why:
// each success or error response straight to its receiver with the result
// a slice of the line (no decoding into Go values, no copy), anything else
// decoded and dispatched.
func (w *wire) readLines(lc *lineConn) error {
	for {
		line, owned, err := lc.lines.readLine()
		if err != nil {
			return err
		}
		if id, result, errv, ok := responseMembers(line); ok {
			if n, ok := parseID(id); ok {
				w.deliver(n, result, errv, nil)
				continue
			}
		}
		if !owned {
			line = bytes.Clone(line) // the decoded message keeps slices of it
		}
		if line[0] == '[' {
			// A batch (2025-03-26 servers): its messages in order.
			var items []json.RawMessage
			if err := json.Unmarshal(line, &items); err != nil {
				lc.lines.report(truncate(line, reportBytes))
				continue
			}
			for _, it := range items {
				w.dispatchLine(lc, it)
			}
			continue
		}
		w.dispatchLine(lc, line)
	}
}

func (w *wire) dispatchLine(lc *lineConn, line []byte) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		// JSON, but not a JSON-RPC message: skipped and reported like any
		// other line that is not a message, never a reason to end.
		lc.lines.report(truncate(line, reportBytes))
		return
	}
	w.dispatch(msg)
}

// parseID reads a request id of ours: a non-negative integer.
func parseID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// PendingCall is a tools/call started by StartToolCall.
type PendingCall struct {
	w  *wire
	id int64
}

// Cancel takes the call back: done will not be called, and the server is
// sent notifications/cancelled with cause as its reason. It reports false
// when the call had ended already (done was called or is being called).
func (p PendingCall) Cancel(cause error) bool {
	w := p.w
	if w.forget(p.id) {
		w.cancel(p.id, cause)
		return true
	}
	w.mu.Lock()
	r := w.rounds[p.id]
	delete(w.rounds, p.id)
	w.mu.Unlock()
	if r == nil {
		return false
	}
	r.cancel(cause)
	return true
}

// ErrNotStartable is StartToolCall's answer on a connection where a call
// cannot be sent without waiting (Streamable HTTP): use CallTool or
// CallToolTask.
var ErrNotStartable = errors.New("tools/call cannot be started without waiting on this connection")

// CanStartToolCall reports whether StartToolCall works on c (it does over
// stdio).
func (c *Conn) CanStartToolCall() bool { return c.proc != nil }

// StartToolCall sends tools/call and returns without waiting for the
// answer, and without blocking: what the server's input does not take at
// once is written by a goroutine of the connection. done gets the result
// (the server's bytes) or the error exactly once, unless Cancel reports
// that it took the call back: on the connection's read path when the
// response arrives (after the notifications the server sent before it,
// in their order), or, when the connection ends first (or the call needs
// more rounds: a modern server's result that asks for input), on a
// goroutine of the connection. done must not block for long: it holds up
// the server's later messages, and the result may be a slice of the
// server's line, valid only until done returns.
//
// call is as for CallToolWith (its Headers are for Streamable HTTP, and
// unused here). It returns ErrNotStartable where the call needs
// CallToolWith, and the connection's error once it ended; done is not
// called then.
func (c *Conn) StartToolCall(call ToolCall, done CallReceiver) (PendingCall, error) {
	if c.proc == nil {
		return PendingCall{}, ErrNotStartable
	}
	if err := c.checkCallParams(&call); err != nil {
		return PendingCall{}, err
	}
	return c.w.start(call, done)
}

// start registers a started tools/call and writes its line without
// waiting. The line is built before the call is registered, so that an
// encoding error leaves nothing behind, and the call is registered before
// a byte is written, so that no answer can come before it.
func (w *wire) start(call ToolCall, done CallReceiver) (PendingCall, error) {
	c := w.c
	id := w.newID()
	parts, err := c.encodeToolCall(id, call)
	if err != nil {
		return PendingCall{}, fmt.Errorf("server %q: tool %q: %w", c.name, call.Name, err)
	}
	e := entry{done: done, method: "tools/call"}
	if c.era == EraModern {
		// A copy of its own, made only here: the call's params are kept
		// for its rounds only where there can be rounds.
		kept := call
		e.started = &kept
	}
	if _, err := w.register(id, e, nil); err != nil {
		return PendingCall{}, err
	}
	// A failed write ends the connection (lineConn.writeErr), and its end
	// ends this call with the connection's error: the write's error is
	// not the call's to report.
	c.lc.send(parts, w.goBG)
	return PendingCall{w: w, id: id}, nil
}
