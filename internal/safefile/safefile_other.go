//go:build !unix

package safefile

import (
	"io/fs"
	"os"
)

// hasModeBits: the mode bits Go reports here say nothing of who may
// write (Windows reports 0666 for every writable file); the ACL does.
const hasModeBits = false

// openRead opens path for reading. There are no FIFOs in the file system
// here; a link was refused by looking before opening when !follow.
func openRead(path string, follow bool) (*os.File, error) { return os.Open(path) }

// openLock opens path for reading and writing, created when missing; a
// link was refused by looking before opening when !follow.
func openLock(path string, follow bool) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// OwnerProblem accepts every owner: there is no uid here, and the file's
// ACL, inherited from the user's profile, is what keeps it private.
func OwnerProblem(fs.FileInfo, Owner) string { return "" }
