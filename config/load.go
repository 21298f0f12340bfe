package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
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
