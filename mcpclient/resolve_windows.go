package mcpclient

import "os"

// resolveCommand finds command as Windows would with the child's PATH and
// PATHEXT (env), falling back to the sidecar's PATHEXT: winLookPath.
func resolveCommand(command string, env []string, dir string) (string, error) {
	path, _ := winEnvValue(env, "PATH")
	pathExt, ok := winEnvValue(env, "PATHEXT")
	if !ok {
		pathExt = os.Getenv("PATHEXT")
	}
	return winLookPath(command, path, pathExt, dir, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	})
}
