// Package sandbox decides which sandbox request metadata a forwarded MCP
// tools/call carries: it detects whether a server opted in, validates the
// host's opaque policy, and builds the call's _meta so that the policy
// reaches the server with the bytes the host sent (docs/protocol.md,
// "Sandbox metadata" and "Authority and binding").
//
// Everything here is a pure function of its arguments. Nothing is remembered
// between calls, so one call's policy or launcher can never leak into
// another's.
package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"unicode/utf8"
)

// The three _meta keys that carry sandbox authority to an MCP server.
const (
	// KeyState carries the host's policy for this call.
	KeyState = "codex/sandbox-state"
	// KeyStateMeta is the deprecated alias of KeyState; it carries an
	// identical copy so that older servers keep working.
	KeyStateMeta = "codex/sandbox-state-meta"
	// KeyLauncher carries {"codexExecutable": "/abs/path"} when a verified
	// launcher is available for a local stdio server.
	KeyLauncher = "codex/sandbox-launcher"
)

// Transport names accepted in Injection.Transport.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Capability is what a server advertised in
// capabilities.experimental of its initialize result.
type Capability int

const (
	// CapNone: the server did not opt in; it receives none of the keys.
	CapNone Capability = iota
	// CapPreferred: experimental["codex/sandbox-state"].
	CapPreferred
	// CapDeprecated: only the deprecated experimental["codex/sandbox-state-meta"].
	CapDeprecated
	// CapBoth: both names.
	CapBoth
)

func (c Capability) String() string {
	switch c {
	case CapNone:
		return "none"
	case CapPreferred:
		return "preferred"
	case CapDeprecated:
		return "deprecated"
	case CapBoth:
		return "both"
	}
	return fmt.Sprintf("Capability(%d)", int(c))
}

// OptedIn reports whether the server advertised either capability name.
func (c Capability) OptedIn() bool {
	return c == CapPreferred || c == CapDeprecated || c == CapBoth
}

// Advertised returns the capability names the server advertised, preferred
// first; nil for CapNone. It is meant for status reports.
func (c Capability) Advertised() []string {
	switch c {
	case CapPreferred:
		return []string{KeyState}
	case CapDeprecated:
		return []string{KeyStateMeta}
	case CapBoth:
		return []string{KeyState, KeyStateMeta}
	}
	return nil
}

// DetectCapability reads the experimental capabilities of a server. A name
// counts as advertised when its value is a JSON object (MCP's experimental
// capabilities are objects; `{}` is the convention, and the members are not
// read: `{"enabled": false}` is an object too) or `true`, the one other
// value that can only mean yes. Anything else (false, null, 0, "no", an
// array) is not opting in: sandbox authority goes to a server only when it
// clearly asked for it.
func DetectCapability(experimental map[string]json.RawMessage) Capability {
	preferred := advertised(experimental[KeyState])
	deprecated := advertised(experimental[KeyStateMeta])
	switch {
	case preferred && deprecated:
		return CapBoth
	case preferred:
		return CapPreferred
	case deprecated:
		return CapDeprecated
	}
	return CapNone
}

func advertised(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{' && json.Valid(v) || bytes.Equal(v, []byte("true"))
}

// DetectCapabilityFromInitialize reads the capability from the raw bytes of
// an MCP initialize result, as received on the wire. Reading the raw result
// rather than go-sdk's decoded InitializeResult keeps this independent of
// how the SDK maps experimental values.
func DetectCapabilityFromInitialize(raw json.RawMessage) (Capability, error) {
	var result struct {
		Capabilities *struct {
			Experimental json.RawMessage `json:"experimental"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		return CapNone, fmt.Errorf("reading initialize result: %w", err)
	}
	if result.Capabilities == nil || !StatePresent(result.Capabilities.Experimental) {
		return CapNone, nil // absent or null: no experimental capabilities
	}
	var experimental map[string]json.RawMessage
	if err := json.Unmarshal(result.Capabilities.Experimental, &experimental); err != nil {
		return CapNone, fmt.Errorf("reading initialize result: capabilities.experimental: %w", err)
	}
	return DetectCapability(experimental), nil
}

// ErrInvalidState is wrapped by ValidateState's errors; the caller maps it
// to JSON-RPC invalid params (-32602).
var ErrInvalidState = errors.New("invalid sandboxState")

// StatePresent reports whether the host supplied a policy: absent, empty
// and JSON null all mean "no sandboxState".
func StatePresent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// ValidateState checks that raw is exactly one valid JSON value. The policy
// is otherwise opaque: any value is accepted, nothing is interpreted.
// Absent state (see StatePresent) is valid.
func ValidateState(raw json.RawMessage) error {
	if !StatePresent(raw) {
		return nil
	}
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidState)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	// A second value (or trailing garbage) means the bytes are not one JSON value.
	switch _, err := dec.Token(); {
	case err == nil:
		return fmt.Errorf("%w: more than one JSON value", ErrInvalidState)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("%w: trailing data: %v", ErrInvalidState, err)
	}
	return nil
}

// Injection is everything BuildMeta needs for one forwarded call.
type Injection struct {
	// Capability is what the server advertised on this connection.
	Capability Capability
	// State is the host's sandboxState bytes for this call, or nil.
	State json.RawMessage
	// Launcher is the verified absolute launcher path, or "". The caller
	// passes "" unless the server is a local stdio server and the probe
	// verified the path; BuildMeta checks again.
	Launcher string
	// HostMeta are host-owned _meta entries (progressToken, trace context,
	// threadId, ...).
	HostMeta map[string]json.RawMessage
	// Transport is TransportStdio or TransportHTTP. Only stdio servers get
	// a launcher; anything else (including "") is treated as remote.
	Transport string
}

// IsSandboxKey reports whether key is one of the three keys only the
// sidecar may set.
func IsSandboxKey(key string) bool {
	return key == KeyState || key == KeyStateMeta || key == KeyLauncher
}

// BuildMeta returns the _meta map for the forwarded tools/call, and the
// host keys it dropped, sorted, for logging. Values are json.RawMessage so
// that go-sdk sends their bytes verbatim (whitespace compacted).
//
// Host meta entries are merged, except the three sandbox keys (never
// settable by the host) and values that are not valid UTF-8 JSON (they
// would fail the whole call in the encoder, or reach the server as invalid
// JSON text). The sandbox keys are added only when the
// server opted in and in.State is a valid policy; an invalid policy adds
// nothing, as the caller should have rejected it with ValidateState. The
// result is nil when there is nothing to send.
func BuildMeta(in Injection) (meta map[string]any, dropped []string) {
	for k, v := range in.HostMeta {
		if IsSandboxKey(k) || !json.Valid(v) || !utf8.Valid(v) {
			dropped = append(dropped, k)
			continue
		}
		if meta == nil {
			meta = make(map[string]any, len(in.HostMeta)+3)
		}
		meta[k] = json.RawMessage(slices.Clone(v))
	}
	slices.Sort(dropped)

	if !in.Capability.OptedIn() || !StatePresent(in.State) || ValidateState(in.State) != nil {
		return meta, dropped
	}
	if meta == nil {
		meta = make(map[string]any, 3)
	}
	// Each key gets its own copy: the caller's buffer may be reused, and the
	// encoder must not see one slice through two keys being mutated.
	meta[KeyState] = json.RawMessage(slices.Clone(in.State))
	meta[KeyStateMeta] = json.RawMessage(slices.Clone(in.State))
	if l, ok := LauncherValue(in.Launcher, in.Transport); ok {
		meta[KeyLauncher] = l
	}
	return meta, dropped
}

// LauncherValue returns the codex/sandbox-launcher value for path, and
// whether the launcher may be sent at all: only to a stdio server, only for
// an absolute, valid UTF-8 path. It never searches PATH or guesses.
func LauncherValue(path, transport string) (json.RawMessage, bool) {
	if transport != TransportStdio || path == "" || !utf8.ValidString(path) || !filepath.IsAbs(path) {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		CodexExecutable string `json:"codexExecutable"`
	}{path}); err != nil {
		return nil, false
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), true
}
