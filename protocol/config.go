package protocol

// StateInvalid is the state of a server whose configuration entry has
// errors: it is never started, and servers/status lists the errors.
const StateInvalid = "invalid"

// ConfigDiscovery asks initialize to find the config files of the MCP
// clients people use (Codex, Claude Code, Cursor, VS Code), as the
// commands for people do (docs/configuration.md).
type ConfigDiscovery struct {
	// Cwd is the absolute working directory: project files are found from
	// it up to the repository root.
	Cwd string `json:"cwd"`
	// Sources restricts discovery to these tools: "codex", "claude",
	// "cursor", "vscode" (absent: all).
	Sources []string `json:"sources,omitempty"`
	// TrustProject runs the servers of the project's files that no
	// approval recorded in their tool covers (the host vouches for the
	// project); servers the user declined in Claude Code stay off.
	TrustProject bool `json:"trustProject,omitempty"`
}

// ConfigProblem is one error or warning of the configuration. File is a
// path, or "initialize" for inline servers; Line and Column locate a parse
// error.
type ConfigProblem struct {
	File    string `json:"file"`
	Server  string `json:"server,omitempty"`
	Key     string `json:"key,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// ConfigOrigin is where a server's definition came from: a file (with the
// tool and scope it belongs to when discovered) or "initialize".
type ConfigOrigin struct {
	Path    string `json:"path"`
	Tool    string `json:"tool,omitempty"`
	Scope   string `json:"scope,omitempty"`
	Project string `json:"project,omitempty"` // Claude Code's local scope
}

// ConfigSource is one source read by initialize and the servers it
// defines.
type ConfigSource struct {
	Path    string   `json:"path"`
	Tool    string   `json:"tool,omitempty"`
	Scope   string   `json:"scope,omitempty"`
	Project string   `json:"project,omitempty"`
	Servers []string `json:"servers"`
	// Untrusted are the servers it defines that no recorded approval
	// covers (listed in ConfigReport.Untrusted), absent when none.
	Untrusted []string `json:"untrusted,omitempty"`
}

// ConfigReplacement is a server defined again by a later source, whose
// definition counts.
type ConfigReplacement struct {
	Server string       `json:"server"`
	By     ConfigOrigin `json:"by"`
	Over   ConfigOrigin `json:"over"`
}

// ConfigReport is initialize's account of the configuration it read.
type ConfigReport struct {
	Sources  []ConfigSource      `json:"sources"`
	Errors   []ConfigProblem     `json:"errors"`
	Warnings []ConfigProblem     `json:"warnings"`
	Replaced []ConfigReplacement `json:"replaced"`
	// Untrusted are the servers of discovered project files that no
	// approval recorded in their tool covers: found, not configured, not
	// started (absent when none).
	Untrusted []ConfigUntrusted `json:"untrusted,omitempty"`
}

// ConfigUntrusted is a server of a project file that is not started
// because no approval recorded in its tool covers it: Codex's trust of
// the project, Claude Code's approval of .mcp.json servers (Cursor and VS
// Code record none the sidecar can read).
type ConfigUntrusted struct {
	Server string       `json:"server"`
	Source ConfigOrigin `json:"source"`
	// Reason says, for people, what the tool recorded.
	Reason string `json:"reason"`
	// Declined is true when the user declined the server in its tool
	// (Claude Code's disabledMcpjsonServers): trustProject does not start
	// it either.
	Declined bool `json:"declined,omitempty"`
}

// ServerApproval is the approval configuration of a server's tools, for
// the host to enforce: the server's default_tools_approval_mode and each
// tool's own approval_mode ("auto", "prompt", "writes" or "approve").
type ServerApproval struct {
	Default string            `json:"default,omitempty"`
	Tools   map[string]string `json:"tools,omitempty"`
}
