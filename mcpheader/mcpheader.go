// Package mcpheader reads the x-mcp-header declarations of an MCP tool's
// input schema and encodes the Mcp-Param-* headers of a call to that tool,
// as MCP 2026-07-28 asks of a Streamable HTTP client (SEP-2243; see
// modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http,
// "Custom Headers from Tool Parameters").
//
// A server may mark a primitive property of a tool's inputSchema with
// "x-mcp-header": "Name"; a client then mirrors the argument at that
// property into the header Mcp-Param-Name of every tools/call to the tool.
// A tool whose declarations break the rules is left out of the client's
// catalog (with a warning): Parse says why. The package depends on the
// standard library only, so that the catalog (which validates) and the MCP
// client (which encodes) share one reading of the rules.
package mcpheader

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ParamPrefix starts the name of every header a declaration produces.
const ParamPrefix = "Mcp-Param-"

// Keyword is the schema keyword of a declaration.
const Keyword = "x-mcp-header"

// The base64 form of a header value that cannot be sent as it is.
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// A Binding ties one property of a tool's input to one header.
type Binding struct {
	// Path is the property's name at each level from the schema root, each
	// step a "properties" key: ["region"], or ["target", "region"] for a
	// nested object's property.
	Path []string
	// Name is the declaration's value: the header is ParamPrefix + Name.
	Name string
}

// Header is the header the binding produces.
func (b Binding) Header() string { return ParamPrefix + b.Name }

// Bindings are the declarations of one tool, ordered by path.
type Bindings []Binding

// Rule names the constraint a declaration breaks. The values are the
// suffixes of the official conformance suite's check ids
// (sep-2243-x-mcp-header-<rule>) where the suite has one.
type Rule string

const (
	// RuleNotEmpty: the value must be a non-empty string.
	RuleNotEmpty Rule = "not-empty"
	// RuleCharset: the value must be an HTTP field-name token (RFC 9110
	// tchar only: no space, colon, control or non-ASCII character).
	RuleCharset Rule = "charset"
	// RuleUnique: values must differ case-insensitively across the schema.
	RuleUnique Rule = "unique"
	// RulePrimitive: the property's type must be "string", "integer" or
	// "boolean" (not "number", not a list of types).
	RulePrimitive Rule = "primitive-only"
	// RuleReachable: the property must be reached from the schema root
	// through "properties" keys only (not items, composition, conditionals,
	// $ref or $defs).
	RuleReachable Rule = "reachable"
	// RuleSchema: the input schema is not JSON at all.
	RuleSchema Rule = "schema"
)

// Error says why a tool's declarations are invalid.
type Error struct {
	// Path is the property whose declaration breaks Rule, as the names of
	// its schema location's steps (keywords included where the path leaves
	// "properties", e.g. ["items", "code"]); nil for the root.
	Path   []string
	Rule   Rule
	Detail string
}

func (e *Error) Error() string {
	if len(e.Path) == 0 {
		return fmt.Sprintf("%s: %s", Keyword, e.Detail)
	}
	return fmt.Sprintf("%s of property %q: %s", Keyword, strings.Join(e.Path, "."), e.Detail)
}

// Parse reads the declarations of a tool's inputSchema (raw JSON) and
// checks them against the rules of SEP-2243. A schema without
// declarations has no bindings and no error, as does an empty or null
// schema. The error, an *Error, names the first violation found (object
// members are visited in sorted order, so the same schema always gives the
// same error).
func Parse(inputSchema json.RawMessage) (Bindings, error) {
	inputSchema = bytes.TrimSpace(inputSchema)
	if len(inputSchema) == 0 || string(inputSchema) == "null" {
		return nil, nil
	}
	if !json.Valid(inputSchema) {
		return nil, &Error{Rule: RuleSchema, Detail: "the input schema is not valid JSON"}
	}
	if !bytes.Contains(inputSchema, []byte(`"`+Keyword+`"`)) {
		return nil, nil // the common case: nothing to read
	}
	p := &parser{seen: map[string][]string{}}
	if err := p.walk(inputSchema, nil, nil, true); err != nil {
		return nil, err
	}
	slices.SortFunc(p.out, func(a, b Binding) int { return slices.Compare(a.Path, b.Path) })
	return p.out, nil
}

type parser struct {
	out  Bindings
	seen map[string][]string // lower-cased names to the path that declared them
}

// Keywords whose value is one subschema, or a map or list of them. A
// declaration found under any of them is not statically reachable.
var (
	schemaKeywords = []string{"additionalProperties", "additionalItems", "contains", "not",
		"if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "propertyNames", "items"}
	schemaMapKeywords  = []string{"patternProperties", "dependentSchemas", "$defs", "definitions", "dependencies"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// walk checks the schema at path (the property names from the root) and
// where (the same path with the keywords of non-static steps). static says
// whether every step so far was a "properties" key.
func (p *parser) walk(schema json.RawMessage, path, where []string, static bool) error {
	var members map[string]json.RawMessage
	if json.Unmarshal(schema, &members) != nil || members == nil {
		return nil // a boolean schema, or anything else that has no keywords
	}
	if decl, ok := members[Keyword]; ok {
		if err := p.declaration(members, decl, path, where, static); err != nil {
			return err
		}
	}
	if props, ok := members["properties"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(props, &m) == nil {
			for _, name := range sortedKeys(m) {
				if err := p.walk(m[name], append(slices.Clip(path), name), append(slices.Clip(where), name), static); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range schemaKeywords {
		if sub, ok := members[k]; ok {
			if err := p.walk(sub, path, append(slices.Clip(where), k), false); err != nil {
				return err
			}
		}
	}
	for _, k := range schemaMapKeywords {
		var m map[string]json.RawMessage
		if json.Unmarshal(members[k], &m) != nil {
			continue
		}
		for _, name := range sortedKeys(m) {
			if err := p.walk(m[name], path, append(slices.Clip(where), k, name), false); err != nil {
				return err
			}
		}
	}
	for _, k := range schemaListKeywords {
		var list []json.RawMessage
		if json.Unmarshal(members[k], &list) != nil {
			continue
		}
		for i, sub := range list {
			if err := p.walk(sub, path, append(slices.Clip(where), k, strconv.Itoa(i)), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// declaration checks one x-mcp-header member of the schema at path.
func (p *parser) declaration(members map[string]json.RawMessage, decl json.RawMessage, path, where []string, static bool) error {
	fail := func(rule Rule, format string, args ...any) error {
		return &Error{Path: slices.Clone(where), Rule: rule, Detail: fmt.Sprintf(format, args...)}
	}
	if !static || len(path) == 0 {
		return fail(RuleReachable, "declared where no argument is reached through properties alone")
	}
	var name string
	if json.Unmarshal(decl, &name) != nil {
		return fail(RuleNotEmpty, "the value %s is not a string", clip(decl))
	}
	if name == "" {
		return fail(RuleNotEmpty, "the value is empty")
	}
	for _, r := range name {
		if !isTChar(r) {
			return fail(RuleCharset, "the value %q has %q, which an HTTP header name cannot have", name, r)
		}
	}
	var typ string
	if json.Unmarshal(members["type"], &typ) != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
		t := "no type"
		if v, ok := members["type"]; ok {
			t = "type " + clip(v)
		}
		return fail(RulePrimitive, "the property has %s; a header can carry only a string, an integer or a boolean", t)
	}
	lower := strings.ToLower(name)
	if other, dup := p.seen[lower]; dup {
		return fail(RuleUnique, "the header name %q is declared by property %q too (names are compared without regard to case)", name, strings.Join(other, "."))
	}
	p.seen[lower] = slices.Clone(path)
	p.out = append(p.out, Binding{Path: slices.Clone(path), Name: name})
	return nil
}

// isTChar reports whether r may appear in an HTTP field name (RFC 9110,
// section 5.6.2: tchar).
func isTChar(r rune) bool {
	switch {
	case r >= '0' && r <= '9', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// maxSafeInteger bounds the integers a header carries: the values a
// JavaScript number holds exactly.
const maxSafeInteger = 1<<53 - 1

// Headers returns the Mcp-Param-* headers of a call whose arguments are
// arguments (a JSON object): one per binding whose argument is a string, a
// boolean or an integer within ±(2^53−1), encoded as EncodeValue does. An
// argument that is absent, null or of another kind gets no header (the
// server, which sees the body, judges the call). Arguments that are not a
// JSON object give no headers.
func (b Bindings) Headers(arguments json.RawMessage) http.Header {
	if len(b) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(arguments, &args) != nil || args == nil {
		return nil
	}
	h := make(http.Header, len(b))
	for _, bd := range b {
		v, ok := lookup(args, bd.Path)
		if !ok {
			continue
		}
		if s, ok := primitive(v); ok {
			// The name as declared: header names are compared without
			// regard to case, and the declaration's spelling is the
			// server's.
			h[bd.Header()] = []string{EncodeValue(s)}
		}
	}
	return h
}

// lookup returns the argument at path.
func lookup(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	v, ok := args[path[0]]
	for _, name := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil || obj == nil {
			return nil, false
		}
		v, ok = obj[name]
	}
	return v, ok
}

// primitive returns the text of a string, boolean or safe integer value.
func primitive(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case 't', 'f':
		var bv bool
		if json.Unmarshal(v, &bv) != nil {
			return "", false
		}
		return strconv.FormatBool(bv), true
	case 'n', '{', '[':
		return "", false
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		if n < -maxSafeInteger || n > maxSafeInteger {
			return "", false
		}
		return strconv.FormatInt(n, 10), true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// NeedsEncoding reports whether s cannot go in a header as it is: it has
// a character outside printable ASCII (tab included), leading or trailing
// space or tab, or it looks like the base64 form itself.
func NeedsEncoding(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}

// EncodeValue is s as a header value: s itself, or "=?base64?" + the
// standard base64 of its UTF-8 bytes + "?=" when NeedsEncoding. The same
// form carries an Mcp-Name that is not header-safe.
func EncodeValue(s string) string {
	if !NeedsEncoding(s) {
		return s
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix
}

// DecodeValue reverses EncodeValue; ok is false for a base64 form that
// does not decode.
func DecodeValue(v string) (s string, ok bool) {
	enc, found := strings.CutPrefix(v, base64Prefix)
	if !found {
		return v, true
	}
	enc, found = strings.CutSuffix(enc, base64Suffix)
	if !found {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", false
	}
	return string(b), true
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clip is a JSON value for a message, cut short.
func clip(v json.RawMessage) string {
	if len(v) > 40 {
		return string(v[:40]) + "..."
	}
	return string(v)
}

// Mismatch says how a request's Mcp-Param-* headers disagree with its
// arguments. A server answers it with HTTP 400 and JSON-RPC error -32020
// (HeaderMismatch).
type Mismatch struct {
	Header string   // the header, as declared (ParamPrefix + Name)
	Path   []string // the argument's property path
	Detail string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("header mismatch: %s %s (argument %q)", m.Header, m.Detail, strings.Join(m.Path, "."))
}

// Check is the server's side of Headers: it compares the Mcp-Param-*
// headers h of a tools/call with the call's arguments (a JSON object), one
// binding at a time, and returns a *Mismatch for the first that
// disagrees. An argument that is a string, a boolean or a safe integer
// needs its header, whose value (decoded as DecodeValue does) must be the
// argument's text as Headers writes it; an argument that is absent or null
// must have no header; an argument of another kind (an object, an array, a
// fraction) cannot be carried, so it must have no header either, and the
// call's own validation judges it. Header names are compared without
// regard to case, and Go's HTTP server has already trimmed the optional
// whitespace around values (RFC 9110, section 5.5). Arguments that are not
// a JSON object are left to the call's own validation too.
func (b Bindings) Check(h http.Header, arguments json.RawMessage) error {
	if len(b) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if a := bytes.TrimSpace(arguments); len(a) > 0 && string(a) != "null" {
		if json.Unmarshal(a, &args) != nil {
			return nil
		}
	}
	for _, bd := range b {
		values := headerValues(h, bd.Header())
		mismatch := func(format string, a ...any) error {
			return &Mismatch{Header: bd.Header(), Path: slices.Clone(bd.Path), Detail: fmt.Sprintf(format, a...)}
		}
		if len(values) > 1 {
			return mismatch("is sent %d times", len(values))
		}
		var text string
		ok := false
		if v, found := lookup(args, bd.Path); found {
			text, ok = primitive(v)
		}
		if !ok {
			if len(values) == 1 {
				return mismatch("is sent for an argument that is absent, null or not a string, boolean or integer")
			}
			continue
		}
		if len(values) == 0 {
			return mismatch("is missing")
		}
		got, decoded := DecodeValue(values[0])
		if !decoded {
			return mismatch("has a base64 form that does not decode")
		}
		if got != text {
			return mismatch("has value %q, the argument is %q", values[0], text)
		}
	}
	return nil
}

// headerValues are the values of every field of h named name, compared
// without regard to case: a server's request has canonical keys, a header
// built by Headers has the declared spelling.
func headerValues(h http.Header, name string) []string {
	var out []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			out = append(out, v...)
		}
	}
	return out
}
