//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package oauth

// lockFile is a no-op where flock(2) does not exist: updates are ordered
// within one process only (Store.mu), and writes stay atomic.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
