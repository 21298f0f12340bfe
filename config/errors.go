package config

import (
	"fmt"
	"strings"
)

// InlineSource is the Source of servers given inline in the host's
// initialize request, and the File of their errors.
const InlineSource = "initialize"

// Error is one validation or parse problem. It names the file ("initialize"
// for inline config), the server and the key, and never quotes a value that
// may be secret (env values, header values, URLs).
type Error struct {
	File   string // a path, or "initialize"
	Server string // empty for a problem of the whole file
	Key    string // the key as written in the file; empty when not about one key
	// Line and Column locate a parse error (1-based; 0 when unknown).
	Line, Column int
	Message      string
}

// Error renders e.g.
//
//	/home/u/.codex/config.toml: server "github": key "bearer_token": inline bearer tokens are refused; use bearer_token_env_var
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Server != "" {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is several problems, reported together so that a user fixes a file
// in one pass rather than one error at a time.
type Errors []*Error

// Error renders one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// asError returns es as an error, or nil when there are no problems; a nil
// Errors must not become a non-nil error interface.
func (es Errors) asError() error {
	if len(es) == 0 {
		return nil
	}
	return es
}
