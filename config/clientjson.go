package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/tailscale/hujson"
)

func parseClientJSON(src Source, format, abs string, data []byte, env Lookup) parsed {
	path := src.Path
	if bytes.HasPrefix(data, []byte("\uFEFF")) {
		data = slices.Clone(data)
		copy(data, "   ") // a byte order mark; blanked so positions stay right
	}
	empty := parsed{servers: map[string]*ServerConfig{}}
	var (
		raw   any    // the servers object
		where string // where it is, for errors
		d     dialect
		syn   syntax
		// inputsRaw is VS Code's top-level "inputs".
		inputsRaw any
		hasInputs bool
	)
	switch format {
	case FormatClaudeUser, FormatClaudeLocal:
		project := ""
		if format == FormatClaudeLocal {
			project = src.Project
		}
		start, end, found, perr := claudeServers(path, data, project)
		if perr != nil {
			return failed(perr)
		}
		if !found {
			return empty
		}
		if perr := checkJSONShape(path, data, start, end, true); perr != nil {
			return failed(perr)
		}
		if raw, perr = decodeJSON(path, data[start:end]); perr != nil {
			return failed(perr)
		}
		where, d, syn = "mcpServers", dialectClaude, syntaxClaude
		if project != "" {
			where = fmt.Sprintf("projects[%q].mcpServers", project)
		}
	default:
		if perr := checkJSONShape(path, data, 0, len(data), true); perr != nil {
			return failed(perr)
		}
		top, perr := decodeJSONC(path, data)
		if perr != nil {
			return failed(perr)
		}
		obj, ok := top.(map[string]any)
		if !ok {
			return failed(&Error{File: path, Message: `expected a JSON object with "mcpServers" or "servers"`})
		}
		if format == FormatAuto {
			_, hasClaude := obj["mcpServers"]
			_, hasVSCode := obj["servers"]
			switch {
			case hasClaude && hasVSCode:
				return failed(&Error{File: path, Message: `both "mcpServers" and "servers" are present; a file is either Claude Code/Cursor (mcpServers) or VS Code (servers)`})
			case hasClaude:
				format = FormatMCPServers
			case hasVSCode:
				format = FormatVSCode
			default:
				return failed(&Error{File: path, Message: `no "mcpServers" (Claude Code, Cursor) or "servers" (VS Code) object`})
			}
		}
		if format == FormatVSCode {
			where, d, syn = "servers", dialectVSCode, syntaxVSCode
		} else {
			where, d, syn = "mcpServers", dialectClaude, syntaxClaude
		}
		raw = obj[where]
		inputsRaw, hasInputs = obj["inputs"]
	}
	if raw == nil {
		return empty
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return failed(&Error{File: path, Key: where, Message: "expected an object mapping server names to settings"})
	}
	x := &expander{syntax: syn, env: env, workspace: workspaceFolder(abs)}
	var inputErrs Errors
	if d == dialectVSCode {
		if hasInputs && inputsRaw != nil {
			x.inputs, inputErrs = decodeInputs(path, inputsRaw)
		}
	}
	switch {
	case src.Project != "":
		x.workspace = src.Project
	case src.Scope == ScopeUser && src.Root != "":
		// A user-scope file serves every project: its folder is the one
		// open, as in Cursor and VS Code, never the file's (HOME).
		x.workspace = src.Root
	}
	dir := filepath.Dir(abs)
	if format == FormatClaudeUser || format == FormatClaudeLocal {
		// ~/.claude.json lives in HOME; Claude Code starts its servers in
		// the project, so relative paths are the project's.
		dir = x.workspace
	}
	r := decodeServers(servers, src.Trust, func(name string) *serverDecoder {
		return &serverDecoder{dialect: d, file: path, name: name, dir: dir, x: x}
	})
	r.errs = append(inputErrs, r.errs...)
	r.format = format
	return r
}

// decodeJSON decodes one JSON value of file, keeping numbers exact. A
// problem gives the position but never a piece of the input.
func decodeJSON(file string, data []byte) (any, *Error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is just past the offending byte.
			return nil, positioned(file, data, se.Offset-1, "invalid JSON", se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, positioned(file, data, int64(len(data)), "invalid JSON", "unexpected end of input")
		}
		return nil, &Error{File: file, Message: "invalid JSON: " + err.Error()}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rest := data[end:]
		end += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		return nil, positioned(file, data, end, "invalid JSON", "data after the top-level value")
	}
	return v, nil
}

// decodeJSONC decodes a JSON value of file that may hold comments and
// trailing commas. Standard JSON, the most common, is decoded as it is:
// hujson's syntax tree costs several times the file's size.
func decodeJSONC(file string, data []byte) (any, *Error) {
	if json.Valid(data) {
		return decodeJSON(file, data)
	}
	std, err := hujson.Standardize(slices.Clone(data))
	if err != nil {
		return nil, describeJSONCError(file, data, err)
	}
	return decodeJSON(file, std)
}
