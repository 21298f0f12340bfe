package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// Era is the generation of MCP a server speaks (MCP 2026-07-28, "Versioning
// and Compatibility": modelcontextprotocol.io/specification/2026-07-28/basic/versioning).
// It is a property of the server, not of one connection: the sidecar may
// keep what a connection learnt and pass it as Options.Era next time.
type Era string

const (
	// EraUnknown: not known yet; Connect probes (stdio: server/discover
	// first; HTTP: a modern request first).
	EraUnknown Era = ""
	// EraModern: protocol 2026-07-28 and later. Every request carries its
	// version, the client's identity and capabilities in _meta; there is
	// no initialize, no session, no server-to-client request (input comes
	// through multi round-trip results), and notifications that are not
	// about a request come on subscriptions/listen.
	EraModern Era = "modern"
	// EraLegacy: protocol 2025-11-25 and earlier, with the initialize
	// handshake (and, over HTTP, a session).
	EraLegacy Era = "legacy"
)

// ModernProtocolVersion is the version a connection offers first when the
// server's config does not set protocol_version.
const ModernProtocolVersion = "2026-07-28"

// Era is the era of the connection: what the server answered, or what
// protocol_version pinned.
func (c *Conn) Era() Era { return c.era }

// Instructions is the server's instructions for the model ("" when it gave
// none): from initialize's result (legacy) or server/discover's (modern).
func (c *Conn) Instructions() string { return c.instructions }

// A ToolCall is one tools/call as CallToolWith sends it.
type ToolCall struct {
	Name string
	// Arguments are the raw arguments (nil means {}).
	Arguments json.RawMessage
	// Meta are the _meta entries; json.RawMessage values go out with their
	// bytes. On a modern connection the protocol's own keys
	// (io.modelcontextprotocol/protocolVersion, clientInfo,
	// clientCapabilities, logLevel) are the connection's: entries of Meta
	// with those names are not sent.
	Meta map[string]any
	// Task is the task parameter (a JSON object) or nil: see CallToolTask.
	Task json.RawMessage
	// Headers are the tool's x-mcp-header declarations (mcpheader.Parse of
	// its inputSchema). Over Streamable HTTP at 2026-07-28 each declared
	// argument of the call is mirrored into its Mcp-Param-* header; stdio
	// and legacy servers ignore them. mcpclient never looks tools up
	// itself: the caller, who bound the call to a tool, hands them down.
	Headers mcpheader.Bindings
	// Checked says that Arguments and Task are valid JSON already: slices
	// of a message that was checked whole, as the sidecar's host frames
	// are (protocol checks each). They are not checked again, so that a
	// large argument is read once on its way through. Whether Task is an
	// object is checked still.
	Checked bool
	// Rounds is the call's part in a modern server's multi round-trip,
	// for a caller that runs the rounds itself.
	Rounds Rounds
}

// Rounds is a request's part in a modern server's multi round-trip
// (MCP 2026-07-28) when its caller, not the connection, runs the rounds:
// tools/call, prompts/get and resources/read. Legacy connections ignore it.
type Rounds struct {
	// Own: an input_required result is the caller's, returned as the
	// server sent it; without it the connection answers the input
	// through the handlers and sends the request again itself.
	Own bool
	// InputResponses (a JSON object) and RequestState (the JSON string of
	// the result, as it came) answer the request's last input_required
	// result; nil for a first round.
	InputResponses json.RawMessage
	RequestState   json.RawMessage
	// Capabilities (a JSON object, MCP's ClientCapabilities) are sent as
	// the request's io.modelcontextprotocol/clientCapabilities in place of
	// the connection's; nil for the connection's.
	Capabilities json.RawMessage
}

// appendTo appends r's members to the params object of a request (whose
// closing brace dst does not have yet), compacted.
func (r Rounds) appendTo(dst []byte) ([]byte, error) {
	var err error
	if r.InputResponses != nil {
		if !isObject(r.InputResponses) {
			return nil, errors.New("inputResponses must be a JSON object")
		}
		dst = append(dst, `,"inputResponses":`...)
		if dst, err = appendCompact(dst, r.InputResponses); err != nil {
			return nil, fmt.Errorf("inputResponses: %w", err)
		}
	}
	if r.RequestState != nil {
		if len(r.RequestState) < 2 || r.RequestState[0] != '"' {
			return nil, errors.New("requestState must be a JSON string")
		}
		dst = append(dst, `,"requestState":`...)
		if dst, err = appendCompact(dst, r.RequestState); err != nil {
			return nil, fmt.Errorf("requestState: %w", err)
		}
	}
	return dst, nil
}

// proto is the protocol's _meta members of a request with r on c: the
// connection's, or with r's capabilities.
func (c *Conn) proto(r Rounds) ([]byte, error) {
	if r.Capabilities == nil || c.era != EraModern {
		return c.meta, nil
	}
	if !isObject(r.Capabilities) {
		return nil, errors.New("clientCapabilities must be a JSON object")
	}
	caps, err := appendCompact(nil, r.Capabilities)
	if err != nil {
		return nil, fmt.Errorf("clientCapabilities: %w", err)
	}
	return c.modernMeta(c.protocol, caps), nil
}

// CallToolWith sends tools/call as CallTool and CallToolTask do, with the
// tool's header declarations (ToolCall.Headers).
func (c *Conn) CallToolWith(ctx context.Context, call ToolCall) (json.RawMessage, error) {
	return c.callTool(ctx, call)
}
