package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Claude Code keeps its MCP servers in ~/.claude.json next to its own
// state, which has been seen to grow to tens of megabytes. Only the
// mcpServers objects are decoded: the rest is checked for syntax and
// walked over in place, never copied or turned into values.

// claudeServers returns the extent data[start:end] of the mcpServers
// value of ~/.claude.json: the top-level one (user scope) or that of
// projects[project] (local scope, when project is not empty). found is
// false when the file has none. As in Claude Code, the file is strict
// JSON, and of a key given twice the last counts.
func claudeServers(file string, data []byte, project string) (start, end int, found bool, e *Error) {
	if e := checkJSONSyntax(file, data); e != nil {
		return 0, 0, false, e
	}
	start, end = 0, len(data)
	path := []string{"mcpServers"}
	if project != "" {
		path = []string{"projects", project, "mcpServers"}
	}
	for _, key := range path {
		if start, end, found = lastJSONMember(data, start, end, key); !found {
			return 0, 0, false, nil
		}
	}
	return start, end, true, nil
}

// checkJSONSyntax checks that data is one JSON value, nested no deeper
// than maxNesting, without decoding it.
func checkJSONSyntax(file string, data []byte) *Error {
	if e := checkJSONShape(file, data, 0, len(data), false); e != nil {
		return e
	}
	// Unmarshal checks the whole input before it hands skipValue its
	// bytes, in place.
	err := json.Unmarshal(data, new(skipValue))
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		if strings.HasPrefix(se.Error(), "unexpected end") {
			return positioned(file, data, int64(len(data)), "invalid JSON", "unexpected end of input")
		}
		return positioned(file, data, se.Offset-1, "invalid JSON", se.Error())
	default:
		return &Error{File: file, Message: "invalid JSON: " + err.Error()}
	}
}

// skipValue takes a JSON value without decoding or copying it.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// lastJSONMember returns the extent of the value of the last member named
// key of data[from:to], valid JSON; found is false when there is none, or
// when data[from:to] is not an object.
func lastJSONMember(data []byte, from, to int, key string) (start, end int, found bool) {
	eachJSONMember(data, from, to, func(k string, s, t int) {
		if k == key {
			start, end, found = s, t, true
		}
	})
	return start, end, found
}

// eachJSONMember calls f with each member's key and the extent of its
// value, in order, when data[from:to], valid JSON, is an object; it does
// nothing for another value.
func eachJSONMember(data []byte, from, to int, f func(key string, start, end int)) {
	i := skipJSONBlanks(data[:to], from)
	if i >= to || data[i] != '{' {
		return
	}
	for i++; ; i++ {
		i = skipJSONBlanks(data[:to], i)
		if i >= to || data[i] != '"' {
			return // "}": the end of the object
		}
		keyEnd := skipJSONString(data[:to], i) + 1
		key := string(data[i+1 : keyEnd-1])
		if bytes.IndexByte(data[i:keyEnd], '\\') >= 0 {
			_ = json.Unmarshal(data[i:keyEnd], &key) // valid: checked
		}
		i = skipJSONBlanks(data[:to], keyEnd) + 1 // past the colon
		start := skipJSONBlanks(data[:to], i)
		end := skipJSONValue(data[:to], start)
		f(key, start, end)
		i = skipJSONBlanks(data[:to], end)
		if i >= to || data[i] != ',' {
			return
		}
	}
}

func skipJSONBlanks(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipJSONValue returns the index just past the valid JSON value starting
// at data[i].
func skipJSONValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipJSONString(data, i) + 1
	case '[', '{':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipJSONString(data, i)
			case '[', '{':
				depth++
			case ']', '}':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(data) && strings.IndexByte(",]} \t\r\n", data[i]) < 0 {
		i++
	}
	return i
}
