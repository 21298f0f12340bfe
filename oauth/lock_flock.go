//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package oauth

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path (created 0600), held
// until unlock: the sidecar and a login command in another process update
// the store one at a time.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
