package oauth

import (
	"testing"

	"go.uber.org/goleak"
)

// Every flow, listener and presenter goroutine ends with its Manager.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
