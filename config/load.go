package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// maxConfigFileSize bounds a config file; real ones are a few KiB.
const maxConfigFileSize = 16 << 20

// ParseInline parses initialize.servers: a JSON object mapping a server name
// to a ServerConfig with Codex's keys. Unknown keys are errors, there is no
// variable expansion, and a relative cwd stays relative (there is no file
// to resolve it against). Each server has Source "initialize". On error
// the map still holds the servers that were valid.
func ParseInline(data json.RawMessage) (map[string]*ServerConfig, error) {
	servers, _, errs := parseInline(data)
	return servers, errs.asError()
}

func parseInline(data json.RawMessage) (map[string]*ServerConfig, []string, Errors) {
	servers := make(map[string]*ServerConfig)
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return servers, nil, nil
	}
	top, problem := decodeJSON(trimmed)
	if problem != "" {
		return servers, nil, Errors{{File: InlineSource, Message: "servers: " + problem}}
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return servers, nil, Errors{{File: InlineSource, Key: "servers", Message: "expected an object mapping server names to settings"}}
	}
	return decodeServers(obj, func(name string) *serverDecoder {
		return &serverDecoder{dialect: dialectInline, file: InlineSource, name: name}
	})
}

// LoadFile reads one config file, detecting its format:
//
//   - *.toml: Codex config.toml, whose [mcp_servers.NAME] tables are read
//     (other top-level Codex keys are ignored); no variable expansion, as
//     Codex has none; unknown server keys are errors.
//   - JSON with a top-level "mcpServers" object: Claude Code and Cursor
//     (.mcp.json, ~/.cursor/mcp.json). ${VAR} and ${VAR:-default} expand
//     as in Claude Code, as do Cursor's ${env:VAR}, ${userHome} and
//     ${workspaceFolder} (in command, args, env, url and headers as
//     Claude Code documents, and also in cwd and envFile; an unset
//     variable without a default is an error); "type": "sse" is refused;
//     "headers" is http_headers; "disabled": true is "enabled": false;
//     keys of other clients (autoApprove, timeout, ...) are ignored with
//     a note, since users share these files between clients.
//   - JSON with a top-level "servers" object: VS Code (.vscode/mcp.json).
//     ${env:VAR}, ${workspaceFolder}, ${userHome} expand; ${input:...} is
//     refused since the sidecar cannot prompt; envFile is read.
//
// JSON files may hold comments and trailing commas, as VS Code writes
// them. Both JSON formats also accept Codex's snake_case keys
// (startup_timeout_sec, enabled_tools, ...). A relative cwd is resolved
// against the file's directory, and so is a command containing a slash; a
// bare command is looked up in PATH when spawned.
//
// Each returned ServerConfig has Name and Source (the path) set. On error
// (Errors) the map still holds the servers that were valid.
func LoadFile(path string, env Lookup) (map[string]*ServerConfig, error) {
	servers, _, errs := loadFile(path, env)
	return servers, errs.asError()
}

func loadFile(path string, env Lookup) (map[string]*ServerConfig, []string, Errors) {
	data, problem := readBounded(path, maxConfigFileSize)
	if problem != "" {
		return map[string]*ServerConfig{}, nil, Errors{{File: path, Message: problem}}
	}
	return parseFile(path, data, env)
}

// parseFile is LoadFile on data already read.
func parseFile(path string, data []byte, env Lookup) (map[string]*ServerConfig, []string, Errors) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return map[string]*ServerConfig{}, nil, Errors{{File: path, Message: fmt.Sprintf("cannot resolve path: %v", err)}}
	}
	dir := filepath.Dir(abs)
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		return parseTOML(path, dir, data)
	}
	return parseClientJSON(path, abs, data, env)
}

func parseTOML(path, dir string, data []byte) (map[string]*ServerConfig, []string, Errors) {
	empty := map[string]*ServerConfig{}
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		return empty, nil, Errors{{File: path, Message: describeTOMLError(err)}}
	}
	raw, ok := top["mcp_servers"]
	if !ok {
		return empty, nil, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return empty, nil, Errors{{File: path, Key: "mcp_servers", Message: "expected a table of servers ([mcp_servers.NAME])"}}
	}
	return decodeServers(obj, func(name string) *serverDecoder {
		return &serverDecoder{dialect: dialectCodex, file: path, name: name, dir: dir}
	})
}

func parseClientJSON(path, abs string, data []byte, env Lookup) (map[string]*ServerConfig, []string, Errors) {
	empty := map[string]*ServerConfig{}
	top, problem := decodeJSON(stripJSONC(data))
	if problem != "" {
		return empty, nil, Errors{{File: path, Message: problem}}
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return empty, nil, Errors{{File: path, Message: `expected a JSON object with "mcpServers" or "servers"`}}
	}
	var (
		key string
		d   dialect
		syn syntax
	)
	_, hasClaude := obj["mcpServers"]
	_, hasVSCode := obj["servers"]
	switch {
	case hasClaude && hasVSCode:
		return empty, nil, Errors{{File: path, Message: `both "mcpServers" and "servers" are present; a file is either Claude Code/Cursor (mcpServers) or VS Code (servers)`}}
	case hasClaude:
		key, d, syn = "mcpServers", dialectClaude, syntaxClaude
	case hasVSCode:
		key, d, syn = "servers", dialectVSCode, syntaxVSCode
	default:
		return empty, nil, Errors{{File: path, Message: `no "mcpServers" (Claude Code, Cursor) or "servers" (VS Code) object`}}
	}
	servers, ok := obj[key].(map[string]any)
	if !ok {
		if obj[key] == nil {
			return empty, nil, nil
		}
		return empty, nil, Errors{{File: path, Key: key, Message: "expected an object mapping server names to settings"}}
	}
	x := &expander{syntax: syn, env: env, workspace: workspaceFolder(abs)}
	dir := filepath.Dir(abs)
	return decodeServers(servers, func(name string) *serverDecoder {
		return &serverDecoder{dialect: d, file: path, name: name, dir: dir, x: x}
	})
}

// decodeServers decodes each server of obj, in name order so that problems
// come out in a stable order.
func decodeServers(obj map[string]any, newDecoder func(name string) *serverDecoder) (map[string]*ServerConfig, []string, Errors) {
	servers := make(map[string]*ServerConfig, len(obj))
	var (
		notes []string
		errs  Errors
	)
	for _, name := range sortedKeys(obj) {
		c, n, e := decodeServer(newDecoder(name), obj[name])
		notes = append(notes, n...)
		errs = append(errs, e...)
		if c != nil {
			servers[name] = c
		}
	}
	return servers, notes, errs
}

// Load reads the files in order and then the inline servers. A later
// definition of a name replaces an earlier one, and the returned notes say
// so (with the keys that were ignored), for the sidecar to log. An invalid
// later definition also removes the earlier one: the user meant to change
// that server, and running the stale definition would hide the mistake.
// On error (Errors, from every source) the map holds the valid servers.
func Load(files []string, inline json.RawMessage, env Lookup) (map[string]*ServerConfig, []string, error) {
	servers := make(map[string]*ServerConfig)
	var (
		notes []string
		errs  Errors
	)
	merge := func(got map[string]*ServerConfig, n []string, e Errors) {
		notes = append(notes, n...)
		errs = append(errs, e...)
		for _, bad := range e {
			if bad.Server != "" {
				delete(servers, bad.Server)
			}
		}
		for _, name := range sortedKeys(got) {
			c := got[name]
			if prev, ok := servers[name]; ok {
				notes = append(notes, fmt.Sprintf("server %q from %s replaces the one from %s", name, c.Source, prev.Source))
			}
			servers[name] = c
		}
	}
	for _, f := range files {
		merge(loadFile(f, env))
	}
	merge(parseInline(inline))
	return servers, notes, errs.asError()
}

// DefaultFiles lists the conventional config files that exist, in the order
// Load should read them (user config first, so project files override it):
// $CODEX_HOME/config.toml (default ~/.codex/config.toml), <cwd>/.mcp.json
// and <cwd>/.vscode/mcp.json.
func DefaultFiles(home, cwd string, env Lookup) []string {
	var candidates []string
	if codexHome, ok := env("CODEX_HOME"); ok && codexHome != "" {
		candidates = append(candidates, filepath.Join(codexHome, "config.toml"))
	} else if home != "" {
		candidates = append(candidates, filepath.Join(home, ".codex", "config.toml"))
	}
	if cwd != "" {
		candidates = append(candidates, filepath.Join(cwd, ".mcp.json"), filepath.Join(cwd, ".vscode", "mcp.json"))
	}
	var out []string
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// decodeJSON decodes one JSON value, keeping numbers exact. The problem
// gives the position but never a piece of the input.
func decodeJSON(data []byte) (any, string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is just past the offending byte.
			line, col := position(data, se.Offset-1)
			return nil, fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, "invalid JSON: unexpected end of input"
		}
		return nil, "invalid JSON: " + err.Error()
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rest := data[end:]
		end += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		line, col := position(data, end)
		return nil, fmt.Sprintf("invalid JSON at line %d, column %d: data after the top-level value", line, col)
	}
	return v, ""
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// quoted matches quoted text in a TOML parser message.
var quoted = regexp.MustCompile(`'[^']*'|"(?:[^"\\]|\\.)*"`)

// describeTOMLError renders a TOML syntax error with its position. Longer
// quoted fragments of the input are elided: a malformed line may hold a
// secret.
func describeTOMLError(err error) string {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return "invalid TOML: " + err.Error()
	}
	msg := quoted.ReplaceAllStringFunc(pe.Message, func(q string) string {
		inner := q[1 : len(q)-1]
		if utf8.RuneCountInString(inner) == 1 || (len(inner) <= 10 && strings.HasPrefix(inner, `\`)) {
			return q // one, possibly escaped, character
		}
		return q[:1] + "…" + q[:1]
	})
	where := fmt.Sprintf("line %d", pe.Position.Line)
	if pe.Position.Col > 0 {
		where += fmt.Sprintf(", column %d", pe.Position.Col)
	}
	if pe.LastKey != "" {
		where += fmt.Sprintf(" (after key %q)", pe.LastKey)
	}
	return fmt.Sprintf("invalid TOML at %s: %s", where, msg)
}

// stripJSONC blanks out // and /* */ comments, trailing commas and a byte
// order mark, keeping every other byte where it was so that positions in
// JSON errors stay right.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\uFEFF")) {
		copy(out, "   ")
	}
	blank := func(i int) {
		if out[i] != '\n' && out[i] != '\r' {
			out[i] = ' '
		}
	}
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 >= len(out) {
				continue
			}
			switch out[i+1] {
			case '/':
				for ; i < len(out) && out[i] != '\n'; i++ {
					blank(i)
				}
			case '*':
				blank(i)
				blank(i + 1)
				for i += 2; i < len(out); i++ {
					if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
						blank(i)
						blank(i + 1)
						i++
						break
					}
					blank(i)
				}
			}
		case ']', '}':
		back:
			for j := i - 1; j >= 0; j-- {
				switch out[j] {
				case ' ', '\t', '\n', '\r':
				case ',':
					out[j] = ' '
					break back
				default:
					break back
				}
			}
		}
	}
	return out
}
