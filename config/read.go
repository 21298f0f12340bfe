package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// Every config file is read through internal/safefile: only a regular
// file, of bounded size, found without blocking and without reading
// anything else (a directory, a FIFO, a device such as /dev/zero, a link
// loop is a problem of that file). What else is required depends on whose
// the file is:
//
//   - a file the host or a person named (configFiles, --config), and an
//     envFile, is read wherever it is: they chose it;
//   - a discovered user-scope file (and ~/.claude.json, the tools' trust
//     records) must be owned by the user or root. A link is followed, as
//     dotfile managers (stow, home-manager) keep these files as links, and
//     the file it leads to is what must be owned so;
//   - a discovered project file comes with the repository: it must be
//     owned by the user or root too, and a link is followed only to a file
//     inside the project, so that a checkout cannot make the sidecar read
//     (and report the parse errors of) a file elsewhere, such as a token.
//
// A problem is said of the file without naming it ("not a regular file (a
// FIFO)"): the caller names it.

// readBounded reads a file the host or a person chose (or an envFile), of
// at most limit bytes.
func readBounded(path string, limit int64) ([]byte, string) {
	return readWith(path, safefile.Policy{Follow: true, MaxBytes: limit})
}

// readUserFile reads a discovered user-scope file, or a tool's record in
// the user's home, of at most limit bytes.
func readUserFile(path string, limit int64) ([]byte, string) {
	return readWith(path, safefile.Policy{Follow: true, Owner: safefile.OwnerSelfOrRoot, MaxBytes: limit})
}

// readProjectFile reads the file at path of the project whose root is
// root, of at most limit bytes, following links only as far as they stay
// in the project.
func readProjectFile(path, root string, limit int64) ([]byte, string) {
	real, problem := inProject(path, root)
	if problem != "" {
		return nil, problem
	}
	// real has no link left; one put there since is refused.
	return readWith(real, safefile.Policy{Owner: safefile.OwnerSelfOrRoot, MaxBytes: limit})
}

// inProject resolves the links of path and says whether the file it
// leads to is inside the project root (both resolved, so a project
// entered through a link is still itself).
func inProject(path, root string) (real, problem string) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		// Stat says it as the system does ("too many levels of symbolic
		// links", "no such file or directory").
		if _, serr := os.Stat(path); serr != nil {
			err = serr
		}
		return "", describeOpenError(err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", describeOpenError(err)
	}
	if !within(realRoot, real) {
		// Where it leads is not said: the name of a file outside the
		// project is none of the project's business.
		return "", "a symbolic link (or a link in its path) that leads out of the project; not followed"
	}
	return real, ""
}

// within reports whether path is root or inside it; both are clean and
// absolute.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readWith reads path through safefile with p, saying a problem without
// naming the file.
func readWith(path string, p safefile.Policy) ([]byte, string) {
	data, _, err := safefile.ReadFile(path, p)
	if err != nil {
		var se *safefile.Error
		if errors.As(err, &se) {
			return nil, se.Reason
		}
		return nil, describeOpenError(err)
	}
	return data, ""
}

// ownedBySelfOrRoot reports whether fi is the user's or root's.
func ownedBySelfOrRoot(fi fs.FileInfo) bool {
	return safefile.OwnerProblem(fi, safefile.OwnerSelfOrRoot) == ""
}

// describeOpenError says why a file could not be read, without its path
// (os errors embed it; the caller names the file).
func describeOpenError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("cannot be read: %v", err)
}
