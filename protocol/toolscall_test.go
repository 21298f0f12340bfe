package protocol

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseToolsCallParams: for valid params, the same as encoding/json
// (which the sidecar used before), with the raw members slices of the
// input; for bad ones, an error.
func TestParseToolsCallParams(t *testing.T) {
	valid := []string{
		``,
		`null`,
		`{}`,
		` { } `,
		`{"sessionId":"s1","name":"mcp__a__b","arguments":{"x":[1,2,{"y":"}"}]},"timeoutMs":250}`,
		`{"sessionId":"s\u00e9\"q","server":"a","tool":"b","arguments":null,"sandboxState":{"mode":"ro","n":12345678901234567890},"task":{"ttl":1}}`,
		`{"meta":{"progressToken":"p","trace":{"a":1},"n":null},"unknown":[1,{"sessionId":"not this one"}],"sessionId":"s2"}`,
		`{"sessionId":null,"meta":null,"timeoutMs":null,"sandboxState":"x"}`,
		"{\n\t\"sessionId\" :\t\"s\" ,\n \"arguments\" : { \"a\" : 1 } \n}",
		`{"sessionId":"first","sessionId":"last"}`,
		`{"\u0073essionId":"escaped key"}`,
		// A meta name is unescaped as encoding/json does, invalid
		// UTF-8 and lone surrogates as U+FFFD.
		"{\"meta\":{\"a\xffb\":1,\"\\ud800x\":2,\"\\ud83d\\ude00\":3}}",
	}
	for _, in := range valid {
		got, err := ParseToolsCallParams(json.RawMessage(in))
		if err != nil {
			t.Errorf("ParseToolsCallParams(%s): %v", in, err)
			continue
		}
		var want ToolsCallParams
		if strings.TrimSpace(in) != "" {
			if err := json.Unmarshal([]byte(in), &want); err != nil {
				t.Fatalf("encoding/json on %s: %v", in, err)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseToolsCallParams(%s) (-encoding/json +got):\n%s", in, diff)
		}
	}
	for _, in := range []string{
		`[]`, `"s"`, `5`,
		`{"sessionId":5}`, `{"name":{}}`, `{"timeoutMs":"1"}`, `{"timeoutMs":1.5}`, `{"meta":[1]}`, `{"meta":"x"}`,
	} {
		if _, err := ParseToolsCallParams(json.RawMessage(in)); err == nil {
			t.Errorf("ParseToolsCallParams(%s) succeeded", in)
		}
	}
	// The forwarded members are not copied.
	in := []byte(`{"arguments":{"big":"yyyy"}}`)
	p, _ := ParseToolsCallParams(in)
	in[len(`{"arguments":{"big":"`)] = 'Z'
	if string(p.Arguments) != `{"big":"Zyyy"}` {
		t.Errorf("Arguments %s is a copy, not a slice of the params", p.Arguments)
	}
}
