//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package oauth

import (
	"syscall"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// lockFile takes an exclusive advisory lock on path (created 0600), held
// until unlock: the sidecar and a login command in another process update
// the store one at a time. The file is opened as credentials.json is read
// (lockPolicy): a FIFO or a link put there is refused, not waited on.
func lockFile(path string) (unlock func(), err error) {
	f, err := safefile.OpenLock(path, lockPolicy)
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
