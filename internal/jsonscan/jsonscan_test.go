package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// member is one member as Next returns it, its name decoded.
type member struct{ Name, Value string }

func members(m Members) []member {
	var out []member
	for {
		k, v, ok := m.Next()
		if !ok {
			return out
		}
		out = append(out, member{string(AppendName(nil, k)), string(v)})
	}
}

// lastWins is what encoding/json makes of members: the last of each name.
func lastWins(ms []member) map[string]string {
	out := make(map[string]string)
	for _, m := range ms {
		out[m.Name] = m.Value
	}
	return out
}

// check compares what the package finds in data with what encoding/json
// decodes from it.
func check(t *testing.T, data []byte) {
	if m, ok := Prefix(data); ok {
		for {
			k, v, ok := m.Next()
			if !ok {
				break
			}
			if v != nil && !json.Valid(v) {
				t.Fatalf("Prefix(%q) returned the invalid value %q of %q", data, v, k)
			}
		}
	}
	if !json.Valid(data) {
		return
	}
	start := SkipSpace(data, 0)
	trimmed := bytes.TrimRight(data[start:], " \t\r\n")
	if end := ValueEnd(data, start); end != start+len(trimmed) {
		t.Errorf("ValueEnd(%q) = %d, want %d", data, end, start+len(trimmed))
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	if got, want := HasLayout(data), !bytes.Equal(compact.Bytes(), data); got != want {
		t.Errorf("HasLayout(%q) = %v, want %v", data, got, want)
	}
	var want map[string]json.RawMessage
	isObject := json.Unmarshal(data, &want) == nil && data[start] == '{'
	m, ok := Object(data)
	if ok != isObject {
		t.Fatalf("Object(%q) ok = %v, want %v", data, ok, isObject)
	}
	p, _ := Prefix(data)
	got, gotPrefix := members(m), members(p)
	if diff := cmp.Diff(got, gotPrefix); diff != "" {
		t.Errorf("Prefix(%q) differs from Object (-Object +Prefix):\n%s", data, diff)
	}
	if !isObject {
		if got != nil {
			t.Errorf("Object(%q) has members %v", data, got)
		}
		return
	}
	wantValues := make(map[string]string)
	for k, v := range want {
		wantValues[k] = string(v)
	}
	if diff := cmp.Diff(wantValues, lastWins(got)); diff != "" {
		t.Errorf("members of %q (-encoding/json +Object):\n%s", data, diff)
	}
	for _, mb := range got {
		var name string
		k, _ := json.Marshal(mb.Name)
		if err := json.Unmarshal(k, &name); err != nil || name != mb.Name {
			t.Errorf("name %q of %q does not round-trip", mb.Name, data)
		}
		if w := wantValues[mb.Name]; string(Member(data, mb.Name)) != w {
			t.Errorf("Member(%q, %q) = %q, want %q", data, mb.Name, Member(data, mb.Name), w)
		}
		for _, backFirst := range []bool{false, true} {
			if got := OuterMember(data, mb.Name, backFirst); string(got) != wantValues[mb.Name] {
				t.Errorf("OuterMember(%q, %q, %v) = %q, want %q", data, mb.Name, backFirst, got, wantValues[mb.Name])
			}
		}
	}
	if Member(data, "\x00absent") != nil || OuterMember(data, "\x00absent", true) != nil {
		t.Errorf("an absent member found in %q", data)
	}
}

// FuzzMembers checks the scanner against encoding/json on any input:
// members, their names unescaped, the last of a name winning, the extent
// of values, layout; and on input that is not valid JSON, that Prefix
// returns only valid values.
func FuzzMembers(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

var seeds = []string{
	`{}`,
	` { "a" : 1 , "b":[1,{"c":"}"}],"d":"x\"y\\" } `,
	`{"id":1,"\u0069d":2}`,
	`{"id":1,"id":2}`,
	`{"resultType":"task","x":{"resultType":"complete"},"result\u0054ype":"complete"}`,
	`{"\ud83d\ude00":1,"\ud800":2,"\udc00\u0041":3,"é":4}`,
	"{\"\xff\":1}",
	`{"a":"\/\b\f\n\r\t"}`,
	`[1,2]`,
	`"str"`,
	`-1.5e3`,
	`{"a":1,"b":`,
	`{"method":"x","id":5`,
	`{"id":7,"method":"` + "\n" + `"}`,
	`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"id":1}`,
}

// TestSeeds runs the fuzz seeds as a table.
func TestSeeds(t *testing.T) {
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

// TestPrefix: what Prefix finds in text that is invalid or cut short.
func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []member
	}{
		{`{"id":1,"method":"a"`, []member{{"id", "1"}, {"method", `"a"`}}},
		{`{"id":12`, []member{{"id", ""}}}, // a number cut short
		{`{"\u0069d":3,"x":tru,"id":4}`, []member{{"id", "3"}, {"x", ""}}},
		{"{\"a\":\"x\ny\",\"id\":1}", []member{{"a", ""}}},
		{`{"x":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `,"id":1}`, []member{{"x", ""}}},
		{`{"x":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `,"id":1}`, []member{{"x", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)}, {"id", "1"}}},
		{`{"a" 1}`, nil},
		{`[{"id":1}]`, nil},
	} {
		m, _ := Prefix([]byte(tc.in))
		if diff := cmp.Diff(tc.want, members(m)); diff != "" {
			t.Errorf("Prefix(%.40q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestNameIs: names are compared unescaped, and case-sensitively.
func TestNameIs(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		is         bool
	}{
		{`"id"`, "id", true},
		{`"\u0069d"`, "id", true},
		{`"\u0049d"`, "id", false},
		{`"ID"`, "id", false},
		{`"a\/b"`, "a/b", true},
		{`"` + strings.Repeat(`\u0061`, 100) + `"`, strings.Repeat("a", 100), true},
		{"\"\xff\"", "\ufffd", true},
		{`"\ud800"`, "\ufffd", true},
	} {
		if got := NameIs([]byte(tc.name), tc.want); got != tc.is {
			t.Errorf("NameIs(%s, %q) = %v, want %v", tc.name, tc.want, got, tc.is)
		}
	}
}

// TestNoAllocation: reading a message's members allocates nothing.
func TestNoAllocation(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"b"}],"resultType":"complete"}}`)
	result := Member(line, "result")
	n := testing.AllocsPerRun(100, func() {
		m, _ := Object(line)
		for {
			k, _, ok := m.Next()
			if !ok {
				break
			}
			_ = NameIs(k, "id") || NameIs(k, `\u0069d`)
		}
		_ = OuterMember(result, "resultType", true)
		_ = OuterMember(result, "resultType", false)
		_ = NameIs([]byte(`"\u0069d"`), "id")
	})
	if n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

func TestHasLayout(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1}`:            false,
		`{"a b":"c d\n"}`:    false, // escapes and spaces in strings are content
		`{"a":"\"", "b":1}`:  true,
		"{\"a\":\n1}":        true,
		`[1,2]`:              false,
		` 1`:                 true,
		`"x\\"`:              false,
		"{\"s\":\"\\\\\"\t}": true,
	} {
		if got := HasLayout([]byte(in)); got != want {
			t.Errorf("HasLayout(%q) = %v, want %v", in, got, want)
		}
	}
}
