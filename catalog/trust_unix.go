//go:build unix

package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// untrusted says why a cache folder or file described by fi may not be
// trusted, or "": it belongs to another user, or group or others may write
// it.
func untrusted(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := os.Geteuid(); int(st.Uid) != uid {
			return fmt.Sprintf("owned by uid %d, not by the current user (uid %d)", st.Uid, uid)
		}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("writable by group or others (mode %04o)", perm)
	}
	return ""
}

// openNoBlock opens p for reading without following a final symbolic link
// and without blocking: a FIFO put there would otherwise wait for a writer.
func openNoBlock(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
