package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A server that needs a variable its environment lacks usually says so
// on stderr and exits: "GITHUB_PERSONAL_ACCESS_TOKEN environment variable
// is not set", "KeyError: 'OPENAI_API_KEY'", "Missing required env var
// SLACK_BOT_TOKEN". The tools pass environments differently (Codex an
// allowlist plus env_vars, the others everything), so a server that runs
// under one fails under another. MissingVariables finds the names, and
// PassVariable says how to give one, in the syntax of the file that
// defines the server.

// envContext are words a line names a missing variable with.
var envContext = []string{
	"env", "variable", "not set", "unset", "missing", "required", "undefined",
	"must be set", "must be provided", "keyerror", "no value", "not defined", "not found", "empty",
}

var (
	// snakeName is a variable name in upper snake case with at least one
	// underscore (API_KEY), the common form; a single word (TOKEN) is
	// taken only where the line calls it a variable (below).
	snakeName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
	// namedVariable is a name the line calls a variable: "environment
	// variable TOKEN", "env var TOKEN", "$TOKEN", "${TOKEN}",
	// process.env.TOKEN, os.environ['TOKEN'], KeyError: 'TOKEN'.
	namedVariable = regexp.MustCompile(`(?i:environment variable|env var(?:iable)?|process\.env\.|environ\[|getenv\(|keyerror:)\s*(["'` + "`" + `]?)([A-Za-z_][A-Za-z0-9_]*)|\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
	// upperName is a name as variables are written, in capitals: "the
	// environment variable is not set" names no variable "is".
	upperName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// MissingVariables are the environment variables that text (the tail of a
// server's stderr) names on a line about a missing or unset value and
// that the server's environment (ChildEnv of c with env) does not have, in
// the order they appear, at most five. Error codes that look like names
// (ERR_MODULE_NOT_FOUND) are not taken.
func MissingVariables(c *ServerConfig, text string, env Lookup) []string {
	if c == nil || c.Transport() != TransportStdio || text == "" {
		return nil
	}
	has := map[string]bool{}
	for _, kv := range ChildEnv(c, env) {
		name, _, _ := strings.Cut(kv, "=")
		has[name] = true
	}
	var out []string
	add := func(name string) {
		if name == "" || has[name] || slices.Contains(out, name) || strings.HasPrefix(name, "ERR_") || len(out) == 5 {
			return
		}
		out = append(out, name)
	}
	for _, line := range strings.Split(text, "\n") {
		lower := strings.ToLower(line)
		if !slices.ContainsFunc(envContext, func(w string) bool { return strings.Contains(lower, w) }) {
			continue
		}
		for _, m := range namedVariable.FindAllStringSubmatch(line, -1) {
			quoted, name := m[1] != "", m[2]+m[3]
			if quoted || upperName.MatchString(name) {
				add(name)
			}
		}
		for _, name := range snakeName.FindAllString(line, -1) {
			add(name)
		}
	}
	return out
}

// PassVariable says how to give variable name to the stdio server c, in
// the syntax of the file that defines it: env_vars in Codex's
// config.toml (the variable must also be set where mcp-sidecar runs),
// "env" with the tool's own reference to a variable in the JSON files
// (${NAME} in Claude Code's, ${env:NAME} in Cursor's and VS Code's). set
// says whether the sidecar's environment has the variable, which only a
// Codex-style server does not pass on by itself.
func PassVariable(c *ServerConfig, name string, set bool) string {
	where := c.Origin.Path
	if where == "" {
		where = c.Source
	}
	switch {
	case c.Origin.Tool == ToolCodex || c.Origin.Format == FormatCodex || strings.HasSuffix(strings.ToLower(where), ".toml"):
		pass := fmt.Sprintf("add env_vars = [%q] to [mcp_servers.%s] in %s", name, c.Name, where)
		if set {
			return pass + " (Codex passes a server only the variables it names)"
		}
		return fmt.Sprintf("set it where mcp-sidecar runs and %s, or give its value in [mcp_servers.%s.env]", pass, c.Name)
	case !c.InheritEnv:
		// Inline config, in Codex's keys.
		pass := fmt.Sprintf(`add "env_vars": [%q] to server %q's settings in %s`, name, c.Name, where)
		if set {
			return pass + " (only the variables it names are passed on)"
		}
		return fmt.Sprintf("set it where mcp-sidecar runs and %s, or give its value in \"env\"", pass)
	}
	ref := "${env:" + name + "}"
	switch {
	case c.Origin.Tool == ToolClaude:
		ref = "${" + name + "}"
	case c.Origin.Tool == "" && c.Origin.Format != FormatVSCode:
		ref = "${" + name + "} (Claude Code) or ${env:" + name + "} (Cursor)"
	}
	return fmt.Sprintf(`set it where mcp-sidecar starts (the servers of %s get its whole environment, as in %s) or give it in the server's "env" there: "env": {%q: "..."} (%s reads another variable)`,
		where, toolOf(c), name, ref)
}

// toolOf names the tool whose file defines c, for people.
func toolOf(c *ServerConfig) string {
	if n := toolNames[c.Origin.Tool]; n != "" {
		return n
	}
	if c.Origin.Format == FormatVSCode {
		return "VS Code"
	}
	return "Claude Code and Cursor"
}

// MissingVariableHint is what to say of a server that failed with stderr
// text: which variables it lacks and how to pass each, "" when it names
// none (MissingVariables).
func MissingVariableHint(c *ServerConfig, text string, env Lookup) string {
	names := MissingVariables(c, text, env)
	if len(names) == 0 {
		return ""
	}
	var parts []string
	for _, name := range names {
		set := false
		if env != nil {
			_, set = env(name)
		}
		state := "is not set"
		if set {
			state = "is set but not passed to the server"
		}
		parts = append(parts, fmt.Sprintf("its stderr mentions %s, which %s: %s", name, state, PassVariable(c, name, set)))
	}
	return strings.Join(parts, "; ")
}
