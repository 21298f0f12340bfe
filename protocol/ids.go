package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
)

// Ids are opaque: a request's id is kept as the JSON text the peer wrote
// (any string or number, negative, fractional and big ones included) and
// answered with that text, so nothing here converts an id to a Go number.

// validIDText reports whether raw is the text of a JSON string or number.
func validIDText(raw []byte) bool {
	if plainID(raw) {
		return true
	}
	if len(raw) == 0 || !jsonscan.Valid(raw) {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || isDigit(c)
}

// plainID reports whether raw is an id as hosts write them, checked
// without a JSON scanner (the id is checked at every turn of a request):
// a non-negative integer without leading zeros, or a string of printable
// ASCII without escapes. false says nothing: json.Valid decides.
func plainID(raw []byte) bool {
	switch {
	case len(raw) == 0 || len(raw) > 64:
		return false
	case raw[0] == '"':
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	case raw[0] == '0':
		return len(raw) == 1
	default:
		for _, c := range raw {
			if !isDigit(c) {
				return false
			}
		}
		return true
	}
}

// An id in flight is kept under the key idSlot gives, so that the id a
// $/cancelRequest names finds it however the peer spelled the same string
// ("s" and "\u0073" are one id): a number under its text, a string under
// its value, in maps of their own. The key is a slice of raw unless the
// string has escapes, so that a lookup allocates nothing.

// idSlot returns the map of c that keeps raw's kind of id and raw's key
// in it; false when raw is not the text of a string or number. c.mu
// must be held.
func (c *Conn) idSlot(raw []byte) (map[string]inflight, []byte, bool) {
	raw = bytes.Trim(raw, " \t\r\n")
	if !validIDText(raw) {
		return nil, nil, false
	}
	if raw[0] != '"' {
		return c.numIDs, raw, true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return c.strIDs, raw[1 : len(raw)-1], true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, nil, false
	}
	return c.strIDs, []byte(s), true
}
