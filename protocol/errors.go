package protocol

import (
	"encoding/json"
	"errors"
)

// Error codes of the host protocol (docs/protocol.md, "Errors").
const (
	CodeParseError           int64 = -32700
	CodeInvalidRequest       int64 = -32600
	CodeMethodNotFound       int64 = -32601
	CodeInvalidParams        int64 = -32602
	CodeInternalError        int64 = -32603
	CodeServerNotInitialized int64 = -32002
	CodeRequestCancelled     int64 = -32800

	CodeUnknownSession    int64 = -32001
	CodeUnknownServer     int64 = -32010
	CodeServerNotReady    int64 = -32011
	CodeStartupTimeout    int64 = -32012
	CodeUnknownTool       int64 = -32013
	CodeToolTimeout       int64 = -32014
	CodeConnectionLost    int64 = -32015
	CodeBindingChanged    int64 = -32016
	CodeDiscoveryRejected int64 = -32017
	// CodeTooManyRequests is an extension of the contract: a session has
	// limits.maxPendingPerSession requests in flight already.
	CodeTooManyRequests int64 = -32018
)

// Error kinds carried in ErrorData.Kind. They name the failure for programs;
// the message names it for people.
const (
	KindParseError        = "parse_error"
	KindInvalidRequest    = "invalid_request"
	KindMethodNotFound    = "method_not_found"
	KindInvalidParams     = "invalid_params"
	KindInternal          = "internal"
	KindNotInitialized    = "not_initialized"
	KindCancelled         = "cancelled"
	KindUnknownSession    = "unknown_session"
	KindUnknownServer     = "unknown_server"
	KindServerNotReady    = "server_not_ready"
	KindStartupTimeout    = "startup_timeout"
	KindUnknownTool       = "unknown_tool"
	KindToolTimeout       = "tool_timeout"
	KindConnectionLost    = "connection_lost"
	KindBindingChanged    = "binding_changed"
	KindDiscoveryRejected = "discovery_rejected"
	KindTooManyRequests   = "too_many_requests"
	KindServerError       = "server_error" // a JSON-RPC error the MCP server returned
)

// ErrorData is the data member of every error the sidecar returns.
type ErrorData struct {
	Kind      string `json:"kind"`
	Server    string `json:"server,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Retryable bool   `json:"retryable"`
	// Stderr is the tail of the server's stderr, when the error concerns a
	// server process that failed or died.
	Stderr string `json:"stderr,omitempty"`
	// ServerCode is the JSON-RPC code the MCP server answered with, for
	// KindServerError.
	ServerCode *int64 `json:"serverCode,omitempty"`
	// ServerData is the data member of the MCP server's error, as received.
	ServerData json.RawMessage `json:"serverData,omitempty"`
	// ConfigErrors are the configuration problems of a refused initialize.
	ConfigErrors []ConfigProblem `json:"configErrors,omitempty"`
	// AuthorizationURL is the URL to open, for KindNeedsAuthorization
	// while a flow waits for it.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
}

// Error is a host-protocol error: a JSON-RPC code, a message for people and
// data for programs. It implements error so that handlers can return it
// through ordinary error paths and wrap it with %w.
type Error struct {
	Code    int64
	Message string
	Data    ErrorData
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error of the given code and kind.
func NewError(code int64, kind, message string) *Error {
	return &Error{Code: code, Message: message, Data: ErrorData{Kind: kind}}
}

// WithServer returns e with the server (and tool) it concerns recorded in its data.
func (e *Error) WithServer(server, tool string) *Error {
	e.Data.Server = server
	e.Data.Tool = tool
	return e
}

// Retry marks e as retryable.
func (e *Error) Retry() *Error {
	e.Data.Retryable = true
	return e
}

// AsError is err as an *Error: the one it wraps (errors.As), else an
// internal error (-32603) with err's message, so that every answer has a
// code and data.kind.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return NewError(CodeInternalError, KindInternal, err.Error())
}

// wireError is an Error as a JSON-RPC error object.
type wireError struct {
	Code    int64     `json:"code"`
	Message string    `json:"message"`
	Data    ErrorData `json:"data"`
}

func (e *Error) wire() wireError { return wireError{Code: e.Code, Message: e.Message, Data: e.Data} }
