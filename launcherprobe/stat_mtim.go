//go:build linux || openbsd || dragonfly || solaris || illumos

package launcherprobe

import (
	"io/fs"
	"syscall"
)

// statIdentity reads the fields of a file's identity that os.FileInfo does
// not carry. These systems name the times Mtim and Ctim.
func statIdentity(fi fs.FileInfo) (dev, ino uint64, mtime, ctime int64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), st.Mtim.Nano(), st.Ctim.Nano(), true
}
