// Package schema holds the machine-readable description of the host
// protocol (protocol.schema.json: a meta model of every method with JSON
// Schema 2020-12 for its params and result) and checks messages against it.
// Tests hook a Checker into their hosts, so every message they exchange
// with the sidecar is checked; docs/protocol.md is the same protocol in
// words.
package schema

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Document is protocol.schema.json, byte for byte.
//
//go:embed protocol.schema.json
var Document []byte

// Direction says who sent a message.
type Direction int

const (
	HostToSidecar Direction = iota
	SidecarToHost
)

func (d Direction) String() string {
	if d == HostToSidecar {
		return "host->sidecar"
	}
	return "sidecar->host"
}

// MetaModel is the top level of protocol.schema.json.
type MetaModel struct {
	ProtocolVersion int `json:"protocolVersion"`
	// CommonErrors are the error kinds any request may get, beyond those
	// its entry lists.
	CommonErrors  []string                   `json:"commonErrors"`
	Requests      []Request                  `json:"requests"`
	Notifications []Notification             `json:"notifications"`
	HostRequests  []Request                  `json:"hostRequests"`
	Errors        []ErrorCode                `json:"errors"`
	Defs          map[string]json.RawMessage `json:"$defs"`
}

// Request is a request method: host to sidecar in MetaModel.Requests,
// sidecar to host in MetaModel.HostRequests.
type Request struct {
	Method        string          `json:"method"`
	Params        json.RawMessage `json:"params"`
	Result        json.RawMessage `json:"result"`
	Errors        []string        `json:"errors"`
	Documentation string          `json:"documentation"`
}

// Notification is a notification method.
type Notification struct {
	Method string `json:"method"`
	// MessageDirection is "hostToSidecar" or "sidecarToHost".
	MessageDirection string          `json:"messageDirection"`
	Params           json.RawMessage `json:"params"`
	Documentation    string          `json:"documentation"`
}

// ErrorCode is one error of the protocol. Code is nil for server_error,
// whose code is the MCP server's own.
type ErrorCode struct {
	Code          *int64 `json:"code"`
	Kind          string `json:"kind"`
	Documentation string `json:"documentation"`
}

// Model is the meta model with every schema resolved for validation.
type Model struct {
	Meta MetaModel

	requests      map[string]*method // host -> sidecar requests
	hostRequests  map[string]*method // sidecar -> host requests
	notifications map[Direction]map[string]*method
	errorData     *jsonschema.Resolved
	kinds         map[string]bool
}

// method is one method with its schemas resolved.
type method struct {
	name   string
	params *jsonschema.Resolved
	result *jsonschema.Resolved // nil for notifications
	errors map[string]bool
}

// Load returns the model of the embedded document. It is compiled once and
// shared: it is never modified after compilation.
func Load() (*Model, error) { return compiled() }

var compiled = sync.OnceValues(func() (*Model, error) { return Compile(Document) })

// documentURI is the base every reference of a message schema resolves
// against; the loader answers it with the document itself.
const documentURI = "https://github.com/mcp-sidecar/mcp-sidecar/schema/protocol.schema.json"

// Compile parses a meta model document and resolves every schema in it.
func Compile(doc []byte) (*Model, error) {
	m := &Model{
		requests:      map[string]*method{},
		hostRequests:  map[string]*method{},
		notifications: map[Direction]map[string]*method{HostToSidecar: {}, SidecarToHost: {}},
		kinds:         map[string]bool{},
	}
	if err := json.Unmarshal(doc, &m.Meta); err != nil {
		return nil, fmt.Errorf("protocol schema: %w", err)
	}
	c, err := newCompiler(doc)
	if err != nil {
		return nil, err
	}
	for _, e := range m.Meta.Errors {
		if m.kinds[e.Kind] {
			return nil, fmt.Errorf("protocol schema: error kind %q listed twice", e.Kind)
		}
		m.kinds[e.Kind] = true
	}
	for _, k := range m.Meta.CommonErrors {
		if !m.kinds[k] {
			return nil, fmt.Errorf("protocol schema: commonErrors: unknown kind %q", k)
		}
	}
	if m.errorData, err = c.resolve([]byte(`{"$ref":"#/$defs/ErrorData"}`)); err != nil {
		return nil, fmt.Errorf("protocol schema: ErrorData: %w", err)
	}
	addRequests := func(into map[string]*method, list []Request, what string) error {
		for _, r := range list {
			if into[r.Method] != nil {
				return fmt.Errorf("protocol schema: %s %q listed twice", what, r.Method)
			}
			mt := &method{name: r.Method, errors: map[string]bool{}}
			if mt.params, err = c.resolve(r.Params); err != nil {
				return fmt.Errorf("protocol schema: %s %q params: %w", what, r.Method, err)
			}
			if mt.result, err = c.resolve(r.Result); err != nil {
				return fmt.Errorf("protocol schema: %s %q result: %w", what, r.Method, err)
			}
			for _, k := range r.Errors {
				if !m.kinds[k] {
					return fmt.Errorf("protocol schema: %s %q: unknown error kind %q", what, r.Method, k)
				}
				mt.errors[k] = true
			}
			into[r.Method] = mt
		}
		return nil
	}
	if err := addRequests(m.requests, m.Meta.Requests, "request"); err != nil {
		return nil, err
	}
	if err := addRequests(m.hostRequests, m.Meta.HostRequests, "host request"); err != nil {
		return nil, err
	}
	for _, n := range m.Meta.Notifications {
		var dir Direction
		switch n.MessageDirection {
		case "hostToSidecar":
			dir = HostToSidecar
		case "sidecarToHost":
			dir = SidecarToHost
		default:
			return nil, fmt.Errorf("protocol schema: notification %q: messageDirection %q", n.Method, n.MessageDirection)
		}
		if m.notifications[dir][n.Method] != nil {
			return nil, fmt.Errorf("protocol schema: notification %q listed twice", n.Method)
		}
		mt := &method{name: n.Method}
		if mt.params, err = c.resolve(n.Params); err != nil {
			return nil, fmt.Errorf("protocol schema: notification %q params: %w", n.Method, err)
		}
		m.notifications[dir][n.Method] = mt
	}
	return m, nil
}

// compiler resolves message schemas against one document.
type compiler struct {
	root *jsonschema.Schema
}

// newCompiler parses doc, a schema whose $defs hold every type; each
// message schema is resolved on its own, referring into it.
func newCompiler(doc []byte) (*compiler, error) {
	var root jsonschema.Schema
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("protocol schema: %w", err)
	}
	if root.ID != documentURI {
		return nil, fmt.Errorf("protocol schema: $id is %q, want %q", root.ID, documentURI)
	}
	return &compiler{root: &root}, nil
}

func (c *compiler) resolve(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("no schema")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Defs != nil {
		return nil, fmt.Errorf("a message schema has no $defs of its own: put types in the document's $defs")
	}
	// "#/$defs/X" in a message schema means the document's types: the
	// message schema is resolved with them as its own $defs (resolution
	// does not modify schemas, so they are shared).
	s.Defs = c.root.Defs
	return s.Resolve(&jsonschema.ResolveOptions{BaseURI: documentURI})
}

// validate checks a JSON text against rs.
func validate(rs *jsonschema.Resolved, raw json.RawMessage) error {
	v, err := decode(raw)
	if err != nil {
		return err
	}
	return rs.Validate(v)
}

// decode decodes a JSON text for validation; empty is null.
func decode(raw json.RawMessage) (any, error) {
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// ValidateParams checks the params of a request or notification that dir's
// sender sent. Absent params are checked as null.
//
// In the params of the host's requests and notifications a member whose
// value is null is checked as absent: docs/protocol.md (Conventions) says
// null for an optional param is the same as leaving it out, and the schema
// lists what a host should send, so it does not repeat "or null" for every
// member. A required member that is null is still missing.
func (m *Model) ValidateParams(dir Direction, name string, params json.RawMessage) error {
	mt, err := m.lookup(dir, name, true)
	if err != nil {
		return err
	}
	v, err := decode(params)
	if err != nil {
		return err
	}
	if obj, ok := v.(map[string]any); ok && dir == HostToSidecar {
		for k, x := range obj {
			if x == nil {
				delete(obj, k)
			}
		}
	}
	return mt.params.Validate(v)
}

// ValidateResult checks the result of the request name sent in direction
// dir (so the result travels the other way).
func (m *Model) ValidateResult(dir Direction, name string, result json.RawMessage) error {
	mt, err := m.lookup(dir, name, false)
	if err != nil {
		return err
	}
	return validate(mt.result, result)
}

// lookup finds a method sent in direction dir: a request (notification
// false) or a request or notification (notification true).
func (m *Model) lookup(dir Direction, name string, orNotification bool) (*method, error) {
	reqs := m.requests
	if dir == SidecarToHost {
		reqs = m.hostRequests
	}
	if mt := reqs[name]; mt != nil {
		return mt, nil
	}
	if orNotification {
		if mt := m.notifications[dir][name]; mt != nil {
			return mt, nil
		}
	}
	return nil, fmt.Errorf("method %q is not in the protocol schema as sent %s", name, dir)
}
