//go:build unix

package safefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// hasModeBits: Unix mode bits say who may read and write.
const hasModeBits = true

// openRead opens path for reading without waiting for a writer (a FIFO
// would otherwise block until one comes) and, unless follow, without
// following a link at its last component.
func openRead(path string, follow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}

// openLock opens path for reading and writing, created 0600 when
// missing, without waiting for a reader (a FIFO put there in between) and,
// unless follow, without following a link at its last component.
func openLock(path string, follow bool) (*os.File, error) {
	flags := os.O_RDWR | os.O_CREATE | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0o600)
}

// OwnerProblem says why fi's owner is not one o accepts, or "". The
// effective user is the one whose privileges the sidecar acts with.
func OwnerProblem(fi fs.FileInfo, o Owner) string {
	if o == AnyOwner {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "its owner cannot be read"
	}
	uid := os.Geteuid()
	switch {
	case int(st.Uid) == uid:
		return ""
	case o == OwnerSelfOrRoot && st.Uid == 0:
		return ""
	case o == OwnerSelfOrRoot:
		return fmt.Sprintf("owned by uid %d, not by the current user (uid %d) or root", st.Uid, uid)
	}
	return fmt.Sprintf("owned by uid %d, not by the current user (uid %d)", st.Uid, uid)
}
