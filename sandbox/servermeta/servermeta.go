// Package servermeta reads the sandbox authority that a host (Codex, or
// mcp-sidecar) attaches to a tools/call, for MCP servers built on go-sdk.
//
// A call's authority is three _meta keys: codex/sandbox-state (the policy,
// opaque JSON), its deprecated copy codex/sandbox-state-meta, and
// codex/sandbox-launcher ({"codexExecutable": "/abs/path"}). A server that
// advertises capabilities.experimental["codex/sandbox-state"] receives them.
//
// go-sdk decodes a request's _meta into map[string]any, which rounds big
// numbers (12345678901234567890 becomes 12345678901234567000) and loses key
// order. A policy must be passed on as received, so wrap the server's
// transport with [Transport]: it sees each incoming tools/call as raw JSON
// and hands the raw values of the three keys to [FromRequest]. Without the
// wrapper FromRequest still works, from go-sdk's decoded map, and says so
// in [Authority.Exact].
//
//	server.Run(ctx, servermeta.Transport(&mcp.StdioTransport{}))
//	...
//	func handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
//		auth, err := servermeta.FromRequest(req, servermeta.Options{RequireLauncher: true})
//		if err != nil { ... fail closed ... }
//		argv := auth.Command([]string{"ls", "-l"})
package servermeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The keys a host sets; they mirror package sandbox, which this package
// does not import so that server authors depend on go-sdk alone.
const (
	KeyState     = "codex/sandbox-state"
	KeyStateMeta = "codex/sandbox-state-meta"
	KeyLauncher  = "codex/sandbox-launcher"
)

// RawMetaKey is the _meta key under which the [Transport] wrapper passes the
// raw values of the three keys to the handler: a JSON string whose content
// is a JSON object holding them, compacted, as they arrived. A JSON string
// survives go-sdk's decoding unchanged, which a nested value does not.
// Any value a client sends under this key is replaced (or removed) by the
// wrapper; without the wrapper, FromRequest accepts it only when it agrees
// with the decoded keys.
const RawMetaKey = "io.github.mcp-sidecar/servermeta-raw"

// Errors returned by FromRequest, wrapped with detail.
var (
	// ErrMissingLauncher: a launcher is required and none came.
	ErrMissingLauncher = errors.New("no sandbox launcher in request _meta")
	// ErrMissingState: a launcher is required, so a policy is too, and none came.
	ErrMissingState = errors.New("no sandbox state in request _meta")
	// ErrInvalid: the keys are present but malformed or contradict each other.
	ErrInvalid = errors.New("invalid sandbox metadata in request _meta")
)

// Options say what a tool needs.
type Options struct {
	// RequireLauncher fails closed (ErrMissingLauncher, ErrMissingState)
	// when the request has no launcher or no policy: a tool that runs
	// commands must not run them unsandboxed by accident.
	RequireLauncher bool
	// AllowMissingLauncher is the explicit operator opt-out of
	// RequireLauncher: set it only from operator configuration (a flag, an
	// environment variable the operator sets), never from request content.
	AllowMissingLauncher bool
}

// Authority is the sandbox authority of one request. Retain it only to
// compare with a later request's authority (Equal); never apply it to
// another request.
type Authority struct {
	// State is the policy as received (compacted), or nil when the request
	// carried none. When Exact is false it was re-encoded from go-sdk's
	// decoded map: keys sorted and numbers beyond float64 precision rounded.
	State json.RawMessage
	// StateKey is the key State was read from: KeyState, or KeyStateMeta
	// when only the deprecated key came. Empty when State is nil.
	StateKey string
	// Launcher is the absolute launcher path, or "".
	Launcher string
	// LauncherJSON is the codex/sandbox-launcher value as received
	// (compacted; re-encoded when Exact is false), or nil.
	LauncherJSON json.RawMessage
	// Exact reports whether State holds the bytes that arrived on the wire
	// (the Transport wrapper was in use).
	Exact bool
}

// HasState reports whether the request carried a policy.
func (a *Authority) HasState() bool { return a != nil && len(a.State) > 0 }

// Command returns the argv that runs cmd under the launcher with this
// policy: <launcher> sandbox --sandbox-state-json <state> -- <cmd...>.
func (a *Authority) Command(cmd []string) ([]string, error) {
	if a == nil || a.Launcher == "" {
		return nil, ErrMissingLauncher
	}
	if !a.HasState() {
		return nil, ErrMissingState
	}
	if len(cmd) == 0 {
		return nil, errors.New("empty command")
	}
	argv := []string{a.Launcher, "sandbox", "--sandbox-state-json", string(a.State), "--"}
	return append(argv, cmd...), nil
}

// Equal reports whether a and b carry the same authority: semantically
// equal policies (object key order, insignificant whitespace, and number
// spelling such as 1.0 vs 1 or 2e10 vs 20000000000 aside; numbers are
// compared exactly, not as float64) and the same launcher. Two requests
// without any authority are equal; nil equals an empty Authority.
func (a *Authority) Equal(b *Authority) bool {
	if a == nil {
		a = &Authority{}
	}
	if b == nil {
		b = &Authority{}
	}
	if a.Launcher != b.Launcher || a.HasState() != b.HasState() {
		return false
	}
	if !a.HasState() {
		return true
	}
	return JSONEqual(a.State, b.State)
}

// FromRequest reads the authority of a tools/call.
func FromRequest(req *mcp.CallToolRequest, opts Options) (*Authority, error) {
	var meta map[string]any
	if req != nil && req.Params != nil {
		meta = req.Params.Meta
	}
	return FromMeta(meta, opts)
}

// FromMeta is FromRequest for a _meta map as go-sdk decodes it.
func FromMeta(meta map[string]any, opts Options) (*Authority, error) {
	raw, exact, err := rawValues(meta)
	if err != nil {
		return nil, err
	}
	a := &Authority{Exact: exact}

	state, hasState := raw[KeyState]
	alias, hasAlias := raw[KeyStateMeta]
	switch {
	case hasState && hasAlias && !JSONEqual(state, alias):
		return nil, fmt.Errorf("%w: %s and %s differ", ErrInvalid, KeyState, KeyStateMeta)
	case hasState && !isNull(state):
		a.State, a.StateKey = state, KeyState
	case hasAlias && !isNull(alias):
		a.State, a.StateKey = alias, KeyStateMeta
	}

	if l, ok := raw[KeyLauncher]; ok && !isNull(l) {
		var v struct {
			CodexExecutable *string `json:"codexExecutable"`
		}
		if err := json.Unmarshal(l, &v); err != nil || v.CodexExecutable == nil {
			return nil, fmt.Errorf("%w: %s must be {\"codexExecutable\": \"/abs/path\"}", ErrInvalid, KeyLauncher)
		}
		p := *v.CodexExecutable
		if !utf8.ValidString(p) || !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%w: %s.codexExecutable %q is not an absolute path", ErrInvalid, KeyLauncher, p)
		}
		a.Launcher, a.LauncherJSON = p, l
	}

	if opts.RequireLauncher && !opts.AllowMissingLauncher {
		if a.Launcher == "" {
			return nil, fmt.Errorf("%w: the host did not provide one, and this tool runs only sandboxed", ErrMissingLauncher)
		}
		if !a.HasState() {
			return nil, fmt.Errorf("%w: a launcher came without a policy, and this tool runs only sandboxed", ErrMissingState)
		}
	}
	return a, nil
}

// rawValues returns the raw JSON of the sandbox keys present in meta, and
// whether they are the wire bytes (from RawMetaKey) or re-encoded.
func rawValues(meta map[string]any) (map[string]json.RawMessage, bool, error) {
	out := make(map[string]json.RawMessage, 3)
	if s, ok := meta[RawMetaKey].(string); ok {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, false, fmt.Errorf("%w: %s: %v", ErrInvalid, RawMetaKey, err)
		}
		// The raw values must say what go-sdk decoded: otherwise someone
		// other than the wrapper wrote RawMetaKey, and neither can be trusted.
		for _, k := range [...]string{KeyState, KeyStateMeta, KeyLauncher} {
			decoded, inMeta := meta[k]
			r, inRaw := out[k]
			if inMeta != inRaw {
				return nil, false, fmt.Errorf("%w: %s disagrees with %s", ErrInvalid, RawMetaKey, k)
			}
			if !inRaw {
				continue
			}
			var v any
			if err := json.Unmarshal(r, &v); err != nil || !reflect.DeepEqual(v, decoded) {
				return nil, false, fmt.Errorf("%w: %s disagrees with %s", ErrInvalid, RawMetaKey, k)
			}
		}
		return out, true, nil
	} else if _, present := meta[RawMetaKey]; present {
		return nil, false, fmt.Errorf("%w: %s is not a string", ErrInvalid, RawMetaKey)
	}
	for _, k := range [...]string{KeyState, KeyStateMeta, KeyLauncher} {
		v, ok := meta[k]
		if !ok {
			continue
		}
		b, err := marshal(v)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s: %v", ErrInvalid, k, err)
		}
		out[k] = b
	}
	return out, false, nil
}

func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

func isNull(v json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}
