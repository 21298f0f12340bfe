//go:build !(linux || openbsd || dragonfly || solaris || illumos || darwin || ios || freebsd || netbsd)

package launcherprobe

import "io/fs"

// statIdentity cannot read a file's identity here: without it a change of
// the launcher would go unnoticed, so the launcher is unavailable (see
// unsupportedReason).
func statIdentity(fs.FileInfo) (dev, ino uint64, mtime, ctime int64, ok bool) {
	return 0, 0, 0, 0, false
}
