package mcpclient

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestCompleteForm(t *testing.T) {
	const schema = `{"type":"object","properties":{` +
		`"name":{"type":"string","default":"John Doe"},` +
		`"age":{"type":"integer","default":30},` +
		`"score":{"type":"number","default":95.50},` +
		`"status":{"type":"string","enum":["active","inactive"],"default":"active"},` +
		`"verified":{"type":"boolean","default":true},` +
		`"note":{"type":"string"}},"required":["name"]}`
	params := `{"message":"m","requestedSchema":` + schema + `}`
	for _, c := range []struct {
		name, answer, want string
		wantErr            bool
	}{
		{name: "accepted empty: every default, the server's bytes",
			answer: `{"action":"accept","content":{}}`,
			want:   `{"action":"accept","content":{"name":"John Doe","age":30,"score":95.50,"status":"active","verified":true}}`},
		{name: "given fields kept byte for byte, the rest filled",
			answer: `{"content": {"name" : "Ada \u00e9", "note":"<&>"} , "action":"accept","_meta":{"k":1}}`,
			want:   `{"content": {"name" : "Ada \u00e9", "note":"<&>","age":30,"score":95.50,"status":"active","verified":true} , "action":"accept","_meta":{"k":1}}`},
		{name: "accept without content",
			answer: `{"action":"accept"}`,
			want:   `{"action":"accept","content":{"name":"John Doe","age":30,"score":95.50,"status":"active","verified":true}}`},
		{name: "nothing missing: the answer unchanged",
			answer: `{"action":"accept","content":{"name":"a","age":1,"score":2,"status":"inactive","verified":false}}`,
			want:   `{"action":"accept","content":{"name":"a","age":1,"score":2,"status":"inactive","verified":false}}`},
		{name: "decline untouched", answer: `{"action":"decline"}`, want: `{"action":"decline"}`},
		{name: "cancel untouched", answer: `{"action":"cancel"}`, want: `{"action":"cancel"}`},
		{name: "wrong type refused", answer: `{"action":"accept","content":{"age":"thirty"}}`, wantErr: true},
		{name: "not in the enum refused", answer: `{"action":"accept","content":{"status":"gone"}}`, wantErr: true},
		{name: "content not an object refused", answer: `{"action":"accept","content":[1]}`, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := completeForm(json.RawMessage(params), json.RawMessage(c.answer))
			if c.wantErr {
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("got %s, %v; want a -32602 error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid(got) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}

func TestCompleteFormWithoutSchema(t *testing.T) {
	for _, params := range []string{`{"message":"m"}`, `{"mode":"url","url":"https://x","message":"m","elicitationId":"1"}`} {
		answer := `{"action":"accept","content":{"x":1}}`
		got, err := completeForm(json.RawMessage(params), json.RawMessage(answer))
		if err != nil || string(got) != answer {
			t.Errorf("params %s: got %s, %v; want the answer unchanged", params, got, err)
		}
	}
}

// A refused answer's error names each field that is wrong and why, and
// quotes none of the answer's values (a form may ask for a password).
func TestRefusedContentNamesTheFields(t *testing.T) {
	const schema = `{"type":"object","properties":{` +
		`"name":{"type":"string"},"age":{"type":"integer","minimum":0},"pin":{"type":"string","minLength":8}},` +
		`"required":["name"],"additionalProperties":false}`
	params := `{"message":"m","requestedSchema":` + schema + `}`
	for _, c := range []struct {
		answer string
		want   []string
	}{
		{`{"action":"accept","content":{"name":"a","age":"s3cr3t-value"}}`, []string{`field "age" does not match its schema {"type":"integer","minimum":0}`}},
		{`{"action":"accept","content":{"age":-7}}`, []string{`field "name" is required`, `field "age" does not match its schema`}},
		{`{"action":"accept","content":{"name":"a","pin":"s3cr3t"}}`, []string{`field "pin" does not match its schema {"type":"string","minLength":8}`}},
		{`{"action":"accept","content":{"name":"a","extra":"s3cr3t-value"}}`, []string{`field "extra" is not in the form`}},
	} {
		_, err := completeForm(json.RawMessage(params), json.RawMessage(c.answer))
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v; want a -32602 error", c.answer, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(we.Message, w) {
				t.Errorf("%s: %q does not say %q", c.answer, we.Message, w)
			}
		}
		if strings.Contains(we.Message, "s3cr3t") || strings.Contains(we.Message, "-7") {
			t.Errorf("%s: %q quotes a value of the answer", c.answer, we.Message)
		}
	}
}
