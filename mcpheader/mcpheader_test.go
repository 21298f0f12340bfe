package mcpheader

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         Bindings
	}{
		{"no schema", ``, nil},
		{"null", `null`, nil},
		{"no declarations", `{"type":"object","properties":{"a":{"type":"string"}}}`, nil},
		{"one", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}`,
			Bindings{{Path: []string{"region"}, Name: "Region"}}},
		{"each primitive type, sorted by path", `{"properties":{
			"z":{"type":"boolean","x-mcp-header":"Z"},
			"a":{"type":"integer","x-mcp-header":"A-1"},
			"m":{"type":"string","x-mcp-header":"!#$%&'*+-.^_` + "`" + `|~"}}}`,
			Bindings{{Path: []string{"a"}, Name: "A-1"}, {Path: []string{"m"}, Name: "!#$%&'*+-.^_`|~"}, {Path: []string{"z"}, Name: "Z"}}},
		{"nested object", `{"properties":{"target":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}}`,
			Bindings{{Path: []string{"target", "region"}, Name: "Region"}}},
		// A property that is named like the keyword is a property, and a
		// value under const or default is an instance, not a schema.
		{"keyword as a name or a value", `{"properties":{"x-mcp-header":{"type":"string","const":{"x-mcp-header":"No"},"default":{"x-mcp-header":"No"}}}}`, nil},
		// Array types elsewhere do not hide the declarations (go-sdk skips
		// validation of such a schema altogether).
		{"array type elsewhere", `{"properties":{"n":{"type":["string","null"]},"r":{"type":"string","x-mcp-header":"R"}}}`,
			Bindings{{Path: []string{"r"}, Name: "R"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("bindings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseInvalid: each tool of the official suite's
// http-invalid-tool-headers scenario, and the reachability rule.
func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		rule         Rule
	}{
		{"empty", `{"properties":{"r":{"type":"string","x-mcp-header":""}}}`, RuleNotEmpty},
		{"not a string", `{"properties":{"r":{"type":"string","x-mcp-header":7}}}`, RuleNotEmpty},
		{"object", `{"properties":{"r":{"type":"object","x-mcp-header":"R"}}}`, RulePrimitive},
		{"array", `{"properties":{"r":{"type":"array","x-mcp-header":"R"}}}`, RulePrimitive},
		{"null", `{"properties":{"r":{"type":"null","x-mcp-header":"R"}}}`, RulePrimitive},
		{"number", `{"properties":{"r":{"type":"number","x-mcp-header":"R"}}}`, RulePrimitive},
		{"no type", `{"properties":{"r":{"x-mcp-header":"R"}}}`, RulePrimitive},
		{"type list", `{"properties":{"r":{"type":["string","null"],"x-mcp-header":"R"}}}`, RulePrimitive},
		{"duplicate same case", `{"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}}`, RuleUnique},
		{"duplicate other case", `{"properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, RuleUnique},
		{"duplicate nested", `{"properties":{"a":{"type":"string","x-mcp-header":"R"},"o":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"r"}}}}}`, RuleUnique},
		{"space", `{"properties":{"r":{"type":"string","x-mcp-header":"My Region"}}}`, RuleCharset},
		{"colon", `{"properties":{"r":{"type":"string","x-mcp-header":"Region:Primary"}}}`, RuleCharset},
		{"non-ASCII", `{"properties":{"r":{"type":"string","x-mcp-header":"Région"}}}`, RuleCharset},
		{"control", `{"properties":{"r":{"type":"string","x-mcp-header":"Region\t1"}}}`, RuleCharset},
		{"newline", `{"properties":{"r":{"type":"string","x-mcp-header":"Region\r\nX-Evil: 1"}}}`, RuleCharset},
		{"root", `{"type":"string","x-mcp-header":"R"}`, RuleReachable},
		{"items", `{"properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"R"}}}}`, RuleReachable},
		{"items object", `{"properties":{"l":{"type":"array","items":{"properties":{"c":{"type":"string","x-mcp-header":"R"}}}}}}`, RuleReachable},
		{"anyOf", `{"anyOf":[{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}]}`, RuleReachable},
		{"if", `{"if":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}}`, RuleReachable},
		{"$defs", `{"$defs":{"d":{"type":"string","x-mcp-header":"R"}},"properties":{"r":{"$ref":"#/$defs/d"}}}`, RuleReachable},
		{"additionalProperties", `{"additionalProperties":{"type":"string","x-mcp-header":"R"}}`, RuleReachable},
		{"not JSON", `{"properties":`, RuleSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(json.RawMessage(tc.schema))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, %v; want an *Error", got, err)
			}
			if e.Rule != tc.rule {
				t.Errorf("rule %q, want %q (%v)", e.Rule, tc.rule, err)
			}
			if got != nil {
				t.Errorf("bindings %v with an error", got)
			}
		})
	}
}

func TestErrorNamesTheProperty(t *testing.T) {
	_, err := Parse(json.RawMessage(`{"properties":{"o":{"type":"object","properties":{"r":{"type":"number","x-mcp-header":"R"}}}}}`))
	want := `x-mcp-header of property "o.r": the property has type "number"; a header can carry only a string, an integer or a boolean`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestHeaders: the official suite's http-custom-headers calls, and the
// values that get no header.
func TestHeaders(t *testing.T) {
	schema := `{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"priority":{"type":"integer","x-mcp-header":"Priority"},
		"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
		"debug":{"type":"boolean","x-mcp-header":"Debug"},
		"empty_val":{"type":"string","x-mcp-header":"EmptyVal"},
		"method_val":{"type":"string","x-mcp-header":"Method"},
		"float_val":{"type":"number"},
		"non_ascii_val":{"type":"string","x-mcp-header":"NonAscii"},
		"whitespace_val":{"type":"string","x-mcp-header":"Whitespace"},
		"leading_space_val":{"type":"string","x-mcp-header":"LeadingSpace"},
		"trailing_space_val":{"type":"string","x-mcp-header":"TrailingSpace"},
		"internal_space_val":{"type":"string","x-mcp-header":"InternalSpace"},
		"control_char_val":{"type":"string","x-mcp-header":"ControlChar"},
		"crlf_val":{"type":"string","x-mcp-header":"CrLf"},
		"tab_val":{"type":"string","x-mcp-header":"Tab"},
		"sentinel":{"type":"string","x-mcp-header":"Sentinel"},
		"big":{"type":"integer","x-mcp-header":"Big"},
		"whole":{"type":"integer","x-mcp-header":"Whole"},
		"obj":{"type":"string","x-mcp-header":"Obj"},
		"nested":{"type":"object","properties":{"deep":{"type":"integer","x-mcp-header":"Deep"}}},
		"query":{"type":"string"}}}`
	b, err := Parse(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	args := `{"region":"us-west1","priority":42,"verbose":false,"debug":true,"empty_val":"","method_val":"test-method","float_val":3.14159,
		"non_ascii_val":"Hello, 世界","whitespace_val":" padded ","leading_space_val":" us-west1","trailing_space_val":"us-west1 ",
		"internal_space_val":"us west 1","control_char_val":"line1\nline2","crlf_val":"line1\r\nline2","tab_val":"\tindented",
		"sentinel":"=?base64?literal?=","big":9007199254740992,"whole":-7.0,"obj":{"a":1},"nested":{"deep":-3},"query":"SELECT 1"}`
	want := http.Header{
		"Mcp-Param-Region":        {"us-west1"},
		"Mcp-Param-Priority":      {"42"},
		"Mcp-Param-Verbose":       {"false"},
		"Mcp-Param-Debug":         {"true"},
		"Mcp-Param-EmptyVal":      {""},
		"Mcp-Param-Method":        {"test-method"},
		"Mcp-Param-NonAscii":      {"=?base64?SGVsbG8sIOS4lueVjA==?="},
		"Mcp-Param-Whitespace":    {"=?base64?IHBhZGRlZCA=?="},
		"Mcp-Param-LeadingSpace":  {"=?base64?IHVzLXdlc3Qx?="},
		"Mcp-Param-TrailingSpace": {"=?base64?dXMtd2VzdDEg?="},
		"Mcp-Param-InternalSpace": {"us west 1"},
		"Mcp-Param-ControlChar":   {"=?base64?bGluZTEKbGluZTI=?="},
		"Mcp-Param-CrLf":          {"=?base64?bGluZTENCmxpbmUy?="},
		"Mcp-Param-Tab":           {"=?base64?CWluZGVudGVk?="},
		"Mcp-Param-Sentinel":      {"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		"Mcp-Param-Whole":         {"-7"},
		"Mcp-Param-Deep":          {"-3"},
	}
	if diff := cmp.Diff(want, b.Headers(json.RawMessage(args))); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	// Null and absent arguments get no header.
	got := b.Headers(json.RawMessage(`{"region":"us-east1","priority":1,"verbose":null}`))
	if diff := cmp.Diff(http.Header{"Mcp-Param-Region": {"us-east1"}, "Mcp-Param-Priority": {"1"}}, got); diff != "" {
		t.Errorf("headers with null (-want +got):\n%s", diff)
	}
	if got := b.Headers(json.RawMessage(`[1]`)); got != nil {
		t.Errorf("headers of arguments that are not an object: %v", got)
	}
}

func TestEncodeDecode(t *testing.T) {
	for _, s := range []string{"", "plain", " x", "x\t", "é", "a\x7fb", "=?base64?x?=", "=?base64?"} {
		enc := EncodeValue(s)
		dec, ok := DecodeValue(enc)
		if !ok || dec != s {
			t.Errorf("DecodeValue(EncodeValue(%q) = %q) = %q, %v", s, enc, dec, ok)
		}
	}
	if _, ok := DecodeValue("=?base64?***?="); ok {
		t.Error("a base64 form that does not decode was accepted")
	}
}

// TestCheck: the server's side, with the cases of the official suite's
// http-custom-header-server-validation scenario among them.
func TestCheck(t *testing.T) {
	b, err := Parse(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"priority":{"type":"integer","x-mcp-header":"Priority"},
		"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
		"nested":{"type":"object","properties":{"deep":{"type":"string","x-mcp-header":"Deep"}}},
		"query":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    string
		headers map[string]string
		want    string // "" accepted; else the mismatch's header
	}{
		{"matching", `{"region":"us-west1","priority":42,"verbose":true}`,
			map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "42", "Mcp-Param-Verbose": "true"}, ""},
		{"header name in another case", `{"region":"us-west1"}`, map[string]string{"mcp-param-REGION": "us-west1"}, ""},
		{"valid base64", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="}, ""},
		{"base64 without its prefix is literal", `{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}, ""},
		{"base64 without its suffix is literal", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, ""},
		{"non-ASCII in base64", `{"region":"Hello, 世界"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, ""},
		{"empty string", `{"region":""}`, map[string]string{"Mcp-Param-Region": ""}, ""},
		{"nested", `{"nested":{"deep":"x"}}`, map[string]string{"Mcp-Param-Deep": "x"}, ""},
		{"absent and null need no header", `{"region":null,"query":"q"}`, nil, ""},
		{"no arguments", ``, nil, ""},
		{"an object where a string is declared: the call's validation judges it", `{"region":{"a":1}}`, nil, ""},
		{"arguments not an object", `[1]`, map[string]string{"Mcp-Param-Region": "x"}, ""},

		{"base64 with bad padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, "Mcp-Param-Region"},
		{"base64 with non-alphabet characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, "Mcp-Param-Region"},
		{"missing", `{"region":"test-value"}`, nil, "Mcp-Param-Region"},
		{"other value", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "eu-west1"}, "Mcp-Param-Region"},
		{"values are case-sensitive", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "US-WEST1"}, "Mcp-Param-Region"},
		{"integer", `{"priority":42}`, map[string]string{"Mcp-Param-Priority": "43"}, "Mcp-Param-Priority"},
		{"boolean", `{"verbose":false}`, map[string]string{"Mcp-Param-Verbose": "False"}, "Mcp-Param-Verbose"},
		{"header for a null argument", `{"verbose":null}`, map[string]string{"Mcp-Param-Verbose": "true"}, "Mcp-Param-Verbose"},
		{"header for an absent argument", `{}`, map[string]string{"Mcp-Param-Priority": "1"}, "Mcp-Param-Priority"},
		{"header for an object", `{"region":{"a":1}}`, map[string]string{"Mcp-Param-Region": "x"}, "Mcp-Param-Region"},
		{"nested missing", `{"nested":{"deep":"x"}}`, nil, "Mcp-Param-Deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Add(k, v)
			}
			err := b.Check(h, json.RawMessage(tc.args))
			got := ""
			if err != nil {
				var m *Mismatch
				if !errors.As(err, &m) {
					t.Fatalf("Check: %v, not a *Mismatch", err)
				}
				got = m.Header
			}
			if got != tc.want {
				t.Errorf("Check = %v, want a mismatch of %q", err, tc.want)
			}
		})
	}
	t.Run("sent twice", func(t *testing.T) {
		h := http.Header{"Mcp-Param-Region": {"a", "a"}}
		if err := b.Check(h, json.RawMessage(`{"region":"a"}`)); err == nil {
			t.Error("Check accepted a header sent twice")
		}
	})
}

// TestCheckAcceptsHeaders: whatever Headers writes for a call, Check
// accepts.
func TestCheckAcceptsHeaders(t *testing.T) {
	b, err := Parse(json.RawMessage(`{"properties":{
		"s":{"type":"string","x-mcp-header":"S"},"i":{"type":"integer","x-mcp-header":"I"},
		"b":{"type":"boolean","x-mcp-header":"B"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"s":"plain","i":1,"b":false}`, `{"s":" padded\t","i":-9007199254740991}`, `{"s":"=?base64?x?=","i":5.0}`,
		`{"s":"line\r\nbreak","i":9007199254740992}`, `{"s":"","b":null}`, `{}`,
	} {
		if err := b.Check(b.Headers(json.RawMessage(args)), json.RawMessage(args)); err != nil {
			t.Errorf("arguments %s: %v", args, err)
		}
	}
}
