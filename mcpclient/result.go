package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrMalformedResult is the errors.Is target of a server's answer whose
// result is not what MCP says every result is: a JSON object. It is not
// relayed: a host decoding a CallToolResult (or any other) would fail on
// it, or worse, take it for something else.
var ErrMalformedResult = errors.New("malformed result")

// checkResult refuses a result that is not a JSON object.
func (c *Conn) checkResult(method string, raw json.RawMessage) error {
	return checkResult(c.name, method, raw)
}

// checkResult is Conn.checkResult for the server named server.
func checkResult(server, method string, raw json.RawMessage) error {
	if isObject(raw) {
		return nil
	}
	if raw = bytes.TrimSpace(raw); len(raw) == 0 {
		return fmt.Errorf("server %q answered %s with an empty result, not an object: %w", server, method, ErrMalformedResult)
	}
	return fmt.Errorf("server %q answered %s with %s as its result, not an object: %w", server, method, jsonKind(raw[0]), ErrMalformedResult)
}

// jsonKind names the kind of JSON value that starts with b.
func jsonKind(b byte) string {
	switch b {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
