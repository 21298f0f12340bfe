package oauth

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every flow, listener and presenter goroutine ends with its Manager. A
// test binary started as a store updater (storeChildEnv) is a child of
// TestStoreUpdatesOfProcessesAreNotLost instead.
func TestMain(m *testing.M) {
	if dir := os.Getenv(storeChildEnv); dir != "" {
		os.Exit(storeChild(dir, os.Getenv(storeChildNameEnv)))
	}
	goleak.VerifyTestMain(m,
		// The OS keychain on Linux is go-keyring's D-Bus session
		// connection, which godbus shares for the life of the process
		// (TestOSKeyringSecretService, inside its own D-Bus session).
		goleak.IgnoreAnyFunction("github.com/godbus/dbus/v5.(*Conn).inWorker"),
		goleak.IgnoreAnyFunction("github.com/godbus/dbus/v5.newConn.func1"),
	)
}
