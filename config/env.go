package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Lookup is an environment lookup: os.LookupEnv in production, a map in
// tests.
type Lookup func(key string) (string, bool)

// MapLookup is a Lookup over a fixed map.
func MapLookup(m map[string]string) Lookup {
	return func(key string) (string, bool) {
		v, ok := m[key]
		return v, ok
	}
}

// AllowedEnv returns the names of the sidecar's environment variables that
// every stdio child inherits (a fresh slice on every call).
func AllowedEnv() []string {
	return append([]string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}, platformEnv...)
}

// ChildEnv is the environment of a stdio child, as the tool whose file
// defines it gives it:
//
//   - Codex (and inline config, in Codex's keys): the allowlist
//     (AllowedEnv) taken from env where set, then each name in env_vars
//     taken from env where set, then the explicit env map, which wins.
//     Nothing else of the sidecar's environment reaches the child, so
//     credentials the sidecar holds (cloud keys, tokens) are not handed to
//     every server;
//   - Claude Code, Cursor and VS Code (c.InheritEnv): the whole
//     environment c.Environ, as those tools start their servers with
//     theirs, then the same allowlist, env_vars and env on top. Without
//     c.Environ (nobody gave it), the allowlist alone.
//
// The result is sorted "KEY=VALUE" strings.
func ChildEnv(c *ServerConfig, env Lookup) []string {
	vars := make(map[string]string)
	if c.InheritEnv {
		for _, kv := range c.Environ {
			if name, v, ok := strings.Cut(kv, "="); ok && validEnvName(name) {
				vars[name] = v
			}
		}
	}
	inherit := func(name string) {
		if !validEnvName(name) {
			return
		}
		if v, ok := env(name); ok {
			vars[name] = v
		}
	}
	for _, name := range AllowedEnv() {
		inherit(name)
	}
	for _, name := range c.EnvVars {
		inherit(name)
	}
	for name, v := range c.Env {
		vars[name] = v
	}
	out := make([]string, 0, len(vars))
	for name, v := range vars {
		out = append(out, name+"="+v)
	}
	slices.Sort(out)
	return out
}

// maxEnvFileSize bounds an envFile: it is read whole, and a path such as
// /dev/zero must not hang or exhaust the sidecar.
const maxEnvFileSize = 1 << 20

// readEnvFile reads a dotenv-style file: KEY=VALUE lines, blank lines and
// "#" comments, an optional "export " prefix, and values optionally wrapped
// in matching single or double quotes (taken literally). Problems name the
// file as display (the path as written, before expansion, which may have
// inserted secret values) and the line, never its content.
func readEnvFile(path, display string) (map[string]string, string) {
	data, problem := readBounded(path, maxEnvFileSize)
	if problem != "" {
		return nil, display + ": " + problem
	}
	vars := make(map[string]string)
	for i, line := range strings.Split(string(bytes.TrimPrefix(data, []byte("\uFEFF"))), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, val, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !validEnvName(name) || strings.ContainsAny(name, " \t") {
			return nil, fmt.Sprintf("%s: line %d is not KEY=VALUE", display, i+1)
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		vars[name] = val
	}
	return vars, ""
}

// resolveAgainst makes p absolute against dir (which is absolute).
func resolveAgainst(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// XDGDir is an XDG base directory: $variable when it is an absolute path
// (the XDG spec says to ignore a relative one), else $HOME/fallback; ok is
// false when neither is absolute. A nil Lookup finds nothing.
func (l Lookup) XDGDir(variable, fallback string) (dir string, ok bool) {
	if l == nil {
		return "", false
	}
	if x, _ := l(variable); filepath.IsAbs(x) {
		return x, true
	}
	if h, _ := l("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, fallback), true
	}
	return "", false
}
