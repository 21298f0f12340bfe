package protocol

// Resource subscriptions: the host subscribes a session to one server's
// resource; the server's notifications/resources/updated reach the host as
// mcp/resourceUpdated. A session's subscriptions are re-established on
// every new connection to the server (reconnect, restart) and end with the
// session.
const (
	MethodResourcesSubscribe   = "resources/subscribe"
	MethodResourcesUnsubscribe = "resources/unsubscribe"
	NotifyResourceUpdated      = "mcp/resourceUpdated"
)

// ResourceSubscribeParams are the params of resources/subscribe and
// resources/unsubscribe; the result of both is {}.
type ResourceSubscribeParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	URI       string `json:"uri"`
}

// ResourceUpdatedParams are the params of mcp/resourceUpdated.
type ResourceUpdatedParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	URI       string `json:"uri"`
}
