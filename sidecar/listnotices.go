package sidecar

import (
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A server's notifications/prompts/list_changed and
// notifications/resources/list_changed reach the host as mcp/listChanged.
// Each says only "list again", so two waiting for one list say no more
// than one, and a server may send them as fast as it likes: they go
// through an updateQueue (updates.go) whose keys are the lists
// (protocol.ListPrompts, protocol.ListResources), with its merging and
// pace. With two keys its bound on waiting entries is never reached.

// newListQueue is the queue of the list changes of one connection of sc.
func newListQueue(sc *serverConn) *updateQueue {
	sess, srv := sc.sess, sc.sess.srv
	return newSessionQueue(sc,
		func(list string) {
			srv.notify(protocol.NotifyListChanged, protocol.ListChangedParams{SessionID: sess.id, Server: sc.name, List: list})
		},
		func(n int) {
			srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("%d list changes of server %q dropped", n, sc.name))
		})
}
