//go:build !unix

package proctree

// Signal is a signal to send; outside Unix there are none, and the
// platform's own mechanism (a job object) ends the processes.
type Signal int

// The signals a teardown sends.
const (
	Terminate Signal = 15
	Kill      Signal = 9
)

func signalGroup(int, Signal)   {}
func signalProcess(int, Signal) {}
func groupAlive(int) bool       { return false }
