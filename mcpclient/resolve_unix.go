//go:build !windows

package mcpclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// resolveCommand finds command the way the child's own PATH (in env) would,
// not the sidecar's: env may set PATH for the server.
func resolveCommand(command string, env []string, dir string) (string, error) {
	if command == "" {
		return "", errors.New("no command configured")
	}
	if strings.ContainsRune(command, '/') {
		p := command
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(envValue(env, "PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative PATH entry would depend on the server's cwd
		}
		p := filepath.Join(d, command)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH", command)
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return describePathErr(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return errors.New("is not executable")
	}
	return nil
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
