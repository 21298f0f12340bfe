package config

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// syntax is the variable syntax of a file format.
type syntax int

const (
	// syntaxNone: Codex config.toml and inline config have no expansion.
	syntaxNone syntax = iota
	// syntaxClaude: ${VAR} and ${VAR:-default} as Claude Code, plus the
	// predefined variables Cursor resolves in the same files (${env:VAR},
	// ${userHome}, ${workspaceFolder}, ...).
	syntaxClaude
	// syntaxVSCode: ${env:VAR}, ${userHome}, ${workspaceFolder}, ...,
	// and ${input:ID} of the file's inputs (inputs.go); anything else is
	// an error.
	syntaxVSCode
)

// expander resolves variable references in the string values of one file.
type expander struct {
	syntax    syntax
	env       Lookup
	workspace string // absolute; see workspaceFolder
	// inserted counts the bytes references have expanded to in the
	// file, bounded by maxExpansion.
	inserted int
	// inputs are the file's declared inputs (VS Code), by id; used
	// collects the ids the server being decoded refers to.
	inputs map[string]Input
	used   map[string]bool
	// values collects what references to the environment put into the
	// server being decoded (ServerConfig.Expanded).
	values []string
}

// noteValue records v, the value of environment variable name that a
// reference put into the server being decoded, unless every stdio child
// inherits that variable anyway (AllowedEnv: HOME, PATH, ...), which is
// not a secret and would blank paths out of every message.
func (x *expander) noteValue(name, v string) {
	if v == "" || slices.Contains(AllowedEnv(), name) || slices.Contains(x.values, v) {
		return
	}
	x.values = append(x.values, v)
}

// maxExpansion bounds what the references of one file expand to, in
// total. A reference is a few bytes and its value can be kilobytes (PATH,
// a deep ${workspaceFolder}), so without it a file of references would
// cost hundreds of times its size. Real files expand a handful.
const maxExpansion = 1 << 20

// workspaceFolder is the folder a JSON config file belongs to: the parent
// of a .vscode or .cursor directory holding it, else the file's directory.
func workspaceFolder(absPath string) string {
	dir := filepath.Dir(absPath)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor":
		return filepath.Dir(dir)
	}
	return dir
}

// expand resolves the references in s. A non-empty problem describes the
// first reference that could not be resolved; it names variables, never
// their values.
func (x *expander) expand(s string) (out string, problem string) {
	if x == nil || x.syntax == syntaxNone || !strings.Contains(s, "${") {
		return s, ""
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), ""
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			// No closing brace: not a reference; keep the text as is.
			b.WriteString(s)
			return b.String(), ""
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+2+j]
		val, ok, problem := x.resolve(ref)
		if problem != "" {
			return "", problem
		}
		if ok {
			if x.inserted += len(val); x.inserted > maxExpansion {
				return "", fmt.Sprintf("the variables of this file expand to more than %d bytes in all (a limit that keeps a hostile file from exhausting memory)", maxExpansion)
			}
			b.WriteString(val)
		} else {
			b.WriteString(s[i : i+3+j])
		}
		s = s[i+3+j:]
	}
}

// resolve resolves one reference (the text between "${" and "}"). ok is
// false when the text is not a reference of this syntax and stays literal.
func (x *expander) resolve(ref string) (val string, ok bool, problem string) {
	if name, isEnv := strings.CutPrefix(ref, "env:"); isEnv {
		if v, set := x.env(name); set {
			x.noteValue(name, v)
			return v, true, ""
		}
		return "", false, fmt.Sprintf("environment variable %q (in ${%s}) is not set", name, ref)
	}
	if id, isInput := strings.CutPrefix(ref, "input:"); isInput {
		if x.syntax != syntaxVSCode {
			return "", false, fmt.Sprintf("${input:%s} is VS Code's, and this file has no inputs; use ${env:VAR} and set the variable instead", id)
		}
		if _, declared := x.inputs[id]; !declared {
			return "", false, fmt.Sprintf(`${input:%s} is not declared in the file's "inputs" (a "promptString" input with id %q)`, id, id)
		}
		if x.used == nil {
			x.used = map[string]bool{}
		}
		x.used[id] = true
		return inputMark(id), true, ""
	}
	if v, ok := x.pathVariable(ref); ok {
		return v, true, ""
	}
	if ref == "userHome" {
		return "", false, "${userHome} is used but the home folder is not set (" + strings.Join(homeVariables(runtime.GOOS), " or ") + ")"
	}
	if x.syntax == syntaxVSCode {
		return "", false, fmt.Sprintf("unsupported variable ${%s}; mcp-sidecar resolves ${env:VAR}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename} and ${pathSeparator}", ref)
	}
	// Claude Code: ${VAR} and ${VAR:-default}.
	name, def, hasDefault := strings.Cut(ref, ":-")
	if !isShellName(name) {
		return "", false, "" // not a reference: Claude Code keeps such text literally
	}
	v, set := x.env(name)
	if hasDefault {
		if !set || v == "" {
			return def, true, ""
		}
		x.noteValue(name, v)
		return v, true, ""
	}
	if !set {
		return "", false, fmt.Sprintf("environment variable %q is not set (write ${%s:-default} to give a default)", name, name)
	}
	x.noteValue(name, v)
	return v, true, ""
}

// pathVariable resolves the predefined variables whose values are paths
// (${userHome}, ${workspaceFolder}, ${workspaceFolderBasename},
// ${pathSeparator}); ok is false for any other reference, and for
// ${userHome} when the home folder is not known.
func (x *expander) pathVariable(ref string) (val string, ok bool) {
	switch ref {
	case "userHome":
		for _, name := range homeVariables(runtime.GOOS) {
			if home, set := x.env(name); set && home != "" {
				return home, true
			}
		}
		return "", false
	case "workspaceFolder":
		return x.workspace, true
	case "workspaceFolderBasename":
		return filepath.Base(x.workspace), true
	case "pathSeparator", "/":
		return string(filepath.Separator), true
	}
	return "", false
}

// homeVariables are where the editors find ${userHome} on goos (Node's
// os.homedir()): HOME, and on Windows USERPROFILE where HOME is not set.
func homeVariables(goos string) []string {
	if goos == "windows" {
		return []string{"HOME", "USERPROFILE"}
	}
	return []string{"HOME"}
}

// shown is s for messages: the path variables resolved (so that a person
// sees the file meant, ${userHome}/.env as /home/u/.env), every other
// reference as written, since ${env:VAR} and ${VAR} may insert secrets.
func (x *expander) shown(s string) string {
	if x == nil || x.syntax == syntaxNone || !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		j := -1
		if i >= 0 {
			j = strings.IndexByte(s[i+2:], '}')
		}
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		if v, ok := x.pathVariable(s[i+2 : i+2+j]); ok {
			b.WriteString(s[:i])
			b.WriteString(v)
		} else {
			b.WriteString(s[:i+3+j])
		}
		s = s[i+3+j:]
	}
}

// isShellName reports whether s is a POSIX shell variable name.
func isShellName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
