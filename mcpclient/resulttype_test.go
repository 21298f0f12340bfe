package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
)

// TestResultType: the top-level resultType of a result, wherever it is
// among the members, and never a member of the same name deeper down.
func TestResultType(t *testing.T) {
	big := strings.Repeat(`x\"y\\`, 1000)
	for _, tc := range []struct{ result, want string }{
		{`{"content":[]}`, ""},
		{`{"resultType":"complete","content":[]}`, resultComplete},
		{`{"content":[],"resultType":"input_required"}`, resultInputRequired},
		{`{"content":[{"type":"text","text":"` + big + `"}],"resultType":"task","inputRequests":{}}`, resultTask},
		{`{"a":1,"b":{"resultType":"task"},"resultType" : "complete" ,"c":[2]}`, resultComplete},
		{`{"content":[{"resultType":"input_required"}]}`, ""},
		{`{"structuredContent":{"resultType":"task"},"text":"\"resultType\":\"task\""}`, ""},
		{` { "resultType" : 7 } `, "7"},
		{`{"resultType":"later"}`, `"later"`},
		{`{"x":"{\"resultType\":\"task\"}","y":"\\","resultType":"complete"}`, resultComplete},
		{`[{"resultType":"task"}]`, ""},
		// As encoding/json reads it: the last of the name, the name
		// unescaped.
		{`{"resultType":"input_required","content":[],"resultType":"complete"}`, resultComplete},
		{`{"resultType":"task","content":[],"resultType":"complete","big":"` + strings.Repeat("x", 100) + `"}`, resultComplete},
		{`{"content":[],"result\u0054ype":"input_required"}`, resultInputRequired},
		{`{"\u0072esultType":"task","content":[{"type":"text","text":"` + big + `"}]}`, resultTask},
	} {
		if got := resultType([]byte(tc.result)); got != tc.want {
			t.Errorf("resultType(%.60s) = %q, want %q", tc.result, got, tc.want)
		}
	}
}

// TestOuterMember: outerMember finds what encoding/json finds, in
// objects of every shape (members of every kind, strings with escaped
// quotes and backslashes, layout between tokens).
func TestOuterMember(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{`""`, `"\\"`, `"\""`, `"a\\\"b"`, `"{\"k\":[1]}"`, `"resultType"`}
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(7); {
		case n == 0 && depth < 3:
			var b strings.Builder
			b.WriteString("[")
			for i := range r.IntN(3) {
				if i > 0 {
					b.WriteString(" , ")
				}
				b.WriteString(value(depth + 1))
			}
			return b.String() + "]"
		case n == 1 && depth < 3:
			return object(r, depth+1, value)
		case n == 2:
			return "-12.5e3"
		case n == 3:
			return "true"
		case n == 4:
			return "null"
		default:
			return strs[r.IntN(len(strs))]
		}
	}
	for range 2000 {
		obj := object(r, 0, value)
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		for _, name := range []string{"resultType", "a", "b", "c", "zz"} {
			want, ok := m[name]
			for _, backFirst := range []bool{false, true} {
				got := jsonscan.OuterMember([]byte(obj), name, backFirst)
				if !ok {
					if got != nil {
						t.Errorf("outerMember(%s, %q, %v) = %s, want nil", obj, name, backFirst, got)
					}
					continue
				}
				if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
					t.Errorf("outerMember(%s, %q, %v) = %s, want %s", obj, name, backFirst, got, want)
				}
			}
		}
	}
}

// object is a random JSON object with distinct keys, values from value.
func object(r *rand.Rand, depth int, value func(int) string) string {
	keys := []string{"resultType", "a", "b", "c", `q\"`}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var b strings.Builder
	b.WriteString(" {")
	for i, k := range keys[:r.IntN(len(keys)+1)] {
		if i > 0 {
			b.WriteString(",\n ")
		}
		fmt.Fprintf(&b, `"%s" :%s`, k, value(depth))
	}
	return b.String() + "} "
}

// BenchmarkResultType: the resultType of a 1 MiB tools/call result as
// go-sdk servers write it (resultType after content), one that names it
// first, and one that names it nowhere.
func BenchmarkResultType(b *testing.B) {
	text := strings.Repeat("0123456789abcdef", 1<<16)
	content := `"content":[{"type":"text","text":"` + text + `"}]`
	for _, bc := range []struct{ name, result string }{
		{"last", `{` + content + `,"resultType":"complete"}`},
		{"first", `{"resultType":"complete",` + content + `}`},
		{"none", `{` + content + `}`},
	} {
		raw := []byte(bc.result)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				resultType(raw)
			}
		})
	}
}

// TestSubscriptionID: the subscription id in a notification's _meta, its
// names read as encoding/json reads them (unescaped, the last of a name
// counting): PHP's encoder writes "\/" in every name with a slash.
func TestSubscriptionID(t *testing.T) {
	for _, tc := range []struct {
		params string
		id     int64
		ok     bool
	}{
		{`{"_meta":{"io.modelcontextprotocol/subscriptionId":3}}`, 3, true},
		{`{"_meta":{"io.modelcontextprotocol\/subscriptionId":4}}`, 4, true},
		{`{"_meta":{"io.modelcontextprotocol/subscriptionId":1,"io.modelcontextprotocol/subscriptionId":5}}`, 5, true},
		{`{"_meta":{"a":1},"\u005fmeta":{"io.modelcontextprotocol/subscriptionId":6}}`, 6, true},
		{`{"_meta":{"subscriptionId":7}}`, 0, false},
		{`{"uri":"x"}`, 0, false},
	} {
		id, ok := subscriptionID(json.RawMessage(tc.params))
		if id != tc.id || ok != tc.ok {
			t.Errorf("subscriptionID(%s) = %d, %v; want %d, %v", tc.params, id, ok, tc.id, tc.ok)
		}
	}
}
