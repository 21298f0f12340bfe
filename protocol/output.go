package protocol

// MetaOutputCut is the _meta key of a tools/call (or tasks/result) result
// that the sidecar cut to its token limit; its value is an OutputCut.
const MetaOutputCut = "mcp-sidecar/truncated"

// Formats of the file that holds a cut result whole (OutputCut.FileFormat).
const (
	// OutputFileText: the text of the result's text blocks, one after
	// another, each ending in a line break of its own.
	OutputFileText = "text"
	// OutputFileJSON: the whole CallToolResult as the server sent it,
	// indented.
	OutputFileJSON = "json"
)

// OutputCut says what the sidecar left out of a result over its limit
// (docs/protocol.md, "Tool output limits"). Block indexes are positions in
// the server's content array, from 0.
type OutputCut struct {
	// Limit is the limit that applied, in estimated tokens.
	Limit int `json:"limit"`
	// OriginalTokens and KeptTokens estimate the result as the server sent
	// it and what of it was kept (the marker block not counted).
	OriginalTokens int `json:"originalTokens"`
	KeptTokens     int `json:"keptTokens"`
	// OmittedBlocks are the content blocks left out whole.
	OmittedBlocks []int `json:"omittedBlocks"`
	// CutBlock is the text block kept in part, when one is.
	CutBlock *int `json:"cutBlock,omitempty"`
	// StructuredContentOmitted: structuredContent was left out whole.
	StructuredContentOmitted bool `json:"structuredContentOmitted,omitempty"`
	// File holds the whole result, in FileFormat, until the session
	// closes; absent when it could not be written (FileError says why).
	File       string `json:"file,omitempty"`
	FileFormat string `json:"fileFormat,omitempty"`
	FileError  string `json:"fileError,omitempty"`
}
