package sidecar

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestObjectMembers: the members of an object found by their extent are
// the values encoding/json reads, and each is a slice of the object, not
// a copy.
func TestObjectMembers(t *testing.T) {
	tests := []string{
		`{}`,
		` { "a" : 1 , "b":-2.5e3,"c":true,"d":null , "e":false} `,
		`{"s":"a \"quoted\" \\ back\\\\","t":"\\","u":"\u00e9\ud83d\ude00"}`,
		`{"content":[{"type":"text","text":"x}],\"{["},[],{},[1,[2,{"k":[3]}]]],"structuredContent":{"a":{"b":[1,2]}}}`,
		`{"esc\"key":0,"k":[ 1 , 2 ] ,"n":[]}`,
		"{\n\t\"a\"\r\n:\t[\n1\n]\n}",
	}
	for _, raw := range tests {
		got, err := objectMembers([]byte(raw))
		if err != nil {
			t.Errorf("objectMembers(%s): %v", raw, err)
			continue
		}
		var want []member
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.Token()
		for dec.More() {
			tok, _ := dec.Token()
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			want = append(want, member{tok.(string), v})
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(member{})); diff != "" {
			t.Errorf("objectMembers(%s) (-want +got):\n%s", raw, diff)
		}
		for _, m := range got {
			var elems []json.RawMessage
			if json.Unmarshal(m.value, &elems) != nil {
				continue
			}
			gotElems, err := arrayElements(m.value)
			if err != nil {
				t.Errorf("arrayElements(%s): %v", m.value, err)
			}
			if diff := cmp.Diff(elems, gotElems, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("arrayElements(%s) (-want +got):\n%s", m.value, diff)
			}
		}
	}
	for _, raw := range []string{``, `[1]`, `"s"`, `{"a":1`, `{"a":1}x`} {
		if _, err := objectMembers([]byte(raw)); err == nil {
			t.Errorf("objectMembers(%s) read members, want an error", raw)
		}
	}
	// Slices of the object, not copies: a large result is not held twice.
	raw := []byte(`{"content":[{"type":"text","text":"abc"}]}`)
	m, err := objectMembers(raw)
	if err != nil || len(m) != 1 {
		t.Fatalf("objectMembers = %v, %v", m, err)
	}
	if start := bytes.Index(raw, m[0].value); &raw[start] != &m[0].value[0] {
		t.Error("a member's value is a copy, want a slice of the object")
	}
}
