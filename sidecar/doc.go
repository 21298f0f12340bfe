// Package sidecar is the host side of mcp-sidecar: it owns the host's
// JSON-RPC connection, dispatches its methods, keeps the sessions with their
// MCP server connections and startup rounds, and orders the events the host
// sees.
//
// Where things are:
//
//   - server.go: Serve, the Server, reading the host's requests (Handle) and
//     the method table (method); initialize.go: initialize and the
//     environment it sets up, which every session shares.
//   - session.go: session/open and session/close, and the session a
//     request names (sessionRef); admission.go: the bound on a session's
//     requests in flight.
//   - rounds.go: startup rounds and one startup attempt of a server, from
//     spawn or dial to its first listing (start, finishStart).
//   - serverconn.go: serverConn, one server in one session: its state
//     machine (serverStates), a lost connection and its restart, waiting
//     for readiness (ready). The lock order is written at Session.mu.
//   - sessioncatalog.go: the session's qualified catalog, rebuilt when a
//     server's tools change, listings and the disk cache; refresh.go: the
//     refresh after notifications/tools/list_changed; learnt.go: what a
//     connection learns beyond the catalog (era, instructions, hints).
//   - tools.go: tools/list and binding a tools/call to its server and tool;
//     toolcall.go: sending it and answering; outputlimit.go, outputcut.go,
//     outputrender.go, outputfiles.go: results over their token limit;
//     search.go: tools/search and tools/get; tasks.go: tasks.
//   - methods.go: the methods forwarded to one server (resources, prompts,
//     completion, early resource discovery); servers.go: servers/refresh,
//     servers/reconnect, servers/status; subscriptions.go, updates.go:
//     resource subscriptions and their updates.
//   - events.go: a connection's options and handlers (what a server sends
//     on its own: logs, progress, requests relayed to the host);
//     authorize.go: OAuth; headers.go, inputs.go, secrets.go: what a
//     connection is given and what is scrubbed from what it says.
//   - hooks.go: the test seams (export_test.go sets them).
package sidecar
