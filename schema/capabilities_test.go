package schema

import (
	"encoding/json"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestHostCapabilityShapes: initialize.capabilities takes MCP's object
// shapes where the host protocol mirrors MCP (roots, elicitation,
// sampling) besides true, and the host's MCP extensions; the schema and
// the sidecar's decoder accept and refuse the same capabilities.
func TestHostCapabilityShapes(t *testing.T) {
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		caps string
		ok   bool
		want protocol.HostCapabilities
	}{
		{"roots true", `{"roots":true}`, true, protocol.HostCapabilities{Roots: protocol.RootsCapability{Enabled: true}}},
		{"roots {}", `{"roots":{}}`, true, protocol.HostCapabilities{Roots: protocol.RootsCapability{Enabled: true}}},
		{"roots listChanged", `{"roots":{"listChanged":true}}`, true, protocol.HostCapabilities{Roots: protocol.RootsCapability{Enabled: true, ListChanged: true}}},
		{"roots false", `{"roots":false}`, true, protocol.HostCapabilities{}},
		{"roots a string", `{"roots":"yes"}`, false, protocol.HostCapabilities{}},
		{"elicitation modes", `{"elicitation":{"form":{},"url":{}}}`, true, protocol.HostCapabilities{Elicitation: protocol.ElicitationCapability{Form: true, URL: true}}},
		{"elicitation {}", `{"elicitation":{}}`, true, protocol.HostCapabilities{Elicitation: protocol.ElicitationCapability{Form: true}}},
		{"sampling with tools", `{"sampling":{"tools":{}}}`, true, protocol.HostCapabilities{Sampling: protocol.SamplingCapability{Enabled: true, Tools: true}}},
		{"sampling {}", `{"sampling":{}}`, true, protocol.HostCapabilities{Sampling: protocol.SamplingCapability{Enabled: true}}},
		{"extensions", `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]},"io.modelcontextprotocol/skills":{}}}`, true,
			protocol.HostCapabilities{Extensions: protocol.Extensions{
				"io.modelcontextprotocol/ui":     json.RawMessage(`{"mimeTypes":["text/html;profile=mcp-app"]}`),
				"io.modelcontextprotocol/skills": json.RawMessage(`{}`),
			}}},
		{"extension settings not an object", `{"extensions":{"io.modelcontextprotocol/ui":true}}`, false, protocol.HostCapabilities{}},
		{"extension name without a prefix", `{"extensions":{"ui":{}}}`, false, protocol.HostCapabilities{}},
		{"extensions a list", `{"extensions":["io.modelcontextprotocol/ui"]}`, false, protocol.HostCapabilities{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := json.RawMessage(`{"clientInfo":{"name":"h"},"capabilities":` + tt.caps + `}`)
			schemaErr := m.ValidateParams(HostToSidecar, "initialize", params)
			var p protocol.InitializeParams
			goErr := json.Unmarshal(params, &p)
			if (schemaErr == nil) != tt.ok {
				t.Errorf("schema: %v, want ok %v", schemaErr, tt.ok)
			}
			if (goErr == nil) != tt.ok {
				t.Errorf("decoder: %v, want ok %v", goErr, tt.ok)
			}
			if goErr != nil || !tt.ok {
				return
			}
			got, _ := json.Marshal(p.Capabilities)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("decoded %s, want %s", got, want)
			}
		})
	}
}
