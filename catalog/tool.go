package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// Tool is one tool of one server, kept as the bytes the server sent.
type Tool struct {
	Server    string
	Name      string          // raw name: what goes back to the server
	Qualified string          // mcp__<server>__<tool>, set by Qualify
	Raw       json.RawMessage // the whole tool object as received
	// Approval is the approval mode configured for the tool, added to its
	// wire form for the host to enforce ("" when none is configured).
	Approval string

	Title, Description string
	// TaskSupport is execution.taskSupport ("required", "optional",
	// "forbidden"), "" when absent or not a string.
	TaskSupport string

	// InputSchema, OutputSchema, Annotations and Meta are copies of the
	// corresponding members of Raw, byte for byte; absent (or null) optional
	// members are nil.
	InputSchema, OutputSchema, Annotations, Meta json.RawMessage

	// Headers are the tool's x-mcp-header declarations (mcpheader.Parse of
	// InputSchema), read once when the listing is parsed: every call to
	// the tool carries these, not a reading of its own.
	Headers mcpheader.Bindings
}

// WireJSON is the tool as the host sees it in tools/list: the server's
// tool object with "name" replaced by the qualified name, and "server" and
// "tool" (the raw name) added in front. Every other member keeps the
// server's bytes and order, including members this version does not know
// (such as execution): the host sees what the server published. Members
// named "server" or "tool" in the server's object give way to the
// sidecar's, as does "approval" when one is configured (Approval).
func (t *Tool) WireJSON() (json.RawMessage, error) {
	var b bytes.Buffer
	b.Grow(len(t.Raw) + len(t.Qualified) + len(t.Server) + len(t.Name) + 32)
	if err := t.writeWire(&b, nil); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// SummaryJSON is the tool as tools/list with schemas: false shows it: the
// wire form without inputSchema and outputSchema, with inputSchemaBytes
// (the length of the input schema as the server sent it) and tokens (the
// estimate of the whole wire form, which the caller passes) at the end.
// Members of those two names in the server's object give way.
func (t *Tool) SummaryJSON(tokens int) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := t.writeWire(nil, &b); err != nil {
		return nil, err
	}
	endSummary(&b, t, tokens)
	return b.Bytes(), nil
}

// Forms renders the wire form, its token estimate (EstimateTokens) and the
// summary form in one pass over Raw.
func (t *Tool) Forms() (wire, summary json.RawMessage, tokens int, err error) {
	var w, s bytes.Buffer
	w.Grow(len(t.Raw) + len(t.Qualified) + len(t.Server) + len(t.Name) + 32)
	if err := t.writeWire(&w, &s); err != nil {
		return nil, nil, 0, err
	}
	w.WriteByte('}')
	tokens = EstimateTokens(w.Bytes())
	endSummary(&s, t, tokens)
	return w.Bytes(), s.Bytes(), tokens, nil
}

func endSummary(b *bytes.Buffer, t *Tool, tokens int) {
	fmt.Fprintf(b, `,"inputSchemaBytes":%d,"tokens":%d}`, len(t.InputSchema), tokens)
}

// writeWire writes the wire form to full and the summary form to summary
// (either may be nil), both without their closing brace.
func (t *Tool) writeWire(full, summary *bytes.Buffer) error {
	var outs []*bytes.Buffer
	for _, b := range []*bytes.Buffer{full, summary} {
		if b != nil {
			outs = append(outs, b)
		}
	}
	both := func(f func(b *bytes.Buffer)) {
		for _, b := range outs {
			f(b)
		}
	}
	both(func(b *bytes.Buffer) {
		b.WriteString(`{"name":`)
		writeJSONString(b, t.Qualified)
		b.WriteString(`,"server":`)
		writeJSONString(b, t.Server)
		b.WriteString(`,"tool":`)
		writeJSONString(b, t.Name)
		if t.Approval != "" {
			b.WriteString(`,"approval":`)
			writeJSONString(b, t.Approval)
		}
	})
	dec := json.NewDecoder(bytes.NewReader(t.Raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("tool %q of server %q is not a JSON object", t.Name, t.Server)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("tool %q of server %q: %w", t.Name, t.Server, err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("tool %q of server %q: member %q: %w", t.Name, t.Server, key, err)
		}
		switch key {
		case "name", "server", "tool":
			continue
		case "approval":
			if t.Approval != "" {
				continue
			}
		}
		member := func(b *bytes.Buffer) {
			b.WriteByte(',')
			writeJSONString(b, key)
			b.WriteByte(':')
			b.Write(value)
		}
		if full != nil {
			member(full)
		}
		switch key {
		case "inputSchema", "outputSchema", "inputSchemaBytes", "tokens":
			continue // not in the summary
		}
		if summary != nil {
			member(summary)
		}
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// wireTool is the decoding shape of an MCP tool. Every structured member is
// kept raw: decoding a schema into Go maps would reorder its keys and round
// its big numbers.
type wireTool struct {
	Name         *string         `json:"name"`
	Title        json.RawMessage `json:"title"`
	Description  json.RawMessage `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Meta         json.RawMessage `json:"_meta"`
	Execution    json.RawMessage `json:"execution"`
}

// Excluded is a tool of a listing that the catalog leaves out, and why.
type Excluded struct {
	Name string
	Err  error // an *mcpheader.Error
}

// ParseTools is ParseCatalog without the list of the tools it left out.
func ParseTools(server string, items []json.RawMessage) ([]Tool, error) {
	tools, _, err := ParseCatalog(server, items)
	return tools, err
}

// ParseCatalog parses the raw tool items of one server, in the server's
// order.
//
// A tool whose x-mcp-header declarations break the rules of MCP 2026-07-28
// (mcpheader.Parse: SEP-2243) is left out and named in excluded: a client
// must not call it, since it cannot send the headers the server expects,
// and the server's other tools stay. go-sdk's client leaves such tools out
// of every listing too, whatever the protocol version.
//
// Every item must be an object with a non-empty string name and an object
// inputSchema; title and description, when present, must be strings;
// outputSchema, annotations and _meta, when present and not null, must be
// objects. A name that appears twice in one server's list is an error naming
// the tool: the raw name is how a call reaches the server, so two
// definitions under one name would leave it ambiguous which one the model was
// shown. Items are not modified: Raw aliases items[i].
func ParseCatalog(server string, items []json.RawMessage) (tools []Tool, excluded []Excluded, err error) {
	tools = make([]Tool, 0, len(items))
	seen := make(map[string]int, len(items))
	for i, item := range items {
		t, err := parseTool(server, item)
		if err != nil {
			return nil, nil, fmt.Errorf("server %q: tool #%d: %w", server, i, err)
		}
		if j, dup := seen[t.Name]; dup {
			return nil, nil, fmt.Errorf("server %q: tool %q listed twice (#%d and #%d)", server, t.Name, j, i)
		}
		seen[t.Name] = i
		if t.Headers, err = mcpheader.Parse(t.InputSchema); err != nil {
			excluded = append(excluded, Excluded{Name: t.Name, Err: err})
			continue
		}
		tools = append(tools, t)
	}
	return tools, excluded, nil
}

func parseTool(server string, item json.RawMessage) (Tool, error) {
	if kind(item) != '{' {
		return Tool{}, fmt.Errorf("not a JSON object")
	}
	var w wireTool
	if err := json.Unmarshal(item, &w); err != nil {
		return Tool{}, err
	}
	if w.Name == nil {
		return Tool{}, fmt.Errorf("no name")
	}
	name := *w.Name
	if name == "" {
		return Tool{}, fmt.Errorf("empty name")
	}
	t := Tool{Server: server, Name: name, Raw: item}
	var err error
	if t.Title, err = optString(w.Title); err != nil {
		return Tool{}, fmt.Errorf("tool %q: title: %w", name, err)
	}
	if t.Description, err = optString(w.Description); err != nil {
		return Tool{}, fmt.Errorf("tool %q: description: %w", name, err)
	}
	if w.InputSchema == nil || kind(w.InputSchema) == 'n' {
		return Tool{}, fmt.Errorf("tool %q: no inputSchema", name)
	}
	if kind(w.InputSchema) != '{' {
		return Tool{}, fmt.Errorf("tool %q: inputSchema is not an object", name)
	}
	t.InputSchema = w.InputSchema
	if len(w.Execution) > 0 {
		var e struct {
			TaskSupport string `json:"taskSupport"`
		}
		_ = json.Unmarshal(w.Execution, &e) // an execution of another shape is not this version's to judge
		t.TaskSupport = e.TaskSupport
	}
	for _, m := range []struct {
		key string
		src json.RawMessage
		dst *json.RawMessage
	}{
		{"outputSchema", w.OutputSchema, &t.OutputSchema},
		{"annotations", w.Annotations, &t.Annotations},
		{"_meta", w.Meta, &t.Meta},
	} {
		switch kind(m.src) {
		case 0, 'n':
			// absent or null: leave nil
		case '{':
			*m.dst = m.src
		default:
			return Tool{}, fmt.Errorf("tool %q: %s is not an object", name, m.key)
		}
	}
	return t, nil
}

// optString decodes an optional string member; absent and null are "".
func optString(raw json.RawMessage) (string, error) {
	switch kind(raw) {
	case 0, 'n':
		return "", nil
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	default:
		return "", fmt.Errorf("not a string")
	}
}

// kind is the first significant byte of a JSON value: '{', '[', '"', 'n',
// 't', 'f', a digit or '-'; 0 for no value.
func kind(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}
