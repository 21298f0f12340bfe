package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// Over stdio, tools/call does not go through go-sdk: it is the hot path of
// the sidecar, and go-sdk would encode the request through its own types,
// decode the result into Go values that nobody reads (the sidecar forwards
// the server's bytes), and hand the answer between two goroutines more.
// Here the request line is written from the host's bytes (the arguments and
// the _meta values spliced in), and the response line is taken off the read
// path before go-sdk sees it, its result a slice of the line. go-sdk keeps
// the handshake, every other request, notifications and the server's own
// requests; its ids are numbers, the ids here strings ("r1", "r2", ...), so
// the two never meet.
//
// Progress and list_changed notifications keep their wire order: they are
// delivered on the same read path, before the line that answers the call.
//
// A call need not wait in a goroutine of its own (StartToolCall): its line
// is written without blocking (what the server's input does not take at
// once goes on a goroutine of the connection), in the order of sending
// (lineConn.send), and its answer is handed to a callback on the read
// path. CallTool waits on that callback.

// rawCalls are the tools/call requests of one stdio connection written
// here, waiting for their response lines. The waiting map decides each
// call's fate: whoever takes a call out of it (its response, its caller
// giving up, the connection's end) is the one that ends it, once.
type rawCalls struct {
	server string    // for error messages
	conn   *lineConn // set once go-sdk connected the transport

	seq atomic.Uint64 // the number of the last id "rN" issued

	mu      sync.Mutex
	waiting map[uint64]CallReceiver // by the number of the id
	ended   error                   // the connection's end: no call starts after it

	// bg counts the goroutines that write for a call off its caller's path
	// (the rest of a line the server's input did not take at once, a
	// notifications/cancelled) or end calls when the connection ended, so
	// that teardown can wait for them (writes end when the pipe closes).
	bg sync.WaitGroup
}

// maxRawCallProtocol is the latest protocol version whose tools/call the
// raw path writes: later versions have go-sdk add request metadata of its
// own.
const maxRawCallProtocol = DefaultProtocolVersion

// rawCallsUsable reports whether tools/call may take the raw path on c.
func (c *Conn) rawCallsUsable() bool {
	return c.rawCalls != nil && c.rawCalls.conn != nil && c.transport == config.TransportStdio &&
		c.protocol != "" && c.protocol <= maxRawCallProtocol
}

// ErrNotStartable is StartToolCall's answer on a connection where a call
// cannot be sent without waiting (Streamable HTTP, or a protocol version
// the raw path does not write): use CallTool or CallToolTask.
var ErrNotStartable = errors.New("tools/call cannot be started without waiting on this connection")

// CanStartToolCall reports whether StartToolCall works on c (it does over
// stdio, for the protocol versions the raw path writes).
func (c *Conn) CanStartToolCall() bool { return c.rawCallsUsable() }

// A CallReceiver gets the end of a call StartToolCall sent: an interface
// rather than a function, so that the caller's record of the call (which
// it allocates anyway) is all a call allocates to be answered.
type CallReceiver interface {
	// CallEnded gets the result (the server's bytes) or the error, once.
	CallEnded(result json.RawMessage, err error)
}

// PendingCall is a tools/call started by StartToolCall.
type PendingCall struct {
	rc *rawCalls
	n  uint64
}

// StartToolCall sends tools/call and returns without waiting for the
// answer, and without blocking: what the server's input does not take at
// once is written by a goroutine of the connection. done gets the result
// (the server's bytes) or the error exactly once, unless Cancel reports
// that it took the call back: on the connection's read path when the
// response arrives (after the notifications the server sent before it,
// in their order), or, when the connection ends first, on a goroutine of
// the connection with the connection's error (Err). done must not block
// for long: it holds up the server's later messages, and the result is a
// slice of the server's line, valid only until done returns.
//
// args are the raw arguments (nil means {}), meta the _meta entries as
// for CallTool, task nil or the task parameter (a JSON object). It
// returns ErrNotStartable where the call needs CallTool, and the
// connection's error once it ended; done is not called then.
func (c *Conn) StartToolCall(name string, args json.RawMessage, meta map[string]any, task json.RawMessage, done CallReceiver) (PendingCall, error) {
	if !c.rawCallsUsable() {
		return PendingCall{}, ErrNotStartable
	}
	args, err := c.checkCallParams(name, args, task)
	if err != nil {
		return PendingCall{}, err
	}
	return c.rawCalls.start(name, args, meta, task, done)
}

// Cancel takes the call back: done will not be called, and the server is
// sent notifications/cancelled with cause as its reason. It reports false
// when the call had ended already (done was called or is being called).
func (p PendingCall) Cancel(cause error) bool {
	if !p.rc.forget(p.n) {
		return false
	}
	p.rc.cancelled(p.n, cause)
	return true
}

// callToolRaw is callTool over the raw path, waiting for the answer. args
// are valid JSON; task is nil or a JSON object.
func (c *Conn) callToolRaw(ctx context.Context, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(answerChan, 1)
	call, err := c.rawCalls.start(name, args, meta, task, ch)
	if err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.result, a.err
	case <-ctx.Done():
		if call.Cancel(ctx.Err()) {
			return nil, ctx.Err()
		}
		a := <-ch // the answer won the race
		return a.result, a.err
	}
}

// answer is the end of a call callToolRaw waits for.
type answer struct {
	result json.RawMessage
	err    error
}

// answerChan hands a call's end to the goroutine that waits for it.
type answerChan chan answer

// CallEnded keeps a copy of the result: the line it is a slice of is
// reused once CallEnded returns.
func (ch answerChan) CallEnded(res json.RawMessage, err error) {
	ch <- answer{bytes.Clone(res), err} // buffered: never blocks
}

// start registers a call and writes its line. The line is built before
// the call is registered, so that an encoding error leaves nothing behind,
// and the call is registered before a byte is written, so that no answer
// can come before it.
func (rc *rawCalls) start(name string, args json.RawMessage, meta map[string]any, task json.RawMessage, done CallReceiver) (PendingCall, error) {
	n := rc.seq.Add(1)
	parts, err := encodeToolCall(n, name, args, meta, task)
	if err != nil {
		return PendingCall{}, fmt.Errorf("server %q: tool %q: %w", rc.server, name, err)
	}
	rc.mu.Lock()
	if rc.ended != nil {
		err := rc.ended
		rc.mu.Unlock()
		return PendingCall{}, err
	}
	if rc.waiting == nil {
		rc.waiting = make(map[uint64]CallReceiver)
	}
	rc.waiting[n] = done
	rc.mu.Unlock()
	// A failed write ends the connection (lineConn.writeErr), and its end
	// ends this call with the connection's error: the write's error is
	// not the call's to report.
	rc.conn.send(parts, rc.goBG)
	return PendingCall{rc: rc, n: n}, nil
}

// goBG runs f on a goroutine that teardown waits for, unless the
// connection ended (then f does not run, and it reports false): the
// WaitGroup gains no work once teardown waits on it.
func (rc *rawCalls) goBG(f func()) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.ended != nil {
		return false
	}
	rc.bg.Go(f)
	return true
}

// forget takes the call n back; false if it had ended already.
func (rc *rawCalls) forget(n uint64) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, ok := rc.waiting[n]
	delete(rc.waiting, n)
	return ok
}

// fail ends every waiting call with the connection's error and lets no
// call start again. It runs once the connection ended, before teardown
// waits for bg.
func (rc *rawCalls) fail(cause error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.ended != nil {
		return
	}
	rc.ended = cause
	if len(rc.waiting) == 0 {
		return
	}
	waiting := rc.waiting
	rc.waiting = nil
	// Off the connection's teardown: a caller's done may write to a host
	// that is slow to read.
	rc.bg.Go(func() {
		for _, done := range waiting {
			done.CallEnded(nil, cause)
		}
	})
}

// take ends the call line answers, and reports whether line answers a raw
// call (or is the late answer of one given up): such a line is not
// go-sdk's. It runs on the read path, in wire order.
func (rc *rawCalls) take(line []byte) bool {
	id, result, errv, ok := responseMembers(line)
	if !ok || !bytes.HasPrefix(id, []byte(`"r`)) {
		return false
	}
	n, err := strconv.ParseUint(string(id[2:len(id)-1]), 10, 64)
	if err != nil {
		return true // not an id issued here: dropped
	}
	rc.mu.Lock()
	done := rc.waiting[n]
	delete(rc.waiting, n)
	rc.mu.Unlock()
	if done != nil {
		done.CallEnded(rc.result(result, errv))
	}
	return true
}

// result turns a response's members into StartToolCall's result.
func (rc *rawCalls) result(result, errv json.RawMessage) (json.RawMessage, error) {
	if errv == nil {
		if err := checkResult(rc.server, "tools/call", result); err != nil {
			return nil, err
		}
		return result, nil
	}
	var e struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(errv, &e); err != nil {
		return nil, fmt.Errorf("server %q: tools/call: malformed error %.200s: %w", rc.server, errv, err)
	}
	return nil, &ServerError{Server: rc.server, Method: "tools/call", Code: e.Code, Message: e.Message, Data: e.Data}
}

// encodeToolCall builds the tools/call request line of the call n: one
// part for a small request, three (head, the arguments in place, tail)
// for large arguments.
func encodeToolCall(n uint64, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) ([][]byte, error) {
	head := make([]byte, 0, 256)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = appendRawID(head, n)
	head = append(head, `,"method":"tools/call","params":{`...)
	if len(meta) > 0 {
		head = append(head, `"_meta":`...)
		var err error
		if head, err = appendMeta(head, meta); err != nil {
			return nil, fmt.Errorf("encoding _meta: %w", err)
		}
		head = append(head, ',')
	}
	head = append(head, `"name":`...)
	head = appendJSONString(head, name)
	head = append(head, `,"arguments":`...)
	if hasLayout(args) {
		// Whitespace between tokens (a newline would end the line):
		// compacted, as go-sdk's encoder does.
		var err error
		if args, err = appendCompact(nil, args); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
	}
	var tail []byte
	if task != nil {
		tail = append(tail, `,"task":`...)
		var err error
		if tail, err = appendCompact(tail, task); err != nil {
			return nil, fmt.Errorf("task: %w", err)
		}
	}
	if len(args) <= rawWriteInPlace {
		line := append(append(head, args...), tail...)
		return [][]byte{append(line, "}}\n"...)}, nil
	}
	return [][]byte{head, args, append(tail, "}}\n"...)}, nil
}

// appendRawID appends the id of the raw call n: "rN", a string, so that
// it never meets go-sdk's numbers.
func appendRawID(dst []byte, n uint64) []byte {
	dst = append(dst, `"r`...)
	dst = strconv.AppendUint(dst, n, 10)
	return append(dst, '"')
}

// rawWriteInPlace is the argument size above which the arguments are
// written in place rather than copied into the request line.
const rawWriteInPlace = 64 << 10

// cancelled tells the server that the caller gave up on the call n, off
// the caller's path (a server that does not read its stdin cannot hold the
// caller up), as go-sdk does for its own calls.
func (rc *rawCalls) cancelled(n uint64, cause error) {
	reason, _ := json.Marshal(cause.Error())
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":%s,"requestId":%s}}`+"\n", reason, appendRawID(nil, n))
	rc.conn.send([][]byte{line}, rc.goBG) // after the request it cancels
}

// appendMeta appends meta as a JSON object, keys sorted (as go-sdk's
// encoder wrote it), json.RawMessage values compacted and otherwise as
// they are, other values encoded without HTML escaping.
func appendMeta(dst []byte, meta map[string]any) ([]byte, error) {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		var b bytes.Buffer
		switch v := meta[k].(type) {
		case json.RawMessage:
			var err error
			if dst, err = appendCompact(dst, v); err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			continue
		default:
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			b.Truncate(b.Len() - 1)
		}
		dst = append(dst, b.Bytes()...)
	}
	return append(dst, '}'), nil
}

// appendCompact appends the valid JSON text v without whitespace between
// its tokens (as it is when it has none).
func appendCompact(dst, v []byte) ([]byte, error) {
	if !hasLayout(v) {
		return append(dst, v...), nil
	}
	b := bytes.NewBuffer(dst)
	if err := json.Compact(b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendJSONString appends s as a JSON string without HTML escaping.
func appendJSONString(dst []byte, s string) []byte {
	if plainString(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// plainString reports whether s is printable ASCII that JSON writes as it
// is: no quote, backslash or control character.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// hasLayout reports whether the valid JSON text b has whitespace between
// its tokens (whitespace inside strings does not count).
func hasLayout(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true
		}
	}
	return false
}

// responseMembers reads the top-level members of a response line: its id,
// and its result or error, as slices of line. ok is false for anything
// that is not a response (a request or notification has a method).
func responseMembers(line []byte) (id, result, errv []byte, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, nil, nil, false
	}
	i++
	for {
		i = skipSpace(line, i)
		if i >= len(line) || line[i] != '"' {
			return nil, nil, nil, false
		}
		kEnd := stringEnd(line, i)
		key := line[i:kEnd]
		i = skipSpace(line, kEnd)
		if i >= len(line) || line[i] != ':' {
			return nil, nil, nil, false
		}
		i = skipSpace(line, i+1)
		vEnd := valueEnd(line, i)
		value := bytes.TrimRight(line[i:vEnd], " \t\r\n")
		switch string(key) {
		case `"id"`:
			id = value
		case `"result"`:
			result = value
		case `"error"`:
			errv = value
		case `"method"`:
			return nil, nil, nil, false
		}
		i = skipSpace(line, vEnd)
		if i >= len(line) {
			return nil, nil, nil, false
		}
		if line[i] == '}' {
			break
		}
		if line[i] != ',' {
			return nil, nil, nil, false
		}
		i++
	}
	if string(errv) == "null" {
		errv = nil
	}
	return id, result, errv, id != nil && (result != nil || errv != nil)
}
