// Package protocol defines the host side of the wire: the JSON-RPC message
// types the harness and the sidecar exchange, the Content-Length framing
// (with a size limit and error replies for malformed frames), and the error
// codes of the host protocol.
package protocol
