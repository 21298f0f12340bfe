package protocol

import (
	"encoding/json"
	"errors"
)

// RequestSample relays a server's sampling/createMessage to the host
// (SampleParams); the host answers MCP's CreateMessageResult.
const RequestSample = "mcp/sample"

// SampleParams are the params of mcp/sample. Params are the server's
// sampling/createMessage params as it sent them.
type SampleParams struct {
	SessionID string          `json:"sessionId"`
	Server    string          `json:"server"`
	Params    json.RawMessage `json:"params"`
}

// SamplingCapability is the host's capabilities.sampling: {} when the host
// samples, {"tools": {}} when it can sample with tools. Absent, null or
// false: it does not.
type SamplingCapability struct {
	Enabled bool
	Tools   bool
}

func (c *SamplingCapability) UnmarshalJSON(data []byte) error {
	*c = SamplingCapability{}
	var b bool
	if json.Unmarshal(data, &b) == nil {
		c.Enabled = b
		return nil
	}
	var obj *struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return errors.New("capabilities.sampling must be an object ({} or {\"tools\": {}})")
	}
	if obj == nil {
		return nil
	}
	c.Enabled = true
	c.Tools = present(obj.Tools)
	return nil
}

func (c SamplingCapability) MarshalJSON() ([]byte, error) {
	switch {
	case c.Tools:
		return []byte(`{"tools":{}}`), nil
	case c.Enabled:
		return []byte(`{}`), nil
	}
	return []byte(`null`), nil
}

// present reports whether an optional member was given and not null or
// false.
func present(raw json.RawMessage) bool {
	s := string(raw)
	return s != "" && s != "null" && s != "false"
}
