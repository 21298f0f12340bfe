//go:build !unix

package catalog

import (
	"io/fs"
	"os"
)

// untrusted has no owner or mode bits to check on this system (Windows
// file modes do not say who may write, and there is no uid): the folder's
// ACL, inherited from the user's profile, is what protects the cache.
func untrusted(fs.FileInfo) string { return "" }

// openNoBlock opens p for reading. Load has checked (lstat) that p is a
// regular file; named pipes do not live in the file system here.
func openNoBlock(p string) (*os.File, error) {
	return os.Open(p)
}
