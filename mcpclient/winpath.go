package mcpclient

import (
	"errors"
	"fmt"
	"strings"
)

// This file is how Windows finds a command, written over strings so that
// it is tested on every platform (resolve_windows.go applies it to the
// file system).

// defaultPathExt is PATHEXT when neither the child's environment nor the
// sidecar's has one.
const defaultPathExt = ".COM;.EXE;.BAT;.CMD"

// winLookPath finds command as Windows does, with the child's PATH and
// PATHEXT: a command with a directory part is taken relative to dir;
// otherwise each absolute PATH entry is tried in order (never the
// sidecar's or the server's current directory). A name with an extension
// is tried as it is; then with each PATHEXT extension, so that "npx"
// finds npx.cmd. isFile reports a regular file.
func winLookPath(command, path, pathExt, dir string, isFile func(string) bool) (string, error) {
	if command == "" {
		return "", errors.New("no command configured")
	}
	exts := winPathExts(pathExt)
	if strings.ContainsAny(command, `\/`) || winVolume(command) != "" {
		p := command
		if !winIsAbs(p) && dir != "" {
			p = winJoin(dir, p)
		}
		if f, ok := winFindFile(p, exts, isFile); ok {
			return f, nil
		}
		return "", fmt.Errorf("command %q: does not exist (extensions tried: %s)", command, strings.Join(exts, " "))
	}
	for _, d := range strings.Split(path, ";") {
		d = strings.Trim(d, `"`)
		if d == "" || !winIsAbs(d) {
			continue // a relative PATH entry would depend on the server's cwd
		}
		if f, ok := winFindFile(winJoin(d, command), exts, isFile); ok {
			return f, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH (extensions tried: %s)", command, strings.Join(exts, " "))
}

func winFindFile(p string, exts []string, isFile func(string) bool) (string, bool) {
	if winExt(p) != "" && isFile(p) {
		return p, true
	}
	for _, e := range exts {
		if isFile(p + e) {
			return p + e, true
		}
	}
	return "", false
}

// winPathExts splits PATHEXT into lower-case extensions with their dot.
func winPathExts(pathExt string) []string {
	if strings.TrimSpace(pathExt) == "" {
		pathExt = defaultPathExt
	}
	var out []string
	for _, e := range strings.Split(pathExt, ";") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		out = append(out, e)
	}
	return out
}

// winExt is the extension of the last element of p ("" if none).
func winExt(p string) string {
	base := p[strings.LastIndexAny(p, `\/`)+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[i:]
	}
	return ""
}

// winVolume is the drive ("C:") or UNC prefix of p, "" if none.
func winVolume(p string) string {
	if len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z') {
		return p[:2]
	}
	if strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, `//`) {
		return p[:2]
	}
	return ""
}

// winIsAbs reports a fully qualified path: a drive and a separator, or UNC.
func winIsAbs(p string) bool {
	v := winVolume(p)
	switch {
	case v == "":
		return false
	case len(v) == 2 && v[1] == ':':
		return len(p) > 2 && (p[2] == '\\' || p[2] == '/')
	default:
		return true
	}
}

func winJoin(dir, name string) string {
	return strings.TrimRight(dir, `\/`) + `\` + name
}

// winEnvValue looks key up in env as Windows does: names ignore case.
func winEnvValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}
