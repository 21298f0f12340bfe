package protocol

// VS Code's mcp.json declares inputs (${input:ID}): values its user is
// asked for when a server that uses them starts. The sidecar asks the
// host (mcp/input), once per input for as long as it runs, when the host
// declared capabilities.inputs (docs/protocol.md, "mcp/input").
const RequestInput = "mcp/input"

// InputParams are the params of mcp/input: one input of a VS Code
// mcp.json.
type InputParams struct {
	// SessionID and Server say which startup needs it (the first one:
	// the answer serves every server and session that uses the input).
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	// ID is the input's id; Source the file that declares it.
	ID     string `json:"id"`
	Source string `json:"source"`
	// Description is the question to show; Password says to hide the
	// answer as it is typed.
	Description string `json:"description,omitempty"`
	Password    bool   `json:"password,omitempty"`
	// Default is the file's default answer, to offer (absent: none).
	Default *string `json:"default,omitempty"`
}

// InputResult is the host's answer to mcp/input: {value} or
// {cancelled: true}.
type InputResult struct {
	Value     *string `json:"value,omitempty"`
	Cancelled bool    `json:"cancelled,omitempty"`
}
