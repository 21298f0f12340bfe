package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// response is a response from the peer, for the call it answers.
type response struct {
	id   json.RawMessage // the id's text; never null
	body []byte          // the whole message; nil when malformed
	err  *Error          // for a malformed response: what its call ends with
}

// readResponse reads messages until a response arrives: on the way it
// answers what is malformed and hands requests and notifications to the
// handler, in read order. It returns io.EOF when the input ends between
// frames (or while skipping input after a bad header, which has been
// answered already), io.ErrUnexpectedEOF when it ends inside a header block
// or a body, and the error of a failed read or reply write.
func (c *Conn) readResponse() (response, error) {
	for {
		c.waitHeld()
		f, err := c.in.next()
		// errors.AsType rather than errors.As: a target variable would be
		// allocated for every frame.
		if he, ok := errors.AsType[*headerError](err); ok {
			if err := c.answer(nil, CodeParseError, KindParseError, "invalid message header: "+he.msg); err != nil {
				return response{}, err
			}
			continue
		}
		if err != nil {
			return response{}, err
		}
		c.frameSize(len(f.body))
		var resp response
		var ok bool
		if f.oversize > 0 {
			msg := fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", f.oversize, f.limit)
			resp, ok, err = c.reject(scanMembers(f.head), CodeParseError, KindParseError, msg)
		} else {
			resp, ok, err = c.classify(f.body)
		}
		if err != nil || ok {
			return resp, err
		}
	}
}

// classify checks one body: a request or notification goes to the
// handler, a response is returned (ok), anything else is answered or
// dropped.
func (c *Conn) classify(body []byte) (resp response, ok bool, err error) {
	i := jsonscan.SkipSpace(body, 0)
	if i == len(body) {
		return response{}, false, c.answer(nil, CodeParseError, KindParseError, "parse error: empty message body")
	}
	if !jsonscan.Valid(body) { // encoding/json.Valid, in a third of its time
		msg := "parse error"
		var raw json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			msg += ": " + err.Error()
		}
		return c.reject(scanMembers(body), CodeParseError, KindParseError, msg)
	}
	switch body[i] {
	case '{':
	case '[':
		return response{}, false, c.answer(nil, CodeInvalidRequest, KindInvalidRequest, "invalid request: batches are not supported")
	default:
		return response{}, false, c.answer(nil, CodeInvalidRequest, KindInvalidRequest, "invalid request: a message must be a JSON object")
	}
	m := checkedMembers(body)
	isRequest := m.method != nil
	isResponse := m.result != nil || (m.errv != nil && string(m.errv) != "null")
	switch {
	case isRequest && isResponse:
		return c.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: message has both a method and a result or error")
	case !isRequest && !isResponse:
		return c.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: message has neither a method nor a result or error")
	case isResponse:
		if m.id == nil || string(m.id) == "null" {
			c.log.Warn("dropping response without an id", peerlog.Bytes("error", m.errv))
			return response{}, false, nil
		}
		return response{id: m.id, body: body}, true, nil
	}
	method, ok := decodeMethod(m.method)
	if !ok {
		return c.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: method must be a string")
	}
	req := &Request{Method: method, Params: m.params}
	if m.id != nil {
		switch ch := m.id[0]; {
		case ch == '"' || ch == '-' || isDigit(ch):
			req.ID = m.id
		case ch == 'n': // null: a notification
		default:
			m.id = nil
			return c.reject(m, CodeInvalidRequest, KindInvalidRequest, "invalid request: id must be a string, a number or null")
		}
	}
	c.deliver(req)
	return response{}, false, nil
}

// reject answers a malformed request. A malformed response is not answered:
// it is returned (ok) with the error its call ends with, or dropped when it
// has no usable id.
func (c *Conn) reject(m members, code int64, kind, msg string) (response, bool, error) {
	if m.method == nil && m.responseLike {
		if m.id == nil || !validIDText(m.id) {
			c.log.Warn("dropping malformed response", peerlog.String("reason", msg), peerlog.Bytes("id", m.id))
			return response{}, false, nil
		}
		return response{id: m.id, err: NewError(code, kind, "malformed response: "+msg)}, true, nil
	}
	var id json.RawMessage
	if m.id != nil && validIDText(m.id) {
		id = m.id
	}
	return response{}, false, c.answer(id, code, kind, msg)
}

// decodeMethod decodes a request's method, a JSON string in a body that
// was checked whole. The methods of the hot path come back as constants,
// so that reading a tools/call allocates no string for its name.
func decodeMethod(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		var method string
		if json.Unmarshal(raw, &method) != nil {
			return "", false
		}
		return method, true
	}
	switch string(inner) {
	case MethodToolsCall:
		return MethodToolsCall, true
	case MethodCancelRequest:
		return MethodCancelRequest, true
	case MethodToolsList:
		return MethodToolsList, true
	}
	return string(inner), true
}
