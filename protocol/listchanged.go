package protocol

// A server's prompts or resources changed (MCP
// notifications/prompts/list_changed, notifications/resources/list_changed):
// the host lists them again (prompts/list, resources/list,
// resources/templates/list) to refresh what it shows of them (slash
// commands, @-mentions). The tools of a server have their own
// notification, mcp/toolsChanged, sent once the session catalog holds the
// new tools.
const NotifyListChanged = "mcp/listChanged"

// The lists of mcp/listChanged.
const (
	// ListPrompts: prompts/list.
	ListPrompts = "prompts"
	// ListResources: resources/list and resources/templates/list (MCP
	// has one notification for both).
	ListResources = "resources"
)

// ListChangedParams are the params of mcp/listChanged.
type ListChangedParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	List      string `json:"list"`
}
