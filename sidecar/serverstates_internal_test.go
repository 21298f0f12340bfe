package sidecar

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// TestServerStatesTable checks the table itself: every state it moves to
// has a row of its own, and every state the protocol knows has a row.
func TestServerStatesTable(t *testing.T) {
	all := []string{
		protocol.StateInvalid, protocol.StateDisabled, protocol.StateDormant, protocol.StateStarting, protocol.StateReady,
		protocol.StateFailed, protocol.StateNeedsAuthorization, protocol.StateCancelled, protocol.StateDisconnected,
	}
	for _, st := range all {
		if _, ok := serverStates[st]; !ok {
			t.Errorf("state %q has no row in serverStates", st)
		}
	}
	for from, tos := range serverStates {
		for _, to := range tos {
			if _, ok := serverStates[to]; !ok {
				t.Errorf("serverStates moves %q to %q, which has no row", from, to)
			}
		}
	}
}

// TestSetStateOutsideTable: a move the table does not have is logged and
// reported to the hook (the harness fails a test on it), and made all the
// same; a move it has is not reported.
func TestSetStateOutsideTable(t *testing.T) {
	type move struct{ from, to string }
	var got []move
	var logs bytes.Buffer
	srv := &Server{
		logger: slog.New(slog.NewTextHandler(&logs, nil)),
		opts: Options{hooks: &testHooks{badTransition: func(session, server, from, to string) {
			got = append(got, move{from, to})
		}}},
	}
	sc := &serverConn{sess: &Session{id: "s1", srv: srv}, name: "a"}
	sc.setStateLocked(protocol.StateDormant)  // "" -> dormant: in the table
	sc.setStateLocked(protocol.StateStarting) // dormant -> starting: in the table
	sc.setStateLocked(protocol.StateDormant)  // starting -> dormant: not
	if diff := cmp.Diff([]move{{protocol.StateStarting, protocol.StateDormant}}, got, cmp.AllowUnexported(move{})); diff != "" {
		t.Errorf("moves reported (-want +got):\n%s", diff)
	}
	if sc.state != protocol.StateDormant {
		t.Errorf("state = %q, want %q: the move is made all the same", sc.state, protocol.StateDormant)
	}
	if !strings.Contains(logs.String(), "not in serverStates") {
		t.Errorf("the move was not logged: %q", logs.String())
	}
}
