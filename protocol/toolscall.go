package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
)

// ParseToolsCallParams decodes the params of tools/call, which must be
// valid JSON (a frame's params are), without copying what is forwarded to
// the server: Arguments, SandboxState, Task and the values of Meta are
// slices of params. A 1 MiB argument is then held once, in the frame,
// until it is written to the server. Member names are case-sensitive; an
// absent or null member leaves its field zero (a null raw member is the
// bytes null, as encoding/json has it).
func ParseToolsCallParams(params json.RawMessage) (ToolsCallParams, error) {
	var p ToolsCallParams
	if t := bytes.TrimSpace(params); len(t) == 0 || string(t) == "null" {
		return p, nil
	}
	m, ok := jsonscan.Object(params)
	if !ok {
		return p, errors.New("params must be a JSON object")
	}
	var buf [32]byte
	for {
		name, v, ok := m.Next()
		if !ok {
			return p, nil
		}
		if err := p.member(jsonscan.AppendName(buf[:0], name), v); err != nil {
			return p, err
		}
	}
}

// member decodes the member name of tools/call's params into p.
func (p *ToolsCallParams) member(name, v []byte) error {
	switch string(name) {
	case "sessionId":
		return decodeString("sessionId", v, &p.SessionID)
	case "name":
		return decodeString("name", v, &p.Name)
	case "server":
		return decodeString("server", v, &p.Server)
	case "tool":
		return decodeString("tool", v, &p.Tool)
	case "arguments":
		p.Arguments = v
	case "sandboxState":
		p.SandboxState = v
	case "task":
		p.Task = v
	case "inputResponses":
		p.InputResponses = v
	case "requestState":
		p.RequestState = v
	case "clientCapabilities":
		p.ClientCapabilities = v
	case "timeoutMs":
		if string(v) != "null" {
			n, err := ParseIntegerField("timeoutMs", v)
			if err != nil {
				return err
			}
			p.TimeoutMs = n
		}
	case "meta":
		return decodeMeta(v, &p.Meta)
	}
	return nil
}

// decodeString decodes the JSON string v into dst; null leaves it alone.
func decodeString(name string, v []byte, dst *string) error {
	switch {
	case string(v) == "null":
		return nil
	case len(v) < 2 || v[0] != '"':
		return fmt.Errorf("%s must be a string", name)
	case bytes.IndexByte(v, '\\') < 0:
		*dst = string(v[1 : len(v)-1])
		return nil
	}
	// Into a variable of its own: dst given to Unmarshal would move the
	// caller's whole ToolsCallParams to the heap, for every call.
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return err
	}
	*dst = s
	return nil
}

// decodeMeta decodes the meta object, its values as slices of v.
func decodeMeta(v []byte, dst *map[string]json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	it, ok := jsonscan.Object(v)
	if !ok {
		return errors.New("meta must be a JSON object")
	}
	m := make(map[string]json.RawMessage)
	for {
		name, value, ok := it.Next()
		if !ok {
			break
		}
		m[string(jsonscan.AppendName(nil, name))] = value
	}
	*dst = m
	return nil
}
