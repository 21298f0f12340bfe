//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package oauth

// lockFile is a no-op where neither flock(2) nor LockFileEx exists (plan9,
// wasm, solaris, aix): updates are ordered within one process only
// (Store.mu), and writes stay atomic.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
