package sidecar

import (
	"encoding/json"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// checkCompleteParams checks the members of completion/complete that go to
// the server (MCP's CompleteParams): ref, argument and context. The server
// gets only a request it can read, and the host a -32602 that names the
// member for one it could not.
func checkCompleteParams(fields map[string]json.RawMessage) error {
	var ref struct {
		Type *string `json:"type"`
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	refOK := decodeObject(fields["ref"], &ref) && ref.Type != nil
	switch {
	case refOK && *ref.Type == "ref/prompt":
		refOK = ref.Name != nil && *ref.Name != ""
	case refOK && *ref.Type == "ref/resource":
		refOK = ref.URI != nil && *ref.URI != ""
	default:
		refOK = false
	}
	if !refOK {
		return completeParamError(`ref must be {"type": "ref/prompt", "name": string} or {"type": "ref/resource", "uri": string}`)
	}
	var arg struct {
		Name  *string `json:"name"`
		Value *string `json:"value"`
	}
	if !decodeObject(fields["argument"], &arg) || arg.Name == nil || arg.Value == nil {
		return completeParamError(`argument must be {"name": string, "value": string}`)
	}
	if raw, ok := fields["context"]; ok && string(raw) != "null" {
		var ctx struct {
			Arguments map[string]string `json:"arguments"`
		}
		if !decodeObject(raw, &ctx) {
			return completeParamError(`context must be {"arguments"?: {name: string}}`)
		}
	}
	return nil
}

// decodeObject decodes raw into v if raw is a JSON object of v's shape.
func decodeObject(raw json.RawMessage, v any) bool {
	return isJSONObject(raw) && json.Unmarshal(raw, v) == nil
}

func completeParamError(msg string) error {
	return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "completion/complete: "+msg)
}
