package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// RootsCapability is the host's capabilities.roots: true, or MCP's shape
// {} or {"listChanged": true}. Absent, null or false: the host does not
// answer mcp/roots. listChanged is accepted and has no effect: the sidecar
// asks the host for the roots each time a server asks.
type RootsCapability struct {
	Enabled     bool
	ListChanged bool
}

func (c *RootsCapability) UnmarshalJSON(data []byte) error {
	*c = RootsCapability{}
	var b bool
	if json.Unmarshal(data, &b) == nil {
		c.Enabled = b
		return nil
	}
	var obj *struct {
		ListChanged *bool `json:"listChanged"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return errors.New(`capabilities.roots must be true or an object ({} or {"listChanged": true})`)
	}
	if obj == nil {
		return nil
	}
	c.Enabled = true
	c.ListChanged = obj.ListChanged != nil && *obj.ListChanged
	return nil
}

func (c RootsCapability) MarshalJSON() ([]byte, error) {
	switch {
	case c.ListChanged:
		return []byte(`{"listChanged":true}`), nil
	case c.Enabled:
		return []byte(`{}`), nil
	}
	return []byte(`false`), nil
}

// Extensions are the host's capabilities.extensions: the MCP extensions it
// handles (MCP 2026-07-28, "Extensions"), each named
// "{vendor-prefix}/{extension-name}" with its settings object, as
// io.modelcontextprotocol/ui (MCP Apps) {"mimeTypes": [...]}. The sidecar
// declares them to every server of protocol 2026-07-28 as they are, and
// passes what such servers send for them (ui:// resources, a tool's
// _meta.ui) through untouched.
type Extensions map[string]json.RawMessage

func (e *Extensions) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return errors.New(`capabilities.extensions must be an object of extension names and settings objects ({"io.modelcontextprotocol/ui": {...}})`)
	}
	for name, v := range m {
		prefix, ext, ok := strings.Cut(name, "/")
		if !ok || prefix == "" || ext == "" {
			return fmt.Errorf("capabilities.extensions: %q is not an extension name ({vendor-prefix}/{extension-name})", name)
		}
		if !isObject(v) {
			return fmt.Errorf("capabilities.extensions: the settings of %q must be an object ({} for none)", name)
		}
	}
	*e = m
	return nil
}

func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b == '{'
	}
	return false
}
