package mcpclient

import (
	"context"
	"encoding/json"

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
}

// CallToolWith sends tools/call as CallTool and CallToolTask do, with the
// tool's header declarations (ToolCall.Headers).
func (c *Conn) CallToolWith(ctx context.Context, call ToolCall) (json.RawMessage, error) {
	return c.callTool(ctx, call)
}
