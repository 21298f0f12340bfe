package protocol

import "encoding/json"

// Host -> sidecar request methods.
const (
	MethodInitialize         = "initialize"
	MethodInitialized        = "initialized"
	MethodShutdown           = "shutdown"
	MethodExit               = "exit"
	MethodCancelRequest      = "$/cancelRequest"
	MethodSessionOpen        = "session/open"
	MethodSessionClose       = "session/close"
	MethodToolsList          = "tools/list"
	MethodToolsCall          = "tools/call"
	MethodResourcesList      = "resources/list"
	MethodResourceTemplates  = "resources/templates/list"
	MethodResourcesRead      = "resources/read"
	MethodResourcesDiscover  = "resources/discover"
	MethodPromptsList        = "prompts/list"
	MethodPromptsGet         = "prompts/get"
	MethodCompletionComplete = "completion/complete"
	MethodServersRefresh     = "servers/refresh"
	MethodServersReconnect   = "servers/reconnect"
	MethodServersStatus      = "servers/status"
)

// Sidecar -> host notifications and requests.
const (
	NotifyStartupStatus   = "mcp/startupStatus"
	NotifyStartupComplete = "mcp/startupComplete"
	NotifyToolsChanged    = "mcp/toolsChanged"
	NotifyProgress        = "$/progress"
	NotifyLog             = "mcp/log"
	RequestElicit         = "mcp/elicit"
	RequestRoots          = "mcp/roots"
)

// Server states as reported to the host.
const (
	StateStarting     = "starting"
	StateReady        = "ready"
	StateFailed       = "failed"
	StateDormant      = "dormant"
	StateDisabled     = "disabled"
	StateCancelled    = "cancelled"
	StateDisconnected = "disconnected"
)

// Catalog sources in tools/list.
const (
	CatalogLive   = "live"
	CatalogCached = "cached"
	CatalogNone   = "none"
)

// Startup statuses in mcp/startupStatus.
const (
	StatusStarting  = "starting"
	StatusReady     = "ready"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Reasons in mcp/toolsChanged.
const (
	ReasonListChanged = "list_changed"
	ReasonRefresh     = "refresh"
	ReasonStartup     = "startup"
	// ReasonExpired: the server's catalog was past its ttlMs (MCP
	// 2026-07-28) when it was used, and was listed again.
	ReasonExpired = "expired"
)

type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// HostCapabilities says what the host handles when a server asks.
type HostCapabilities struct {
	Elicitation ElicitationCapability `json:"elicitation"`
	Roots       RootsCapability       `json:"roots"`
	Sampling    SamplingCapability    `json:"sampling"`
	// Authorization: the host opens OAuth authorization URLs (authorization.go).
	Authorization *AuthorizationCapability `json:"authorization,omitempty"`
	// Inputs: the host asks its user for the inputs of VS Code files
	// (mcp/input, inputs.go).
	Inputs bool `json:"inputs,omitempty"`
	// Extensions are the MCP extensions the host handles (capabilities.go).
	Extensions Extensions `json:"extensions,omitempty"`
	// InputRequired: the host answers a modern server's input-required
	// results itself (docs/protocol.md, "Multi round-trip requests"): the
	// sidecar returns them as the server sent them, and the host sends
	// the request again with inputResponses and requestState.
	InputRequired bool `json:"inputRequired,omitempty"`
}

type LauncherParams struct {
	CodexExecutable string `json:"codexExecutable"`
}

// Limits lets the host tune the sidecar's bounds; zero means the default.
type Limits struct {
	// MaxFrameBytes bounds the host's frames from the first one read after
	// initialize's answer (at least 4096); it lowers the --max-frame-bytes
	// flag's limit, never raises it.
	MaxFrameBytes       int64 `json:"maxFrameBytes,omitempty"`
	MaxToolNameBytes    int   `json:"maxToolNameBytes,omitempty"`
	MaxConcurrentStarts int   `json:"maxConcurrentStarts,omitempty"`
	// MaxPendingPerSession bounds the requests one session may have in
	// flight (tool calls and per-server requests); default 256.
	MaxPendingPerSession int   `json:"maxPendingPerSession,omitempty"`
	RefreshCooldownMs    int64 `json:"refreshCooldownMs,omitempty"`
	// MaxServerRequests bounds the requests one server (in one session)
	// may have waiting on the host (mcp/elicit, mcp/roots, mcp/sample);
	// the excess is answered -32018 to the server. Default 16.
	MaxServerRequests int `json:"maxServerRequests,omitempty"`
	// AuthorizationTimeoutMs bounds an OAuth authorization flow, the user
	// in the browser included (default 300000).
	AuthorizationTimeoutMs int64 `json:"authorizationTimeoutMs,omitempty"`
	// MaxToolOutputTokens is the token limit of a tool's result for tools
	// and servers whose configuration sets none, and the ceiling of those
	// that do (default 25000; docs/protocol.md, "Tool output limits").
	MaxToolOutputTokens int `json:"maxToolOutputTokens,omitempty"`
}

type InitializeParams struct {
	ClientInfo   Implementation   `json:"clientInfo"`
	Capabilities HostCapabilities `json:"capabilities"`
	CacheDir     string           `json:"cacheDir,omitempty"`
	// CredentialsDir holds the OAuth credentials file (default
	// $XDG_CONFIG_HOME/mcp-sidecar/credentials).
	CredentialsDir string   `json:"credentialsDir,omitempty"`
	ConfigFiles    []string `json:"configFiles,omitempty"`
	// Servers is kept raw so that config validation can name keys exactly.
	Servers  json.RawMessage `json:"servers,omitempty"`
	Features map[string]bool `json:"features,omitempty"`
	Launcher *LauncherParams `json:"launcher,omitempty"`
	Limits   *Limits         `json:"limits,omitempty"`
	// ConfigDiscovery finds the config files of Codex, Claude Code, Cursor
	// and VS Code; they are read before configFiles.
	ConfigDiscovery *ConfigDiscovery `json:"configDiscovery,omitempty"`
}

type LauncherStatus struct {
	Status string `json:"status"` // "verified" or "unavailable"
	Reason string `json:"reason,omitempty"`
	// Path is the file advertised as codex/sandbox-launcher when verified:
	// the candidate with its symlinks resolved.
	Path string `json:"path,omitempty"`
}

type SidecarCapabilities struct {
	Features []string `json:"features"`
}

// Version is the host protocol's version, sent as
// initialize.protocolVersion. It changes only with a change that could
// break a host (docs/protocol.md, "Versioning"); additions keep it.
const Version = 1

type InitializeResult struct {
	ServerInfo Implementation `json:"serverInfo"`
	// ProtocolVersion is Version.
	ProtocolVersion int                 `json:"protocolVersion"`
	Capabilities    SidecarCapabilities `json:"capabilities"`
	Launcher        LauncherStatus      `json:"launcher"`
	Servers         []string            `json:"servers"`
	// Config says what was read: sources, errors (each invalid server's
	// among them), warnings and replaced definitions.
	Config ConfigReport `json:"config"`
	// UnknownFeatures are names of initialize.features the sidecar does
	// not know (they are ignored).
	UnknownFeatures []string `json:"unknownFeatures,omitempty"`
}

type SessionOpenParams struct {
	SessionID string          `json:"sessionId,omitempty"`
	Scope     json.RawMessage `json:"scope,omitempty"`
	Cwd       string          `json:"cwd,omitempty"`
	Servers   []string        `json:"servers,omitempty"`
	Startup   string          `json:"startup,omitempty"` // "eager" or "lazy"
}

type ServerState struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Instructions are the server's instructions for the model, as far as
	// known when the session opens: a dormant server's, from the disk
	// cache (docs/protocol.md, "Server instructions").
	Instructions string `json:"instructions,omitempty"`
}

type SessionOpenResult struct {
	SessionID string        `json:"sessionId"`
	Servers   []ServerState `json:"servers"`
}

type SessionParams struct {
	SessionID string `json:"sessionId"`
}

type ToolsListParams struct {
	SessionID string   `json:"sessionId"`
	Servers   []string `json:"servers,omitempty"`
	// Schemas false lists every tool without inputSchema and outputSchema,
	// with inputSchemaBytes and tokens instead (default true).
	Schemas *bool `json:"schemas,omitempty"`
}

// Tool is one entry of the session catalog. Schemas, annotations and _meta
// are the bytes the server sent; inputSchema is absent only in tools/list
// with schemas: false.
type Tool struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	// InputSchemaBytes and Tokens replace the schemas in tools/list with
	// schemas: false: the input schema's length as the server sent it, and
	// the estimated tokens of the full definition.
	InputSchemaBytes *int `json:"inputSchemaBytes,omitempty"`
	Tokens           *int `json:"tokens,omitempty"`
	// Approval is the approval mode configured for the tool (its
	// approval_mode, else the server's default_tools_approval_mode); absent
	// when neither is set.
	Approval string `json:"approval,omitempty"`
}

type ServerCatalog struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Catalog string `json:"catalog"`
	Stale   bool   `json:"stale,omitempty"`
	Error   string `json:"error,omitempty"`
	// SupportsParallelToolCalls is the server's supports_parallel_tool_calls.
	SupportsParallelToolCalls bool `json:"supportsParallelToolCalls,omitempty"`
	// Instructions are the server's instructions for the model
	// (docs/protocol.md, "Server instructions").
	Instructions string `json:"instructions,omitempty"`
}

type ToolsListResult struct {
	Tools   []Tool          `json:"tools"`
	Servers []ServerCatalog `json:"servers"`
}

type ToolsCallParams struct {
	SessionID    string                     `json:"sessionId"`
	Name         string                     `json:"name,omitempty"`
	Server       string                     `json:"server,omitempty"`
	Tool         string                     `json:"tool,omitempty"`
	Arguments    json.RawMessage            `json:"arguments,omitempty"`
	SandboxState json.RawMessage            `json:"sandboxState,omitempty"`
	Meta         map[string]json.RawMessage `json:"meta,omitempty"`
	TimeoutMs    int64                      `json:"timeoutMs,omitempty"`
	// Task asks for a task-augmented call ({} or {"ttl": ms}; see tasks.go).
	Task json.RawMessage `json:"task,omitempty"`
	// InputResponses and RequestState are the host's answer to an
	// input-required result of the request (capabilities.inputRequired):
	// the inputResponses object, and the result's requestState as it came
	// (a JSON string), sent on to the server byte for byte.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   json.RawMessage `json:"requestState,omitempty"`
	// ClientCapabilities are MCP's ClientCapabilities of this request: a
	// modern server is sent them in _meta in place of the session's.
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
}

// ServerRequestParams are the params of requests aimed at one server
// (resources, prompts, refresh, reconnect). Extra MCP params are kept raw.
type ServerRequestParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	Cursor    string `json:"cursor,omitempty"`
	All       bool   `json:"all,omitempty"`
}

type ResourcesReadParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	URI       string `json:"uri"`
	// InputResponses and RequestState are the host's answer to an
	// input-required result of the request (capabilities.inputRequired):
	// the inputResponses object, and the result's requestState as it came
	// (a JSON string), sent on to the server byte for byte.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   json.RawMessage `json:"requestState,omitempty"`
	// ClientCapabilities are MCP's ClientCapabilities of this request: a
	// modern server is sent them in _meta in place of the session's.
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
}

type ResourcesDiscoverParams struct {
	SessionID string   `json:"sessionId"`
	Server    string   `json:"server"`
	MimeTypes []string `json:"mimeTypes,omitempty"`
}

type PromptsGetParams struct {
	SessionID string            `json:"sessionId"`
	Server    string            `json:"server"`
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	// InputResponses and RequestState are the host's answer to an
	// input-required result of the request (capabilities.inputRequired):
	// the inputResponses object, and the result's requestState as it came
	// (a JSON string), sent on to the server byte for byte.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   json.RawMessage `json:"requestState,omitempty"`
	// ClientCapabilities are MCP's ClientCapabilities of this request: a
	// modern server is sent them in _meta in place of the session's.
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
}

type ReconnectResult struct {
	State string `json:"state"`
}

type ServerStatus struct {
	Name            string `json:"name"`
	State           string `json:"state"`
	Transport       string `json:"transport"`
	Required        bool   `json:"required,omitempty"`
	PID             int    `json:"pid,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Era is the generation of MCP the connection speaks: EraModern
	// (2026-07-28 and later) or EraLegacy (the initialize handshake).
	Era          string          `json:"era,omitempty"`
	Capabilities json.RawMessage `json:"capabilities"`
	StartedAt    string          `json:"startedAt,omitempty"`
	Restarts     int             `json:"restarts"`
	LastError    string          `json:"lastError,omitempty"`
	Launcher     *LauncherStatus `json:"launcher,omitempty"`
	Sandbox      string          `json:"sandbox,omitempty"` // advertised sandbox capability, if any
	// Tools and Tokens are the size of the server's catalog in the session
	// (live or cached) and the estimated tokens of its definitions; absent
	// when the server has no catalog.
	Tools  *int `json:"tools,omitempty"`
	Tokens *int `json:"tokens,omitempty"`
	// Stale marks a catalog that a notifications/tools/list_changed
	// outdated and no refresh has replaced yet: tools/list serves it
	// marked so. RefreshingSince is when the refresh in flight began (RFC
	// 3339), so that one that hangs shows.
	Stale           bool   `json:"stale,omitempty"`
	RefreshingSince string `json:"refreshingSince,omitempty"`
	// Source is where the server's definition came from.
	Source *ConfigOrigin `json:"source,omitempty"`
	// ConfigErrors are the errors of an invalid server's definition.
	ConfigErrors []ConfigProblem `json:"configErrors,omitempty"`
	// SupportsParallelToolCalls and Approval are configuration the host
	// enforces (supports_parallel_tool_calls, the approval modes).
	SupportsParallelToolCalls bool            `json:"supportsParallelToolCalls,omitempty"`
	Approval                  *ServerApproval `json:"approval,omitempty"`
	// SkippedStdoutLines counts the lines of a stdio server's stdout that
	// were not JSON-RPC (a server that prints logs on stdout): it works,
	// with a warning. FirstSkippedStdoutLine is the first of them.
	SkippedStdoutLines     int    `json:"skippedStdoutLines,omitempty"`
	FirstSkippedStdoutLine string `json:"firstSkippedStdoutLine,omitempty"`
	// Authorization is the server's OAuth state, for a Streamable HTTP
	// server that is authorized or asked for authorization.
	Authorization *ServerAuthorization `json:"authorization,omitempty"`
	// Instructions are the server's instructions for the model
	// (docs/protocol.md, "Server instructions").
	Instructions string `json:"instructions,omitempty"`
	// ExcludedTools are the tools the server listed that the catalog
	// leaves out (their x-mcp-header declarations are invalid).
	ExcludedTools []ExcludedTool `json:"excludedTools,omitempty"`
	// ListenRefused is a server of 2026-07-28's refusal of
	// subscriptions/listen (its error), until a stream is accepted: its
	// list_changed notifications and resource updates do not come
	// meanwhile.
	ListenRefused string `json:"listenRefused,omitempty"`
}

// Eras of a server connection (ServerStatus.Era).
const (
	EraModern = "modern"
	EraLegacy = "legacy"
)

// ExcludedTool is a tool a server listed that the catalog leaves out, and
// why.
type ExcludedTool struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

type ServersStatusResult struct {
	Servers  []ServerStatus `json:"servers"`
	Launcher LauncherStatus `json:"launcher"`
	// Tokens is the estimated tokens of the whole session catalog.
	Tokens int `json:"tokens"`
}

type StartupStatusParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	Round     int    `json:"round"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	Tools     *int   `json:"tools,omitempty"`
	// Required marks the failure of a server configured required = true.
	Required bool `json:"required,omitempty"`
	// AuthorizationURL is the URL to open, with status
	// needs_authorization while a flow waits for it.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
}

type FailedServer struct {
	Server string `json:"server"`
	Error  string `json:"error"`
	// Required is set when the server is configured required = true: the
	// harness should treat the session as unusable.
	Required bool `json:"required,omitempty"`
}

type StartupCompleteParams struct {
	SessionID string         `json:"sessionId"`
	Round     int            `json:"round"`
	Ready     []string       `json:"ready"`
	Failed    []FailedServer `json:"failed"`
	Cancelled []string       `json:"cancelled"`
	// NeedsAuthorization are the servers that need a user's OAuth
	// authorization (absent when none).
	NeedsAuthorization []NeedsAuthorizationServer `json:"needsAuthorization,omitempty"`
}

type ToolsChangedParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	Reason    string `json:"reason"`
}

type ProgressValue struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}

type ProgressParams struct {
	Token json.RawMessage `json:"token"`
	Value ProgressValue   `json:"value"`
}

type LogParams struct {
	SessionID string          `json:"sessionId,omitempty"`
	Server    string          `json:"server"`
	Level     string          `json:"level"`
	Data      json.RawMessage `json:"data"`
}

type ElicitParams struct {
	SessionID string          `json:"sessionId"`
	Server    string          `json:"server"`
	Params    json.RawMessage `json:"params"`
}

type RootsParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
}

type CancelParams struct {
	ID json.RawMessage `json:"id"`
}
