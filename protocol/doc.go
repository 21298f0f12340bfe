// Package protocol owns the host side of the wire: Conn, one JSON-RPC 2.0
// connection with the Language Server base protocol's framing (a size
// limit, answers to malformed input, ids kept as the peer wrote them,
// $/cancelRequest, calls to the peer), and the message types and error
// codes of the host protocol.
package protocol
