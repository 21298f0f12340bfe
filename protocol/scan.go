package protocol

import (
	"bytes"
	"encoding/json"
)

// members records the top-level members of a message object that matter
// for telling requests, notifications and responses apart. The last of
// duplicate keys wins, as in encoding/json.
type members struct {
	id, method, result, errv, params []byte // raw values; nil if absent
	// responseLike is set when a "result" or "error" key was seen, even if
	// its value could not be read.
	responseLike bool
}

// scanMembers reads the top-level members of the JSON object data starts
// with, without decoding their values. It tolerates bad JSON: it stops at
// the first syntax error or at the end of data, keeping what it found
// before, so it can recover an id from a body that is invalid or truncated.
func scanMembers(data []byte) (m members) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return m
	}
	i++
	for {
		i = skipWS(data, i)
		if i >= len(data) || data[i] != '"' {
			return m
		}
		kEnd, ok := scanString(data, i)
		if !ok {
			return m
		}
		name := memberName(data[i:kEnd])
		i = skipWS(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return m
		}
		i = skipWS(data, i+1)
		vEnd, ok := scanValue(data, i)
		if name == "result" || name == "error" {
			m.responseLike = true
		}
		if !ok {
			return m
		}
		val := data[i:vEnd]
		switch name {
		case "id":
			m.id = val
		case "method":
			m.method = val
		case "result":
			m.result = val
		case "error":
			m.errv = val
		case "params":
			m.params = val
		}
		i = skipWS(data, vEnd)
		if i >= len(data) || data[i] != ',' {
			return m
		}
		i++
	}
}

// memberName returns the name of a quoted key if it is one scanMembers
// records, else "".
func memberName(key []byte) string {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return ""
		}
		inner = []byte(s)
	}
	switch string(inner) {
	case "id":
		return "id"
	case "method":
		return "method"
	case "result":
		return "result"
	case "error":
		return "error"
	case "params":
		return "params"
	}
	return ""
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the end of the JSON string starting at data[i].
func scanString(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			j++
		case c < 0x20:
			return j, false
		}
	}
	return len(data), false
}

// scanValue returns the end of the JSON value starting at data[i]. For
// containers it only balances brackets; a scalar must be followed by a
// delimiter, so that a truncated number is not taken for a whole one.
func scanValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		return scanString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, ok := scanString(data, j)
				if !ok {
					return end, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(data), false
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j, j > i
		}
		j++
	}
	return j, false
}

// eachMember calls f with the name and the raw value of every top-level
// member of the JSON object data, in order. data must be valid JSON (a
// frame's params are: the frame was checked whole); it reports false when
// data is not an object. A name with escapes is unescaped; the values are
// slices of data. name is only valid during the call (f switches on
// string(name), which does not allocate).
func eachMember(data []byte, f func(name, value []byte) error) (bool, error) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false, nil
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true, nil
	}
	for i < len(data) && data[i] == '"' {
		kEnd, _ := scanString(data, i)
		name := data[i+1 : kEnd-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			if err := json.Unmarshal(data[i:kEnd], &s); err != nil {
				return true, err
			}
			name = []byte(s)
		}
		i = skipWS(data, skipWS(data, kEnd)+1) // past the colon
		vEnd, _ := scanValue(data, i)
		if err := f(name, data[i:vEnd]); err != nil {
			return true, err
		}
		i = skipWS(data, vEnd)
		if i >= len(data) || data[i] != ',' {
			break
		}
		i = skipWS(data, i+1)
	}
	return true, nil
}
