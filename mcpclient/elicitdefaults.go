package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// completeForm finishes the host's answer to a form elicitation as the MCP
// client the server talks to must (SEP-1034): when the user accepted, each
// field of requestedSchema that has a default and that the answer leaves
// out gets that default, and the content is then validated against the
// schema. The host need not do either. The answer's bytes are kept: the
// defaults are the server's own bytes, appended to the host's content
// object.
//
// go-sdk's client validates before it fills in defaults, which rejects an
// answer that omits a required field with a default; here the defaults
// come first, so that such an answer is completed instead.
func completeForm(params, answer json.RawMessage) (json.RawMessage, error) {
	var p struct {
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	var a struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(answer, &a) != nil ||
		a.Action != "accept" || !isObject(p.RequestedSchema) {
		return answer, nil
	}
	if len(a.Content) == 0 || string(a.Content) == "null" {
		a.Content = json.RawMessage(`{}`)
	}
	if !isObject(a.Content) {
		return nil, invalidContent(errors.New("content is not an object"))
	}
	var schema struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(p.RequestedSchema, &schema); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema: " + err.Error()}
	}
	var props []member
	if isObject(schema.Properties) {
		var err error
		if props, err = members(schema.Properties); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema.properties: " + err.Error()}
		}
	}
	given, err := members(a.Content)
	if err != nil {
		return nil, invalidContent(err)
	}
	// In the form's order, as a person filling it in would.
	content, filled := a.Content, false
	for _, prop := range props {
		if slices.ContainsFunc(given, func(m member) bool { return m.name == prop.name }) {
			continue
		}
		var def struct {
			Default json.RawMessage `json:"default"`
		}
		if json.Unmarshal(prop.value, &def) == nil && len(def.Default) > 0 {
			content, filled = appendMember(content, prop.name, def.Default), true
		}
	}
	if err := validateContent(p.RequestedSchema, content); err != nil {
		return nil, err
	}
	if !filled {
		return answer, nil
	}
	return setMember(answer, "content", content)
}

// validateContent checks content against schema. A schema the validator
// cannot resolve (a remote $ref, an unknown draft) does not stop the
// answer: the server asked for what it can check itself.
func validateContent(schema, content json.RawMessage) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(content, &v); err != nil {
		return invalidContent(err)
	}
	if err := resolved.Validate(v); err != nil {
		return invalidContent(errors.New(invalidFields(&s, v)))
	}
	return nil
}

// invalidFields says which fields of content do not match the form's
// schema, and why, by the schema: a required field left out, a value its
// field's schema refuses, a field the form does not have. It never quotes
// a value: the answer may be a password, and the host shows this to
// people (Handlers.HostAnswerRefused) so that the user can be asked
// again.
func invalidFields(schema *jsonschema.Schema, content any) string {
	obj, ok := content.(map[string]any)
	if !ok {
		return "content is not an object"
	}
	var problems []string
	for _, name := range schema.Required {
		if _, given := obj[name]; !given {
			problems = append(problems, fmt.Sprintf("field %q is required", name))
		}
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sub, inForm := schema.Properties[name]
		if !inForm {
			sub = schema.AdditionalProperties
		}
		if sub == nil {
			continue
		}
		r, err := sub.Resolve(nil)
		if err != nil || r.Validate(obj[name]) == nil {
			continue
		}
		if !inForm {
			problems = append(problems, fmt.Sprintf("field %q is not in the form", name))
			continue
		}
		def, _ := json.Marshal(sub)
		if len(def) > maxSchemaQuote {
			def = append(def[:maxSchemaQuote:maxSchemaQuote], "..."...)
		}
		problems = append(problems, fmt.Sprintf("field %q does not match its schema %s", name, def))
	}
	if len(problems) == 0 {
		return "it does not match the schema"
	}
	return strings.Join(problems, "; ")
}

// maxSchemaQuote bounds a field's schema quoted in an error.
const maxSchemaQuote = 200

func invalidContent(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("elicitation result content does not match requested schema: %v", err)}
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// member is one member of a JSON object: its name, its value's bytes and
// where they lie in the object's bytes.
type member struct {
	name       string
	value      json.RawMessage
	start, end int
}

// members returns the members of a JSON object in their order.
func members(obj json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		ms = append(ms, member{name: name, value: v, start: end - len(v), end: end})
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, err
	}
	return ms, nil
}

// appendMember returns obj with the member name: value added at its end.
func appendMember(obj json.RawMessage, name string, value json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimRight(obj, " \t\r\n")
	body := bytes.TrimSpace(trimmed[1 : len(trimmed)-1])
	key, _ := json.Marshal(name)
	out := make([]byte, 0, len(trimmed)+len(key)+len(value)+2)
	out = append(out, trimmed[:len(trimmed)-1]...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, '}')
}

// setMember returns obj with the value of member name replaced (or added).
func setMember(obj json.RawMessage, name string, value json.RawMessage) (json.RawMessage, error) {
	ms, err := members(obj)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(ms, func(m member) bool { return m.name == name })
	if i < 0 {
		return appendMember(obj, name, value), nil
	}
	sp := ms[i]
	out := make([]byte, 0, len(obj)-(sp.end-sp.start)+len(value))
	out = append(out, obj[:sp.start]...)
	out = append(out, value...)
	return append(out, obj[sp.end:]...), nil
}
