package protocol

// Tool search and deferred schemas: a harness gives the model a
// search over the catalog and the few definitions it needs, instead of the
// whole catalog every turn.
const (
	MethodToolsSearch = "tools/search"
	MethodToolsGet    = "tools/get"
)

// ToolsSearchParams are the params of tools/search.
type ToolsSearchParams struct {
	SessionID string `json:"sessionId"`
	// Query is free text, "/regex/" over names and descriptions, or
	// "select:name1,name2" for exact names (qualified, or the servers'
	// own).
	Query string `json:"query"`
	// Limit is the most results, at least 1 (default 5: leave it out); a
	// select: query returns every tool it names.
	Limit int `json:"limit,omitempty"`
	// Servers restricts the search to these servers of the session.
	Servers []string `json:"servers,omitempty"`
}

// ToolSearchResult is one tool found, best first.
type ToolSearchResult struct {
	Name   string  `json:"name"`   // qualified name
	Server string  `json:"server"` // server name
	Tool   string  `json:"tool"`   // raw name
	Score  float64 `json:"score"`  // comparable within one result only
	// Description is the first sentence of the tool's description.
	Description string `json:"description"`
}

type ToolsSearchResult struct {
	Results []ToolSearchResult `json:"results"`
	// Missing are the names of a select: query that name no tool of the
	// servers searched, in the order given; absent when every name was
	// found.
	Missing []string `json:"missing,omitempty"`
}

// ToolsGetParams are the params of tools/get.
type ToolsGetParams struct {
	SessionID string   `json:"sessionId"`
	Names     []string `json:"names"` // qualified names
}

// ToolsGetResult has the full definitions of the names found, in the order
// asked, and the names the session's catalog does not have.
type ToolsGetResult struct {
	Tools   []Tool   `json:"tools"`
	Missing []string `json:"missing"`
}
