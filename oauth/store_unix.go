//go:build unix

package oauth

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a path another user owns, or that group or others
// may use at all: a token file others can read has leaked, and one others
// can write could hold tokens planted by them.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &unsafeError{path, "its owner cannot be read"}
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &unsafeError{path, fmt.Sprintf("owned by uid %d, not by this user (uid %d)", st.Uid, uid)}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &unsafeError{path, fmt.Sprintf("mode %04o lets others in (want %04o; chmod %o %s)", perm, want(fi), want(fi), path)}
	}
	return nil
}

func want(fi fs.FileInfo) fs.FileMode {
	if fi.IsDir() {
		return 0o700
	}
	return 0o600
}

func chmodUnsupported(error) bool { return false }
