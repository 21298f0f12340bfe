package servermeta

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnnotate(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   string // "" means unchanged
	}{
		{"not an object", `[1,2]`, ""},
		{"invalid", `{"name":`, ""},
		{"no _meta", `{"name":"t","arguments":{"codex/sandbox-state":1}}`, ""},
		{"null _meta", `{"name":"t","_meta":null}`, ""},
		{"_meta without sandbox keys", `{"name":"t","_meta":{"progressToken":1}}`, ""},
		{
			"sandbox keys copied raw; arguments kept",
			`{"name":"t","arguments":{"x":"<&>","n":12345678901234567890},"_meta":{"codex/sandbox-state": {"b":1.0, "a":12345678901234567890},"codex/sandbox-launcher":{"codexExecutable":"/c"}}}`,
			`{"_meta":{"codex/sandbox-launcher":{"codexExecutable":"/c"},"codex/sandbox-state":{"b":1.0,"a":12345678901234567890},"io.github.mcp-sidecar/servermeta-raw":"{\"codex/sandbox-launcher\":{\"codexExecutable\":\"/c\"},\"codex/sandbox-state\":{\"b\":1.0,\"a\":12345678901234567890}}"},"arguments":{"x":"<&>","n":12345678901234567890},"name":"t"}`,
		},
		{
			"client-sent raw key removed",
			`{"name":"t","_meta":{"io.github.mcp-sidecar/servermeta-raw":"{}","progressToken":1}}`,
			`{"_meta":{"progressToken":1},"name":"t"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.params
			}
			got := string(annotate(json.RawMessage(tt.params)))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("annotate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
