package protocol

import (
	"encoding/json"
	"errors"
)

// NotifyElicitationComplete tells the host that a server finished a URL
// elicitation out of band (notifications/elicitation/complete).
const NotifyElicitationComplete = "mcp/elicitationComplete"

// ElicitationCompleteParams are the params of mcp/elicitationComplete.
type ElicitationCompleteParams struct {
	SessionID     string `json:"sessionId"`
	Server        string `json:"server"`
	ElicitationID string `json:"elicitationId"`
}

// ElicitationCapability is the host's capabilities.elicitation: true (form
// only, as before URL elicitation existed) or {form?: {}, url?: {}}, where
// {} means form only, as in MCP. Absent, null or false: neither.
type ElicitationCapability struct {
	Form bool
	URL  bool
}

// Any reports whether the host handles some elicitation.
func (c ElicitationCapability) Any() bool { return c.Form || c.URL }

func (c *ElicitationCapability) UnmarshalJSON(data []byte) error {
	*c = ElicitationCapability{}
	var b bool
	if json.Unmarshal(data, &b) == nil {
		c.Form = b
		return nil
	}
	var obj *struct {
		Form json.RawMessage `json:"form"`
		URL  json.RawMessage `json:"url"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return errors.New(`capabilities.elicitation must be true or an object ({"form": {}, "url": {}})`)
	}
	if obj == nil {
		return nil
	}
	c.Form, c.URL = present(obj.Form), present(obj.URL)
	if !c.Form && !c.URL {
		c.Form = true // {} is form elicitation, as in MCP
	}
	return nil
}

func (c ElicitationCapability) MarshalJSON() ([]byte, error) {
	switch {
	case c.Form && c.URL:
		return []byte(`{"form":{},"url":{}}`), nil
	case c.URL:
		return []byte(`{"url":{}}`), nil
	case c.Form:
		return []byte(`true`), nil
	}
	return []byte(`false`), nil
}
