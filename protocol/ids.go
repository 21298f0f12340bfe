package protocol

import (
	"bytes"
	"encoding/json"
)

// Ids are opaque: a request's id is kept as the JSON text the peer wrote
// (any string or number, negative, fractional and big ones included) and
// answered with that text, so nothing here converts an id to a Go number.

// validIDText reports whether raw is the text of a JSON string or number.
func validIDText(raw []byte) bool {
	if len(raw) == 0 || !json.Valid(raw) {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || isDigit(c)
}

// idKey is the key under which a request id is kept in flight, so that the
// id a $/cancelRequest names finds it however the peer spelled the same
// string ("s" and "\u0073" are one id). A number is its text. It reports
// false when raw is not the text of a string or number.
func idKey(raw []byte) (string, bool) {
	raw = bytes.Trim(raw, " \t\r\n")
	if !validIDText(raw) {
		return "", false
	}
	if raw[0] != '"' {
		return "n:" + string(raw), true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return "s:" + string(raw[1:len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return "s:" + s, true
}
