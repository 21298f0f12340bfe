package sidecar

import (
	"encoding/json"

	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// inputRounds is the host's part in a modern server's multi round-trip
// of one tools/call, prompts/get or resources/read (docs/protocol.md,
// "Multi round-trip requests"): its answers to the last input-required
// result, the capabilities of the request, and whether the host runs the
// rounds itself (capabilities.inputRequired). A member of the wrong kind
// is the host's error, of this request only.
func inputRounds(caps protocol.HostCapabilities, responses, state, clientCaps json.RawMessage) (mcpclient.Rounds, error) {
	r := mcpclient.Rounds{Own: caps.InputRequired}
	bad := func(msg string) (mcpclient.Rounds, error) {
		return mcpclient.Rounds{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, msg)
	}
	if given(responses) {
		if !isJSONObject(responses) {
			return bad("inputResponses must be a JSON object")
		}
		r.InputResponses = responses
	}
	if given(state) {
		var s string
		if json.Unmarshal(state, &s) != nil {
			return bad("requestState must be a string")
		}
		r.RequestState = state
	}
	if given(clientCaps) {
		if !isJSONObject(clientCaps) {
			return bad("clientCapabilities must be a JSON object")
		}
		r.Capabilities = clientCaps
	}
	return r, nil
}

// given reports whether a raw member was sent, not null.
func given(v json.RawMessage) bool {
	return len(v) > 0 && string(v) != "null"
}

// inputRounds is the package function with the host's capabilities.
func (s *Server) inputRounds(responses, state, clientCaps json.RawMessage) (mcpclient.Rounds, error) {
	var caps protocol.HostCapabilities
	if env := s.environment(); env != nil {
		caps = env.hostCaps
	}
	return inputRounds(caps, responses, state, clientCaps)
}
