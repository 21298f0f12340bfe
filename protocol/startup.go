package protocol

// Kinds of -32011 (CodeServerNotReady) for a startup that ended without
// failing and without the host cancelling anything: -32800 is only for a
// request the host cancelled ($/cancelRequest). mcp/startupStatus reports
// such a startup with status "cancelled" and this error's message.
const (
	// KindSessionClosed: the startup, or the request waiting for it, was
	// ended by session/close (or by shutdown). Not retryable: the session
	// is gone.
	KindSessionClosed = "session_closed"
	// KindStartupSuperseded: a newer startup of the same server
	// (servers/reconnect) replaced this one. Retryable: the newer startup
	// is the one to wait for.
	KindStartupSuperseded = "startup_superseded"
)
