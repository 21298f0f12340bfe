package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

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

// rawCalls are the tools/call requests of one stdio connection written
// here, waiting for their response lines.
type rawCalls struct {
	conn *lineConn // set once go-sdk connected the transport

	mu      sync.Mutex
	next    uint64
	waiting map[string]chan rawReply // by the id's JSON text

	// bg counts the notifications/cancelled writes in flight, so that
	// teardown can wait for them (they end when the pipe closes).
	bg sync.WaitGroup
}

// rawReply is the response line to a raw call: its result or its error
// member, slices of the line.
type rawReply struct {
	result json.RawMessage
	errv   json.RawMessage
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

// callToolRaw is callTool over the raw path. args are valid JSON; task is
// nil or a JSON object.
func (c *Conn) callToolRaw(ctx context.Context, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) (json.RawMessage, error) {
	select {
	case <-c.done:
		return nil, c.Err()
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rc := c.rawCalls
	id, reply := rc.start()
	if err := rc.write(id, name, args, meta, task); err != nil {
		rc.forget(id)
		if waitClosed(c.done, 2*time.Second) {
			return nil, c.Err()
		}
		return nil, fmt.Errorf("server %q: tools/call: %w: %w", c.name, ErrConnectionLost, err)
	}
	select {
	case r := <-reply:
		return c.rawResult(r)
	case <-ctx.Done():
		if !rc.forget(id) {
			return c.rawResult(<-reply) // the answer won the race
		}
		rc.cancelled(id, ctx.Err())
		return nil, ctx.Err()
	case <-c.done:
		if !rc.forget(id) {
			return c.rawResult(<-reply)
		}
		return nil, c.Err()
	}
}

// rawResult turns a response into CallTool's result.
func (c *Conn) rawResult(r rawReply) (json.RawMessage, error) {
	if r.errv == nil {
		if err := c.checkResult("tools/call", r.result); err != nil {
			return nil, err
		}
		return r.result, nil
	}
	var e struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.errv, &e); err != nil {
		return nil, fmt.Errorf("server %q: tools/call: malformed error %.200s: %w", c.name, r.errv, err)
	}
	return nil, &ServerError{Server: c.name, Method: "tools/call", Code: e.Code, Message: e.Message, Data: e.Data}
}

// start registers a new call and returns its id text and where its answer
// arrives.
func (rc *rawCalls) start() (string, chan rawReply) {
	ch := make(chan rawReply, 1)
	rc.mu.Lock()
	rc.next++
	id := `"r` + strconv.FormatUint(rc.next, 10) + `"`
	if rc.waiting == nil {
		rc.waiting = make(map[string]chan rawReply)
	}
	rc.waiting[id] = ch
	rc.mu.Unlock()
	return id, ch
}

// forget stops waiting for id; false if its answer was delivered already.
func (rc *rawCalls) forget(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, ok := rc.waiting[id]
	delete(rc.waiting, id)
	return ok
}

// take delivers line if it answers a raw call, and reports whether it did
// (or whether it is the late answer of one given up): such a line is not
// go-sdk's. It runs on the read path, in wire order.
func (rc *rawCalls) take(line []byte) bool {
	id, result, errv, ok := responseMembers(line)
	if !ok || !bytes.HasPrefix(id, []byte(`"r`)) {
		return false
	}
	rc.mu.Lock()
	ch, waiting := rc.waiting[string(id)]
	delete(rc.waiting, string(id))
	rc.mu.Unlock()
	if waiting {
		ch <- rawReply{result: result, errv: errv} // buffered: never blocks
	}
	return true
}

// write writes the tools/call request line: one write for a small request,
// three (head, arguments in place, tail) for large arguments.
func (rc *rawCalls) write(id, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) error {
	head := make([]byte, 0, 256)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	head = append(head, `,"method":"tools/call","params":{`...)
	if len(meta) > 0 {
		head = append(head, `"_meta":`...)
		var err error
		if head, err = appendMeta(head, meta); err != nil {
			return fmt.Errorf("encoding _meta: %w", err)
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
			return fmt.Errorf("arguments: %w", err)
		}
	}
	tail := make([]byte, 0, 16+len(task))
	if task != nil {
		tail = append(tail, `,"task":`...)
		var err error
		if tail, err = appendCompact(tail, task); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	}
	tail = append(tail, "}}\n"...)
	if len(args) <= rawWriteInPlace {
		return rc.conn.writeParts(append(append(head, args...), tail...))
	}
	return rc.conn.writeParts(head, args, tail)
}

// rawWriteInPlace is the argument size above which the arguments are
// written in place rather than copied into the request line.
const rawWriteInPlace = 64 << 10

// cancelled tells the server that the caller gave up on id, off the
// caller's path (a server that does not read its stdin cannot hold the
// caller up), as go-sdk does for its own calls.
func (rc *rawCalls) cancelled(id string, cause error) {
	reason, _ := json.Marshal(cause.Error())
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":%s,"requestId":%s}}`+"\n", reason, id)
	rc.bg.Go(func() { _ = rc.conn.writeParts(line) })
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
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
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
