package protocol

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseInteger(t *testing.T) {
	tests := []struct {
		num  string
		want int64
		err  error
	}{
		{"0", 0, nil},
		{"-0", 0, nil},
		{"5000", 5000, nil},
		{"-17", -17, nil},
		// JSON Schema's integer: a zero fractional part, however written
		{"5000.0", 5000, nil},
		{"2.000", 2, nil},
		{"5e3", 5000, nil},
		{"5E+3", 5000, nil},
		{"1.5E+1", 15, nil},
		{"120e-1", 12, nil},
		{"-2.0", -2, nil},
		{"0.0e5", 0, nil},
		{"0e-9999999999999", 0, nil},
		{"0.5e1", 5, nil},
		{"9223372036854775807", 1<<63 - 1, nil},
		{"9223372036854775807.0", 1<<63 - 1, nil},
		{"9.223372036854775807e18", 1<<63 - 1, nil},
		{"-9223372036854775808", -1 << 63, nil},
		{"-9.223372036854775808E18", -1 << 63, nil},
		// outside int64
		{"9223372036854775808", 0, ErrIntegerRange},
		{"9223372036854775808.0", 0, ErrIntegerRange},
		{"1e19", 0, ErrIntegerRange},
		{"-1e19", 0, ErrIntegerRange},
		{"1e1000000000", 0, ErrIntegerRange},
		{"1e99999999999999999999", 0, ErrIntegerRange},
		// a fractional part
		{"2.5", 0, ErrNotInteger},
		{"1e-1", 0, ErrNotInteger},
		{"1e-99999999999999999999", 0, ErrNotInteger},
		{"12345678901234567890.5", 0, ErrNotInteger},
		// not JSON numbers
		{"", 0, ErrNotInteger},
		{"-", 0, ErrNotInteger},
		{"abc", 0, ErrNotInteger},
		{"01", 0, ErrNotInteger},
		{"-01", 0, ErrNotInteger},
		{"+1", 0, ErrNotInteger},
		{"1.", 0, ErrNotInteger},
		{".5", 0, ErrNotInteger},
		{"1e", 0, ErrNotInteger},
		{"1e+", 0, ErrNotInteger},
		{"1 ", 0, ErrNotInteger},
		{`"5"`, 0, ErrNotInteger},
	}
	for _, tt := range tests {
		got, err := ParseInteger([]byte(tt.num))
		if got != tt.want || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("ParseInteger(%q) = %d, %v; want %d, %v", tt.num, got, err, tt.want, tt.err)
		}
	}
}

// paramsForTest has integer members of several widths, nested in objects,
// arrays and maps, beside members that must pass through untouched.
type paramsForTest struct {
	Limit  int               `json:"limit,omitempty"`
	Limits *limitsTest       `json:"limits,omitempty"`
	Items  []itemTest        `json:"items,omitempty"`
	Counts map[string]uint16 `json:"counts,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Name   string            `json:"name,omitempty"`
	Ratio  float64           `json:"ratio,omitempty"`
	Any    any               `json:"any,omitempty"`
}

type limitsTest struct {
	MaxFrameBytes    int64 `json:"maxFrameBytes,omitempty"`
	MaxToolNameBytes int   `json:"maxToolNameBytes,omitempty"`
}

type itemTest struct {
	N int8 `json:"n"`
}

func TestDecodeParams(t *testing.T) {
	tests := []struct {
		params string
		want   paramsForTest
	}{
		{`{"limit":2.0}`, paramsForTest{Limit: 2}},
		{`{"limit":5e0,"limits":{"maxFrameBytes":1e6,"maxToolNameBytes":64.0}}`, paramsForTest{Limit: 5, Limits: &limitsTest{MaxFrameBytes: 1000000, MaxToolNameBytes: 64}}},
		{`{"items":[{"n":1.0},{"n":-1.28e2}],"counts":{"a":6.5e1}}`, paramsForTest{Items: []itemTest{{1}, {-128}}, Counts: map[string]uint16{"a": 65}}},
		// members encoding/json matches case-insensitively, as it does
		{`{"LIMIT":3.0}`, paramsForTest{Limit: 3}},
		// what is not an integer member keeps its bytes and its value
		{`{"limit":1.0, "raw" : {"x": 1.0, "y": "<&>\u00e9"}, "name":"a\"b", "ratio":0.5, "any":2.0}`,
			paramsForTest{Limit: 1, Raw: json.RawMessage(`{"x": 1.0, "y": "<&>\u00e9"}`), Name: `a"b`, Ratio: 0.5, Any: 2.0}},
		// plain integers take the fast path
		{`{"limit":7}`, paramsForTest{Limit: 7}},
		{``, paramsForTest{}},
		{`null`, paramsForTest{}},
	}
	for _, tt := range tests {
		var got paramsForTest
		if err := DecodeParams(json.RawMessage(tt.params), &got); err != nil {
			t.Errorf("DecodeParams(%s): %v", tt.params, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("DecodeParams(%s) (-want +got):\n%s", tt.params, diff)
		}
	}
}

// TestDecodeParamsErrors: a member that is not an integer, or out of its
// field's range, is -32602 with a message in words naming the member; no
// message names a Go type.
func TestDecodeParamsErrors(t *testing.T) {
	tests := []struct {
		params, want string
	}{
		{`{"limit":2.5}`, "limit must be an integer, not 2.5"},
		{`{"limit":1e400}`, "limit must be an integer from -9223372036854775808 to 9223372036854775807, not 1e400"},
		{`{"limits":{"maxToolNameBytes":64.0,"maxFrameBytes":0.5}}`, "limits.maxFrameBytes must be an integer, not 0.5"},
		{`{"items":[{"n":1},{"n":300.0}]}`, "items[1].n must be an integer from -128 to 127, not 300.0"},
		{`{"items":[{"n":1},{"n":300}]}`, "items[1].n must be an integer from -128 to 127, not 300"},
		{`{"counts":{"a":-1.0}}`, "counts.a must be an integer from 0 to 65535, not -1.0"},
		{`{"limit":"5"}`, "limit must be an integer, not a string"},
		{`{"limit":true}`, "limit must be an integer, not true or false"},
		{`{"name":1}`, "name must be a string, not a number"},
		{`{"items":{}}`, "items must be an array, not an object"},
		{`{"limits":[]}`, "limits must be an object, not an array"},
		{`[1]`, "params must be an object, not an array"},
		{`"x"`, "params must be an object, not a string"},
		{`{"limit":2.0,"name":false}`, "name must be a string, not true or false"},
		{`{"limit":` + strings.Repeat("1", 60) + `.5}`, "limit must be an integer, not " + strings.Repeat("1", 40) + "..."},
	}
	for _, tt := range tests {
		var got paramsForTest
		err := DecodeParams(json.RawMessage(tt.params), &got)
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeInvalidParams || pe.Data.Kind != KindInvalidParams {
			t.Errorf("DecodeParams(%s) = %v, want a -32602 *Error", tt.params, err)
			continue
		}
		if pe.Message != tt.want {
			t.Errorf("DecodeParams(%s):\n got %q\nwant %q", tt.params, pe.Message, tt.want)
		}
		for _, goWord := range []string{"json:", "Go ", "int8", "int64", "uint16", "float64", "paramsForTest", "struct"} {
			if strings.Contains(pe.Message, goWord) {
				t.Errorf("DecodeParams(%s): message %q names a Go type (%q)", tt.params, pe.Message, goWord)
			}
		}
	}
}

func TestParseToolsCallParamsTimeoutMs(t *testing.T) {
	for num, want := range map[string]int64{"5000": 5000, "5000.0": 5000, "5e3": 5000, "null": 0} {
		p, err := ParseToolsCallParams(json.RawMessage(`{"sessionId":"s","timeoutMs":` + num + `}`))
		if err != nil || p.TimeoutMs != want {
			t.Errorf("timeoutMs %s: %d, %v; want %d", num, p.TimeoutMs, err, want)
		}
	}
	for num, want := range map[string]string{
		"5000.5": "timeoutMs must be an integer, not 5000.5",
		`"5"`:    `timeoutMs must be an integer, not "5"`,
		"1e30":   "timeoutMs must be an integer from -9223372036854775808 to 9223372036854775807, not 1e30",
	} {
		_, err := ParseToolsCallParams(json.RawMessage(`{"sessionId":"s","timeoutMs":` + num + `}`))
		if err == nil || err.Error() != want {
			t.Errorf("timeoutMs %s: %v, want %q", num, err, want)
		}
	}
}

// FuzzParseInteger checks ParseInteger against exact rational arithmetic
// on every JSON number (of a size big.Rat handles quickly).
func FuzzParseInteger(f *testing.F) {
	for _, s := range []string{"0", "-0.0", "5e3", "2.5", "1e19", "9223372036854775807", "-9.223372036854775808e18", "120e-1", "1E-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 80 {
			return // what big.Rat reads quickly
		}
		got, err := ParseInteger([]byte(s))
		var v any
		isNumber := len(s) > 0 && strings.TrimSpace(s) == s && json.Unmarshal([]byte(s), &v) == nil
		if _, ok := v.(float64); !ok {
			isNumber = false
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
			return // an exponent big.Rat would take long to expand
		}
		if !isNumber {
			if err == nil && (strings.TrimSpace(s) != s || !json.Valid([]byte(s))) {
				t.Fatalf("ParseInteger(%q) = %d for what is no JSON number", s, got)
			}
			return
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat does not read %q", s)
		}
		switch {
		case !r.IsInt():
			if !errors.Is(err, ErrNotInteger) {
				t.Fatalf("ParseInteger(%q) = %d, %v; want ErrNotInteger", s, got, err)
			}
		case !r.Num().IsInt64():
			if !errors.Is(err, ErrIntegerRange) {
				t.Fatalf("ParseInteger(%q) = %d, %v; want ErrIntegerRange", s, got, err)
			}
		default:
			if err != nil || got != r.Num().Int64() {
				t.Fatalf("ParseInteger(%q) = %d, %v; want %d", s, got, err, r.Num().Int64())
			}
		}
	})
}
