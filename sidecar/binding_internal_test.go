package sidecar

import (
	"encoding/json"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestCheckBinding: a call is dispatched only to the definition it was
// bound to; a tool that changed or disappeared in between is refused with
// -32016, never sent to whatever now carries its name (docs/protocol.md,
// "Authority and binding").
func TestCheckBinding(t *testing.T) {
	def := func(raw string) catalog.Tool {
		return catalog.Tool{Server: "s", Name: "run", Raw: json.RawMessage(raw)}
	}
	bound := def(`{"name":"run","inputSchema":{"type":"object"}}`)
	tests := []struct {
		name    string
		current []catalog.Tool
		want    string // "" for allowed, else the word in the message
	}{
		{"unchanged", []catalog.Tool{bound}, ""},
		{"changed", []catalog.Tool{def(`{"name":"run","inputSchema":{"type":"object","properties":{"rm":{}}}}`)}, "changed"},
		{"removed", []catalog.Tool{def(`{"name":"other","inputSchema":{}}`)}, "removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &serverConn{name: "s"}
			sc.setTools(tt.current)
			err := sc.checkBinding(&bound)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("checkBinding = %v, want nil", err)
				}
				return
			}
			pe, ok := err.(*protocol.Error)
			if !ok || pe.Code != protocol.CodeBindingChanged || pe.Data.Kind != protocol.KindBindingChanged || !pe.Data.Retryable {
				t.Fatalf("checkBinding = %#v, want a retryable -32016", err)
			}
			if pe.Data.Server != "s" || pe.Data.Tool != "run" {
				t.Errorf("data %+v should name server and tool", pe.Data)
			}
		})
	}
}
