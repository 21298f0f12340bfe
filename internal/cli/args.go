package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/internal/suggest"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// resolveTool finds the tool a person named: the raw name on server, or a
// qualified name, or a raw name that only one server has. The problem says
// what was wrong, with a suggestion.
func resolveTool(list toolsListing, sess *session, server, name string) (listedTool, string) {
	var matches []listedTool
	var known []string
	for _, t := range list.Tools {
		if server != "" && t.Server != server {
			continue
		}
		if t.Name == name || t.Tool.Tool == name {
			matches = append(matches, t)
		}
		known = append(known, t.Tool.Tool, t.Name)
	}
	switch {
	case len(matches) == 1:
		return matches[0], ""
	case len(matches) > 1:
		var on []string
		for _, m := range matches {
			on = append(on, m.Server)
		}
		return listedTool{}, fmt.Sprintf("tool %q is on several servers (%s): name one, as in mcp-sidecar call %s %s", name, strings.Join(on, ", "), on[0], name)
	}
	var msg string
	if server != "" {
		switch r := sess.run(server); r.status {
		case protocol.StatusFailed:
			return listedTool{}, fmt.Sprintf("server %q did not start: %s", server, errorSummary(r.err))
		case protocol.StatusNeedsAuthorization:
			return listedTool{}, fmt.Sprintf("server %q needs authorization: %s", server, sess.l.loginHint(server))
		}
		for _, st := range list.Servers {
			// Not started in this session (an input not given).
			if st.Name == server && st.State == protocol.StateInvalid && st.Error != "" {
				return listedTool{}, st.Error
			}
		}
		msg = fmt.Sprintf("server %q has no tool %q", server, name)
	} else {
		msg = fmt.Sprintf("no server has a tool %q", name)
	}
	if hint := suggest.Closest(name, known); hint != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", hint)
	}
	if server == "" {
		// A server that did not start may be the one that has it.
		var why []string
		for _, st := range list.Servers {
			switch r := sess.run(st.Name); r.status {
			case protocol.StatusFailed:
				why = append(why, fmt.Sprintf("server %q did not start: %s", st.Name, errorSummary(r.err)))
			case protocol.StatusNeedsAuthorization:
				why = append(why, fmt.Sprintf("server %q needs authorization: %s", st.Name, sess.l.loginHint(st.Name)))
			}
		}
		if len(why) > 0 {
			msg = strings.Replace(msg, "no server has", "no server that started has", 1) + "; " + strings.Join(why, "; ")
		}
	}
	return listedTool{}, msg + "; 'mcp-sidecar tools' lists them"
}

// propertySchema is what typing a key=value argument needs of a property.
type propertySchema struct {
	Type json.RawMessage `json:"type"`
	Enum []any           `json:"enum"`
}

func (p propertySchema) types() []string {
	var one string
	if json.Unmarshal(p.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(p.Type, &many)
	return many
}

// typedArguments builds the arguments object of key=value words, typing
// each value by the input schema: JSON where the property's type is a
// number, integer, boolean, array, object or null, a string otherwise. A
// key the schema does not have is an error with a suggestion (unless the
// schema allows other properties).
func typedArguments(words []string, inputSchema json.RawMessage) (json.RawMessage, error) {
	var schema struct {
		Properties           map[string]propertySchema `json:"properties"`
		AdditionalProperties json.RawMessage           `json:"additionalProperties"`
	}
	_ = json.Unmarshal(inputSchema, &schema)
	closed := string(bytes.TrimSpace(schema.AdditionalProperties)) == "false"
	var names []string
	for n := range schema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]json.RawMessage{}
	var order []string
	for _, w := range words {
		key, value, _ := strings.Cut(w, "=")
		if key == "" {
			return nil, fmt.Errorf("argument %q has no name before '='", w)
		}
		prop, known := schema.Properties[key]
		// An unknown key is refused where the schema is closed, or where
		// it looks like a typo of a property.
		if !known && (closed || suggest.Closest(key, names) != "") {
			return nil, unknownArgument(key, names)
		}
		v, err := typedValue(key, value, prop)
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; !dup {
			order = append(order, key)
		}
		out[key] = v
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(out[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func unknownArgument(key string, names []string) error {
	msg := fmt.Sprintf("the tool has no argument %q", key)
	if hint := suggest.Closest(key, names); hint != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", hint)
	}
	if len(names) > 0 {
		msg += "; its arguments: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s", msg)
}

func typedValue(key, value string, prop propertySchema) (json.RawMessage, error) {
	types := prop.types()
	asJSON := func() (json.RawMessage, bool) {
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return nil, false
		}
		return json.RawMessage(value), true
	}
	str := func() json.RawMessage {
		b, _ := json.Marshal(value)
		return b
	}
	if len(types) == 0 {
		// No type: JSON when it reads as JSON other than a bare string.
		if v, ok := asJSON(); ok && !strings.HasPrefix(strings.TrimSpace(value), `"`) {
			return v, nil
		}
		return str(), nil
	}
	for _, t := range types {
		switch t {
		case "string":
			if slices.Contains(types, "null") && value == "null" {
				return json.RawMessage("null"), nil
			}
			return str(), nil
		case "integer":
			if _, err := strconv.ParseInt(value, 10, 64); err == nil {
				return json.RawMessage(value), nil
			}
		case "number":
			if _, err := strconv.ParseFloat(value, 64); err == nil {
				if v, ok := asJSON(); ok {
					return v, nil
				}
			}
		case "boolean":
			if value == "true" || value == "false" {
				return json.RawMessage(value), nil
			}
		case "array", "object":
			if v, ok := asJSON(); ok {
				return v, nil
			}
		case "null":
			if value == "null" {
				return json.RawMessage("null"), nil
			}
		}
	}
	want := strings.Join(types, " or ")
	if slices.Contains(types, "array") || slices.Contains(types, "object") {
		want += " (as JSON)"
	}
	return nil, fmt.Errorf("argument %q: want %s, got %q", key, want, value)
}

// missingArguments are the names the input schema requires that the
// arguments object lacks, in the schema's order.
func missingArguments(arguments json.RawMessage, inputSchema json.RawMessage) []string {
	var schema struct {
		Required []string `json:"required"`
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(inputSchema, &schema) != nil || json.Unmarshal(arguments, &args) != nil {
		return nil
	}
	var missing []string
	for _, name := range schema.Required {
		if _, ok := args[name]; !ok && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}
	return missing
}

// argumentList names arguments in words: the argument "a", the arguments
// "a" and "b", the arguments "a", "b" and "c".
func argumentList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	if len(quoted) == 1 {
		return "the argument " + quoted[0]
	}
	return "the arguments " + strings.Join(quoted[:len(quoted)-1], ", ") + " and " + quoted[len(quoted)-1]
}
