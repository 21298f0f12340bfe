package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
)

// maxConfigFileSize bounds a config file; real ones are a few KiB.
const maxConfigFileSize = 16 << 20

// ParseInline parses initialize.servers: a JSON object mapping a server name
// to a ServerConfig with Codex's keys. There is no variable expansion, and a
// relative cwd stays relative (there is no file to resolve it against).
// Each server has Source "initialize". It returns the valid servers, and the
// problems of the others as Errors.
func ParseInline(data json.RawMessage) (map[string]*ServerConfig, error) {
	r := parseInline(data, InlineSource)
	return r.valid(), r.errs.asError()
}

// parsed is what one source yields: every server defined (invalid ones
// with Problems), problems of the whole source, and warnings.
type parsed struct {
	servers  map[string]*ServerConfig
	errs     Errors // file-level problems and every server's
	warnings Errors
	// fileLevel holds Codex's top-level OAuth keys, applied to each server.
	fileLevel map[string]any
	// untrusted are the servers the source's Trust does not approve
	// (Source left empty): not decoded, not in servers.
	untrusted []Untrusted
	// format is the source's format as detected (FormatCodex,
	// FormatMCPServers, FormatVSCode...), for a Source of FormatAuto.
	format string
}

func failed(e *Error) parsed {
	return parsed{servers: map[string]*ServerConfig{}, errs: Errors{e}}
}

// valid returns the servers without problems.
func (r parsed) valid() map[string]*ServerConfig {
	out := make(map[string]*ServerConfig, len(r.servers))
	for name, c := range r.servers {
		if c.Valid() {
			out[name] = c
		}
	}
	return out
}

// parseInline parses inline servers, naming their source name.
func parseInline(data json.RawMessage, name string) parsed {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return parsed{servers: map[string]*ServerConfig{}}
	}
	perr := checkJSONShape(name, trimmed, 0, len(trimmed), true)
	var top any
	if perr == nil {
		top, perr = decodeJSON(name, trimmed)
	}
	if perr != nil {
		perr.Key = "servers"
		return failed(perr)
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return failed(&Error{File: name, Key: "servers", Message: "expected an object mapping server names to settings"})
	}
	return decodeServers(obj, nil, func(server string) *serverDecoder {
		return &serverDecoder{dialect: dialectInline, file: name, name: server}
	})
}

// LoadFile reads one config file, detecting its format:
//
//   - *.toml: Codex config.toml, whose [mcp_servers.NAME] tables are read
//     with every key of Codex's McpServerConfig, and whose top-level
//     mcp_oauth_credentials_store, mcp_oauth_callback_port and
//     mcp_oauth_callback_url apply to each of them (other top-level Codex
//     keys are ignored); no variable expansion, as Codex has none.
//   - JSON with a top-level "mcpServers" object: Claude Code and Cursor
//     (.mcp.json, ~/.cursor/mcp.json). ${VAR} and ${VAR:-default} expand
//     as in Claude Code, as do Cursor's ${env:VAR}, ${userHome} and
//     ${workspaceFolder} (in command, args, env, url and headers as
//     Claude Code documents, and also in cwd and envFile; an unset
//     variable without a default is an error); "type": "sse" is a legacy
//     HTTP+SSE server (ServerConfig.SSE); "headers" is http_headers;
//     "disabled": true is "enabled": false.
//   - JSON with a top-level "servers" object: VS Code (.vscode/mcp.json).
//     ${env:VAR}, ${workspaceFolder}, ${userHome} expand; ${input:...} is
//     refused since the sidecar cannot prompt; envFile is read.
//
// JSON files may hold comments and trailing commas (JSONC, as VS Code
// writes them). Both JSON formats also accept Codex's snake_case keys
// (startup_timeout_sec, enabled_tools, ...). A relative cwd is resolved
// against the file's directory, and so is a command containing a slash; a
// bare command is looked up in PATH when spawned. Unknown keys are
// warnings (see Load), never errors: as Codex, and since these files are
// shared between clients.
//
// Each returned ServerConfig has Name and Source (the path) set. It returns
// the valid servers, and the problems of the others as Errors.
func LoadFile(path string, env Lookup) (map[string]*ServerConfig, error) {
	r := loadSource(Source{Path: path}, env)
	return r.valid(), r.errs.asError()
}

// Formats of a Source.
const (
	FormatAuto        = ""             // by extension and content, as LoadFile
	FormatCodex       = "codex"        // config.toml
	FormatMCPServers  = "mcpServers"   // Claude Code .mcp.json, Cursor mcp.json
	FormatVSCode      = "vscode"       // VS Code mcp.json
	FormatClaudeUser  = "claude-user"  // ~/.claude.json, top-level mcpServers
	FormatClaudeLocal = "claude-local" // ~/.claude.json, projects[Project].mcpServers
)

// Source is one place servers are read from: a file given by the host or a
// person, or one found by Discover.
type Source struct {
	Path   string `json:"path"`
	Format string `json:"format,omitempty"`
	// Tool and Scope say whose file it is, for people: "codex", "claude",
	// "cursor" or "vscode"; "user", "project" or "local".
	Tool  string `json:"tool,omitempty"`
	Scope string `json:"scope,omitempty"`
	// Project is the project directory of a Claude Code local scope.
	Project string `json:"project,omitempty"`
	// Trust is the recorded approval of a project-scope source, which
	// Discover sets; nil approves every server (the user's own files).
	Trust *Trust `json:"-"`
	// Root is the root of the project Discover looked in (the repository
	// root, or its working directory outside a repository), which it sets
	// on every source: a project-scope file is read only as far as its
	// links stay inside it, and it is ${workspaceFolder} (and the folder
	// of relative paths) of the user-scope JSON files, as in the editors,
	// which resolve it to the folder open, not the file's.
	Root string `json:"-"`
}

// Describe names the source for people: its path, and whose scope it is.
func (s Source) Describe() string {
	var who []string
	if name := toolNames[s.Tool]; name != "" {
		who = append(who, name)
	}
	if s.Scope != "" {
		who = append(who, s.Scope+" scope")
	}
	if s.Project != "" {
		who = append(who, "project "+s.Project)
	}
	if len(who) == 0 {
		return s.Path
	}
	return fmt.Sprintf("%s (%s)", s.Path, strings.Join(who, ", "))
}

var toolNames = map[string]string{"codex": "Codex", "claude": "Claude Code", "cursor": "Cursor", "vscode": "VS Code"}

func loadSource(src Source, env Lookup) parsed {
	var (
		data    []byte
		problem string
	)
	switch {
	case src.Scope == ScopeProject:
		root := src.Root
		if root == "" {
			root = workspaceFolder(src.Path)
		}
		data, problem = readProjectFile(src.Path, root, maxConfigFileSize)
	case src.Scope != "":
		data, problem = readUserFile(src.Path, maxConfigFileSize)
	default:
		data, problem = readBounded(src.Path, maxConfigFileSize)
	}
	if problem != "" {
		return failed(&Error{File: src.Path, Message: problem})
	}
	return parseSource(src, data, env)
}

// parseSource is loadSource on data already read.
func parseSource(src Source, data []byte, env Lookup) parsed {
	// A trust record's approval is of this content only.
	src.Trust = src.Trust.forContent(data)
	path := src.Path
	abs, err := filepath.Abs(path)
	if err != nil {
		return failed(&Error{File: path, Message: fmt.Sprintf("cannot resolve path: %v", err)})
	}
	format := src.Format
	if format == FormatAuto && strings.EqualFold(filepath.Ext(path), ".toml") {
		format = FormatCodex
	}
	if format == FormatCodex {
		r := parseTOML(src, filepath.Dir(abs), data)
		r.format = FormatCodex
		return r
	}
	return parseClientJSON(src, format, abs, data, env)
}

func parseTOML(src Source, dir string, data []byte) parsed {
	path := src.Path
	if perr := checkTOMLShape(path, data); perr != nil {
		return failed(perr)
	}
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		return failed(describeTOMLError(path, err))
	}
	r := parsed{servers: map[string]*ServerConfig{}}
	// The top-level OAuth keys go to every server of the file; a bad
	// value is a problem of the file, and the servers start without it.
	level := &ServerConfig{}
	for _, key := range fileLevelKeys() {
		if v, ok := top[key]; ok {
			applyFileLevel(level, key, v, func(key, format string, args ...any) {
				r.errs = append(r.errs, &Error{File: path, Key: key, Message: fmt.Sprintf(format, args...)})
			})
		}
	}
	raw, ok := top["mcp_servers"]
	if !ok {
		return r
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		r.errs = append(r.errs, &Error{File: path, Key: "mcp_servers", Message: "expected a table of servers ([mcp_servers.NAME])"})
		return r
	}
	got := decodeServers(obj, src.Trust, func(name string) *serverDecoder {
		return &serverDecoder{dialect: dialectCodex, file: path, name: name, dir: dir}
	})
	for _, c := range got.servers {
		c.OAuthCredentialsStore = level.OAuthCredentialsStore
		c.OAuthCallbackPort = level.OAuthCallbackPort
		c.OAuthCallbackURL = level.OAuthCallbackURL
	}
	got.errs = append(r.errs, got.errs...)
	return got
}

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

// decodeServers decodes each server of obj that trust approves, in name
// order so that problems come out in a stable order. A server it does not
// approve is not decoded at all: its entry expands no variable and reads
// no envFile.
func decodeServers(obj map[string]any, trust *Trust, newDecoder func(name string) *serverDecoder) parsed {
	r := parsed{servers: make(map[string]*ServerConfig, len(obj))}
	for _, name := range sortedKeys(obj) {
		if ok, why, declined := trust.allows(name); !ok {
			r.untrusted = append(r.untrusted, Untrusted{Server: name, Reason: why, Declined: declined})
			continue
		}
		c, w := decodeServer(newDecoder(name), obj[name])
		r.warnings = append(r.warnings, w...)
		r.errs = append(r.errs, c.Problems...)
		r.servers[name] = c
	}
	return r
}

// Loaded is the configuration of several sources, merged.
type Loaded struct {
	// Servers holds each name's winning definition: the last source that
	// defines the name wins, whether its definition is valid or not (the
	// user meant to change that server, and running a stale definition
	// would hide the mistake). An invalid one has Problems.
	Servers map[string]*ServerConfig
	// Sources are the sources read, in order, with what each defined.
	Sources []SourceReport
	// Errors are all problems: of whole sources (a file that cannot be read
	// or parsed, with line and column) and of server definitions,
	// including definitions a later source replaced.
	Errors Errors
	// Warnings are keys ignored (unknown ones, with a hint) and settings
	// the sidecar does not act on.
	Warnings Errors
	// Replaced says which definitions a later source replaced.
	Replaced []Replacement
	// Untrusted are the servers of project files that no recorded
	// approval covers, in the order read: neither part of Servers nor
	// replacing an earlier definition (see Trust).
	Untrusted []Untrusted
}

// SourceReport is one source read.
type SourceReport struct {
	Source
	// Servers are the names it defines, sorted; Untrusted those it
	// defines that its Trust does not approve.
	Servers   []string
	Untrusted []string
	// Err is set when the source could not be read or parsed.
	Err *Error
}

// Replacement is a server defined again by a later source.
type Replacement struct {
	Server string
	By     Source // the later source, whose definition counts
	Over   Source // the earlier one
}

// Valid returns the servers without problems.
func (l *Loaded) Valid() map[string]*ServerConfig {
	return parsed{servers: l.Servers}.valid()
}

// Names returns every server name, sorted.
func (l *Loaded) Names() []string { return sortedKeys(l.Servers) }

// Load reads the sources in order and then the inline servers (Source
// "initialize"); a later definition of a name replaces an earlier one.
// Nothing stops it: a source that cannot be read or parsed is reported
// and the others still load.
func Load(sources []Source, inline json.RawMessage, env Lookup) *Loaded {
	return LoadAs(sources, inline, InlineSource, env)
}

// LoadAs is Load with the inline servers' source named inlineName (in
// their Source, their errors' File and the messages that name where a
// server is defined) rather than InlineSource: the commands for people
// name a server given with --command "the command line".
func LoadAs(sources []Source, inline json.RawMessage, inlineName string, env Lookup) *Loaded {
	l := &Loaded{Servers: map[string]*ServerConfig{}}
	from := map[string]Source{}
	merge := func(src Source, r parsed) {
		if src.Format == FormatAuto {
			src.Format = r.format // what it was read as: the syntax of its servers
		}
		rep := SourceReport{Source: src, Servers: sortedKeys(r.servers)}
		for _, e := range r.errs {
			if e.Server == "" && rep.Err == nil && len(r.servers) == 0 && len(r.untrusted) == 0 {
				rep.Err = e
			}
		}
		for _, u := range r.untrusted {
			u.Source = src
			rep.Untrusted = append(rep.Untrusted, u.Server)
			l.Untrusted = append(l.Untrusted, u)
		}
		l.Sources = append(l.Sources, rep)
		l.Errors = append(l.Errors, r.errs...)
		l.Warnings = append(l.Warnings, r.warnings...)
		for _, name := range rep.Servers {
			if prev, ok := from[name]; ok {
				l.Replaced = append(l.Replaced, Replacement{Server: name, By: src, Over: prev})
			}
			r.servers[name].Origin = src
			l.Servers[name] = r.servers[name]
			from[name] = src
		}
	}
	for _, src := range sources {
		merge(src, loadSource(src, env))
	}
	if r := parseInline(inline, inlineName); len(r.servers) > 0 || len(r.errs) > 0 {
		merge(Source{Path: inlineName}, r)
	}
	return l
}

// FileSources makes Sources of paths whose format is detected (LoadFile).
func FileSources(paths []string) []Source {
	out := make([]Source, len(paths))
	for i, p := range paths {
		out[i] = Source{Path: p}
	}
	return out
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

// positioned is a parse error of file at a byte offset of data.
func positioned(file string, data []byte, offset int64, what, msg string) *Error {
	line, col := position(data, offset)
	return &Error{File: file, Line: line, Column: col, Message: fmt.Sprintf("%s at line %d, column %d: %s", what, line, col, msg)}
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// describeJSONCError renders hujson's parse error of a JSONC file with its
// position, and none of the input.
func describeJSONCError(file string, data []byte, err error) *Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return positioned(file, data, se.Offset-1, "invalid JSON", se.Error())
	}
	// hujson reports "hujson: line L, column C: ..." or an offset.
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	var line, col int
	if n, _ := fmt.Sscanf(msg, "line %d, column %d:", &line, &col); n == 2 {
		_, rest, _ := strings.Cut(msg, ": ")
		return &Error{File: file, Line: line, Column: col, Message: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, hujsonReason(rest))}
	}
	return &Error{File: file, Message: "invalid JSON: " + hujsonReason(msg)}
}

// hujsonReason is hujson's reason for a parse error without the input it
// quotes. "invalid literal: <word>" names a bare word of the file, which
// in a file that is not JSON at all (a token, a key) is the secret
// itself: only the kind of error stays.
func hujsonReason(msg string) string {
	if strings.HasPrefix(msg, "invalid literal") {
		return "invalid literal (a bare word where a value belongs; only true, false, null and numbers are written without quotes)"
	}
	return elide(msg)
}

// elide shortens quoted fragments of the input in a parser message to "…",
// keeping single (possibly escaped) characters: a malformed line may hold
// a secret.
func elide(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if utf8.RuneCountInString(inner) == 1 || (len(inner) <= 10 && strings.HasPrefix(inner, `\`)) {
			return q
		}
		return q[:1] + "…" + q[:1]
	})
}

// quoted matches quoted text in a parser message.
var quoted = regexp.MustCompile(`'[^']*'|"(?:[^"\\]|\\.)*"`)

// describeTOMLError renders a TOML syntax error with its position. Longer
// quoted fragments of the input are elided: a malformed line may hold a
// secret. The key the error follows is named only under [mcp_servers]:
// elsewhere, in a file that is not a config at all, a "key" may be a
// token (a base64 secret ends in "=").
func describeTOMLError(file string, err error) *Error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: file, Message: "invalid TOML: " + elide(err.Error())}
	}
	msg := elide(pe.Message)
	where := fmt.Sprintf("line %d", pe.Position.Line)
	if pe.Position.Col > 0 {
		where += fmt.Sprintf(", column %d", pe.Position.Col)
	}
	if strings.HasPrefix(pe.LastKey, "mcp_servers.") {
		where += fmt.Sprintf(" (after key %q)", pe.LastKey)
	}
	return &Error{File: file, Line: pe.Position.Line, Column: pe.Position.Col, Message: fmt.Sprintf("invalid TOML at %s: %s", where, msg)}
}
