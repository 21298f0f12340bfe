package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
)

// The requests of a connection are encoded here from the caller's bytes:
// the host's arguments and _meta values go to the server as the host wrote
// them (whitespace between tokens compacted, so that a newline cannot end
// a stdio line), never decoded into Go values and encoded again.

// protocolMetaPrefix starts the _meta keys the protocol reserves for
// itself (io.modelcontextprotocol/protocolVersion and the others).
const protocolMetaPrefix = "io.modelcontextprotocol/"

// connectionMetaKey reports whether k is a _meta key a modern connection
// sets on every request itself (modernMeta): the caller's value of such a
// key is not sent, as the connection's is. Other keys of the protocol's
// space (a related task, an extension's) are the caller's to send.
func connectionMetaKey(k string) bool {
	switch k {
	case protocolMetaPrefix + "protocolVersion", protocolMetaPrefix + "clientInfo",
		protocolMetaPrefix + "clientCapabilities", protocolMetaPrefix + "logLevel":
		return true
	}
	return false
}

// encodeToolCall builds the tools/call request line of the request id:
// one part for a small request, three (head, the arguments in place,
// tail) for large arguments.
func (c *Conn) encodeToolCall(id int64, call ToolCall) ([][]byte, error) {
	size := 256 + len(c.meta)
	if len(call.Arguments) <= rawWriteInPlace {
		size += len(call.Arguments) // the line is built whole in head
	}
	head := make([]byte, 0, size)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = strconv.AppendInt(head, id, 10)
	head = append(head, `,"method":"tools/call","params":`...)
	head, args, err := c.appendToolCallHead(head, call)
	if err != nil {
		return nil, err
	}
	if len(args) <= rawWriteInPlace {
		line, err := c.appendToolCallTail(append(head, args...), call)
		if err != nil {
			return nil, err
		}
		return [][]byte{append(line, "}\n"...)}, nil
	}
	tail, err := c.appendToolCallTail(nil, call)
	if err != nil {
		return nil, err
	}
	return [][]byte{head, args, append(tail, "}\n"...)}, nil
}

// toolCallParams is the params object of a tools/call.
func (c *Conn) toolCallParams(call ToolCall) (json.RawMessage, error) {
	head, args, err := c.appendToolCallHead(nil, call)
	if err != nil {
		return nil, err
	}
	return c.appendToolCallTail(append(head, args...), call)
}

// appendToolCallHead appends the params of call to dst up to its
// arguments, and returns the arguments (compacted if they had layout)
// apart, so that large arguments can be written in place.
func (c *Conn) appendToolCallHead(dst []byte, call ToolCall) (head, args []byte, err error) {
	head = append(dst, '{')
	proto := c.meta
	if call.Task != nil && c.era == EraModern {
		proto = c.taskMeta // the tasks extension, declared on this call
	}
	if call.Rounds.Capabilities != nil {
		// The caller's capabilities of this call win.
		if proto, err = c.proto(call.Rounds); err != nil {
			return nil, nil, err
		}
	}
	if len(call.Meta) > 0 || len(proto) > 0 {
		head = append(head, `"_meta":`...)
		if head, err = appendMeta(head, call.Meta, proto); err != nil {
			return nil, nil, fmt.Errorf("encoding _meta: %w", err)
		}
		head = append(head, ',')
	}
	head = append(head, `"name":`...)
	head = appendJSONString(head, call.Name)
	head = append(head, `,"arguments":`...)
	args = call.Arguments
	if jsonscan.HasLayout(args) {
		// Whitespace between tokens (a newline would end the line):
		// compacted, as go-sdk's encoder does.
		if args, err = appendCompact(nil, args); err != nil {
			return nil, nil, fmt.Errorf("arguments: %w", err)
		}
	}
	return head, args, nil
}

// appendToolCallTail appends what follows the arguments in the params of
// call, the closing brace included.
func (c *Conn) appendToolCallTail(dst []byte, call ToolCall) ([]byte, error) {
	// The task parameter is 2025-11-25's: modern servers decide on tasks
	// themselves (the tasks extension).
	if call.Task != nil && c.era != EraModern {
		dst = append(dst, `,"task":`...)
		var err error
		if dst, err = appendCompact(dst, call.Task); err != nil {
			return nil, fmt.Errorf("task: %w", err)
		}
	}
	if c.era == EraModern {
		var err error
		if dst, err = call.Rounds.appendTo(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// rawWriteInPlace is the argument size above which the arguments are
// written in place rather than copied into the request line.
const rawWriteInPlace = 64 << 10

// appendMeta appends the _meta object of a request: the connection's own
// members proto (modern connections), then the caller's meta, keys sorted,
// with json.RawMessage values compacted and otherwise as they are, other
// values encoded without HTML escaping. A caller's key that the
// connection sets itself (connectionMetaKey) is not sent on a modern
// connection.
func appendMeta(dst []byte, meta map[string]any, proto []byte) ([]byte, error) {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if len(proto) > 0 && connectionMetaKey(k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	dst = append(dst, proto...)
	for i, k := range keys {
		if i > 0 || len(proto) > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		switch v := meta[k].(type) {
		case json.RawMessage:
			var err error
			if dst, err = appendCompact(dst, v); err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
		default:
			b, err := marshalNoEscape(v)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			dst = append(dst, b...)
		}
	}
	return append(dst, '}'), nil
}

// withMeta returns params (a JSON object, or nil for {}) with the
// connection's _meta: on a modern connection its members are added to the
// params' _meta (made when there is none); on a legacy one params are
// returned as they are.
func (c *Conn) withMeta(params json.RawMessage) json.RawMessage {
	return c.withMetaOf(params, c.meta)
}

// withMetaOf is withMeta with the protocol's members proto.
func (c *Conn) withMetaOf(params json.RawMessage, proto []byte) json.RawMessage {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if len(proto) == 0 {
		return params
	}
	if p, ok := bytes.CutPrefix(params, []byte(`{"_meta":{`)); ok && bytes.HasPrefix(p, proto) {
		return params // ours, with the connection's _meta (tools/call)
	}
	ms, err := members(params)
	if err != nil {
		return params // checked by the caller: cannot happen
	}
	i := slices.IndexFunc(ms, func(m member) bool { return m.name == "_meta" })
	if i < 0 {
		out := make([]byte, 0, len(params)+len(proto)+16)
		out = append(out, `{"_meta":{`...)
		out = append(out, proto...)
		out = append(out, '}')
		if body := bytes.TrimSpace(params[1 : len(params)-1]); len(body) > 0 {
			out = append(out, ',')
			out = append(out, body...)
		}
		return append(out, '}')
	}
	var given map[string]json.RawMessage
	if json.Unmarshal(ms[i].value, &given) != nil {
		given = nil
	}
	meta := make(map[string]any, len(given))
	for k, v := range given {
		meta[k] = v
	}
	merged, err := appendMeta(nil, meta, proto)
	if err != nil {
		return params
	}
	out, err := setMember(params, "_meta", merged)
	if err != nil {
		return params
	}
	return out
}

// encodeNotification is the line of a notification.
func encodeNotification(method string, params json.RawMessage) []byte {
	b := make([]byte, 0, 64+len(params))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, "}\n"...)
}

// marshalNoEscape encodes v as JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonString is s as a JSON string, without HTML escaping.
func jsonString(s string) []byte { return appendJSONString(nil, s) }

// appendCompact appends the valid JSON text v without whitespace between
// its tokens (as it is when it has none).
func appendCompact(dst, v []byte) ([]byte, error) {
	if !jsonscan.HasLayout(v) {
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
	b, _ := marshalNoEscape(s) // a string always encodes
	return append(dst, b...)
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

// responseMembers reads the top-level members of a response line: its id,
// and its result or error, as slices of line. ok is false for anything
// that is not a response (a request or notification has a method).
func responseMembers(line []byte) (id, result, errv []byte, ok bool) {
	m, ok := jsonscan.Object(line)
	if !ok {
		return nil, nil, nil, false
	}
	var buf [16]byte // the names that matter fit: no allocation
	for {
		name, value, more := m.Next()
		if !more {
			break
		}
		switch string(jsonscan.AppendName(buf[:0], name)) {
		case "id":
			id = value
		case "result":
			result = value
		case "error":
			errv = value
		case "method":
			return nil, nil, nil, false
		}
	}
	if string(errv) == "null" {
		errv = nil
	}
	return id, result, errv, id != nil && (result != nil || errv != nil)
}
