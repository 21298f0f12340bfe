package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// VS Code's mcp.json declares inputs, values VS Code asks the user for
// when a server that uses them starts, and the server entries refer to
// them as ${input:ID}:
//
//	"inputs": [{"type": "promptString", "id": "token", "description": "GitHub token", "password": true}],
//	"servers": {"gh": {"type": "http", "url": "...", "headers": {"Authorization": "Bearer ${input:token}"}}}
//
// The file is read before anyone can be asked, so a reference stands in
// the definition as a placeholder (inputMark) until WithInputs puts the
// values in: the definition records the inputs it uses (Inputs), and the
// one it was made from (Template) stays what the discovery scope is
// computed from, with only a digest of each value (InputDigests).

// Input is one input of a VS Code mcp.json that a server uses.
type Input struct {
	// ID is the input's id, as ${input:ID} names it.
	ID string `json:"id"`
	// Description is what to ask; Password says to hide the answer.
	Description string `json:"description,omitempty"`
	Password    bool   `json:"password,omitempty"`
	// Default is the answer given when the user gives none (nil: none).
	Default *string `json:"default,omitempty"`
	// File is the file that declares it: the same id in another file is
	// another input.
	File string `json:"file"`
}

// Key names the input among every file's: its file and its id.
func (in Input) Key() string { return in.File + "\x00" + in.ID }

// inputMark is the placeholder of ${input:ID} in a definition before its
// values are given: characters of Unicode's private use area, which no
// file means literally.
func inputMark(id string) string { return "\uE000input:" + id + "\uE001" }

// hasInputMark reports whether s holds a placeholder.
func hasInputMark(s string) bool { return strings.Contains(s, "\uE000input:") }

// inputTypes are the input types VS Code has; only promptString is one
// a person can be asked through mcp-sidecar.
var inputTypes = []string{"promptString", "pickString", "command"}

// decodeInputs decodes the "inputs" array of a VS Code mcp.json, by id.
// Problems are of the file (its inputs are shared by its servers); an
// input that cannot be used is left out, and a server that uses it gets
// the error that it is not declared.
func decodeInputs(file string, raw any) (map[string]Input, Errors) {
	var errs Errors
	errorf := func(key, format string, args ...any) {
		errs = append(errs, &Error{File: file, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	out := map[string]Input{}
	items, ok := raw.([]any)
	if !ok {
		errorf("inputs", "expected an array of inputs")
		return out, errs
	}
	for i, item := range items {
		key := fmt.Sprintf("inputs[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			errorf(key, "expected an object with type, id and description")
			continue
		}
		id, _ := m["id"].(string)
		if id == "" || strings.ContainsAny(id, "}\uE000\uE001") {
			errorf(key+".id", "expected the input's id, a string without '}'")
			continue
		}
		typ, _ := m["type"].(string)
		switch {
		case typ == "promptString":
		case slices.Contains(inputTypes, typ):
			errorf(key+".type", "%q inputs are not asked by mcp-sidecar, which asks \"promptString\" ones", typ)
			continue
		default:
			errorf(key+".type", `must be "promptString", "pickString" or "command"`)
			continue
		}
		if _, dup := out[id]; dup {
			errorf(key+".id", "input %q is declared twice", id)
			continue
		}
		in := Input{ID: id, File: file}
		for _, k := range sortedKeys(m) {
			v := m[k]
			switch k {
			case "type", "id":
			case "description":
				if in.Description, ok = v.(string); !ok {
					errorf(key+"."+k, "expected a string")
				}
			case "password":
				if in.Password, ok = v.(bool); !ok {
					errorf(key+"."+k, "expected a boolean")
				}
			case "default":
				s, isStr := v.(string)
				if !isStr {
					errorf(key+"."+k, "expected a string")
					continue
				}
				in.Default = &s
			}
		}
		out[id] = in
	}
	return out, errs
}

// WithInputs is c with the values of its inputs (by Input.Key) in place
// of their references: a new definition, whose Template is c and whose
// InputDigests hold a digest of each value, checked as c was. A value
// missing, or a definition the values make invalid (a URL that does not
// parse, a header value with a line break), is among the returned
// problems, which never quote a value.
func (c *ServerConfig) WithInputs(values map[string]string) (*ServerConfig, Errors) {
	if len(c.Inputs) == 0 {
		return c, nil
	}
	var errs Errors
	pairs := make([]string, 0, 2*len(c.Inputs))
	digests := make(map[string]string, len(c.Inputs))
	for _, in := range c.Inputs {
		v, ok := values[in.Key()]
		if !ok {
			errs = append(errs, &Error{File: c.Source, Server: c.Name, Key: "inputs", Message: fmt.Sprintf("no value was given for ${input:%s}", in.ID)})
			continue
		}
		pairs = append(pairs, inputMark(in.ID), v)
		sum := sha256.Sum256([]byte(v))
		digests[in.ID] = "sha256:" + hex.EncodeToString(sum[:])
	}
	if len(errs) > 0 {
		return nil, errs
	}
	r := strings.NewReplacer(pairs...)
	out := *c
	out.Template = c
	out.InputDigests = digests
	out.Problems = nil
	out.Command = r.Replace(c.Command)
	out.Args = replaceAll(r, c.Args)
	out.Cwd = r.Replace(c.Cwd)
	out.URL = r.Replace(c.URL)
	out.Env = replaceValues(r, c.Env)
	out.HTTPHeaders = replaceValues(r, c.HTTPHeaders)
	if c.OAuth != nil {
		o := *c.OAuth
		o.ClientID = r.Replace(o.ClientID)
		out.OAuth = &o
	}
	if errs := validate(&out, nil); len(errs) > 0 {
		for _, e := range errs {
			e.Message += " (with the values given for its inputs)"
		}
		return nil, errs
	}
	return &out, nil
}

func replaceAll(r *strings.Replacer, in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = r.Replace(s)
	}
	return out
}

func replaceValues(r *strings.Replacer, in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := maps.Clone(in)
	for k, v := range out {
		out[k] = r.Replace(v)
	}
	return out
}

// InputValues are the values WithInputs put in, from values, for a
// scrubber: an input may be a token.
func (c *ServerConfig) InputValues(values map[string]string) []string {
	var out []string
	for _, in := range c.Inputs {
		if v, ok := values[in.Key()]; ok {
			out = append(out, v)
		}
	}
	return out
}

// NoOneToAsk makes invalid, in l, every server that uses an input, when
// no one can be asked for inputs: each gets, for each of its inputs, the
// problem why(the input) says, which joins l's errors.
func (l *Loaded) NoOneToAsk(why func(Input) string) {
	for _, name := range l.Names() {
		c := l.Servers[name]
		if len(c.Inputs) == 0 || !c.Valid() {
			continue
		}
		cp := *c
		for _, in := range c.Inputs {
			cp.Problems = append(cp.Problems, &Error{File: c.Source, Server: name, Key: "inputs", Message: why(in)})
		}
		l.Servers[name] = &cp
		l.Errors = append(l.Errors, cp.Problems...)
	}
}

// Describe names the input for people: ${input:ID} ("description").
func (in Input) Describe() string {
	if in.Description == "" {
		return "${input:" + in.ID + "}"
	}
	return fmt.Sprintf("${input:%s} (%q)", in.ID, in.Description)
}
