//go:build windows

package oauth

import (
	"os"

	"golang.org/x/sys/windows"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// allBytes is the range locked: the whole file, whatever its size.
const allBytes = ^uint32(0)

// lockFile takes an exclusive lock on path (created), held until unlock:
// the sidecar and a login command in another process update the store one
// at a time. LockFileEx on a handle opened without FILE_FLAG_OVERLAPPED
// waits until the lock is free, as flock(2) does elsewhere.
func lockFile(path string) (unlock func(), err error) {
	f, err := safefile.OpenLock(path, lockPolicy)
	if err != nil {
		return nil, err
	}
	h := windows.Handle(f.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, allBytes, allBytes, ol); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "LockFileEx", Path: path, Err: err}
	}
	return func() {
		windows.UnlockFileEx(h, 0, allBytes, allBytes, ol)
		f.Close()
	}, nil
}
