package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// signature renders a tool as a person reads a function: its name and
// arguments in the schema's order, each with its type, optional ones
// marked "?", enums as their values: search(query: string, limit?: integer).
func signature(name string, inputSchema json.RawMessage) string {
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(inputSchema, &schema)
	var args []string
	for _, p := range orderedProperties(inputSchema) {
		mark := "?"
		if slices.Contains(schema.Required, p.name) {
			mark = ""
		}
		args = append(args, fmt.Sprintf("%s%s: %s", p.name, mark, typeOf(p.schema)))
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

type property struct {
	name   string
	schema json.RawMessage
}

// orderedProperties lists the schema's properties in the order the server
// wrote them (a Go map would lose it).
func orderedProperties(inputSchema json.RawMessage) []property {
	var top map[string]json.RawMessage
	if json.Unmarshal(inputSchema, &top) != nil {
		return nil
	}
	raw := top["properties"]
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []property
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		out = append(out, property{key, v})
	}
	return out
}

// typeOf renders one property's type: string, integer, "a"|"b",
// string[], a|b for a union, any when the schema does not say.
func typeOf(raw json.RawMessage) string {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
		Items json.RawMessage   `json:"items"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return "any"
	}
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = string(bytes.TrimSpace(e))
		}
		return strings.Join(vals, "|")
	}
	if len(s.Const) > 0 {
		return string(bytes.TrimSpace(s.Const))
	}
	if alts := append(s.AnyOf, s.OneOf...); len(alts) > 0 {
		var parts []string
		for _, a := range alts {
			if t := typeOf(a); !slices.Contains(parts, t) {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "|")
	}
	types := propertySchema{Type: s.Type}.types()
	for i, t := range types {
		if t == "array" {
			item := "any"
			if len(s.Items) > 0 {
				item = typeOf(s.Items)
			}
			if strings.Contains(item, "|") {
				item = "(" + item + ")"
			}
			types[i] = item + "[]"
		}
	}
	if len(types) == 0 {
		return "any"
	}
	return strings.Join(types, "|")
}
