package protocol

import "github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"

// members records the top-level members of a message object that matter
// for telling requests, notifications and responses apart. As in
// encoding/json, names are compared unescaped and the last of duplicate
// names wins (internal/jsonscan).
type members struct {
	id, method, result, errv, params []byte // raw values; nil if absent
	// responseLike is set when a "result" or "error" name was seen, even
	// if its value could not be read.
	responseLike bool
}

// scanMembers reads the top-level members of the JSON object data starts
// with, without decoding their values. It tolerates bad JSON: it stops at
// the first member it cannot read whole (a syntax error, or the end of
// data), keeping what it found before, so it can recover an id from a
// body that is invalid or truncated.
func scanMembers(data []byte) members {
	m, _ := jsonscan.Prefix(data)
	return collect(&m)
}

// checkedMembers is scanMembers for a body that was checked whole: its
// values are not checked again.
func checkedMembers(body []byte) members {
	m, _ := jsonscan.Object(body)
	return collect(&m)
}

func collect(it *jsonscan.Members) (m members) {
	var buf [32]byte // the names that matter fit: no allocation
	for {
		name, val, ok := it.Next()
		if !ok {
			return m
		}
		var dst *[]byte
		switch string(jsonscan.AppendName(buf[:0], name)) {
		case "id":
			dst = &m.id
		case "method":
			dst = &m.method
		case "result":
			dst, m.responseLike = &m.result, true
		case "error":
			dst, m.responseLike = &m.errv, true
		case "params":
			dst = &m.params
		default:
			continue
		}
		if val == nil {
			return m // the last member: its value could not be read
		}
		*dst = val
	}
}
