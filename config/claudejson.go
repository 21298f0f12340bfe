package config

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
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
	m, _ := jsonscan.Object(data[from:to])
	for {
		k, v, ok := m.Next()
		if !ok {
			return start, end, found
		}
		if jsonscan.NameIs(k, key) {
			start = from + m.ValueOffset()
			end, found = start+len(v), true
		}
	}
}

// eachJSONMember calls f with each member's key (unescaped) and the
// extent of its value, in order, when data[from:to], valid JSON, is an
// object; it does nothing for another value.
func eachJSONMember(data []byte, from, to int, f func(key string, start, end int)) {
	m, _ := jsonscan.Object(data[from:to])
	for {
		k, v, ok := m.Next()
		if !ok {
			return
		}
		start := from + m.ValueOffset()
		f(string(jsonscan.AppendName(nil, k)), start, start+len(v))
	}
}
